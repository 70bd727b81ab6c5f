"""pFTree: partition-aware fat-tree routing (Zahid, Gran, Bogdanski, Johnsen, Skeie).

The objectives, in order:

1. **Balance**, as a property of the finished tables: no switch-to-switch channel
   carries more of the all-to-all traffic, nor more destinations, than under ftree
   (:mod:`.ftree`, OpenSM's fat-tree routing).
2. **Isolation of partitions**: physically, on links of their own, wherever the
   links allow it; where they do not, partitions that still share a channel are
   given different **virtual lanes**.

How (:mod:`._pftree_plan`): main paths are chosen partition by partition, the
partition with the most members on one leaf first, each destination taking the
path whose traffic tree crosses the fewest channels already carrying another
partition, then the one reusing its own partition's channels, within per-port
caps taken from ftree (so a partition can stay on "its" spines instead of
being pushed onto the next least-loaded one at every step). Among parallel
cables each partition gets a contiguous block of ports.

The result is checked, not trusted: the tables are profiled
(:mod:`.traffic_profile`) and kept only if their maximum all-to-all load and
destinations per channel are no higher than ftree's; otherwise, or when it
shares more channels, the per-step greedy (least-loaded groups, preferring the
partition's marked switches) or ftree itself is taken, whichever shares fewest
channels. pFTree therefore never shares more channels, nor loads a channel
more, than ftree.

Lanes: partitions whose own traffic still shares a channel get different VLs
(greedy colouring of the sharing graph, most-shared first, over ``vls`` lanes;
when lanes run out, the lane shared with the fewest neighbours is reused). The
result carries ``partition_sl`` (PKey -> SL, with SL2VL the identity) for the
``opensm`` driver (:mod:`netsteer.drivers.opensm.qos`).

Which partitions are isolated does not depend on the order they are listed in
(:func:`planned_partitions`): a *common* partition, one that shares a host with a
partition of fewer hosts (storage, management, or all hosts), cannot be isolated from
those partitions (its traffic reaches them) and is left out: not planned, profiled
nor given a lane (it stays on SL 0). A host in several of the others is planned with
the one of fewest hosts (ties: the lower PKey). Hosts in none are routed last,
within the caps. The result's ``notes`` say which partitions were left out, and
which ``sl=`` of the partitions given the lanes replace.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.topology.partitions import Partition
>>> from netsteer.routing.ftree import ftree
>>> t = pgft(2, [6, 10], [1, 3], link_bandwidth=1e9, link_latency_ns=0)
>>> a = Partition("a", 1, {t.host_node(h): "full" for h in range(60) if h % 6 >= 4})
>>> b = Partition("b", 2, {t.host_node(h): "full" for h in range(60) if h % 6 < 4})
>>> r = pftree(t, partitions=[a, b])
>>> r.check()
>>> shared_channels(r, [a, b]), shared_channels(ftree(t), [a, b])
(0, 40)
>>> r.choice, sorted(r.partition_sl.values())
('planned', [0, 0])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import RoutingError
from ..topology.model import Topology
from ..topology.partitions import Partition, host_partitions, isolating, pkey_text
from ._pftree_plan import ftree_caps, plan_main_paths
from .fattree_ranks import FatTree, fat_tree
from .ftree import destination_order, fill_tables, main_paths, round_robin_ports
from .table import Routing
from .traffic_profile import Profile, profile

__all__ = ["MAX_PARTITIONS", "assign_vls", "host_partitions", "pftree", "planned_partitions", "shared_channels"]

#: Partitions pftree isolates at most (the default 0x7fff one not counted): a channel's
#: partitions are a 64-bit mask.
MAX_PARTITIONS = 64


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
        Without them pFTree is ftree.
    vls : int
        Data virtual lanes available for isolating partitions that share links (1..15).

    Returns
    -------
    Routing
        With ``partitions``, ``partition_sl`` and ``partition_vl`` (PKey -> SL/VL),
        ``notes`` (list of str: common partitions left out, ``sl=`` flags replaced),
        ``vls``, ``choice`` (``"planned"``, ``"greedy"`` or ``"ftree"``: which
        tables passed the checks) and ``profile`` (:class:`.traffic_profile.Profile`
        of the chosen tables, None without partitions).
    """
    if not 1 <= int(vls) <= 15:
        raise RoutingError(f"pftree: vls must be 1..15 data virtual lanes, got {vls}")
    parts = list(partitions or [])
    if len(isolating(parts)) > MAX_PARTITIONS:
        raise RoutingError(f"pftree isolates at most {MAX_PARTITIONS} partitions, got {len(isolating(parts))}")
    real, hpart, notes = planned_partitions(topo, parts)
    ft = fat_tree(topo, "pftree")
    base_order = destination_order(ft)
    base_paths = main_paths(ft, base_order)
    if len(real) < 2 or topo.n_hosts < 2:
        r = fill_tables(ft, base_order, base_paths, round_robin_ports, engine="pftree")
        return _finish(r, parts, real, vls, "ftree", None, notes)
    rank = np.where(hpart < 0, len(real), hpart)
    order = destination_order(ft, key=lambda h: rank[h])
    blocks = _partition_blocks(order, hpart, len(real))
    cap = ftree_caps(ft, base_paths, base_order)

    planned = fill_tables(ft, order, plan_main_paths(ft, order, hpart, len(real), cap), blocks, engine="pftree")
    p_plan = profile(planned, real)
    base = fill_tables(ft, base_order, base_paths, round_robin_ports, engine="pftree")
    p_base = profile(base, real, isolation=p_plan.shared_channels > 0)
    bound = (p_base.max_switch_load, p_base.max_routes)
    if p_plan.shared_channels == 0 and _within(p_plan, bound):
        return _finish(planned, parts, real, vls, "planned", p_plan, notes)
    # links could not isolate everything: the per-step greedy and ftree compete with the plan
    greedy = fill_tables(ft, order, main_paths(ft, order, _greedy_marks(ft, order, hpart)), blocks, engine="pftree")
    cands = [("planned", planned, p_plan), ("greedy", greedy, profile(greedy, real)), ("ftree", base, p_base)]
    ok = [c for c in cands if _within(c[2], bound)]
    name, r, prof = min(ok, key=lambda c: (c[2].shared_channels, c[2].max_partition_load))
    return _finish(r, parts, real, vls, name, prof, notes)


