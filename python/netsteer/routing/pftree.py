"""pFTree: partition-aware fat-tree routing (Zahid, Gran, Bogdanski, Johnsen, Skeie).

The objectives, in order:

1. **Balance** -- exactly ftree's (:mod:`.ftree`): destination-based, iterative,
   with down and up counters on every port group; each route adds one, and a
   choice is only ever made among the *least loaded* groups. pFTree tables
   therefore have ftree's load profile.
2. **Isolation of partitions** -- physically where there are enough links:

   - on every leaf the hosts are routed grouped by partition (the source's
     "sort end nodes in partition order"), so that a partition's destinations
     take consecutive least-loaded up links;
   - every switch a destination's route goes down from is *marked* with its
     partition. Among the least loaded up groups, pFTree prefers the one whose
     far switch is already marked for the destination's partition (fewest other
     partitions first), then an unmarked one, then the one shared with the
     fewest partitions. A switch that only one partition's destinations go down
     from carries only that partition's traffic on all its links;
   - among parallel cables, each partition gets a contiguous block of ports,
     the blocks as even as ftree's round robin.

   and through **virtual lanes** where there are not: partitions whose own
   traffic still shares a channel are given different VLs (greedy colouring of
   the sharing graph, most-shared first, over ``vls`` lanes; when lanes run out
   the lane shared with the fewest neighbours is reused). The result carries
   ``partition_sl`` (PKey -> SL, with SL2VL the identity): write it into
   ``partitions.conf`` as ``sl=`` with :func:`partitions_with_sl`, and into
   ``opensm.conf`` with :func:`opensm_qos_conf`.

A host belongs to the first partition (in file order, the default 0x7fff
excluded) that lists it; hosts in none are routed last on their leaf and carry
no mark.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.drivers.opensm.partitions import Partition
>>> t = pgft(2, [4, 4], [1, 4], link_bandwidth=1e9, link_latency_ns=0)
>>> a = Partition("a", 1, {t.host_node(h): "full" for h in (0, 1, 4, 5, 8, 9, 12, 13)})
>>> b = Partition("b", 2, {t.host_node(h): "full" for h in (2, 3, 6, 7, 10, 11, 14, 15)})
>>> r = pftree(t, partitions=[a, b])
>>> r.check()
>>> shared_channels(r, [a, b])
0
>>> sorted(r.partition_sl.values())
[0, 0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..drivers.opensm.partitions import Partition
from ..errors import RoutingError
from ..topology.model import Topology
from .deadlock import partition_channels
from .fattree_ranks import FatTree, fat_tree
from .ftree import destination_order, fill_tables, main_paths
from .table import Routing

DEFAULT_PKEY = 0x7FFF


def host_partitions(topo: Topology, partitions: Sequence[Partition]) -> np.ndarray:
    """Per host index: position in ``partitions`` of its partition, -1 for none.

    The first partition that lists the host wins; the default partition (PKey
    0x7fff) never counts.
    """
    part = np.full(topo.n_hosts, -1, dtype=np.int64)
    for i, p in enumerate(partitions):
        if p.pkey == DEFAULT_PKEY:
            continue
        for node in p.members:
            hi = topo.host_index[node]
            if hi >= 0 and part[hi] < 0:
                part[hi] = i
    return part


def pftree(
    topo: Topology,
    circuits=None,
    partitions: Sequence[Partition] | None = None,
    vls: int = 8,
) -> Routing:
    """Route a fat-tree with pFTree.

    Parameters
    ----------
    topo : Topology
        A fat-tree (PGFT, XGFT, RLFT, oversubscribed or not, or an imported
        fabric with that shape; see :mod:`.fattree_ranks`).
    circuits : None
        Accepted for the uniform engine signature.
    partitions : list of Partition, optional
        OpenSM partitions (:func:`netsteer.drivers.opensm.partitions.read_partitions_conf`).
        Without them pFTree is ftree.
    vls : int
        Data virtual lanes available for isolating partitions that share links (1..15).

    Returns
    -------
    Routing
        With ``partitions``, ``partition_sl`` and ``partition_vl`` (PKey -> SL/VL)
        and ``vls`` attributes.
    """
    if not 1 <= int(vls) <= 15:
        raise RoutingError(f"pftree: vls must be 1..15 data virtual lanes, got {vls}")
    parts = list(partitions or [])
    if len(parts) > 64:
        raise RoutingError(f"pftree isolates at most 64 partitions, got {len(parts)}")
    ft = fat_tree(topo)
    hpart = host_partitions(topo, parts)
    rank = np.where(hpart < 0, len(parts), hpart)
    order = destination_order(ft, key=lambda h: rank[h])
    dpart = np.where(order >= 0, hpart[np.maximum(order, 0)], -1)
    marks: dict[int, int] = {}  # switch -> bitmask of partitions routed down from it
    index = ft.index
    parent = ft.g_parent

    def prefer(i: int, node: int, cands: list[int]) -> int:
        p = int(dpart[i])
        if p < 0 or len(cands) == 1:
            g = cands[0]
        else:
            bit = 1 << p

            def score(g):
                m = marks.get(int(parent[g]), 0)
                others = bin(m & ~bit).count("1")
                return (others, 0 if m & bit else 1, index[parent[g]])

            g = min(cands, key=score)
        if p >= 0:
            sw = int(parent[g])
            marks[sw] = marks.get(sw, 0) | (1 << p)
        return g

    groups = main_paths(ft, order, prefer)

    def blocks(ft: FatTree, g, pos, kind, order_):
        # balanced like a round robin, but each partition's uses of a group contiguous
        size = (ft.g_ptr[g + 1] - ft.g_ptr[g]).astype(np.int64)
        part = np.where(dpart[pos] < 0, len(parts), dpart[pos])
        o = np.lexsort((pos, part, g))
        gs = g[o]
        first = np.r_[0, np.flatnonzero(gs[1:] != gs[:-1]) + 1]
        n = np.diff(np.r_[first, len(gs)])
        start = np.repeat(first, n)
        total = np.repeat(n, n)
        rank_ = np.empty(len(g), dtype=np.int64)
        rank_[o] = ((np.arange(len(gs)) - start) * size[o]) // total
        return rank_

    r = fill_tables(ft, order, groups, blocks, engine="pftree")
    r.partitions = parts
    sl = assign_vls(r, parts, vls)
    r.partition_sl = sl
    r.partition_vl = dict(sl)  # SL2VL is the identity
    r.vls = int(vls)
    return r


def assign_vls(routing: Routing, partitions: Sequence[Partition], vls: int) -> dict[int, int]:
    """PKey -> VL: partitions whose traffic shares a channel get different lanes.

    Partitions isolated physically all stay on VL 0. Greedy colouring, the
    partition sharing channels with the most others first; with more conflicts
    than lanes, the lane used by the fewest conflicting neighbours is reused.
    """
    real = [p for p in partitions if p.pkey != DEFAULT_PKEY]
    out = {p.pkey: 0 for p in partitions}
    if len(real) < 2 or vls < 2:
        return out
    mask = partition_channels(routing, real)
    n = len(real)
    shared = mask[mask & (mask - np.uint64(1)) != 0]  # channels used by 2+ partitions
    conflict = np.zeros((n, n), dtype=bool)
    for m in np.unique(shared):
        bits = [i for i in range(n) if int(m) >> i & 1]
        for i in bits:
            for j in bits:
                conflict[i, j] = i != j
    colour = np.full(n, -1, dtype=np.int64)
    for i in sorted(range(n), key=lambda i: (-int(conflict[i].sum()), i)):
        used = np.bincount(colour[conflict[i] & (colour >= 0)], minlength=vls)
        colour[i] = int(np.argmin(used))  # a free lane (count 0) if any, lowest first
    for i, p in enumerate(real):
        out[p.pkey] = int(colour[i])
    return out


def shared_channels(routing: Routing, partitions: Sequence[Partition]) -> int:
    """Number of channels that carry the own traffic of two or more partitions."""
    real = [p for p in partitions if p.pkey != DEFAULT_PKEY]
    if len(real) < 2:
        return 0
    mask = partition_channels(routing, real)
    return int((mask & (mask - np.uint64(1)) != 0).sum())


def partitions_with_sl(partitions: Sequence[Partition], sl: dict[int, int]) -> list[Partition]:
    """Copies of ``partitions`` with the ``sl`` flag set from ``sl`` (PKey -> SL)."""
    out = []
    for p in partitions:
        q = Partition(p.name, p.pkey, dict(p.members), dict(p.flags), p.ipoib, p.indx0,
                      p.self_membership, list(p.mgroups), p.line)
        if p.pkey in sl:
            q.flags["sl"] = int(sl[p.pkey])
        out.append(q)
    return out


def opensm_qos_conf(vls: int) -> str:
    """``opensm.conf`` lines enabling QoS with SL ``i`` on VL ``i`` (the pFTree lanes).

    >>> print(opensm_qos_conf(4), end="")
    qos TRUE
    qos_max_vls 4
    qos_high_limit 0
    qos_vlarb_high 0:0
    qos_vlarb_low 0:64,1:64,2:64,3:64
    qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3
    """
    sl2vl = ",".join(str(sl % vls) for sl in range(16))
    low = ",".join(f"{v}:64" for v in range(vls))
    return (
        "qos TRUE\n"
        f"qos_max_vls {vls}\n"
        "qos_high_limit 0\n"
        "qos_vlarb_high 0:0\n"
        f"qos_vlarb_low {low}\n"
        f"qos_sl2vl {sl2vl}\n"
    )
