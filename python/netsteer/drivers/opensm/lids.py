"""LID assignment: one LID per node endpoint (LMC 0), as OpenSM gives them.

A real fabric already has its LIDs: ibnetdiscover output carries them and
:func:`fabric_lids` returns them. For fabrics that have none (generated, ibsim net
files), :func:`opensm_lids` computes what a fresh OpenSM would assign.

OpenSM (``osm_lid_mgr.c``) gives the SM's own port LID 1 first, then walks its
port table (a map keyed by the port GUID in *network* byte order, compared as a
host integer) and hands out the next free LID to each port. On a little-endian
machine with an empty cache (fresh ``OSM_CACHE_DIR``, ibsim starting with all
LIDs 0) that order is the GUIDs sorted by their byte-swapped value. Verified on
ibsim by ``tests/ib``; when in doubt read the real LIDs back with
:func:`read_guid2lid` or from the LFT dump itself.

Examples
--------
>>> from netsteer.topology.model import HOST, TopologyBuilder
>>> b = TopologyBuilder("t")
>>> s1 = b.add_switch("Switch1", guid=0x200000)
>>> s2 = b.add_switch("Switch2", guid=0x200001)
>>> h = b.add_host("Hca1", guid=0x100000)
>>> _ = b.add_link(s1, h, bandwidth=1e9, latency_ns=1, a_port=1, b_port=1)
>>> _ = b.add_link(s1, s2, bandwidth=1e9, latency_ns=1, a_port=3, b_port=3)
>>> lids = opensm_lids(b.build(), sm_node=s1)
>>> [int(x) for x in lids.lid]
[1, 3, 2]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from netsteer.errors import NetsteerError
from netsteer.topology.model import HOST, Topology

from .guids import endpoint_guid, endpoint_port, guid_index, port_guid

MAX_UNICAST_LID = 0xBFFF  # 0xC000 and above are multicast LIDs


class PortLid(NamedTuple):
    """LID of a CA port that is not its node's endpoint (a dual-port HCA's second port)."""

    node: int
    port: int
    lid: int
    guid: int


@dataclass
class LidMap:
    """LID and port GUID of each node's endpoint, and of the other CA ports.

    Attributes
    ----------
    lid : ndarray of int32, [n_nodes], 0 where the node has no LID
    guid : ndarray of uint64, [n_nodes], port GUID the LID belongs to
    ports : tuple of PortLid
        The other cabled CA ports that have a LID (second ports of dual-port
        HCAs), by LID. Netsteer routes one destination per host, its endpoint;
        the LFT writer still routes these (min-hop, as OpenSM does), so that every
        port OpenSM gave a LID is reachable.
    """

    lid: np.ndarray
    guid: np.ndarray
    ports: tuple[PortLid, ...] = field(default=())

    def __post_init__(self) -> None:
        self.ports = tuple(sorted((PortLid(*map(int, p)) for p in self.ports), key=lambda p: p.lid))

    def node_of_lid(self) -> dict[int, int]:
        """LID -> node, for nodes that have one (endpoints only)."""
        return {int(l): n for n, l in enumerate(self.lid) if l > 0}

    def max_lid(self) -> int:
        """The highest LID in use, endpoints and other ports alike (0 if none)."""
        top = int(self.lid.max()) if len(self.lid) else 0
        return max([top] + [p.lid for p in self.ports])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LidMap):
            return NotImplemented
        return bool(np.array_equal(self.lid, other.lid) and np.array_equal(self.guid, other.guid)
                    and self.ports == other.ports)


def _other_ports(topo: Topology, node: int) -> list[int]:
    """Cabled ports of host ``node`` other than its endpoint (none for a switch)."""
    if topo.node_kind[node] != HOST:
        return []
    ep = endpoint_port(topo, node)
    return [int(p) for p in np.flatnonzero(topo.out_channel[node] >= 0) if int(p) != ep]


def sequential_lids(topo: Topology) -> LidMap:
    """LIDs 1, 2, ... in node order, then the other CA ports; for files that never
    meet a real OpenSM."""
    lid = np.arange(1, topo.n_nodes + 1, dtype=np.int32)
    guid = np.array([endpoint_guid(topo, n) for n in range(topo.n_nodes)], dtype=np.uint64)
    others = [(n, p) for n in range(topo.n_nodes) for p in _other_ports(topo, n)]
    ports = [PortLid(n, p, topo.n_nodes + k, port_guid(topo, n, p)) for k, (n, p) in enumerate(others, 1)]
    return LidMap(lid, guid, tuple(ports))


def _swapped(guid: int) -> int:
    return int.from_bytes(guid.to_bytes(8, "big"), "little")


def opensm_lids(topo: Topology, sm_node: int) -> LidMap:
    """The LIDs a fresh OpenSM (LMC 0, empty cache) assigns; ``sm_node`` runs the SM.

    Every end port takes a LID (a switch's port 0, each cabled host port): the
    endpoint's goes to ``lid``, a dual-port HCA's second port's to ``ports``.
    Nodes without a GUID get no LID.
    """
    ports = []  # (swapped port GUID, node, is endpoint)
    for n in range(topo.n_nodes):
        if not topo.node_guid[n]:
            continue
        cabled = [0] if topo.node_kind[n] != HOST else np.flatnonzero(topo.out_channel[n] >= 0)
        for p in cabled:
            g = port_guid(topo, n, int(p))
            ports.append((_swapped(g), n, int(p) == endpoint_port(topo, n)))
    sm_port = next((k for k, (_, n, ep) in enumerate(ports) if n == sm_node and ep), None)
    if sm_port is None:
        raise ValueError(f"SM node {topo.node_names[sm_node]} has no GUID or no cabled port")
    order = [ports[sm_port]] + sorted(ports[:sm_port] + ports[sm_port + 1 :])
    lid = np.zeros(topo.n_nodes, dtype=np.int32)
    others = []
    for k, (g, n, ep) in enumerate(order, 1):
        if ep:
            lid[n] = k
        else:
            others.append(PortLid(n, _port_of(topo, n, _swapped(g)), k, _swapped(g)))
    guids = [endpoint_guid(topo, n) if lid[n] else 0 for n in range(topo.n_nodes)]
    return LidMap(lid, np.array(guids, dtype=np.uint64), tuple(others))


def _port_of(topo: Topology, node: int, guid: int) -> int:
    return next(p for p in _other_ports(topo, node) if port_guid(topo, node, p) == guid)


def fabric_lids(topo: Topology) -> LidMap | None:
    """The LIDs the fabric itself has (``topo.meta["lid"]``, from ibnetdiscover output).

    Returns None when the topology carries no LIDs (generated, ibsim net files, or
    discovered before an SM ran: all 0); then :func:`opensm_lids` computes them.

    Raises
    ------
    ValueError
        Some nodes have a LID and others, with a GUID, none: naming the first.
    """
    given = topo.meta.get("lid")
    if not given or not any(given):
        return None
    lid = np.asarray(given, dtype=np.int32)
    missing = [n for n in range(topo.n_nodes) if topo.node_guid[n] and lid[n] == 0]
    if missing:
        raise ValueError(f"{topo.node_names[missing[0]]} has no LID while other nodes have one "
                         "(was the fabric discovered before the SM assigned LIDs?)")
    guids = [endpoint_guid(topo, n) if lid[n] else 0 for n in range(topo.n_nodes)]
    port_lids = topo.meta.get("port_lids", {})  # {node: {port: LID}}, every CA port's
    ports = [PortLid(n, p, int(port_lids[n][p]), port_guid(topo, n, p))
             for n in range(topo.n_nodes) for p in _other_ports(topo, n)
             if port_lids.get(n, {}).get(p)]
    return LidMap(lid, np.array(guids, dtype=np.uint64), tuple(ports))


def read_guid2lid(path: str | Path, topo: Topology) -> LidMap:
    """Read OpenSM's ``guid2lid`` cache (``0xGUID 0xMINLID 0xMAXLID`` per line).

    GUIDs of other CA ports (second ports of dual-port HCAs) go to ``ports``;
    unknown GUIDs raise :class:`NetsteerError`.
    """
    path = str(path)
    index = guid_index(topo)
    lid = np.zeros(topo.n_nodes, dtype=np.int32)
    guid = np.zeros(topo.n_nodes, dtype=np.uint64)
    ports = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            where = {"file": path, "field": f"line {lineno}"}
            try:
                g, lo, hi = (int(x, 16) for x in fields)
            except ValueError:
                raise NetsteerError(
                    f"expected '0xGUID 0xMINLID 0xMAXLID', got {line.strip()!r}", **where
                ) from None
            if g not in index:
                raise NetsteerError(f"GUID {g:#018x} is not in the topology", **where)
            if not 0 < lo <= hi <= MAX_UNICAST_LID:
                raise NetsteerError(f"LID range {lo:#x}-{hi:#x} is not unicast", **where)
            node, port = index[g]
            if endpoint_guid(topo, node) == g:
                lid[node], guid[node] = lo, g
            elif port_guid(topo, node, port) == g:
                ports.append(PortLid(node, port, lo, g))
    return LidMap(lid, guid, tuple(ports))
