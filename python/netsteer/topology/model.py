"""The topology model: nodes, numbered ports, and cables.

A topology is a plain description (as in Mininet's ``Topo``): no routing, no state.
Each cable joins ``(a, a_port)`` to ``(b, b_port)`` and is full duplex; the simulator
sees it as two directed *channels*, ``2*link`` (a to b) and ``2*link + 1`` (b to a).
Ports are numbered per node from 1, as on InfiniBand switches.

Circuit switches (optical MEMS, silicon photonics) are crossbars: which port pairs
with which is network *state*, held by :class:`netsteer.sim.network.CircuitState`,
not by the topology.

Examples
--------
>>> b = TopologyBuilder("pair")
>>> h0, h1 = b.add_host("h0"), b.add_host("h1")
>>> s = b.add_switch("s0", level=1)
>>> _ = b.add_link(h0, s, bandwidth=10e9, latency_ns=1000)
>>> _ = b.add_link(h1, s, bandwidth=10e9, latency_ns=1000)
>>> t = b.build()
>>> t.n_hosts, t.n_switches, t.n_links
(2, 1, 2)
>>> t.port_peer(s, 2)
(1, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TopologyBuildError
from ..units import MAX_DURATION_NS, checked_duration, parse_bandwidth

HOST, SWITCH, CIRCUIT = 0, 1, 2
KIND_NAMES = {HOST: "host", SWITCH: "switch", CIRCUIT: "circuit"}
#: The highest port number a cable may use: the cable table holds ports as int32.
MAX_PORT = 2**31 - 1


@dataclass
class Topology:
    """An immutable-by-convention topology.

    Attributes
    ----------
    name : str
    node_names : list of str
    node_kind : ndarray of int8, HOST, SWITCH or CIRCUIT per node
    node_level : ndarray of int16, fat-tree level (hosts 0), -1 where unknown
    node_guid : ndarray of uint64, 0 where unknown
    link_a, link_a_port, link_b, link_b_port : ndarray of int32
    link_bandwidth : ndarray of float64, bits per second, each direction
    link_latency_ns : ndarray of int64
    switching_time_ns : dict, circuit node -> reconfiguration (dark) time
    meta : dict, generator parameters (``kind``, ``levels``, labels ...)
    """

    name: str
    node_names: list[str]
    node_kind: np.ndarray
    node_level: np.ndarray
    node_guid: np.ndarray
    link_a: np.ndarray
    link_a_port: np.ndarray
    link_b: np.ndarray
    link_b_port: np.ndarray
    link_bandwidth: np.ndarray
    link_latency_ns: np.ndarray
    switching_time_ns: dict[int, int] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.hosts = np.flatnonzero(self.node_kind == HOST).astype(np.int32)
        self.switches = np.flatnonzero(self.node_kind != HOST).astype(np.int32)
        # host index (what scenarios call a host) per node, -1 for switches
        self.host_index = np.full(len(self.node_names), -1, dtype=np.int32)
        self.host_index[self.hosts] = np.arange(len(self.hosts), dtype=np.int32)
        self._index = {n: i for i, n in enumerate(self.node_names)}
        self._ports()

    def _ports(self) -> None:
        n = len(self.node_names)
        max_port = 0
        if self.n_links:
            max_port = int(max(self.link_a_port.max(), self.link_b_port.max()))
        from ..limits import check_topology

        # the port table is dense: port numbers from a file are checked before it is made
        check_topology(n, self.n_links, max_port, hosts=int(len(self.hosts)), field=None)
        # out_channel[node, port] = directed channel leaving node through port, -1 if unused
        out = np.full((n, max_port + 1), -1, dtype=np.int64)
        links = np.arange(self.n_links, dtype=np.int64)
        out[self.link_a, self.link_a_port] = 2 * links
        out[self.link_b, self.link_b_port] = 2 * links + 1
        self.out_channel = out
        self.n_ports = (out >= 0).sum(axis=1)

    # -- sizes ---------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_hosts(self) -> int:
        return len(self.hosts)

    @property
    def n_switches(self) -> int:
        return len(self.switches)

    @property
    def n_links(self) -> int:
        return len(self.link_a)

    @property
    def n_channels(self) -> int:
        return 2 * self.n_links

    # -- channels ------------------------------------------------------------
    def channel_src(self) -> np.ndarray:
        """Node each channel leaves from."""
        return np.stack([self.link_a, self.link_b], axis=1).reshape(-1)

    def channel_dst(self) -> np.ndarray:
        """Node each channel arrives at."""
        return np.stack([self.link_b, self.link_a], axis=1).reshape(-1)

    def channel_dst_port(self) -> np.ndarray:
        """Port each channel arrives on."""
        return np.stack([self.link_b_port, self.link_a_port], axis=1).reshape(-1)

    def channel_src_port(self) -> np.ndarray:
        """Port each channel leaves from."""
        return np.stack([self.link_a_port, self.link_b_port], axis=1).reshape(-1)

    def channel_bandwidth(self) -> np.ndarray:
        """Bits per second, per channel."""
        return np.repeat(self.link_bandwidth, 2)

    def channel_latency_ns(self) -> np.ndarray:
        return np.repeat(self.link_latency_ns, 2)

    def channel_name(self, c: int) -> str:
        src, dst = self.channel_src()[c], self.channel_dst()[c]
        sp = self.channel_src_port()[c]
        return f"{self.node_names[src]}[{sp}]->{self.node_names[dst]}"

    def link_name(self, link: int) -> str:
        """Link ``link`` by its two ends, as a scenario names ports (``{node: s1_0, port: 5}``).

        >>> from netsteer.topology import pgft
        >>> pgft(2, [4, 4], [1, 2], link_bandwidth=1e10, link_latency_ns=0).link_name(16)
        's1_0:5 <-> s2_0:1'
        """
        n = self.node_names
        return (f"{n[self.link_a[link]]}:{int(self.link_a_port[link])} <-> "
                f"{n[self.link_b[link]]}:{int(self.link_b_port[link])}")

    def port_peer(self, node: int, port: int) -> tuple[int, int]:
        """(node, port) at the far end of ``node``'s ``port``."""
        c = int(self.out_channel[node, port])
        if c < 0:
            raise KeyError(f"{self.node_names[node]} has no port {port}")
        return int(self.channel_dst()[c]), int(self.channel_dst_port()[c])

    # -- lookups -------------------------------------------------------------
    def node(self, name: str) -> int:
        return self._index[name]

    def host_node(self, host: int) -> int:
        """Node id of host index ``host`` (scenarios number hosts 0..n_hosts-1)."""
        return int(self.hosts[host])

    def neighbors(self, node: int) -> list[tuple[int, int, int]]:
        """(port, peer node, peer port) for each connected port of ``node``."""
        out = []
        dst, dport = self.channel_dst(), self.channel_dst_port()
        for port in np.flatnonzero(self.out_channel[node] >= 0):
            c = self.out_channel[node, port]
            out.append((int(port), int(dst[c]), int(dport[c])))
        return out

    def same_wiring(self, other: "Topology") -> bool:
        """Whether ``other`` has the same nodes (names, kinds) and cables (ends and
        ports), so that forwarding tables made for one forward the same on the other
        (bandwidths and latencies may differ).

        >>> from netsteer.topology.pgft import pgft
        >>> a = pgft(1, [4], [1], link_bandwidth=1e9, link_latency_ns=0)
        >>> a.same_wiring(pgft(1, [4], [1], link_bandwidth=4e9, link_latency_ns=9)), a.same_wiring(
        ...     pgft(1, [8], [1], link_bandwidth=1e9, link_latency_ns=0))
        (True, False)
        """
        return other is self or (
            self.node_names == other.node_names and np.array_equal(self.node_kind, other.node_kind)
            and all(np.array_equal(getattr(self, k), getattr(other, k))
                    for k in ("link_a", "link_a_port", "link_b", "link_b_port")))

    def summary(self) -> dict[str, Any]:
        """Counts, for reports."""
        return {
            "name": self.name,
            "hosts": self.n_hosts,
            "switches": int((self.node_kind == SWITCH).sum()),
            "circuit_switches": int((self.node_kind == CIRCUIT).sum()),
            "links": self.n_links,
        }


