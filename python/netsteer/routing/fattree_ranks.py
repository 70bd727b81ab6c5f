"""Fat-tree structure of any topology: switch levels, port groups and OpenSM's indexing.

Generated PGFTs know their levels; imported fabrics (ibnetdiscover, ibsim net) do
not. As OpenSM's ftree does (``osm_ucast_ftree.c``: ``rank_leaf_switches``,
``rank_switches_from_leafs``), switches that have hosts are leaves, and every other
switch is ranked by its distance from the nearest leaf: level 1 for leaves, ``T``
for the top. A cable between two switches is an *up* cable of the lower one; the
cables between the same two switches form one *port group* (parallel links).

What is refused, naming the culprit (:class:`~netsteer.errors.RoutingError`):
circuit switches, hosts cabled to hosts, cables between switches of one level
(OpenSM calls them siblings; ftree and pftree here route pure trees only), a
switch below the top without an up cable, and a top switch that does not reach
every host going down (then destination-based up/down routing cannot be complete).

Switches are then indexed the way OpenSM indexes them (``fabric_make_indexing``):
a breadth-first walk from the first leaf hands every switch a tuple, port groups
are sorted by the tuple of the switch at their far end, and leaves are routed in
tuple order. Ties in the balancing are broken by that order, which is why
netsteer's ftree picks OpenSM's ports on the trees we compared.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> ft = fat_tree(t)
>>> ft.top, [t.node_names[s] for s in ft.leaves]
(2, ['s1_0', 's1_1', 's1_2', 's1_3'])
>>> [t.node_names[ft.g_parent[g]] for g in ft.up_groups(t.node("s1_0"))]
['s2_0', 's2_1']
>>> from netsteer.topology.model import TopologyBuilder
>>> b = TopologyBuilder("ring")
>>> s = [b.add_switch(f"s{i}") for i in range(3)]
>>> h = [b.add_host(f"h{i}") for i in range(3)]
>>> for i in range(3):
...     _ = b.add_link(s[i], h[i], bandwidth=1e9, latency_ns=0)
...     _ = b.add_link(s[i], s[(i + 1) % 3], bandwidth=1e9, latency_ns=0)
>>> fat_tree(b.build())
Traceback (most recent call last):
...
netsteer.errors.RoutingError: not a fat-tree: s0 and s1 are both leaves (level 1) but are cabled to each other
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ..errors import RoutingError
from ..topology.model import CIRCUIT, HOST, Topology
from .homing import single_homed_error

_TUPLE_LEN = 8
_FREE = 0xFF


@dataclass
class FatTree:
    """Levels, port groups and routing order of a fat-tree.

    Attributes
    ----------
    topo : Topology
    level : ndarray of int16, [n_nodes]; hosts 0, leaves 1, top ``top``; -1 unranked
    top : int, number of switch levels
    leaves : ndarray of int32, leaf switches in OpenSM's index order
    host_leaf, host_port : ndarray of int32, [n_hosts]; the leaf each host's endpoint
        port is cabled to, and the leaf's port towards it
    g_child, g_parent : ndarray of int32, [n_groups]; the two switches of each group
    g_ptr : ndarray of int64, [n_groups + 1]; ports of group ``g`` are
        ``g_child_port[g_ptr[g]:g_ptr[g+1]]`` (in the child's port order) and the
        matching ``g_parent_port``
    index : ndarray of int64, [n_nodes]; position of each switch in OpenSM's tuple
        order (-1 for hosts), the tie-break everywhere
    below : ndarray of bool, [n_nodes, n_leaves]; which leaves (columns in
        ``leaves`` order) a switch reaches going down
    """

    topo: Topology
    level: np.ndarray
    top: int
    leaves: np.ndarray
    host_leaf: np.ndarray
    host_port: np.ndarray
    g_child: np.ndarray
    g_parent: np.ndarray
    g_ptr: np.ndarray
    g_child_port: np.ndarray
    g_parent_port: np.ndarray
    index: np.ndarray
    below: np.ndarray
    _up_ptr: np.ndarray
    _up: np.ndarray
    _down_ptr: np.ndarray
    _down: np.ndarray

    @property
    def n_groups(self) -> int:
        return len(self.g_child)

    def up_groups(self, node: int) -> np.ndarray:
        """Groups towards ``node``'s parents, in index order of the parents."""
        return self._up[self._up_ptr[node] : self._up_ptr[node + 1]]

    def down_groups(self, node: int) -> np.ndarray:
        """Groups towards ``node``'s switch children, in index order of the children."""
        return self._down[self._down_ptr[node] : self._down_ptr[node + 1]]

    def leaf_column(self) -> np.ndarray:
        """Column of ``below`` for each node (leaves only, -1 elsewhere)."""
        col = np.full(self.topo.n_nodes, -1, dtype=np.int64)
        col[self.leaves] = np.arange(len(self.leaves))
        return col


def _endpoint_links(topo: Topology, engine: str = "ftree"):
    """Per host: (switch, switch port) its lowest cabled port leads to.

    A host cabled to two switches or more is refused: the fat-tree engines route
    each host by one leaf (OpenSM's ftree takes each HCA port as an end node of its
    own, with its own LID), so the other leaves would have no entry for it.
    Parallel cables to one leaf are fine.

    >>> from netsteer.topology.pgft import pgft
    >>> _endpoint_links(pgft(2, [2, 2], [2, 1], link_bandwidth=1e9, link_latency_ns=0))
    Traceback (most recent call last):
    ...
    netsteer.errors.RoutingError: ftree needs single-homed hosts: h0 is cabled to 2 switches (s1_0, s1_1); route this fabric with minhop or ecmp
    """
    out = topo.out_channel
    dst, dport = topo.channel_dst(), topo.channel_dst_port()
    leaf = np.full(topo.n_hosts, -1, dtype=np.int32)
    port = np.full(topo.n_hosts, -1, dtype=np.int32)
    names = topo.node_names
    for i, h in enumerate(topo.hosts):
        cabled = np.flatnonzero(out[h] >= 0)
        if cabled.size == 0:
            raise RoutingError(f"not a fat-tree: host {names[h]} is not cabled")
        ends = np.unique(dst[out[h, cabled]])
        ends = ends[topo.node_kind[ends] != HOST]
        if len(ends) > 1:
            raise single_homed_error(engine, names[h], [names[int(v)] for v in ends])
        c = out[h, cabled[0]]
        v = int(dst[c])
        if topo.node_kind[v] == HOST:
            raise RoutingError(f"not a fat-tree: host {names[h]} is cabled to host {names[v]}")
        if topo.node_kind[v] == CIRCUIT:
            raise RoutingError(f"{engine} routes packet-switched fat-trees; {names[v]} is a circuit switch")
        leaf[i], port[i] = v, int(dport[c])
    return leaf, port


def _swapped(guid: int) -> int:
    """OpenSM keys its switch table by the GUID in network byte order (see lids.py)."""
    return int.from_bytes(int(guid).to_bytes(8, "big"), "little")


def fat_tree(topo: Topology, engine: str = "ftree") -> FatTree:
    """Rank, check and index ``topo`` as a fat-tree for ``engine`` (named in errors).

    Raises
    ------
    RoutingError
        ``not a fat-tree: ...`` naming the switches, host or level at fault;
        ``ftree needs single-homed hosts: ...``; ``ftree routes packet-switched
        fat-trees; ...`` (each naming ``engine``).
    """
    names = topo.node_names
    kind = topo.node_kind
    if (kind == CIRCUIT).any():
        c = int(np.flatnonzero(kind == CIRCUIT)[0])
        raise RoutingError(f"{engine} routes packet-switched fat-trees; {names[c]} is a circuit switch")
    if topo.n_hosts < 1:
        raise RoutingError(f"not a fat-tree: {topo.name} has no hosts")
    host_leaf, host_port = _endpoint_links(topo, engine)

    # switch-to-switch cables, each once
    a, b = topo.link_a.astype(np.int64), topo.link_b.astype(np.int64)
    ss = (kind[a] != HOST) & (kind[b] != HOST)
    sa, sb = a[ss], b[ss]
    pa, pb = topo.link_a_port[ss].astype(np.int64), topo.link_b_port[ss].astype(np.int64)
    if (sa == sb).any():
        s = int(sa[sa == sb][0])
        raise RoutingError(f"not a fat-tree: switch {names[s]} is cabled to itself")

    # rank: breadth-first from the leaves (OpenSM's rank_switches_from_leafs)
    n = topo.n_nodes
    adj: list[list[int]] = [[] for _ in range(n)]
    for x, y in zip(sa.tolist(), sb.tolist()):
        adj[x].append(y)
        adj[y].append(x)
    level = np.full(n, -1, dtype=np.int16)
    level[topo.hosts] = 0
    q = deque(sorted(set(host_leaf.tolist())))
    for s in q:
        level[s] = 1
    while q:
        s = q.popleft()
        for v in adj[s]:
            if level[v] < 0:
                level[v] = level[s] + 1
                q.append(v)
    top = int(level.max())

    la, lb = level[sa], level[sb]
    if ((la < 0) | (lb < 0)).any():  # cannot happen: both ends are ranked or neither
        pass
    ranked = (la >= 0) & (lb >= 0)
    sa, sb, pa, pb, la, lb = sa[ranked], sb[ranked], pa[ranked], pb[ranked], la[ranked], lb[ranked]
    same = la == lb
    if same.any():
        i = int(np.flatnonzero(same)[0])
        lv = int(la[i])
        what = "leaves (level 1)" if lv == 1 else f"at level {lv}"
        raise RoutingError(
            f"not a fat-tree: {names[sa[i]]} and {names[sb[i]]} are both {what} but are cabled to each other"
        )
    # orient every cable child -> parent (levels differ by exactly one in a BFS ranking)
    flip = la > lb
    child = np.where(flip, sb, sa)
    parent = np.where(flip, sa, sb)
    cport = np.where(flip, pb, pa)
    pport = np.where(flip, pa, pb)
    has_up = np.zeros(n, dtype=bool)
    has_up[child] = True
    sw_ranked = np.flatnonzero((kind != HOST) & (level > 0))
    orphan = sw_ranked[(level[sw_ranked] < top) & ~has_up[sw_ranked]]
    if orphan.size:
        s = int(orphan[0])
        raise RoutingError(
            f"not a fat-tree: switch {names[s]} (level {int(level[s])}) has no up link, "
            f"but the tree has {top} levels"
        )

    # port groups: cables between the same child and parent, ports in the child's order
    order = np.lexsort((cport, parent, child))
    child, parent, cport, pport = child[order], parent[order], cport[order], pport[order]
    new = np.ones(len(child), dtype=bool)
    new[1:] = (child[1:] != child[:-1]) | (parent[1:] != parent[:-1])
    starts = np.flatnonzero(new)
    g_ptr = np.append(starts, len(child)).astype(np.int64)
    g_child = child[starts].astype(np.int32)
    g_parent = parent[starts].astype(np.int32)
    G = len(starts)

    index = _opensm_index(topo, level, top, host_leaf, g_child, g_parent, g_ptr, cport, pport)

    # per-switch group lists, sorted by the far end's index
    def csr(owner, far):
        o = np.lexsort((index[far], owner))
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(ptr, owner.astype(np.int64) + 1, 1)
        return np.cumsum(ptr), np.arange(G, dtype=np.int64)[o]

    up_ptr, up = csr(g_child, g_parent)
    down_ptr, down = csr(g_parent, g_child)

    leaf_nodes = np.flatnonzero(level == 1)
    leaves = leaf_nodes[np.argsort(index[leaf_nodes], kind="stable")].astype(np.int32)
    col = np.full(n, -1, dtype=np.int64)
    col[leaves] = np.arange(len(leaves))
    below = np.zeros((n, len(leaves)), dtype=bool)
    below[leaves, np.arange(len(leaves))] = True
    for lv in range(2, top + 1):
        gs = np.flatnonzero(level[g_parent] == lv)
        # parents OR their children's rows; sorted by parent so reduceat can OR them
        gs = gs[np.argsort(g_parent[gs], kind="stable")]
        if gs.size:
            par = g_parent[gs]
            cut = np.flatnonzero(np.r_[True, par[1:] != par[:-1]])
            below[par[cut]] = np.logical_or.reduceat(below[g_child[gs]], cut, axis=0)
    tops = np.flatnonzero(level == top)
    short = tops[~below[tops].all(axis=1)]
    if short.size:
        s = int(short[0])
        k = int(below[s].sum())
        raise RoutingError(
            f"not a fat-tree: top switch {names[s]} (level {top}) reaches {k} of "
            f"{len(leaves)} leaf switches going down"
        )
    return FatTree(
        topo=topo, level=level, top=top, leaves=leaves, host_leaf=host_leaf, host_port=host_port,
        g_child=g_child, g_parent=g_parent, g_ptr=g_ptr, g_child_port=cport.astype(np.int32),
        g_parent_port=pport.astype(np.int32), index=index, below=below,
        _up_ptr=up_ptr, _up=up, _down_ptr=down_ptr, _down=down,
    )


def _opensm_index(topo, level, top, host_leaf, g_child, g_parent, g_ptr, cport, pport) -> np.ndarray:
    """OpenSM's switch tuples (``bfs_fabric_indexing``), returned as ranks in tuple order.

    OpenSM's rank is ``top - level`` (roots 0). The walk starts at the first leaf
    in its switch table (keyed by the byte-swapped node GUID; node id without GUIDs).
    A switch hands each unindexed switch below it ``(rank+1, ..., i at position
    rank+1, ...)`` and each above it ``(rank-1, ..., i at position rank, ...)`` with
    ``i`` the first value not yet taken; groups are visited in the order of their
    first port, which OpenSM keeps until it sorts them by tuple.
    """
    n = topo.n_nodes
    index = np.full(n, -1, dtype=np.int64)
    switches = np.flatnonzero(level > 0)
    if switches.size == 0:
        return index
    rank = {int(s): top - int(level[s]) for s in switches}
    leaf_rank = top - 1
    # neighbours in the order of the first port of each group
    first_port_c = cport[g_ptr[:-1]]
    first_port_p = pport[g_ptr[:-1]]
    downs: dict[int, list[tuple[int, int]]] = {}
    ups: dict[int, list[tuple[int, int]]] = {}
    for g in range(len(g_child)):
        c, p = int(g_child[g]), int(g_parent[g])
        ups.setdefault(c, []).append((int(first_port_c[g]), p))
        downs.setdefault(p, []).append((int(first_port_p[g]), c))
    for d in (ups, downs):
        for k in d:
            d[k] = [v for _, v in sorted(d[k])]
    guid = topo.node_guid
    leaves = sorted(set(int(x) for x in host_leaf))
    first = min(leaves, key=lambda s: (_swapped(guid[s]) if guid[s] else 0, s))
    tuples: dict[int, tuple] = {}
    taken: set[tuple] = set()
    t0 = [_FREE] * _TUPLE_LEN
    t0[0] = leaf_rank
    for i in range(1, min(leaf_rank, _TUPLE_LEN - 1) + 1):
        t0[i] = 0
    tuples[first] = tuple(t0)
    taken.add(tuples[first])

    def new_tuple(frm: tuple, down: bool) -> tuple:
        t = list(frm)
        if down:
            t[0] += 1
            var = frm[0] + 1
        else:
            t[0] -= 1
            var = frm[0]
        var = min(var, _TUPLE_LEN - 1)
        for i in range(_FREE):
            t[var] = i
            if tuple(t) not in taken:
                return tuple(t)
        return tuple(t)  # more than 255 in one direction: OpenSM gives up on ordering too

    q = deque([first])
    while q:
        s = q.popleft()
        steps = []
        if rank[s] < leaf_rank:
            steps += [(v, True) for v in downs.get(s, [])]
        if rank[s] != 0:
            steps += [(v, False) for v in ups.get(s, [])]
        for v, down in steps:
            if v in tuples:
                continue
            tuples[v] = new_tuple(tuples[s], down)
            taken.add(tuples[v])
            q.append(v)
    # switches the walk did not reach (none in a connected tree) go last, by id
    order = sorted(tuples, key=lambda s: tuples[s])
    order += [int(s) for s in switches if int(s) not in tuples]
    index[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    return index
