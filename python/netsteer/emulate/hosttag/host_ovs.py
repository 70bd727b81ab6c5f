"""The fallback tag writer: the host's own Open vSwitch bridge (a host OVS, as the
hybrid source's servers run) writes the UnisonFlow tag, where no eBPF program
attaches.

The testbed built with ``host_bridges=True`` puts a bridge between every host
and its link (port 1 the host, port 2 the link). :class:`HostOvsTagger` serves
the PMPI library of the host's rank over a UNIX socket (``NETSTEER_TAG_SOCK``;
pathname sockets reach across network namespaces):

- ``peer R IP``: rank ``R`` is at ``IP`` (sent once, after ``MPI_Init``);
- ``base B``: from now on tag with base ``B`` (0: untagged). The tagger swaps the
  bridge's table in one bundle: per peer, ``in_port=1,ip,nw_dst=IP`` writes
  ``B | R`` into the destination MAC and goes out by port 2;

and answers each line with ``ok`` once the rules are in. The PMPI library drains
the previous primitive's bytes before it sends ``base`` and waits for the ``ok``
before it returns to the program, so every frame leaves with its own primitive's
tag, as with the eBPF writer. What differs is the cost of a change: an
``ovs-ofctl`` bundle (milliseconds) instead of a map write (microseconds), and a
second userspace switch on every frame's path. The granularity is the same: per
packet on the wire, per change of primitive in time.

Examples
--------
>>> flows = table_lines(1 << 42, {"10.64.0.2": 1})
>>> flows[-1]
'priority=10,in_port=1,ip,nw_dst=10.64.0.2 actions=set_field:04:00:00:00:00:01->eth_dst,output:2'
>>> table_lines(0, {"10.64.0.2": 1}) == BASE_LINES
True
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

from ...drivers.openflow.switch import OfctlSwitch
from ..fabric_routes import _mac

HOST_PORT, UPLINK = 1, 2
BASE_LINES = [f"priority=1,in_port={HOST_PORT} actions=output:{UPLINK}",
              f"priority=1,in_port={UPLINK} actions=output:{HOST_PORT}"]
RANK_BITS = 0x7FFF


def table_lines(base: int, ranks: dict[str, int]) -> list[str]:
    """The bridge's whole table for tag base ``base`` and the peers ``ranks`` (IP -> rank)."""
    if not base:
        return list(BASE_LINES)
    return BASE_LINES + [f"priority=10,in_port={HOST_PORT},ip,nw_dst={ip} "
                         f"actions=set_field:{_mac(base | (r & RANK_BITS))}->eth_dst,output:{UPLINK}"
                         for ip, r in sorted(ranks.items())]


class HostOvsTagger:
    """Serve one host's PMPI library (module text); ``start`` then ``close``.

    Attributes
    ----------
    changes : int
        Tag bases installed.
    install_s : list of float
        Seconds each swap took.
    errors : list of str
        Lines it could not carry out (answered ``err``; the library counts them).
    """

    def __init__(self, bridge: str, sock_path: str | os.PathLike, switch=None):
        self.bridge, self.path = bridge, str(sock_path)
        self.switch = switch or OfctlSwitch(bridge)
        self.ranks: dict[str, int] = {}
        self.changes, self.install_s, self.errors = 0, [], []
        self._srv: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self) -> "HostOvsTagger":
        Path(self.path).unlink(missing_ok=True)
        self._srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._srv.bind(self.path)
        self._srv.listen(8)
        # the thread holds the socket itself: close() drops the attribute while
        # the thread may be between two accepts
        t = threading.Thread(target=self._accept, args=(self._srv,), daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def _accept(self, srv: socket.socket) -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return  # closed
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self._threads.append(t)

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as lines:
            for raw in lines:
                try:
                    conn.sendall(self.handle(raw.decode().strip()).encode() + b"\n")
                except OSError:
                    return

    def handle(self, line: str) -> str:
        """One request line -> its answer (``ok`` or ``err ...``)."""
        x = line.split()
        with self._lock:
            try:
                if len(x) == 3 and x[0] == "peer":
                    self.ranks[x[2]] = int(x[1])
                elif len(x) == 2 and x[0] == "base":
                    t0 = time.monotonic()
                    self.switch.swap_flows(table_lines(int(x[1]), self.ranks))
                    self.install_s.append(time.monotonic() - t0)
                    self.changes += 1
                else:
                    raise ValueError(f"not a request: {line!r}")
            except Exception as e:  # noqa: BLE001 -- answered and reported, the run goes on
                self.errors.append(f"{line}: {e}")
                return f"err {e}"
        return "ok"

    def close(self) -> None:
        if self._srv is not None:
            self._srv.close()
            self._srv = None
        Path(self.path).unlink(missing_ok=True)


__all__ = ["HostOvsTagger", "table_lines", "BASE_LINES"]