class TopologyBuilder:
    """Add hosts, switches and links; ports are numbered from 1 per node unless given.

    Bad values raise :class:`netsteer.errors.NetsteerError` naming the parameter
    (``name``, ``a``, ``b``, ``bandwidth``, ``latency_ns``, ``a_port``, ``b_port``);
    it is also a ``ValueError``, as the readers that build topologies catch.

    >>> b = TopologyBuilder("t")
    >>> h0, s = b.add_host("h0"), b.add_switch("s0")
    >>> b.add_link(h0, s, bandwidth=1e9, latency_ns=-5)
    Traceback (most recent call last):
    ...
    netsteer.errors.TopologyBuildError: latency_ns: link h0-s0 needs a finite latency >= 0 ns, got -5
    >>> b.add_link(h0, 7, bandwidth=1e9, latency_ns=0)
    Traceback (most recent call last):
    ...
    netsteer.errors.TopologyBuildError: b: no node 7: the builder has nodes 0..1
    """

    def __init__(self, name: str):
        self.name = name
        self.names: list[str] = []
        self.kind: list[int] = []
        self.level: list[int] = []
        self.guid: list[int] = []
        self.links: list[tuple[int, int, int, int, float, int]] = []
        self.next_port: list[int] = []
        self.used_ports: list[set[int]] = []
        self.switching_time_ns: dict[int, int] = {}
        self.meta: dict[str, Any] = {}
        self._index: dict[str, int] = {}

    def _add(self, name: str, kind: int, level: int, guid: int) -> int:
        if not isinstance(name, str) or not name:
            raise TopologyBuildError(f"a node's name is a non-empty string, got {name!r}", field="name")
        if name in self._index:
            raise TopologyBuildError(f"duplicate node name {name!r}", field="name")
        i = len(self.names)
        self._index[name] = i
        self.names.append(name)
        self.kind.append(kind)
        self.level.append(level)
        self.guid.append(guid)
        self.next_port.append(1)
        self.used_ports.append(set())
        return i

    def add_host(self, name: str, guid: int = 0) -> int:
        return self._add(name, HOST, 0, guid)

    def add_switch(self, name: str, level: int = -1, guid: int = 0) -> int:
        return self._add(name, SWITCH, level, guid)

    def add_circuit_switch(self, name: str, switching_time_ns: int, guid: int = 0) -> int:
        i = self._add(name, CIRCUIT, -1, guid)
        self.switching_time_ns[i] = int(switching_time_ns)
        return i

    def _node(self, node: Any, field: str) -> int:
        if isinstance(node, (bool, np.bool_)) or not isinstance(node, (int, np.integer)) \
                or not 0 <= node < len(self.names):  # (a negative index would wrap to another node)
            nodes = f"nodes 0..{len(self.names) - 1}" if self.names else "no nodes yet"
            raise TopologyBuildError(f"no node {node!r}: the builder has {nodes}", field=field)
        return int(node)

    def _port(self, node: int, port: int | None, field: str) -> int:
        if port is None:
            port = self.next_port[node]
            while port in self.used_ports[node]:
                port += 1
        if port in self.used_ports[node]:
            raise TopologyBuildError(f"port {port} of {self.names[node]} is used twice", field=field)
        if isinstance(port, (bool, np.bool_)) or not isinstance(port, (int, np.integer)):
            raise TopologyBuildError(f"port of {self.names[node]} is an integer, got {port!r}", field=field)
        if not 1 <= port <= MAX_PORT:
            # ports are numbered from 1 (an InfiniBand switch's port 0 is itself, no cable),
            # and the cable table holds them as int32: a larger one would wrap negative
            raise TopologyBuildError(f"port {port} of {self.names[node]}: ports are numbered 1..{MAX_PORT}",
                                     field=field)
        self.used_ports[node].add(port)
        self.next_port[node] = max(self.next_port[node], port + 1)
        return port

    def add_link(
        self,
        a: int,
        b: int,
        *,
        bandwidth: float | str,
        latency_ns: int | str,
        a_port: int | None = None,
        b_port: int | None = None,
    ) -> int:
        """Join ``a`` and ``b`` with a full-duplex cable; returns the link id.

        ``bandwidth`` is bits per second or a text with a unit (``"10Gbps"``);
        ``latency_ns`` is nanoseconds or a text with a unit (``"1us"``), read as
        scenario files and the rest of the API read them.

        >>> b = TopologyBuilder("t")
        >>> h0, s = b.add_host("h0"), b.add_switch("s0")
        >>> b.add_link(h0, s, bandwidth="10Gbps", latency_ns="1us")
        0
        >>> b.links[0][4:]
        (10000000000.0, 1000)
        >>> b.add_link(h0, s, bandwidth="10 parsecs", latency_ns=0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        netsteer.errors.TopologyBuildError: bandwidth: link h0-s0: unknown bandwidth unit 'parsecs' in '10 parsecs'; use one of ...
        """
        a, b = self._node(a, "a"), self._node(b, "b")
        if a == b:
            raise TopologyBuildError(f"link from {self.names[a]} to itself", field="b")
        where = f"{self.names[a]}-{self.names[b]}"
        if isinstance(bandwidth, str):
            try:
                bandwidth = parse_bandwidth(bandwidth)
            except (ValueError, OverflowError) as exc:
                raise TopologyBuildError(f"link {where}: {exc}", field="bandwidth") from None
        if isinstance(latency_ns, str):
            try:
                latency_ns = checked_duration(latency_ns)
            except ValueError as exc:
                raise TopologyBuildError(f"link {where}: {exc}", field="latency_ns") from None
        if not _number(bandwidth) or not 0 < bandwidth < math.inf:
            raise TopologyBuildError(f"link {where} needs a finite, positive bandwidth, got {bandwidth!r}",
                                     field="bandwidth")
        # a negative latency would deliver before sending (the run then ends "stalled")
        if not _number(latency_ns) or not 0 <= latency_ns < math.inf:
            raise TopologyBuildError(f"link {where} needs a finite latency >= 0 ns, got {latency_ns!r}",
                                     field="latency_ns")
        if latency_ns > MAX_DURATION_NS:  # the cable table holds int64 ns, as the clock does
            raise TopologyBuildError(f"link {where} has latency {latency_ns!r} ns; the clock counts int64 "
                                     f"nanoseconds (at most {MAX_DURATION_NS})", field="latency_ns")
        pa, pb = self._port(a, a_port, "a_port"), self._port(b, b_port, "b_port")
        self.links.append((a, pa, b, pb, float(bandwidth), int(latency_ns)))
        return len(self.links) - 1

    def node(self, name: str) -> int:
        return self._index[name]

    def build(self) -> Topology:
        arr = np.array(self.links, dtype=np.float64).reshape(-1, 6)
        return Topology(
            name=self.name,
            node_names=list(self.names),
            node_kind=np.array(self.kind, dtype=np.int8),
            node_level=np.array(self.level, dtype=np.int16),
            node_guid=np.array(self.guid, dtype=np.uint64),
            link_a=arr[:, 0].astype(np.int32),
            link_a_port=arr[:, 1].astype(np.int32),
            link_b=arr[:, 2].astype(np.int32),
            link_b_port=arr[:, 3].astype(np.int32),
            link_bandwidth=arr[:, 4].copy(),
            link_latency_ns=np.array([l[5] for l in self.links], dtype=np.int64),
            switching_time_ns=dict(self.switching_time_ns),
            meta=dict(self.meta),
        )


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))
