"""OpenSM's fat-tree routing (``-R ftree``), for generated and imported fat-trees.

The algorithm of ``osm_ucast_ftree.c`` (Zahavi et al.), in its order:

1. Rank and index the switches (:mod:`.fattree_ranks`).
2. For every leaf in index order, for every host on it in port order, and then for
   as many *dummy* hosts as the fullest leaf has more (so that partly filled
   leaves still count as full): route the destination.
3. Routing a destination ``d`` (``fabric_route_downgoing_by_going_up``): from its
   leaf, climb the *main path*: at each switch take the up port group with the
   lowest *down counter* (routes already going down through it; ties go to the
   lowest index), and inside the group the port with the lowest counter; add one
   to both. Every switch of the main path routes ``d`` down towards the switch
   below it. From each main-path switch, every switch below it that has no route
   to ``d`` yet is routed *up* towards it (``fabric_route_upgoing_by_going_down``);
   among parallel cables the one with the lowest *up counter* is taken and counted.
   Switches above ``d`` that are not on the main path route down towards ``d``.

Because ties go to the lowest index and a chosen counter grows by one, the choice
among the parallel ports of one group is a round robin in destination order; this
module uses that to fill the tables for all destinations with numpy, after a
short sequential pass that only picks the main paths.

Differences from OpenSM (none changes the load on a pure fat-tree): the
``reverse_hops``, ``connect_roots``, root/CN/IO GUID-file options and sibling
(same-level) cables are not supported; switch destinations (management LIDs) are
routed by :func:`netsteer.drivers.opensm.lft_dump.minhop_switch_lft` when written;
OpenSM's tie-break on the far switch's least loaded down group never fires (that
counter stays zero in OpenSM) and is left out.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [4, 4], [1, 4], link_bandwidth=1e9, link_latency_ns=0)
>>> r = ftree(t)
>>> r.check()
>>> [r.describe(0, d) for d in (5, 6)]
['h0 -> s1_0 -> s2_1 -> s1_1 -> h5', 'h0 -> s1_0 -> s2_2 -> s1_1 -> h6']
>>> ftree(pgft(1, [4], [1], link_bandwidth=1e9, link_latency_ns=0)).describe(0, 3)
'h0 -> s1_0 -> h3'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..topology.model import Topology
from .fattree_ranks import FatTree, fat_tree
from .table import Routing

# destinations filled per numpy pass: bounds the [switches x chunk] work arrays
_CHUNK = 1024


def ftree(topo: Topology, circuits=None, partitions: Sequence | None = None) -> Routing:
    """Route a fat-tree as OpenSM's ``ftree`` engine does.

    Parameters
    ----------
    topo : Topology
        A fat-tree: a generated PGFT or an imported fabric (see :mod:`.fattree_ranks`).
    circuits : None
        Accepted for the uniform engine signature; fat-trees have no circuit switches.
    partitions : list of Partition, optional
        Not used for routing (ftree ignores partitions); kept on the result as
        ``routing.partitions`` so that checks and evaluation respect them.

    Returns
    -------
    Routing
        Rows for the switches (an unranked one's stays -1); hosts have none (a host
        leaves on its endpoint port).

    Raises
    ------
    RoutingError
        The topology is not a fat-tree (the message names the switch at fault).
    """
    ft = fat_tree(topo)
    order = destination_order(ft)
    groups = main_paths(ft, order)
    r = fill_tables(ft, order, groups, round_robin_ports, engine="ftree")
    r.partitions = list(partitions) if partitions else []
    return r


def destination_order(ft: FatTree, key: Callable[[int], object] | None = None) -> np.ndarray:
    """Host indices in routing order, -1 for a dummy host.

    Leaves in index order; on each, its hosts in port order (or sorted by ``key``
    of the host index, stable), then dummies up to the fullest leaf's count.
    """
    topo = ft.topo
    H = topo.n_hosts
    on_leaf: dict[int, list[int]] = {int(l): [] for l in ft.leaves}
    for h in np.lexsort((ft.host_port, ft.host_leaf)):
        on_leaf[int(ft.host_leaf[h])].append(int(h))
    most = max((len(v) for v in on_leaf.values()), default=0)
    out: list[int] = []
    for leaf in ft.leaves:
        hs = on_leaf[int(leaf)]
        if key is not None:
            hs = sorted(hs, key=key)
        out += hs + [-1] * (most - len(hs))
    order = np.asarray(out, dtype=np.int64)
    assert (np.sort(order[order >= 0]) == np.arange(H)).all()
    return order


def _dest_leaves(ft: FatTree, order: np.ndarray) -> np.ndarray:
    """Leaf of each destination in ``order`` (dummies sit on the leaf they pad)."""
    leaf = np.empty(len(order), dtype=np.int64)
    per = len(order) // max(len(ft.leaves), 1)
    leaf[:] = np.repeat(ft.leaves, per)
    return leaf


def main_paths(
    ft: FatTree,
    order: np.ndarray,
    prefer: Callable[[int, int, list[int]], int] | None = None,
) -> np.ndarray:
    """The up group each destination's main path takes from each level.

    Returns
    -------
    ndarray of int64, [len(order), top]
        Column ``l`` (1 <= l < top) is the group from level ``l`` to ``l+1``;
        column 0 is unused.

    ``prefer(dest_position, node, candidates)`` may pick among the least loaded
    groups (all with the same down counter, in index order); by default the first,
    which is OpenSM's choice.
    """
    T = ft.top
    out = np.full((len(order), max(T, 1)), -1, dtype=np.int64)
    if T < 2:
        return out
    count = [0] * ft.n_groups  # down counter per group
    parent = ft.g_parent.tolist()
    ups: dict[int, list[int]] = {}
    leaves = _dest_leaves(ft, order)
    for i, leaf in enumerate(leaves.tolist()):
        cur = leaf
        for lv in range(1, T):
            gs = ups.get(cur)
            if gs is None:
                gs = ups[cur] = ft.up_groups(cur).tolist()
            low = min(count[g] for g in gs)
            if prefer is None:
                g = next(g for g in gs if count[g] == low)
            else:
                g = prefer(i, cur, [g for g in gs if count[g] == low])
            out[i, lv] = g
            count[g] += 1
            cur = parent[g]
    return out


def round_robin_ports(ft: FatTree, g: np.ndarray, pos: np.ndarray, kind: str, order: np.ndarray) -> np.ndarray:
    """Port slot (index into the group's ports) for each use of a parallel group.

    OpenSM's counters make this a round robin over the uses of each group in
    destination order; ``kind`` is ``"down"`` (main path) or ``"up"``.
    """
    size = (ft.g_ptr[g + 1] - ft.g_ptr[g]).astype(np.int64)
    o = np.lexsort((pos, g))
    rank = np.empty(len(g), dtype=np.int64)
    gs = g[o]
    first = np.r_[0, np.flatnonzero(gs[1:] != gs[:-1]) + 1]
    run = np.repeat(first, np.diff(np.r_[first, len(gs)]))
    rank[o] = np.arange(len(gs)) - run
    return rank % size


def fill_tables(ft: FatTree, order: np.ndarray, mgroups: np.ndarray, port_slots, engine: str) -> Routing:
    """All destinations' table entries from their main paths, vectorised.

    Parameters
    ----------
    order : ndarray, host index per destination position (-1 dummy)
    mgroups : ndarray, from :func:`main_paths`
    port_slots : callable
        ``port_slots(ft, groups, positions, kind, order)``: which port of each used
        parallel group (see :func:`round_robin_ports`).
    engine : str
        Name the tables carry.

    Returns
    -------
    Routing
        Rows for the switches only: host rows would stay -1 (a host's endpoint port).
    """
    topo = ft.topo
    T = ft.top
    D = len(order)
    tables = Routing.blank(topo, rows=topo.switches, engine=engine)
    sw = np.flatnonzero(ft.level > 0)
    S = len(sw)
    sidx = np.full(topo.n_nodes, -1, dtype=np.int64)
    sidx[sw] = np.arange(S)
    leaves = _dest_leaves(ft, order)
    gsize = np.diff(ft.g_ptr)
    parallel = gsize > 1
    # uses of parallel groups, resolved once all are known: (group, position, switch, kind)
    pend: dict[str, list[np.ndarray]] = {"down": [], "up": [], "side": []}
    up_ptr, up_list = ft._up_ptr, ft._up
    down_ptr, down_list = ft._down_ptr, ft._down

    def expand(nodes: np.ndarray, ptr: np.ndarray, lst: np.ndarray):
        cnt = ptr[nodes + 1] - ptr[nodes]
        rep = np.repeat(np.arange(len(nodes)), cnt)
        off = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        return rep, lst[ptr[nodes][rep] + off]

    lvl_rows = {lv: np.flatnonzero(ft.level[sw] == lv) for lv in range(1, T + 1)}
    first_up_port = np.full(S, -1, dtype=np.int32)
    has_up = ft._up_ptr[sw + 1] > ft._up_ptr[sw]
    first_up_port[has_up] = ft.g_child_port[ft.g_ptr[ft._up[ft._up_ptr[sw[has_up]]]]]

    for a in range(0, D, _CHUNK):
        pos = np.arange(a, min(a + _CHUNK, D))
        C = len(pos)
        cols = np.arange(C)
        port = np.full((S, C), -1, dtype=np.int32)
        routed = np.zeros((S, C), dtype=bool)
        dleaf = leaves[pos]
        real = order[pos] >= 0
        port[sidx[dleaf[real]], cols[real]] = ft.host_port[order[pos[real]]]
        routed[sidx[dleaf], cols] = True
        # main path: each switch routes down to the one below it
        mains = [dleaf]
        for lv in range(1, T):
            g = mgroups[pos, lv]
            up = ft.g_parent[g].astype(np.int64)
            routed[sidx[up], cols] = True
            port[sidx[up], cols] = ft.g_parent_port[ft.g_ptr[g]]
            par = parallel[g]
            if par.any():
                pend["down"].append(np.stack([g[par], pos[par], up[par]]))
            mains.append(up)
        # other switches above d: down towards a child that has d below
        anc = [None, (dleaf, cols)]  # per level: switches above d, main path first
        for lv in range(1, T):
            front_n, front_c = anc[lv]
            rep, g = expand(front_n, up_ptr, up_list)
            p = ft.g_parent[g].astype(np.int64)
            c = front_c[rep]
            keep = ~routed[sidx[p], c]
            p, c, g = p[keep], c[keep], g[keep]
            key = sidx[p] * C + c
            first = np.sort(np.unique(key, return_index=True)[1])  # keep main-first order
            p, c, g = p[first], c[first], g[first]
            routed[sidx[p], c] = True
            port[sidx[p], c] = ft.g_parent_port[ft.g_ptr[g]]
            par = parallel[g]
            if par.any():
                pend["side"].append(np.stack([g[par], pos[c[par]], p[par]]))
            anc.append((np.concatenate([mains[lv], p]), np.concatenate([cols, c])))
        # switches not above d: up towards the lowest main-path switch above them
        for k in range(2, T + 1):
            front_n, front_c = mains[k - 1], cols
            for _ in range(k - 1, 0, -1):
                rep, g = expand(front_n, down_ptr, down_list)
                ch = ft.g_child[g].astype(np.int64)
                c = front_c[rep]
                keep = ~routed[sidx[ch], c]
                ch, c, g = ch[keep], c[keep], g[keep]
                key = sidx[ch] * C + c
                first = np.sort(np.unique(key, return_index=True)[1])
                ch, c, g = ch[first], c[first], g[first]
                routed[sidx[ch], c] = True
                port[sidx[ch], c] = ft.g_child_port[ft.g_ptr[g]]
                par = parallel[g]
                if par.any():
                    pend["up"].append(np.stack([g[par], pos[c[par]], ch[par]]))
                front_n, front_c = ch, c
        # what is left carries no traffic to d (its hosts go through other switches);
        # it goes up its first group, top level first, so it ends in a routed switch
        for lv in range(T - 1, 0, -1):
            rows = lvl_rows[lv]
            r, c = np.nonzero(~routed[rows])
            if r.size:
                s_ = rows[r]
                routed[s_, c] = True
                port[s_, c] = first_up_port[s_]
        dst = order[pos]
        tables.set_entry(sw[:, None], dst[real][None, :], port[:, real])

    for kind, parts in pend.items():
        if not parts:
            continue
        g, p, node = np.concatenate(parts, axis=1)
        if kind == "side":
            # OpenSM takes the port with the lowest down counter at that moment, without
            # counting: the round-robin slot the main path would take next
            slot = _side_slots(ft, g, p, pend["down"])
        else:
            slot = port_slots(ft, g, p, kind, order)
        ports = ft.g_parent_port if kind != "up" else ft.g_child_port
        val = ports[ft.g_ptr[g] + slot]
        dst = order[p]
        ok = dst >= 0
        tables.set_entry(node[ok], dst[ok], val[ok])
    # a switch with no table (unranked: not connected to any host) keeps -1
    return tables


def _side_slots(ft: FatTree, g: np.ndarray, p: np.ndarray, down_parts) -> np.ndarray:
    """Down counter of group ``g`` just before position ``p``, modulo its size."""
    size = (ft.g_ptr[g + 1] - ft.g_ptr[g]).astype(np.int64)
    if not down_parts:
        return np.zeros(len(g), dtype=np.int64)
    mg, mp, _ = np.concatenate(down_parts, axis=1)
    width = int(max(p.max(initial=0), mp.max(initial=0))) + 1
    mkey = np.sort(mg * width + mp)
    before = np.searchsorted(mkey, g * width + p) - np.searchsorted(mkey, g * width)
    return before % size
