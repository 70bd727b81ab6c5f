"""One OpenFlow switch, reached through ``ovs-ofctl`` (OpenFlow 1.4 bundles).

``ovs-ofctl`` is the OpenFlow client here: it opens an OpenFlow connection to the
switch (the bridge's management socket, or ``tcp:127.0.0.1:PORT``), sends the
flow-mods and group-mods of a change inside one bundle (``OFPBCT_OPEN_REQUEST`` ...
``COMMIT``) so the switch applies all of them or none, and reads port and flow
statistics. A refused bundle raises :class:`SwitchError` with the switch's error.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

# seconds an ovs-ofctl call may take before the switch counts as disconnected
TIMEOUT_S = 10


class SwitchError(Exception):
    """A switch refused a change or could not be reached."""


def run_per_switch(pool, jobs: dict, name=None) -> dict:
    """Run ``jobs`` (switch -> callable) at once on ``pool``; returns {switch: error}
    of those that failed.

    Any exception counts as that switch failing (an ``OSError`` from ``ovs-ofctl``'s
    temporary file as much as a refused bundle): callers roll the others back, which
    an exception escaping here would skip. ``name(switch)``, if given, prefixes the
    errors that are not a :class:`SwitchError` (which names its switch itself).
    """
    futures = {n: pool.submit(job) for n, job in jobs.items()}
    errors = {}
    for n, fut in futures.items():
        try:
            fut.result()
        except SwitchError as exc:
            errors[n] = str(exc)
        except Exception as exc:  # noqa: BLE001 (a switch that failed)
            errors[n] = (f"{name(n)}: " if name else "") + f"{type(exc).__name__}: {exc}"
    return errors


class OfctlSwitch:
    """Flow-mods, bundles and statistics for one switch.

    Parameters
    ----------
    name : str
        The bridge name (for messages).
    target : str
        What ``ovs-ofctl`` connects to: a bridge name or ``tcp:127.0.0.1:6653``.
    """

    def __init__(self, name: str, target: str | None = None):
        self.name, self.target = name, target or name

    def _ofctl(self, *args: str, stdin: str | None = None) -> str:
        cmd = ["ovs-ofctl", "-O", "OpenFlow14", f"--timeout={TIMEOUT_S}", *args]
        try:
            p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S + 5)
        except subprocess.TimeoutExpired:
            raise SwitchError(f"{self.name}: no answer within {TIMEOUT_S} s (disconnected?)") from None
        if p.returncode != 0:
            err = " ".join((p.stderr or p.stdout).split())[:300]
            verb = next(a for a in args if not a.startswith("-"))
            # a statistics or table read is no change the switch refused
            what = f"ovs-ofctl {verb} failed" if verb.startswith("dump") else "refused the change"
            raise SwitchError(f"{self.name} {what}: {err}")
        return p.stdout

    def bundle(self, lines: list[str]) -> None:
        """Apply ``lines`` (``flow add ...``, ``group delete ...``) atomically."""
        if not lines:
            return
        with tempfile.NamedTemporaryFile("w", suffix=".bundle", delete=False) as fh:
            fh.write("\n".join(lines) + "\n")
            path = fh.name
        try:
            self._ofctl("--bundle", "bundle", self.target, path)
        finally:
            os.unlink(path)

    def swap_flows(self, flows: list[str]) -> None:
        """Make the switch hold exactly ``flows``, in one bundle: every frame meets
        either the old table or the new one."""
        self._ofctl("--bundle", "replace-flows", self.target, "-", stdin="\n".join(flows) + "\n")

    def replace(self, flows: list[str], groups: list[str]) -> None:
        """Make the switch hold exactly these groups and flows (re-synchronisation)."""
        self._ofctl("--bundle", "del-flows", self.target)
        self._ofctl("del-groups", self.target)
        if groups:
            self._ofctl("add-groups", self.target, "-", stdin="\n".join(groups) + "\n")
        if flows:
            self._ofctl("--bundle", "add-flows", self.target, "-", stdin="\n".join(flows) + "\n")

    def port_bytes(self) -> dict[int, tuple[int, int]]:
        """``{port: (rx_bytes, tx_bytes)}`` from the switch's port statistics."""
        out: dict[int, tuple[int, int]] = {}
        port = None
        for line in self._ofctl("dump-ports", self.target).splitlines():
            m = re.match(r"\s*port\s+(\S+?):\s*rx pkts=\S+, bytes=(\d+)", line)
            if m:
                port = int(m.group(1)) if m.group(1).isdigit() else None
                rx = int(m.group(2))
                continue
            m = re.match(r"\s*tx pkts=\S+, bytes=(\d+)", line)
            if m and port is not None:
                out[port] = (rx, int(m.group(1)))
                port = None
        return out

    def port_state(self) -> dict[int, bool]:
        """``{port: up}`` from the switch's port descriptions (``dump-ports-desc``): a
        port is down when its state says ``LINK_DOWN`` (no carrier) or its config
        ``PORT_DOWN`` (administratively down); the bridge's ``LOCAL`` port is left out."""
        return parse_ports_desc(self._ofctl("dump-ports-desc", self.target))

    def flow_bytes(self, table: int) -> dict[str, int]:
        """``{match: n_bytes}`` of the flows in ``table`` (their cumulative counters)."""
        out = {}
        for line in self._ofctl("dump-flows", self.target, f"table={table}").splitlines():
            m = re.search(r"n_bytes=(\d+),.*?priority=\d+,?(\S*) actions=", line)
            if m:
                out[m.group(2)] = int(m.group(1))
        return out

    def n_flows(self) -> int:
        return sum(1 for line in self._ofctl("dump-flows", self.target).splitlines() if "actions=" in line)


def parse_ports_desc(text: str) -> dict[int, bool]:
    """``{port: up}`` from ``ovs-ofctl dump-ports-desc``'s text.

    >>> parse_ports_desc('''OFPST_PORT_DESC reply (OF1.4) (xid=0x2):
    ...  3(ltv0): addr:f2:1b:03:5d:fb:78
    ...      config:     0
    ...      state:      LIVE
    ...  4(ltv1): addr:f2:1b:03:5d:fb:79
    ...      config:     PORT_DOWN
    ...      state:      LINK_DOWN
    ...  5(ltv2): addr:f2:1b:03:5d:fb:7a
    ...      config:     0
    ...      state:      LINK_DOWN
    ...  LOCAL(br0): addr:42:10:69:29:a2:4b
    ...      config:     PORT_DOWN
    ...      state:      LINK_DOWN''')
    {3: True, 4: False, 5: False}
    """
    out: dict[int, bool] = {}
    port = None
    for line in text.splitlines():
        m = re.match(r"\s*(\w+)\(.*\):", line)
        if m:
            port = int(m.group(1)) if m.group(1).isdigit() else None
            if port is not None:
                out[port] = True
            continue
        m = re.match(r"\s*(config|state):\s*(.*)", line)
        if m and port is not None and {"LINK_DOWN", "PORT_DOWN"} & set(m.group(2).split()):
            out[port] = False
    return out
