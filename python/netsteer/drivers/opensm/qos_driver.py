"""The ``opensm`` driver of the controller core, for QoS: intents -> OpenSM's files ->
re-sweep -> what the ports hold, read back.

:class:`OpenSmQosDriver` carries out :class:`~netsteer.control.intents.SetQos` on a
running OpenSM (started with ``-Q -F <conf>``, e.g. by
:class:`netsteer.drivers.opensm.runner.IbFabric` with ``opensm_args``): a new QoS
configuration is written as the ``qos_*`` lines of its ``opensm.conf``; a job moved
to another SL becomes its partition's ``sl=`` in ``partitions.conf`` (a partition of
the job's hosts, which OpenSM hands that SL in path records). The partitions the file
held when the driver first wrote it (the user's, with their membership, flags and their
``Default=0x7fff`` rule, or OpenSM's implicit one when it has none: ``ALL=limited,
SELF=full`` for a file without that rule, ``ALL=full`` when there was no file) are
written back with the jobs' partitions, each job's under a PKey no other partition has. The new SL reaches only the job's QPs that use the job's new PKey: path
records for its other PKeys keep those partitions' SLs. OpenSM re-reads both on
SIGHUP and re-sweeps; the driver waits for the sweep to end (``SUBNET UP`` in its
log) and reads the SL2VL and VL arbitration tables back with ``smpquery``.

:func:`parse_smpquery_sl2vl` and :func:`parse_smpquery_vlarb` read ``smpquery sl2vl`` and ``smpquery
vlarb`` output (infiniband-diags).
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import numpy as np

from ...control.driver import Applied, Counters, NetworkChanged, NetworkView
from ...control.intents import SetQos
from ...report.atomic import atomic_write
from .partitions import format_partitions_conf, with_default
from .qos import job_partition, qos_conf_lines

_SL2VL_ROW = re.compile(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|\s*$", re.M)
_VLARB = re.compile(r"# (Low|High) priority VL Arbitration Table:\s*\nVL\s*:\s*\|(.*)\|\s*\nWEIGHT:\s*\|(.*)\|", re.M)


def parse_smpquery_sl2vl(text: str) -> dict[tuple[int, int], list[int]]:
    """``smpquery sl2vl`` output: (in port, out port) -> 16 VLs.

    >>> parse_smpquery_sl2vl("ports: in  0, out  0: | 0| 1| 0| 1| 0| 1| 0| 1| 0| 1| 0| 1| 0| 1| 0|15|")[(0, 0)][-2:]
    [0, 15]
    """
    out = {}
    for m in _SL2VL_ROW.finditer(text):
        vls = [int(x) for x in m.group(3).split("|")]
        if len(vls) != 16:
            raise ValueError(f"an SL2VL row of {len(vls)} entries: {m.group(0)!r}")
        out[(int(m.group(1)), int(m.group(2)))] = vls
    return out


def parse_smpquery_vlarb(text: str) -> dict[str, list[tuple[int, int]]]:
    """``smpquery vlarb`` output: ``{"low": [(VL, weight), ...], "high": [...]}``,
    the entries with a weight (an entry of weight 0 is skipped by the arbiter).

    >>> t = "# Low priority VL Arbitration Table:\\nVL    : |0x1 |0x0 |\\nWEIGHT: |0x10|0x0 |\\n"
    >>> parse_smpquery_vlarb(t)
    {'low': [(1, 16)]}
    """
    out = {}
    for m in _VLARB.finditer(text):
        vls = [int(x, 16) for x in m.group(2).split("|")]
        ws = [int(x, 16) for x in m.group(3).split("|")]
        out[m.group(1).lower()] = [(v, w) for v, w in zip(vls, ws) if w > 0]
    return out


class OpenSmQosDriver:
    """Apply QoS intents to the OpenSM of ``fabric`` (see the module text).

    Parameters
    ----------
    fabric : IbFabric
        Running, with OpenSM started as ``-Q -F conf`` (and ``-P partitions`` for SL moves).
    conf : path
        The ``opensm.conf`` OpenSM reads.
    topo : Topology
        The fabric as netsteer knows it (hosts' GUIDs for ``partitions.conf``).
    partitions : path, optional
        The ``partitions.conf`` OpenSM reads.
    timeout : float
        Seconds to wait for a re-sweep.
    """

    def __init__(self, fabric, conf, topo, *, partitions=None, timeout: float = 30.0):
        self.fabric, self.conf, self.topo = fabric, Path(conf), topo
        self.partitions_path = Path(partitions) if partitions else None
        self.timeout = timeout
        self.config = None
        self.job_partitions: dict[str, object] = {}
        self._base_partitions: list | None = None  # the file's own, read before the first write
        self._no_file = False  # OpenSM read no partitions file: its default partition is ALL=full
        self.applied: list[Applied] = []
        self._reports: list[NetworkChanged] = []
        self._t0 = time.monotonic_ns()

    # -- the driver protocol ------------------------------------------------------
    @property
    def now(self) -> int:
        return time.monotonic_ns() - self._t0

    def view(self) -> NetworkView:
        return NetworkView(self.now, frozenset())

    def counters(self) -> Counters:
        return Counters(self.now, np.zeros(0), None)

    def reports(self) -> list[NetworkChanged]:
        out, self._reports = self._reports, []
        return out

    def advance(self, until: int | None) -> str:
        return "done"  # a real fabric: time passes by itself, there is nothing to step

    def apply(self, intent) -> Applied:
        now = self.now
        try:
            if not isinstance(intent, SetQos):
                raise _Refused(f"the opensm QoS driver applies SetQos intents, not {type(intent).__name__}")
            self._write(intent)
            self._resweep()
            a = Applied(intent, now, self.now)
            self._reports.append(NetworkChanged(self.now, "qos", (), True))
        except _Refused as exc:
            a = Applied(intent, now, now, failed=str(exc))
        self.applied.append(a)
        return a

    # -- files and sweeps ---------------------------------------------------------
    def _write(self, intent: SetQos) -> None:
        if intent.config is not None:
            self.config = intent.config
            with atomic_write(self.conf) as f:
                f.write(qos_conf_lines(intent.config))
        if intent.sl is not None and intent.hosts:
            if self.partitions_path is None:
                raise _Refused("moving a job to another SL needs the partitions.conf OpenSM reads (-P)")
            from ...topology.partitions import Partition

            bad = [h for h in intent.hosts if not 0 <= h < self.topo.n_hosts]
            if bad:
                raise _Refused(f"host {bad[0]} does not exist: the fabric has {self.topo.n_hosts} hosts")
            base = self._base()
            old = self.job_partitions.get(intent.job)
            nodes = [int(self.topo.hosts[h]) for h in intent.hosts]
            if old is not None:
                self.job_partitions[intent.job] = Partition(
                    name=old.name, pkey=old.pkey, members={n: "full" for n in nodes}, flags={"sl": int(intent.sl)})
            else:
                self.job_partitions[intent.job] = job_partition(
                    intent.job, nodes, intent.sl, [*base, *self.job_partitions.values()])
            parts = with_default([*base, *self.job_partitions.values()], self.topo, no_file=self._no_file)
            try:
                text = format_partitions_conf(parts, self.topo)
            except ValueError as exc:
                raise _Refused(f"{self.partitions_path}: {exc}") from None
            with atomic_write(self.partitions_path) as f:
                f.write(text)

    def _base(self) -> list:
        """The partitions the file held before the driver wrote it (read once)."""
        if self._base_partitions is None:
            from ...errors import NetsteerError
            from .partitions import read_partitions_conf

            path = self.partitions_path
            self._no_file = not path.exists()
            try:
                self._base_partitions = [] if self._no_file else read_partitions_conf(path, self.topo)
            except (NetsteerError, ValueError, OSError) as exc:
                raise _Refused(f"{path}: cannot read the partitions it holds: {exc}") from None
        return self._base_partitions

    def _resweep(self) -> None:
        log = self.fabric.opensm_log
        before = _read(log).count("SUBNET UP")
        os.kill(self.fabric.opensm.pid, signal.SIGHUP)  # OpenSM re-reads its files and sweeps
        deadline = time.monotonic() + self.timeout
        while _read(log).count("SUBNET UP") <= before:
            if self.fabric.opensm.poll() is not None:
                raise _Refused(f"OpenSM exited ({self.fabric.opensm.returncode}) during the re-sweep")
            if time.monotonic() > deadline:
                raise _Refused(f"no re-sweep after {self.timeout:.0f}s")
            time.sleep(0.05)  # poll interval of a bounded wait on a real condition

    # -- what the fabric holds ----------------------------------------------------
    def holds(self, lid: int, port: int) -> dict:
        """The SL2VL map (``smpquery sl2vl``: rows per in/out port) and the VL
        arbitration tables of port ``port`` of the node with LID ``lid``."""
        return {"sl2vl": parse_smpquery_sl2vl(self.fabric.run(["smpquery", "sl2vl", str(lid), str(port)])),
                "vlarb": parse_smpquery_vlarb(self.fabric.run(["smpquery", "vlarb", str(lid), str(port)]))}


class _Refused(Exception):
    pass


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""


__all__ = ["OpenSmQosDriver", "parse_smpquery_sl2vl", "parse_smpquery_vlarb"]
