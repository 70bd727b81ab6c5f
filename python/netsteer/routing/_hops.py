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
        att = self.rowof[self.nbr[topo.hosts]]  # (H, slots), -1 where no switch
        _, rep, cls = np.unique(_row_keys(np.sort(att, axis=1)), return_index=True, return_inverse=True)
        self.class_host, self.host_class = rep.astype(np.int64), cls.reshape(-1).astype(np.int64)
        att = att[self.class_host]
        # distances to the switches hosts are cabled to (a fat-tree's leaves) only
        leaves = np.unique(att[att >= 0])
        sw = self._switch_distances(leaves)
        # a class's distance is one more than its hosts' nearest attached switch's
        dist = np.full((R + 1, len(att)), self.INF, dtype=self.dtype)
        for p in np.flatnonzero((att >= 0).any(axis=0)):
            m = att[:, p] >= 0
            dist[:R, m] = np.minimum(dist[:R, m], sw[:, np.searchsorted(leaves, att[m, p])] + 1)
        self.dist = dist

    def _switch_distances(self, targets: np.ndarray) -> np.ndarray:
        """Switch hops from every packet switch (rows) to switch rows ``targets``
        (columns): one breadth-first search per target over the reversed links (a
        scipy BFS; relaxing all pairs over the ports was 4x slower on a fat-tree of
        5,120 switches, which has only 2,048 targets)."""
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path

        R = len(self.routers)
        nb = self.rowof[self.nbr[self.routers]]  # (R, slots)
        u, p = np.nonzero(nb >= 0)
        back = csr_matrix((np.ones(len(u), dtype=np.int8), (nb[u, p], u)), shape=(R, R))
        if not len(targets):
            return np.zeros((R, 0), dtype=self.dtype)
        d = shortest_path(back, method="D", unweighted=True, indices=targets)  # (targets, R)
        out = np.full((R, len(targets)), self.INF, dtype=self.dtype)
        reach = np.isfinite(d.T)
        out[reach] = d.T[reach]
        return out

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
