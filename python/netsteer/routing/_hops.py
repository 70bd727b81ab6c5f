"""Min-hop distances and the set of min-hop ports, for all (node, destination) pairs.

Shared by :mod:`.minhop` (which picks one port per set) and :mod:`.ecmp` (which keeps
the set as a group). Hosts never forward: distances run over packet switches, with
circuit switches looked through along their pairing (see :mod:`._graph`).

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> hs = MinHop(t)
>>> sources, entry, groups = hs.candidates()
>>> [t.node_names[s] for s in sources]
['s1_0', 's1_1', 's2_0', 's2_1']
>>> entry[0].tolist(), [g.tolist() for g in groups]
([1, 2, -2, -2], [[3, 4]])
"""

from __future__ import annotations

import numpy as np

#: Bits of the breadth-first search gathered at once (:func:`spread`), 32 MiB.
SPREAD_WORDS = 1 << 22

from ..topology.model import HOST, Topology
from ._graph import circuit_table, effective_neighbors, forwarding_nodes, routers


class MinHop:
    """Switch-hop distances from every packet switch to every host.

    Attributes
    ----------
    nbr : ndarray, effective neighbour per (node, port)
    routers : ndarray, packet switch node ids; ``dist`` rows follow this order
    host_class : ndarray of int64, shape (n_hosts,)
        Hosts cabled to the same switches (by the same number of cables) share a class:
        their distances from every switch are equal.
    class_host : ndarray of int64
        One host of each class.
    dist : ndarray of int16 (int32 past 16,000 switches), shape (n_routers + 1, n_classes)
        Hops (channels) from a switch to the hosts of a class; the last row is all
        ``INF`` so that index -1 means "no switch there". ``INF`` where unreachable.
    """

    def __init__(self, topo: Topology, circuits: dict | None = None, down_links=()):
        self.topo = topo
        # distances stay below the switch count: int16 halves the memory traffic
        small = (topo.node_kind != HOST).sum() < 16000
        self.dtype = np.int16 if small else np.int32
        self.INF = np.iinfo(self.dtype).max // 2
        self.nbr = effective_neighbors(topo, circuit_table(topo, circuits))
        if len(down_links):
            # a dead cable leads nowhere, from either end
            links = np.asarray(sorted(down_links), dtype=np.int64)
            self.nbr[topo.link_a[links], topo.link_a_port[links]] = -1
            self.nbr[topo.link_b[links], topo.link_b_port[links]] = -1
        self.routers = routers(topo)
        R = len(self.routers)
        self.rowof = np.full(topo.n_nodes + 1, -1, dtype=np.int64)
        self.rowof[self.routers] = np.arange(R)
        self.host_index = np.append(topo.host_index, -1).astype(np.int64)
        self.host_class, self.class_host, self.dist = class_distances(topo, self.nbr, self.routers, self.dtype)

    def candidates(self, sources: np.ndarray | None = None, chunk_elems: int = 1 << 22):
        """Min-hop port sets for every (source, destination host).

        Parameters
        ----------
        sources : ndarray of int, optional
            Nodes to compute rows for: by default
            :func:`~netsteer.routing._graph.forwarding_nodes`, every switch plus every
            host with more than one connected port (single-homed hosts need no row;
            circuit switch rows stay -1), sorted: the layout of a :class:`Routing`.

        Returns
        -------
        sources : ndarray of int64
        entry : ndarray of int32, shape (len(sources), n_hosts)
            The port when the set has one port, -1 when empty (unreachable, or the
            host itself), ``-2 - g`` for ``groups[g]``.
        groups : list of ndarray
            Distinct port sets of two or more ports, sorted.
        """
        topo = self.topo
        if sources is None:
            sources = forwarding_nodes(topo)
        sources = np.asarray(sources, dtype=np.int64)
        H = topo.n_hosts
        nbr_s = self.nbr[sources]  # (S, slots)
        row_s = self.rowof[nbr_s]
        hid_s = self.host_index[nbr_s]
        host_dst = hid_s >= 0
        S, P = nbr_s.shape
        # Hosts of a class have the same distance column, so the same min-hop set from
        # every row without a cable to them: each set is found once per class (a leaf's
        # or a HyperX switch's hosts), through switches only (a host never forwards),
        # and the rows cabled to a host get their ports to it below. A HyperX of 1,024
        # switches x 64 hosts: 64x less work.
        C = self.dist.shape[1]
        by_cls = np.full((S, C), -1, dtype=np.int32)
        group_id: dict[bytes, int] = {}
        groups: list[np.ndarray] = []

        def group(key: np.ndarray) -> int:
            """The id of the port set ``key`` packs (``np.packbits`` of a P-port mask)."""
            kb = key.tobytes()
            if kb not in group_id:
                group_id[kb] = len(groups)
                groups.append(np.flatnonzero(np.unpackbits(key)[:P]).astype(np.int32))
            return group_id[kb]

        B = max(1, chunk_elems // max(1, S * P))
        for a in range(0, C, B):
            d = np.arange(a, min(a + B, C))
            nd = self.dist[:, d][row_s]  # (S, P, b)
            if host_dst.any():
                nd[host_dst] = self.INF
            best = nd.min(axis=1)  # (S, b)
            mask = nd == best[:, None, :]
            mask &= (best < self.INF)[:, None, :]
            count = mask.sum(axis=1, dtype=np.int16)  # (S, b)
            e = np.where(count == 1, mask.argmax(axis=1), -1).astype(np.int32)
            multi = np.flatnonzero(count.reshape(-1) > 1)
            if multi.size:
                si, bi = np.divmod(multi, len(d))
                bits = np.packbits(mask[si, :, bi], axis=1)
                if bits.shape[1] <= 8:  # one integer key per set: a fast 1-D unique
                    wide = np.zeros((len(bits), 8), dtype=np.uint8)
                    wide[:, : bits.shape[1]] = bits
                    _, first, inv = np.unique(
                        wide.view(np.uint64).ravel(), return_index=True, return_inverse=True
                    )
                    keys = bits[first]
                else:
                    keys, inv = _unique_rows(bits)
                ids = np.array([group(key) for key in keys], dtype=np.int32)
                e.reshape(-1)[multi] = -2 - ids[inv.reshape(-1)]
            by_cls[:, a : a + B] = e
        # (take, not by_cls[:, classes]: that fancy index builds a transposed array,
        # 30x slower to make contiguous, which least_used's reshape(-1) needs)
        entry = np.take(by_cls, self.host_class, axis=1)
        # a row cabled to a host leaves on its ports to it (one, or a set of parallel cables)
        si, pi = np.nonzero(host_dst)
        if si.size:
            hi = hid_s[si, pi]
            order = np.lexsort((pi, hi, si))
            si, pi, hi = si[order], pi[order], hi[order]
            start = np.flatnonzero(np.r_[True, (si[1:] != si[:-1]) | (hi[1:] != hi[:-1])])
            ends = np.r_[start[1:], len(si)]
            one = ends - start == 1
            entry[si[start[one]], hi[start[one]]] = pi[start[one]]
            for a0, b0 in zip(start[~one].tolist(), ends[~one].tolist()):  # parallel cables
                entry[si[a0], hi[a0]] = -2 - group(np.packbits(np.isin(np.arange(P), pi[a0:b0])))
        # a host is not its own destination
        is_host = topo.node_kind[sources] == HOST
        entry[np.flatnonzero(is_host), topo.host_index[sources[is_host]]] = -1
        return sources, entry, groups


def class_distances(topo: Topology, nbr: np.ndarray, rows: np.ndarray, dtype=np.int32):
    """Hops from each switch of ``rows`` to each class of hosts.

    Hosts cabled to the same switches (by the same number of cables) share a class:
    their distances from every switch are equal. Distances run over ``nbr``
    between the switches of ``rows`` only; one bit-parallel search (:func:`spread`)
    covers every class.

    Returns
    -------
    host_class : ndarray of int64, shape (n_hosts,)
        Classes are numbered in the sorted order of their switch sets.
    class_host : ndarray of int64
        The first host of each class.
    dist : ndarray of ``dtype``, shape (len(rows) + 1, n_classes)
        1 from a switch a class's hosts are cabled to, one more per hop;
        ``iinfo(dtype).max // 2`` where there is no way, and in the last row
        (index -1: "no switch").

    Examples
    --------
    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> from netsteer.routing._graph import circuit_table, effective_neighbors, routers
    >>> nbr = effective_neighbors(t, circuit_table(t, None))
    >>> host_class, class_host, dist = class_distances(t, nbr, routers(t))
    >>> host_class.tolist(), class_host.tolist()
    ([0, 0, 1, 1], [0, 2])
    >>> dist[:-1].tolist()  # s1_0, s1_1 (the leaves), then s2_0, s2_1
    [[1, 3], [3, 1], [2, 2], [2, 2]]
    """
    R = len(rows)
    rowof = np.full(topo.n_nodes + 1, -1, dtype=np.int64)
    rowof[rows] = np.arange(R)
    att = np.sort(rowof[nbr[topo.hosts]], axis=1)
    att = att[:, att.shape[1] - max(1, int((att >= 0).sum(axis=1).max(initial=0))) :]  # -1s sort first
    _, rep, host_class = np.unique(_row_keys(att), return_index=True, return_inverse=True)
    c, col = np.nonzero(att[rep] >= 0)
    near = np.zeros((R, len(rep)), dtype=bool)
    near[att[rep][c, col], c] = True
    dist = np.full((R + 1, len(rep)), np.iinfo(dtype).max // 2, dtype=dtype)
    nb = rowof[nbr[rows]]
    u, p = np.nonzero(nb >= 0)
    for hops, reached in enumerate(spread(near, u, nb[u, p]), start=1):
        dist[:R][reached] = hops
    return host_class.reshape(-1).astype(np.int64), rep.astype(np.int64), dist


def spread(start: np.ndarray, u: np.ndarray, v: np.ndarray):
    """Breadth-first search from many sources at once, a bit per (node, source).

    ``start[n, s]``: source ``s`` starts at node ``n``; edges ``u -> v``, sorted by
    ``u``. Yields, level by level from ``start`` itself, the (node, source) pairs
    first reached: a node reaches a source when a node it has an edge to does.
    A fat-tree of 5,120 switches and 2,048 sources: 64 sources per machine word.
    """
    n, k = start.shape
    yield start
    if not len(u):
        return
    key = np.unique(u * n + v)  # parallel cables: one edge
    u, v = key // n, key % n
    first = np.flatnonzero(np.append(True, u[1:] != u[:-1]))
    bounds = np.append(first, len(u))
    tails = u[first]
    words = -(-k // 64)
    per = max(1, SPREAD_WORDS * len(first) // max(1, words * len(u)))  # tails per gather

    def pack(b):
        out = np.zeros((n, words * 8), dtype=np.uint8)
        out[:, : -(-k // 8)] = np.packbits(b, axis=1, bitorder="little")
        return out.view(np.uint64)

    seen = frontier = pack(start)
    while True:
        new = np.zeros_like(frontier)
        for a in range(0, len(first), per):
            b = min(a + per, len(first))
            e0, e1 = bounds[a], bounds[b]
            new[tails[a:b]] = np.bitwise_or.reduceat(frontier[v[e0:e1]], bounds[a:b] - e0, axis=0)
        new &= ~seen
        if not new.any():
            return
        seen = seen | new
        frontier = new
        yield np.unpackbits(new.view(np.uint8), axis=1, count=k, bitorder="little").astype(bool)




def _unique_rows(bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(bits, axis=0, return_inverse=True)`` for rows of bytes, in the same
    (bytewise) order: the rows as big-endian 64-bit words, sorted by ``lexsort``.
    ``np.unique`` on rows compares them field by field, 8x slower on a HyperX's
    9-byte port sets (11.8 s of a 1,024-switch minhop).

    >>> b = np.array([[1, 0, 0, 0, 0, 0, 0, 0, 2], [0, 9, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0, 2]],
    ...              dtype=np.uint8)
    >>> keys, inv = _unique_rows(b)
    >>> keys.tolist() == np.unique(b, axis=0).tolist(), inv.tolist()
    (True, [1, 0, 1])
    """
    n, nb = bits.shape
    w = -(-nb // 8)
    wide = np.zeros((n, 8 * w), dtype=np.uint8)
    wide[:, :nb] = bits
    words = wide.view(">u8")  # big-endian: numeric order is byte order
    order = np.lexsort(words.T[::-1])  # the first word is the primary key
    s = words[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (s[1:] != s[:-1]).any(axis=1)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return bits[order[new]], inv


def _row_keys(a: np.ndarray) -> np.ndarray:
    """One integer per row of a small int array, equal for equal rows (the rows' ids
    in a sorted order)."""
    if a.shape[1] == 1:
        return a[:, 0]
    _, inv = _unique_rows(np.ascontiguousarray(a.astype(">i8")).view(np.uint8).reshape(len(a), -1))
    return inv
