"""Switches reached through netsteer's os-ken application (the default channel).

:class:`OskenController` starts the os-ken app (:mod:`.osken_app`) in its own
process (os-ken runs on eventlet, which must monkey-patch the process it runs in;
the driver's process keeps its threads) and talks to it over a socket pair;
:class:`OskenSwitch` is one switch behind the driver's switch interface
(``bundle``, ``replace``, ``port_bytes``, ``port_state``, ``flow_bytes``), like
:class:`.switch.OfctlSwitch`. Any number of driver threads may ask at once: each
request has an id and waits for its own answer.

Switches connect to the app: ``ovs-vsctl set-controller BRIDGE tcp:127.0.0.1:PORT``
with the bridge's datapath id set (``other-config:datapath-id``), which is how a
bridge is named to the app (:func:`netsteer.emulate.testbed.dpid_of`).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future

from .ofmsg import wipe_lines
from .switch import TIMEOUT_S, SwitchError


#: how long the driver waits for the app's answer: the app's own limit for a request
#: at the switch (TIMEOUT_S, a bundle's barrier and commit together) and a margin for
#: the app's encoding and its socket, so a commit the app still waits for is never
#: reported failed (and rolled back elsewhere) before the app knows
REPLY_WAIT_S = TIMEOUT_S + 5


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OskenController:
    """The os-ken application process and its request channel; use as a context manager.

    Parameters
    ----------
    port : int, optional
        Where switches connect (loopback); default: a free port.
    """

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        mine, theirs = socket.socketpair()
        self.sock = mine
        # its log goes to a file: a pipe nobody reads would stop it once full
        self.log = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "netsteer.drivers.openflow.osken_app", str(self.port), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True,
            # os-ken 4's default hub (native threads) never finishes a datapath whose
            # switch went away (it joins a sender blocked on its queue): eventlet does
            env={**os.environ, "OSKEN_HUB_TYPE": "eventlet"})
        theirs.close()
        self._ids = itertools.count(1)
        self._waiting: dict[int, Future] = {}
        # packet-ins, for whoever handles them (a reader must not block this thread:
        # it answers the requests a handler makes)
        self.events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.bad_lines = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> "OskenController":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                break
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    out = json.loads(line)
                except ValueError:  # never expected (the app writes whole lines); keep reading
                    self.bad_lines += 1
                    continue
                if "event" in out:  # unasked: a packet-in
                    self.events.put(out)
                    continue
                fut = self._waiting.pop(out.pop("id"), None)
                if fut is not None:
                    fut.set_result(out)
        for fut in list(self._waiting.values()):  # the app is gone: nobody answers
            fut.set_result({"error": "the os-ken application stopped"})
        self.events.put(None)

    def request(self, op: str, timeout: float = REPLY_WAIT_S, **args) -> dict:
        """Send one request; its answer (``error`` set when it failed)."""
        rid = next(self._ids)
        fut: Future = Future()
        self._waiting[rid] = fut
        data = (json.dumps({"id": rid, "op": op, **args}) + "\n").encode()
        with self._lock:
            try:
                self.sock.sendall(data)
            except OSError:
                self._waiting.pop(rid, None)
                return {"error": "the os-ken application stopped"}
        try:
            return fut.result(timeout=timeout)
        except TimeoutError:
            self._waiting.pop(rid, None)
            return {"error": f"the os-ken application did not answer within {timeout:g} s"}

    def connected(self) -> set[int]:
        return set(self.request("connected").get("dpids", []))

    def wait_connected(self, dpids, timeout: float = 20.0) -> None:
        """Return once every datapath in ``dpids`` is connected to the app."""
        want = set(dpids)
        deadline = time.monotonic() + timeout
        while not want <= self.connected():
            if self.proc.poll() is not None:
                raise SwitchError(f"the os-ken application exited: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise SwitchError(f"switches {sorted(want - self.connected())} did not connect within {timeout:g} s")
            time.sleep(0.05)  # polling a condition (connections), with a deadline

    def close(self) -> None:
        try:
            self.sock.close()
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            self.log.close()

    def log_tail(self, n: int = 400) -> str:
        self.log.flush()
        self.log.seek(0)
        return " ".join(self.log.read().split())[-n:]


class OskenSwitch:
    """One switch through the os-ken app: the driver's switch interface.

    Parameters
    ----------
    name : str
        For messages.
    controller : OskenController
    dpid : int
        The switch's datapath id.
    """

    def __init__(self, name: str, controller: OskenController, dpid: int):
        self.name, self.ctl, self.dpid = name, controller, dpid
        self.last: dict = {}  # the last bundle's encode_s and switch_s (the app's timing)

    def _ask(self, op: str, **args) -> dict:
        out = self.ctl.request(op, dpid=self.dpid, **args)
        if "error" in out:
            raise SwitchError(f"{self.name} refused the change: {out['error']}")
        return out

    def bundle(self, lines: list[str]) -> None:
        """Apply ``lines`` (``flow add ...``, ``group delete ...``) atomically."""
        if lines:
            self.last = self._ask("bundle", lines=lines)

    def replace(self, flows: list[str], groups: list[str]) -> None:
        """Make the switch hold exactly these groups and flows, in one bundle."""
        self._ask("bundle", lines=wipe_lines() + [f"group add {g}" for g in groups] + [f"flow add {f}" for f in flows])

    def port_bytes(self) -> dict[int, tuple[int, int]]:
        return {int(k): (v[0], v[1]) for k, v in self._ask("ports")["ports"].items()}

    def port_state(self) -> dict[int, bool]:
        """``{port: up}`` from the switch's port descriptions (:meth:`.switch.OfctlSwitch.port_state`)."""
        return {int(k): bool(v) for k, v in self._ask("port_state")["ports"].items()}

    def flow_bytes(self, table: int) -> dict[str, int]:
        return self._ask("flows", table=table)["flows"]

    def n_flows(self) -> int:
        return self._ask("flows", table=0xFF)["n"]

    def packet_out(self, in_port: int, data: str) -> None:
        """Send a frame (hex) back through the switch's tables, as arriving on ``in_port``."""
        self._ask("packet_out", in_port=in_port, data=data)