def _within(p: Profile, bound: tuple[int, int]) -> bool:
    return p.max_switch_load <= bound[0] and p.max_routes <= bound[1]


def planned_partitions(topo: Topology, partitions: Sequence[Partition]):
    """The partitions pFTree isolates, each host's among them, and notes.

    A partition that shares a host with an isolating partition of fewer hosts is
    *common* and left out; the rest are ordered by PKey, and a host in several is
    planned with the one of fewest hosts (ties: the lower PKey). Nothing depends on
    the order of ``partitions``. Returns ``(isolated, hpart, notes)``: ``hpart`` per
    host index the position in ``isolated``, -1 for none.

    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(1, [4], [1], link_bandwidth=1e9, link_latency_ns=0)
    >>> every = Partition("storage", 1, {t.host_node(h): "full" for h in range(4)})
    >>> a = Partition("a", 2, {t.host_node(0): "full", t.host_node(1): "full"})
    >>> iso, hpart, notes = planned_partitions(t, [every, a])
    >>> [p.name for p in iso], hpart.tolist(), len(notes)
    (['a'], [0, 0, -1, -1], 1)
    """
    real = sorted(isolating(partitions), key=lambda p: p.pkey)
    hosts = [{int(topo.host_index[n]) for n in p.members if topo.host_index[n] >= 0} for p in real]
    common, notes = set(), []
    for i, p in enumerate(real):
        smaller = [q for j, q in enumerate(real) if len(hosts[j]) < len(hosts[i]) and hosts[j] & hosts[i]]
        if smaller:
            common.add(i)
            notes.append(
                f"pftree: partition {p.name or pkey_text(p.pkey)!r} ({pkey_text(p.pkey)}) shares hosts with "
                f"smaller partitions ({', '.join(repr(q.name or pkey_text(q.pkey)) for q in smaller)}): it is "
                "not isolated (its traffic reaches theirs), its hosts are planned with their own partitions, "
                "and it stays on SL 0")
    kept = [i for i in range(len(real)) if i not in common]
    hpart = np.full(topo.n_hosts, -1, dtype=np.int64)
    for k in sorted(range(len(kept)), key=lambda k: (len(hosts[kept[k]]), real[kept[k]].pkey)):
        for h in sorted(hosts[kept[k]]):
            if hpart[h] < 0:
                hpart[h] = k
    return [real[i] for i in kept], hpart, notes


