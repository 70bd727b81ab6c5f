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

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from netsteer.errors import NetsteerError
from netsteer.topology.model import HOST, Topology

from .guids import endpoint_guid, endpoint_port, guid_index, port_guid

MAX_UNICAST_LID = 0xBFFF  # 0xC000 and above are multicast LIDs


@dataclass
class LidMap:
    """LID and port GUID of each node's endpoint.

    Attributes
    ----------
    lid : ndarray of int32, [n_nodes], 0 where the node has no LID
    guid : ndarray of uint64, [n_nodes], port GUID the LID belongs to
    """

    lid: np.ndarray
    guid: np.ndarray

    def node_of_lid(self) -> dict[int, int]:
        """LID -> node, for nodes that have one."""
        return {int(l): n for n, l in enumerate(self.lid) if l > 0}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LidMap):
            return NotImplemented
        return bool(np.array_equal(self.lid, other.lid) and np.array_equal(self.guid, other.guid))


def sequential_lids(topo: Topology) -> LidMap:
    """LIDs 1, 2, ... in node order; for files that never meet a real OpenSM."""
    lid = np.arange(1, topo.n_nodes + 1, dtype=np.int32)
    guid = np.array([endpoint_guid(topo, n) for n in range(topo.n_nodes)], dtype=np.uint64)
    return LidMap(lid, guid)


def _swapped(guid: int) -> int:
    return int.from_bytes(guid.to_bytes(8, "big"), "little")


def opensm_lids(topo: Topology, sm_node: int) -> LidMap:
    """The LIDs a fresh OpenSM (LMC 0, empty cache) assigns; ``sm_node`` runs the SM.

    Every end port takes a LID (a switch's port 0, each cabled host port), so the
    second port of a dual-port HCA uses up a LID too; the map keeps the endpoint's.
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
    for k, (_, n, ep) in enumerate(order, 1):
        if ep:
            lid[n] = k
    guids = [endpoint_guid(topo, n) if lid[n] else 0 for n in range(topo.n_nodes)]
    return LidMap(lid, np.array(guids, dtype=np.uint64))


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
    return LidMap(lid, np.array(guids, dtype=np.uint64))


def read_guid2lid(path: str | Path, topo: Topology) -> LidMap:
    """Read OpenSM's ``guid2lid`` cache (``0xGUID 0xMINLID 0xMAXLID`` per line).

    GUIDs that are not a node's endpoint (second ports of dual-port HCAs) are
    skipped; unknown GUIDs raise :class:`NetsteerError`.
    """
    path = str(path)
    index = guid_index(topo)
    lid = np.zeros(topo.n_nodes, dtype=np.int32)
    guid = np.zeros(topo.n_nodes, dtype=np.uint64)
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
    return LidMap(lid, guid)
