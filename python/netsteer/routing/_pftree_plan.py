"""pFTree's main paths: isolate partitions on links, within ftree's load caps.

The tables of a fat-tree routed the ftree way are fixed by each destination's
*main path* (the up groups its route climbs from its leaf; :mod:`.ftree`). This
module chooses main paths partition by partition:

- **Balance** is a cap, not a per-step rule: no port group may take more
  destinations per port than the fullest group of its level takes under ftree.
  Inside the caps any choice keeps ftree's maximum load, so a partition can keep
  to links of its own instead of being pushed onto the next least-loaded one.
- **Isolation**: a destination's *traffic tree* is every channel its partition's
  own traffic to it crosses: down its main path (where members sit outside the
  subtree below), and up from every leaf with members to the lowest main-path
  switch above it (along the same up-routes the table fill writes). Each channel
  carries a bitmask of the partitions whose traffic crosses it. A destination takes,
  by dynamic programming over the switches above its leaf, the feasible main path
  whose traffic tree crosses the fewest channels of other partitions; then the one
  reusing its partition's channels most; then the least loaded.
- **Order**: partitions one after the other, the one with the most members on a
  single leaf first (first fit decreasing: it needs the most groups); a
  partition's leaves with the most members first.

Channels are tracked per port group (parallel cables together; :func:`.pftree`
then gives each partition its own block of a group's ports).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fattree_ranks import FatTree
from .ftree import _dest_leaves

_CONFLICT, _NEW = 1e6, 1e2  # score weights: other partitions' channels >> new channels >> load


@dataclass
class UpTrees:
    """For every switch ``Y`` above the leaves, the up-route of every leaf below it.

    Row ``r``: switch ``y[r]``, leaf column ``leaf[r]``, the child of ``y`` the
    route enters it from (``via[r]``) and the groups climbed (``edges[r]``, -1 padded).
    """

    y: np.ndarray
    leaf: np.ndarray
    via: np.ndarray
    edges: np.ndarray


def up_trees(ft: FatTree) -> UpTrees:
    """Up-routes towards every switch, as :func:`.ftree.fill_tables` writes them:
    breadth first down from ``Y``, a switch climbing through the first switch
    (in group order) that reached it."""
    col = ft.leaf_column()
    ys, leaves, vias, chains = [], [], [], []
    depth = max(ft.top - 1, 1)
    parent = ft.g_parent
    child = ft.g_child
    for y in np.flatnonzero(ft.level >= 2).tolist():
        edge_of: dict[int, int] = {}
        front = [y]
        for _ in range(int(ft.level[y]) - 1):
            nxt = []
            for x in front:
                for g in ft.down_groups(x).tolist():
                    c = int(child[g])
                    if c not in edge_of:
                        edge_of[c] = g
                        nxt.append(c)
            front = nxt
        for leaf in front:
            chain, node = [], leaf
            while node != y:
                g = edge_of[node]
                chain.append(g)
                node = int(parent[g])
            ys.append(y)
            leaves.append(col[leaf])
            vias.append(int(child[chain[-1]]))
            chains.append(chain + [-1] * (depth - len(chain)))
    return UpTrees(np.asarray(ys, np.int64), np.asarray(leaves, np.int64), np.asarray(vias, np.int64),
                   np.asarray(chains, np.int64).reshape(len(ys), depth))


class _Ancestry:
    """Per leaf, the switches above it level by level and the groups between them."""

    def __init__(self, ft: FatTree):
        self.ft = ft
        self.cache: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def of(self, leaf: int):
        """``[(groups, child_pos, parent_pos)]`` for levels 1 .. top-1."""
        got = self.cache.get(leaf)
        if got is not None:
            return got
        ft = self.ft
        nodes = np.array([leaf], dtype=np.int64)
        out = []
        for _ in range(1, ft.top):
            gs = [ft.up_groups(int(n)) for n in nodes]
            groups = np.concatenate(gs).astype(np.int64) if gs else np.zeros(0, np.int64)
            cpos = np.repeat(np.arange(len(nodes)), [len(g) for g in gs])
            par = ft.g_parent[groups].astype(np.int64)
            uniq, first = np.unique(par, return_index=True)
            nxt = uniq[np.argsort(first)]  # keep first-seen order
            pos = np.empty(int(nxt.max(initial=-1)) + 1, np.int64)
            pos[nxt] = np.arange(len(nxt))
            out.append((groups, cpos, pos[par]))
            nodes = nxt
        self.cache[leaf] = out
        return out


def ftree_caps(ft: FatTree, mgroups: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Destinations each group may take: per port, the most ftree puts on a port of
    that level, times the group's ports."""
    size = np.diff(ft.g_ptr)
    real = order >= 0
    used = mgroups[real][:, 1:].ravel()
    count = np.bincount(used[used >= 0], minlength=ft.n_groups)
    per_port = -(-count // size)
    lvl = ft.level[ft.g_child].astype(np.int64)
    top = np.zeros(int(lvl.max(initial=0)) + 1, np.int64)
    np.maximum.at(top, lvl, per_port)
    return top[lvl] * size


def plan_main_paths(ft: FatTree, order: np.ndarray, part: np.ndarray, n_parts: int,
                    cap: np.ndarray) -> np.ndarray:
    """Main paths (as :func:`.ftree.main_paths` returns them) isolating partitions.

    Parameters
    ----------
    order : host index per destination position, -1 for a dummy
    part : partition index per host, -1 for none
    n_parts : number of partitions
    cap : destinations each group may take (:func:`ftree_caps`)
    """
    T = ft.top
    D = len(order)
    out = np.full((D, max(T, 1)), -1, dtype=np.int64)
    if T < 2:
        return out
    G = ft.n_groups
    leaves = _dest_leaves(ft, order)
    col = ft.leaf_column()
    count = np.zeros(G, np.int64)
    mark_dn = np.zeros(G, np.uint64)  # partitions whose traffic goes down the group
    mark_up = np.zeros(G, np.uint64)  # ... and up it
    ut = up_trees(ft)
    anc = _Ancestry(ft)
    # parent -> child group lookup, for "all users enter Y from child C"
    gkey = ft.g_parent.astype(np.int64) * ft.topo.n_nodes + ft.g_child
    gsort = np.argsort(gkey)
    below = ft.below.astype(np.int64)
    real = np.flatnonzero(order >= 0)
    dpart = np.full(D, -1, np.int64)
    dpart[real] = part[order[real]]
    n_leaves = len(ft.leaves)

    def group_of(parent, child_):
        k = parent * ft.topo.n_nodes + child_
        return gsort[np.searchsorted(gkey[gsort], k)]

    # partitions, biggest need first: most members on one leaf, then most members
    stats = []
    for p in range(n_parts):
        pos = real[dpart[real] == p]
        lc = np.bincount(col[leaves[pos]], minlength=n_leaves) if pos.size else np.zeros(n_leaves, np.int64)
        stats.append((-int(lc.max(initial=0)), -int(pos.size), p, pos, lc))
    stats.sort(key=lambda s: s[:3])

    def _fill(groups):
        return count[groups] / np.maximum(cap[groups], 1)

    def route(positions, score_of, after):
        for i in positions.tolist():
            levels = anc.of(int(leaves[i]))
            path = _best_path(levels, score_of, count, cap)
            for lv, g in enumerate(path, 1):
                out[i, lv] = g
                count[g] += 1
            after(path)

    for _, _, p, pos, lc in stats:
        if pos.size == 0:
            continue
        bit = np.uint64(1) << np.uint64(p)
        below_p = below @ lc
        total = int(lc.sum())
        traffic_dn = total - below_p[ft.g_child] > 0
        conf_dn = traffic_dn & ((mark_dn & ~bit) != 0)
        # up-routes of this partition's members: unique (Y, group, entering child)
        sel = lc[ut.leaf] > 0
        rr, dd = np.nonzero(ut.edges[sel] >= 0)
        y = ut.y[sel][rr]
        e = ut.edges[sel][rr, dd]
        v = ut.via[sel][rr]
        # unique (Y, group, via) and (Y, group) through one int64 key each (sorted alike)
        N = np.int64(ft.topo.n_nodes)
        key = np.unique((y * G + e) * N + v)
        trip = np.stack([key // N // G, key // N % G, key % N]) if key.size else np.zeros((3, 0), np.int64)
        ye_key, first, nvia = np.unique(key // N, return_index=True, return_counts=True)
        ye = np.stack([ye_key // G, ye_key % G]) if ye_key.size else np.zeros((2, 0), np.int64)
        first_via = trip[2][first]  # the via of (Y, e) pairs that all enter Y from one child
        one = nvia == 1
        conflict = (mark_up[ye[1]] & ~bit) != 0 if ye.size else np.zeros(0, bool)
        up_users = np.zeros(G, np.int64)  # channels the group's up traffic crosses
        up_conf = np.zeros(G, np.int64)
        n_y = np.bincount(ye[0], minlength=ft.topo.n_nodes) if ye.size else np.zeros(ft.topo.n_nodes, np.int64)
        c_y = np.bincount(ye[0][conflict], minlength=ft.topo.n_nodes) if ye.size else n_y
        up_users[:] = n_y[ft.g_parent]
        up_conf[:] = c_y[ft.g_parent]
        if one.any():
            g1 = group_of(ye[0][one], first_via[one])
            np.subtract.at(up_users, g1, 1)
            np.subtract.at(up_conf, g1, conflict[one].astype(np.int64))
        has_traffic = traffic_dn | (up_users > 0)
        # among equally many shared channels, the fewest other destinations on them
        through = np.bincount(ft.g_parent, weights=count, minlength=ft.topo.n_nodes)
        foreign = conf_dn * count + (up_conf > 0) * up_users * through[ft.g_parent]
        conf = conf_dn + up_conf + foreign / ((foreign.max(initial=0) + 1.0) * T)
        # per Y: its (group, via) pairs, to mark once per (Y, C)
        by_y: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if trip.size:
            cut = np.flatnonzero(np.r_[True, trip[0][1:] != trip[0][:-1]])
            for a, b in zip(cut.tolist(), np.r_[cut[1:], trip.shape[1]].tolist()):
                by_y[int(trip[0][a])] = (trip[1][a:b], trip[2][a:b])
        marked: set[int] = set()

        def score_of(groups, bit=bit, conf=conf, has_traffic=has_traffic):
            own = ((mark_dn[groups] | mark_up[groups]) & bit) != 0
            busy = has_traffic[groups]
            # where the partition's traffic flows, fill its groups before opening new
            # ones (best fit: whole groups stay free for the others); elsewhere spread
            fill = _fill(groups)
            return conf[groups] * _CONFLICT + (busy & ~own) * _NEW + np.where(busy, 1.0 - fill, fill)

        def after(path, bit=bit, traffic_dn=traffic_dn, by_y=by_y, marked=marked):
            for g in path:
                if traffic_dn[g]:
                    mark_dn[g] |= bit
                if g in marked:
                    continue
                marked.add(g)
                yc = by_y.get(int(ft.g_parent[g]))
                if yc is not None:
                    es, vs = yc
                    mark_up[es[vs != ft.g_child[g]]] |= bit

        # the partition's fullest leaves first
        route(pos[np.argsort(-lc[col[leaves[pos]]], kind="stable")], score_of, after)

    rest = real[dpart[real] < 0]
    route(rest, _fill, lambda path: None)
    # dummies only pad the leaves (their entries are never written): the least loaded way
    for i in np.flatnonzero(order < 0).tolist():
        out[i, 1:] = _best_path(anc.of(int(leaves[i])), _fill, count, cap)
    return out


def _best_path(levels, score_of, count: np.ndarray, cap: np.ndarray) -> list[int]:
    """The cheapest main path from a leaf (dynamic programming from the top down).

    A group at its cap is taken only when no path stays within the caps; among equal
    scores, the first in index order.
    """
    for strict in (True, False):
        ctg = None
        scored = []
        for groups, cpos, ppos in reversed(levels):
            s = score_of(groups)
            if ctg is not None:
                s = s + ctg[ppos]
            if strict:
                s = np.where(count[groups] < cap[groups], s, np.inf)
            ctg = np.full(int(cpos.max(initial=-1)) + 1, np.inf)
            np.minimum.at(ctg, cpos, s)
            scored.append(s)
        if strict and not np.isfinite(ctg[0]):
            continue
        path, node = [], 0
        for (groups, cpos, ppos), s in zip(levels, reversed(scored)):
            cand = np.flatnonzero(cpos == node)
            k = cand[np.argmin(s[cand])]
            path.append(int(groups[k]))
            node = int(ppos[k])
        return path
    return []