def _finish(r: Routing, parts, real, vls: int, choice: str, prof: Profile | None, notes: list[str]) -> Routing:
    r.partitions = parts
    r.choice = choice
    r.profile = prof
    mask = prof.partition_mask if prof is not None else None
    sl = {p.pkey: 0 for p in parts} | assign_vls(r, real, vls, mask=mask)
    r.notes = list(notes)
    for p in isolating(parts):
        given = p.flags.get("sl")
        if given is not None and int(given) != sl[p.pkey]:
            r.notes.append(f"pftree: partition {p.name or pkey_text(p.pkey)!r} ({pkey_text(p.pkey)}) gives "
                           f"sl={given}; pftree puts it on SL {sl[p.pkey]} (its lane), which --sl-out writes")
    r.partition_sl = sl
    r.partition_vl = dict(sl)  # SL2VL is the identity
    r.vls = int(vls)
    return r


def _partition_blocks(order: np.ndarray, hpart: np.ndarray, n_parts: int):
    """Port slots among parallel cables: balanced like a round robin, each
    partition's uses of a group on a contiguous block of its ports."""
    dpart = np.where(order >= 0, hpart[np.maximum(order, 0)], -1)

    def blocks(ft: FatTree, g, pos, kind, order_):
        size = (ft.g_ptr[g + 1] - ft.g_ptr[g]).astype(np.int64)
        part = np.where(dpart[pos] < 0, n_parts, dpart[pos])
        o = np.lexsort((pos, part, g))
        gs = g[o]
        first = np.r_[0, np.flatnonzero(gs[1:] != gs[:-1]) + 1]
        n = np.diff(np.r_[first, len(gs)])
        start = np.repeat(first, n)
        total = np.repeat(n, n)
        slot = np.empty(len(g), dtype=np.int64)
        slot[o] = ((np.arange(len(gs)) - start) * size[o]) // total
        return slot

    return blocks


def _greedy_marks(ft: FatTree, order: np.ndarray, hpart: np.ndarray):
    """The per-step rule: among ftree's least-loaded groups, the one whose far
    switch carries the fewest other partitions, preferring its own."""
    dpart = np.where(order >= 0, hpart[np.maximum(order, 0)], -1)
    marks: dict[int, int] = {}
    index, parent = ft.index, ft.g_parent

    def prefer(i: int, node: int, cands: list[int]) -> int:
        p = int(dpart[i])
        if p < 0 or len(cands) == 1:
            g = cands[0]
        else:
            bit = 1 << p

            def score(g):
                m = marks.get(int(parent[g]), 0)
                return (bin(m & ~bit).count("1"), 0 if m & bit else 1, index[parent[g]])

            g = min(cands, key=score)
        if p >= 0:
            sw = int(parent[g])
            marks[sw] = marks.get(sw, 0) | (1 << p)
        return g

    return prefer


def assign_vls(routing: Routing, partitions: Sequence[Partition], vls: int, mask=None) -> dict[int, int]:
    """PKey -> VL: partitions whose traffic shares a channel get different lanes.

    Partitions isolated physically all stay on VL 0. Greedy colouring, the
    partition sharing channels with the most others first; with more conflicts
    than lanes, the lane used by the fewest conflicting neighbours is reused.
    ``mask`` is the partitions' channel bitmask when already known
    (:attr:`.traffic_profile.Profile.partition_mask`).
    """
    real = isolating(partitions)
    out = {p.pkey: 0 for p in partitions}
    if len(real) < 2 or vls < 2:
        return out
    if mask is None:
        mask = profile(routing, real, balance=False).partition_mask
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
    real = isolating(partitions)
    if len(real) < 2:
        return 0
    return profile(routing, real, balance=False).shared_channels
