"""Deadlock freedom: the channel dependency graph of a table set, acyclic per VL.

A packet for host ``d`` that arrives on channel ``a`` at a switch and leaves on
channel ``b`` makes ``b`` a dependency of ``a`` (Dally and Seitz): with credit-based
flow control, a cycle of such dependencies inside one virtual lane can deadlock.
Destination-based tables make one *forest* per destination, so the graph is built
destination by destination, vectorised over a chunk of destinations, walking only
from the hosts that may send to ``d`` on that VL (partitions and their service
levels decide which). Up*/down* routing on a fat-tree never turns from down to up,
so ftree and pftree tables come out acyclic; tables read from elsewhere may not.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.routing import build_routing
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> r = build_routing(t, "ftree")
>>> check_deadlock(r)
>>> g = dependency_graph(r)
>>> len(g[0]) > 0
True

A ring of three switches routed clockwise deadlocks:

>>> from netsteer.topology.model import TopologyBuilder
>>> from netsteer.routing.table import Routing
>>> b = TopologyBuilder("ring")
>>> s = [b.add_switch(f"s{i}") for i in range(3)]
>>> h = [b.add_host(f"h{i}") for i in range(3)]
>>> for i in range(3):
...     _ = b.add_link(s[i], h[i], bandwidth=1e9, latency_ns=0, a_port=1)
...     _ = b.add_link(s[i], s[(i + 1) % 3], bandwidth=1e9, latency_ns=0, a_port=2, b_port=3)
>>> t = b.build()
>>> lft = np.full((t.n_nodes, 3), 2)
>>> for i in range(3):
...     lft[s[i], i] = 1
>>> lft[h] = -1
>>> check_deadlock(Routing(t, lft))
Traceback (most recent call last):
...
netsteer.errors.RoutingError: deadlock on VL 0: channel dependency cycle s1[2]->s2 -> s2[2]->s0 -> s0[2]->s1 -> s1[2]->s2 (its dependencies made by packets towards h0, h1, h2)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import RoutingError
from ..topology.model import Topology

_CHUNK = 256


class PairPolicy:
    """Who may send to whom, and on which VL: from partitions and their SLs.

    Two hosts may talk when a partition has both as members and one of them full
    (OpenSM's rule). A pair's VL is the VL of the first partition (in the given
    order, the default partition 0x7fff last) that allows it; without partitions
    every pair may talk, on VL 0.

    Parameters
    ----------
    topo : Topology
    partitions : list of Partition, optional
    vl_of : dict, PKey -> VL, optional (missing partitions use VL 0)
    """

    def __init__(self, topo: Topology, partitions: Sequence | None = None, vl_of: dict | None = None):
        self.topo = topo
        H = topo.n_hosts
        parts = sorted(partitions or [], key=lambda p: p.pkey == 0x7FFF)
        self.partitions = parts
        self.member = np.zeros((len(parts), H), dtype=bool)
        self.full = np.zeros((len(parts), H), dtype=bool)
        for i, p in enumerate(parts):
            for node, m in p.members.items():
                hi = topo.host_index[node]
                if hi >= 0:
                    self.member[i, hi] = True
                    self.full[i, hi] = m != "limited"
        vl_of = vl_of or {}
        self.vl = np.array([int(vl_of.get(p.pkey, 0)) for p in parts], dtype=np.int64)
        self.vls = sorted(set(self.vl.tolist())) if parts else [0]

    def columns(self, dsts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``allowed[h, c]`` (bool) and ``vl[h, c]`` for sources ``h`` to ``dsts[c]``."""
        H, C = self.topo.n_hosts, len(dsts)
        if not self.partitions:
            allowed = np.ones((H, C), dtype=bool)
            allowed[dsts, np.arange(C)] = False
            return allowed, np.zeros((H, C), dtype=np.int64)
        allowed = np.zeros((H, C), dtype=bool)
        vl = np.zeros((H, C), dtype=np.int64)
        for i in range(len(self.partitions)):
            m, f = self.member[i], self.full[i]
            ok = (m[:, None] & m[dsts][None, :]) & (f[:, None] | f[dsts][None, :])
            new = ok & ~allowed
            vl[new] = self.vl[i]
            allowed |= ok
        allowed[dsts, np.arange(C)] = False
        return allowed, vl


def next_channels(routing, dsts: np.ndarray) -> np.ndarray:
    """``[n_nodes, len(dsts)]``: the channel each switch sends traffic for ``dsts`` on.

    -1 where there is no entry, and on host rows (a walk leaves a host once, on its
    endpoint port, see :func:`host_channels`).

    Raises
    ------
    RoutingError
        For ECMP group entries: a dependency graph needs one port per entry.
    """
    topo: Topology = routing.topo
    sw = topo.switches
    e = routing.entry(sw[:, None], np.asarray(dsts)[None, :]).astype(np.int64)
    if (e <= -2).any():
        raise RoutingError("the deadlock check needs single-port tables; these have ECMP groups")
    out = topo.out_channel
    ok = (e >= 0) & (e < out.shape[1])
    ch = np.full((topo.n_nodes, len(dsts)), -1, dtype=np.int64)
    ch[sw] = np.where(ok, out[sw[:, None], np.where(ok, e, 0)], -1)
    return ch


def host_channels(routing) -> np.ndarray:
    """Per host index: the channel its traffic leaves on (its row, else its endpoint port)."""
    topo = routing.topo
    hosts = topo.hosts
    port = routing._host_port()[hosts]
    # a host row naming one port for every destination (multi-homed hosts) wins
    rowed = np.flatnonzero(routing.row_of[hosts] >= 0)
    if rowed.size:
        e = routing.node_rows(hosts[rowed])
        named = (e >= 0).any(axis=1)
        low = np.where(e[named] >= 0, e[named], np.iinfo(np.int32).max).min(axis=1)
        port[rowed[named]] = low
    return np.where(port >= 0, topo.out_channel[hosts, np.maximum(port, 0)], -1)


def walk(routing, dsts: np.ndarray, sources: np.ndarray, nc: np.ndarray | None = None,
         hch: np.ndarray | None = None):
    """Follow the tables from ``sources[h, c]`` towards ``dsts[c]``.

    Returns
    -------
    used : ndarray of bool, [n_channels], channels some walk crosses
    edges : ndarray of int64, unique ``a * n_channels + b`` dependencies
    """
    topo = routing.topo
    C = len(dsts)
    nC = topo.n_channels
    if nc is None:
        nc = next_channels(routing, dsts)
    if hch is None:
        hch = host_channels(routing)
    cdst = topo.channel_dst().astype(np.int64)
    sport = topo.channel_src_port().astype(np.int64)
    used = np.zeros(nC, dtype=bool)
    edges = []
    # first hop, from the hosts: dependencies deduplicated per (host, port of its switch)
    hs, cs = np.nonzero(sources)
    ok = hch[hs] >= 0
    hs, cs = hs[ok], cs[ok]
    used[hch[hs]] = True
    first = cdst[hch[hs]]
    ch2 = nc[first, cs]
    dep = ch2 >= 0
    seen = np.zeros((topo.n_hosts, topo.out_channel.shape[1]), dtype=bool)
    seen[hs[dep], sport[ch2[dep]]] = True
    h2, p2 = np.nonzero(seen)
    edges.append(hch[h2] * nC + topo.out_channel[cdst[hch[h2]], p2])
    visited = np.zeros(nc.shape, dtype=bool)
    visited[first[dep], cs[dep]] = True
    v, c = np.nonzero(visited)
    while v.size:
        ch = nc[v, c]
        ok = ch >= 0
        v, c, ch = v[ok], c[ok], ch[ok]
        used[ch] = True
        w = cdst[ch]
        ch2 = nc[w, c]
        dep = ch2 >= 0
        edges.append(np.unique(ch[dep] * nC + ch2[dep]))
        w, c = w[dep], c[dep]
        new = ~visited[w, c]
        w, c = w[new], c[new]
        if w.size:
            key = np.unique(w * C + c)
            w, c = key // C, key % C
            visited[w, c] = True
        v = w
    return used, np.unique(np.concatenate(edges))


def dependency_graph(routing, policy: PairPolicy | None = None, progress=None) -> dict[int, np.ndarray]:
    """Channel dependencies per VL: ``{vl: unique int64 a * n_channels + b}``."""
    topo = routing.topo
    policy = policy or _policy_of(routing)
    H = topo.n_hosts
    per: dict[int, list[np.ndarray]] = {v: [] for v in policy.vls}
    hch = host_channels(routing)
    for a in range(0, H, _CHUNK):
        dsts = np.arange(a, min(a + _CHUNK, H))
        nc = next_channels(routing, dsts)
        allowed, vl = policy.columns(dsts)
        for v in policy.vls:
            src = allowed & (vl == v)
            if src.any():
                per[v].append(walk(routing, dsts, src, nc, hch)[1])
        if progress:
            progress(len(dsts))
    return {v: np.unique(np.concatenate(e)) if e else np.zeros(0, np.int64) for v, e in per.items()}


def _policy_of(routing) -> PairPolicy:
    return PairPolicy(routing.topo, getattr(routing, "partitions", None), getattr(routing, "partition_vl", None))


def check_deadlock(routing, policy: PairPolicy | None = None, progress=None) -> None:
    """Raise :class:`RoutingError` when a VL's channel dependency graph has a cycle.

    The message names the channels (switch, port, next node) of one cycle and a
    destination whose packets make one of its dependencies.
    """
    topo = routing.topo
    nC = topo.n_channels
    for v, e in sorted(dependency_graph(routing, policy, progress).items()):
        cyc = find_cycle(e // nC, e % nC, nC)
        if cyc:
            # a cycle is made by the packets of several destinations, one dependency each
            ring = cyc + [cyc[0]]
            named = list(dict.fromkeys(_culprit(routing, ring[i], ring[i + 1])
                                       for i in range(min(len(cyc), _NAMED_DEPENDENCIES))))
            more = ", ..." if len(cyc) > _NAMED_DEPENDENCIES else ""
            chans = " -> ".join(topo.channel_name(int(c)) for c in ring)
            raise RoutingError(
                f"deadlock on VL {v}: channel dependency cycle {chans} "
                f"(its dependencies made by packets towards {', '.join(named)}{more})"
            )


def find_cycle(a: np.ndarray, b: np.ndarray, n: int) -> list[int]:
    """One cycle of the graph with edges ``a -> b`` (vectorised peeling), or ``[]``."""
    if a.size == 0:
        return []
    alive = np.ones(n, dtype=bool)
    indeg = np.bincount(b, minlength=n)
    ea, eb = a, b
    while True:
        zero = alive & (indeg == 0)
        if not zero.any():
            break
        alive &= ~zero
        gone = zero[ea]
        indeg -= np.bincount(eb[gone], minlength=n)
        ea, eb = ea[~gone], eb[~gone]
        if ea.size == 0:
            return []
    # every node left has a predecessor left: walk backwards until one repeats
    pred: dict[int, int] = {}
    for x, y in zip(ea.tolist(), eb.tolist()):
        pred.setdefault(y, x)
    cur = int(eb[0])
    seen: dict[int, int] = {}
    path: list[int] = []
    while cur not in seen:
        seen[cur] = len(path)
        path.append(cur)
        cur = pred[cur]
    cycle = path[seen[cur] :]
    return cycle[::-1]


#: Dependencies of a cycle whose destinations a deadlock message names (each is a
#: search of the tables).
_NAMED_DEPENDENCIES = 8


def _culprit(routing, a: int, b: int) -> str:
    """A destination whose packets depend from channel ``a`` on channel ``b``."""
    topo = routing.topo
    H = topo.n_hosts
    sa, sb = topo.channel_src()[a], topo.channel_src()[b]
    hch = host_channels(routing)
    for s in range(0, H, 4096):
        dsts = np.arange(s, min(s + 4096, H))
        nc = next_channels(routing, dsts)
        for h in np.flatnonzero(hch == a):  # a host's channel: any destination it sends to
            nc[topo.hosts[h]] = a
        hit = np.flatnonzero((nc[sa] == a) & (nc[sb] == b))
        if hit.size:
            return topo.node_names[topo.host_node(int(dsts[hit[0]]))]
    return "?"


def partition_channels(routing, partitions: Sequence, progress=None) -> np.ndarray:
    """``[n_partitions, n_channels]`` bool: where partition ``i``'s own traffic (between
    members that may talk) crosses the channel.

    One row per partition, not a bitmask: OpenSM allows far more than 64 partitions.
    """
    topo = routing.topo
    mask = np.zeros((len(partitions), topo.n_channels), dtype=bool)
    hch = host_channels(routing)
    for i, p in enumerate(partitions):
        pol = PairPolicy(topo, [p])
        dsts = np.flatnonzero(pol.member[0])
        for a in range(0, len(dsts), _CHUNK):
            d = dsts[a : a + _CHUNK]
            allowed, _ = pol.columns(d)
            used, _ = walk(routing, d, allowed, hch=hch)
            mask[i, used] = True
        if progress:
            progress(1)
    return mask


__all__ = [
    "PairPolicy",
    "check_deadlock",
    "dependency_graph",
    "find_cycle",
    "host_channels",
    "next_channels",
    "partition_channels",
    "walk",
]

