"""Minimal dimension-order routing (DOR) for HyperX, with or without circuit switches.

A packet switch forwards traffic for a host on switch ``t`` to a neighbour on a
shortest path (in switch hops) to ``t``, over the network as it is: cables that are
down are left out, and cables through a circuit switch lead wherever its pairing
leads them. Among the neighbours on shortest paths it takes a *lattice* hop (one
whose ends differ in one coordinate) that corrects the lowest dimension first; hops
that join switches differing in several coordinates (circuits a steering controller
set up) come after. On a plain HyperX this is exactly dimension-order routing (one
hop per dimension that differs, dimension 0 first); once a circuit joins two
switches directly, their traffic takes it (one hop instead of two). Every hop brings
the packet one step closer, so the tables never loop.

Parallel cables (trunking ``K``) and equal choices are spread by destination host:
host ``h`` takes the ``h mod n``-th of the ``n`` equal ports (lowest port first), so
the ``T`` hosts of a switch use different trunks.

Examples
--------
>>> from netsteer.topology.hyperx import hyperx
>>> t = hyperx([4, 4], 1, 1, link_bandwidth=1e9, link_latency_ns=0)
>>> r = dor(t)
>>> r.describe(0, 15)  # x0_0 -> x3_3: dimension 0 first, then dimension 1
'h0 -> x0_0 -> x3_0 -> x3_3 -> h15'
>>> r.check()
"""

from __future__ import annotations

import numpy as np

from ..errors import RoutingError
from ..topology.model import CIRCUIT, HOST, SWITCH, Topology
from ._graph import circuit_table
from .homing import single_homed_error
from .table import Routing

# Chunk budgets, in matrix cells, that bound memory on big fabrics: the [edges,
# target switches] candidate matrices, and the [switches, hosts] next-edge matrices
_EDGE_CELLS = 4_000_000
_CELLS = 4_000_000


class MinimalRoutes:
    """Shortest-path next hops between the packet switches of a network.

    Parameters
    ----------
    topo : Topology
        Any topology; lattice hops are recognised from ``meta["coords"]`` (HyperX).
    circuits : dict of int to array_like, optional
        Circuit pairings (default: the topology's standing pairing).
    down_links : iterable of int
        Links that are down.

    Attributes
    ----------
    switches : ndarray, node id of switch index ``i`` (packet switches, node order)
    edge_src, edge_dst : ndarray, switch indices of each directed switch-to-switch hop
    edge_port : ndarray, the port the hop leaves ``edge_src`` by
    edge_channels : ndarray [E, 2], channels crossed (second -1 for a plain cable)
    edge_rank : ndarray, dimension a lattice hop corrects; ``n_dims`` for other hops
    dist : ndarray [n, n], switch hops (``-1`` unreachable)

    Examples
    --------
    >>> from netsteer.topology.hyperx import hyperx
    >>> m = MinimalRoutes(hyperx([3, 3], 1, 1, link_bandwidth=1e9, link_latency_ns=0))
    >>> int(m.dist.max()), len(m.edge_src)  # 9 switches x 4 neighbours
    (2, 36)
    """

    def __init__(self, topo: Topology, circuits: dict | None = None, down_links=()):
        self.topo = topo
        kind = topo.node_kind
        self.switches = np.flatnonzero(kind == SWITCH).astype(np.int64)
        n = len(self.switches)
        idx = np.full(topo.n_nodes, -1, dtype=np.int64)
        idx[self.switches] = np.arange(n)
        self.index = idx
        pairing = circuit_table(topo, circuits)
        down = np.zeros(topo.n_links, dtype=bool)
        down[np.asarray(sorted(int(x) for x in down_links), dtype=np.int64)] = True
        out, cdst, cdport = topo.out_channel, topo.channel_dst(), topo.channel_dst_port()
        src_node, port = np.nonzero(out[self.switches] >= 0)
        ch1 = out[self.switches[src_node], port]
        far = cdst[ch1]
        ch2 = np.full(len(ch1), -1, dtype=np.int64)
        via = kind[far] == CIRCUIT
        if via.any():  # one circuit switch on the way (the flexible HyperX's shape)
            q = pairing[far[via], cdport[ch1[via]]]
            ok = q >= 0
            c2 = np.where(ok, out[far[via], np.where(ok, q, 0)], -1)
            ch2[via] = c2
            far = far.copy()
            far[via] = np.where(c2 >= 0, cdst[np.maximum(c2, 0)], -1)
        keep = (far >= 0) & ~down[ch1 // 2] & ((ch2 < 0) | ~down[np.maximum(ch2, 0) // 2])
        keep &= np.where(far >= 0, kind[np.maximum(far, 0)] == SWITCH, False)
        # edges sorted by switch, then port: the order equal choices are taken in
        src_i, port_k = src_node[keep].astype(np.int64), port[keep].astype(np.int64)
        order = np.lexsort((port_k, src_i))
        self.edge_src = src_i[order]
        self.edge_port = port_k[order]
        self.edge_dst = idx[far[keep]][order]
        self.edge_channels = np.stack([ch1[keep], ch2[keep]], axis=1).astype(np.int64)[order]
        self.edge_first = np.searchsorted(self.edge_src, np.arange(n + 1))  # CSR by switch
        coords = topo.meta.get("coords")
        if coords is not None:
            c = np.asarray(coords)[self.switches]
            diff = c[self.edge_src] != c[self.edge_dst]
            self.n_dims = c.shape[1]
            self.edge_rank = np.where(diff.sum(axis=1) == 1, diff.argmax(axis=1), self.n_dims)
        else:
            self.n_dims = 0
            self.edge_rank = np.zeros(len(self.edge_src), dtype=np.int64)
        self.dist = _bfs_all(n, self.edge_src, self.edge_dst)
        self.host_switch = idx[_host_switch(topo)]

    @property
    def n_switches(self) -> int:
        return len(self.switches)

    def candidates(self, targets: np.ndarray) -> np.ndarray:
        """``[E, len(targets)]`` bool: edge ``e`` may carry traffic towards switch
        ``t`` (on a shortest path, of the lowest rank available at its switch)."""
        n = self.n_switches
        # the narrowest integers that hold the distances and ranks: the E x targets
        # matrices below cost memory traffic rather than arithmetic
        dt = self.dist[:, targets].astype(np.min_scalar_type(-(n + 1)))  # targets' columns first
        degree = np.diff(self.edge_first)
        ds = np.repeat(dt, degree, axis=0)  # edges are sorted by switch
        dn = dt[self.edge_dst]
        on = (dn >= 0) & (dn == ds - 1)
        big = self.n_dims + 1
        small = np.min_scalar_type(big)
        r = np.where(on, self.edge_rank.astype(small)[:, None], small.type(big))
        best = np.full((n, len(targets)), big, dtype=small)
        # a segmented minimum (np.minimum.at is 10x slower)
        has = degree > 0
        if has.any():
            best[has] = np.minimum.reduceat(r, self.edge_first[:-1][has], axis=0)
        return on & (r == np.repeat(best, degree, axis=0))

    def next_edges(self, hosts) -> np.ndarray:
        """The edge each switch forwards traffic for each host by.

        Host ``h`` takes the ``h mod n``-th of the switch's ``n`` candidate edges
        towards the host's switch (see :meth:`candidates`), in port order.

        Parameters
        ----------
        hosts : array_like of int
            Host indices, in any order, repeats allowed.

        Returns
        -------
        ndarray ``[n_switches, len(hosts)]`` int64
            Edge indices; ``-1`` at the host's own switch and where it is out of reach.

        Examples
        --------
        >>> from netsteer.topology.hyperx import hyperx
        >>> m = MinimalRoutes(hyperx([2], 2, 2, link_bandwidth=1e9, link_latency_ns=0))
        >>> m.next_edges([2, 3]).tolist()  # x0's two trunks to x1 take one host each
        [[0, 1], [-1, -1]]
        """
        hosts = np.asarray(hosts, dtype=np.int64).ravel()
        picked = np.full((self.n_switches, len(hosts)), -1, dtype=np.int64)
        # candidates depend on the host's switch only: listed once per target switch
        # (a chunk of them at a time), then each host picks from its switch's lists
        targets, of = np.unique(self.host_switch[hosts], return_inverse=True)
        by_target = np.argsort(of, kind="stable")
        step = max(1, _EDGE_CELLS // max(len(self.edge_src), 1))
        for a in range(0, len(targets), step):
            lo, hi = np.searchsorted(of[by_target], [a, a + step])
            cols = by_target[lo:hi]  # the hosts on targets[a:a + step]
            edges, first, count = self._candidate_lists(targets[a:a + step])
            picked[:, cols] = _pick(edges, first, count, of[cols] - a, hosts[cols])
        return picked

    def _candidate_lists(self, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every switch's candidate edges towards each of ``targets``, in port order.

        Returns
        -------
        edges, first, count : ndarray
            Switch ``s``'s candidates towards ``targets[j]`` are
            ``edges[first[j, s]:first[j, s] + count[j, s]]`` (``first``, ``count``
            are ``[len(targets), n_switches]``).
        """
        n = self.n_switches
        cand = self.candidates(targets)
        # by target, then edge; edges are sorted by switch, then port
        j, edges = np.nonzero(np.ascontiguousarray(cand.T))
        count = np.bincount(j * n + self.edge_src[edges], minlength=len(targets) * n)
        first = np.cumsum(count) - count
        return edges, first.reshape(-1, n), count.reshape(-1, n)

    def choice(self, hosts: np.ndarray) -> np.ndarray:
        """``[E, len(hosts)]`` bool: the one edge each switch takes towards each host
        (host ``h`` takes the ``h mod n``-th of its ``n`` candidates, port order);
        :meth:`next_edges` gives the same as edge indices, without the E x hosts matrix."""
        picked = self.next_edges(hosts)
        s, j = np.nonzero(picked >= 0)
        out = np.zeros((len(self.edge_src), picked.shape[1]), dtype=bool)
        out[picked[s, j], j] = True
        return out

    def channel_load(self, demand: np.ndarray, chunk: int | None = None) -> np.ndarray:
        """Channel loads of ``demand`` (``[switches, hosts]``: what each switch's
        hosts send to each host, any unit) routed as the tables route it.

        Parameters
        ----------
        demand : array_like ``[n_switches, n_hosts]``
        chunk : int, optional
            Destination hosts routed at a time (bounds memory); default from the size.

        Raises
        ------
        RoutingError
            When demand is given between switches that cannot reach each other.

        Examples
        --------
        >>> from netsteer.topology.hyperx import hyperx
        >>> t = hyperx([4], 1, 1, link_bandwidth=1e9, link_latency_ns=0)
        >>> m = MinimalRoutes(t)
        >>> d = np.zeros((4, 4)); d[0, 3] = 5.0
        >>> load = m.channel_load(d)
        >>> float(load.max()), t.channel_name(int(load.argmax()))
        (5.0, 'x0[4]->x3')
        """
        n, H = self.n_switches, self.topo.n_hosts
        demand = np.asarray(demand, dtype=np.float64)
        if demand.shape != (n, H):
            raise RoutingError(f"demand is {demand.shape}, expected (switches, hosts) = {(n, H)}")
        dist_h = self.dist[:, self.host_switch]
        unreachable = (demand > 0) & (dist_h < 0)
        if unreachable.any():
            s, h = np.argwhere(unreachable)[0]
            names = self.topo.node_names
            raise RoutingError(f"switch {names[self.switches[s]]} cannot reach {names[self.topo.hosts[h]]}")
        cols = np.flatnonzero((demand > 0).any(axis=0))
        chunk = chunk or max(1, _CELLS // max(n, 1))
        edge_load = np.zeros(len(self.edge_src))
        for a in range(0, len(cols), chunk):
            hosts = cols[a:a + chunk]
            edge_load += self._edge_load(demand[:, hosts], dist_h[:, hosts], self.next_edges(hosts))
        load = np.zeros(self.topo.n_channels, dtype=np.float64)
        for k in (0, 1):
            ch = self.edge_channels[:, k]
            m = ch >= 0
            np.add.at(load, ch[m], edge_load[m])
        return load

    def _edge_load(self, flow: np.ndarray, dist: np.ndarray, picked: np.ndarray) -> np.ndarray:
        """Load on each edge when ``flow`` (``[switches, hosts]``, ``dist`` hops from
        each host) walks to its hosts along the ``picked`` edges."""
        flow = flow.copy()  # what sits at each switch for each host
        E, width = len(self.edge_src), flow.shape[1]
        load = np.zeros(E)
        # farthest first: every hop is one closer, so a switch has received all its
        # transit traffic for a host before it forwards it
        for level in range(int(dist.max(initial=0)), 0, -1):
            s, j = np.nonzero(dist == level)
            e, moved = picked[s, j], flow[s, j]
            load += np.bincount(e, weights=moved, minlength=E)
            flow += np.bincount(self.edge_dst[e] * width + j, weights=moved, minlength=flow.size).reshape(flow.shape)
        return load

    def routing(self, engine: str = "dor") -> Routing:
        """Destination tables: every switch's port towards every host."""
        topo = self.topo
        H, n = topo.n_hosts, self.n_switches
        table = np.full((n, H), -1, dtype=np.int32)
        port_or_none = np.append(self.edge_port, -1)  # edge -1 (no next hop) -> port -1
        step = max(1, _CELLS // max(n, 1))
        for a in range(0, H, step):
            hosts = np.arange(a, min(H, a + step))
            table[:, a:a + step] = port_or_none[self.next_edges(hosts)]
        local = self.host_switch
        table[local, np.arange(H)] = _host_port_at_switch(topo)
        return Routing(topo, table, rows=self.switches, engine=engine)


def _pick(edges: np.ndarray, first: np.ndarray, count: np.ndarray, of: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    """``[n_switches, len(hosts)]``: host ``hosts[i]`` (towards target ``of[i]`` of the
    lists :meth:`MinimalRoutes._candidate_lists` made) takes candidate ``h mod count``."""
    c = count[of].T
    at = first[of].T + hosts % np.maximum(c, 1)
    return np.append(edges, -1)[np.where(c > 0, at, -1)]  # no candidate -> edge -1


def dor(topo: Topology, circuits: dict | None = None, down_links=()) -> Routing:
    """Minimal dimension-order routing tables (see the module text).

    Parameters
    ----------
    topo : Topology
        A HyperX (``meta["coords"]`` gives the dimensions); on other topologies
        every shortest path counts as a lattice hop (plain min-hop).
    circuits : dict of int to array_like, optional
        Circuit switch pairings (default: the topology's standing pairing).
    down_links : iterable of int, optional
        Links that are down: routes avoid them.

    Examples
    --------
    >>> from netsteer.topology.hyperx import hyperx, CircuitSpec
    >>> t = hyperx([2, 4], 1, 1, link_bandwidth=1e9, link_latency_ns=0,
    ...            circuits=[CircuitSpec(dim=0, switching_time_ns=0)])
    >>> sip = t.node("sip0")
    >>> dor(t).describe(0, 7)  # x0_0 -> x1_3 by the circuit (dimension 0), then the mesh
    'h0 -> x0_0 -> sip0 -> x1_0 -> x1_3 -> h7'
    >>> steered = t.meta["initial_circuits"][sip].copy()
    >>> steered[[1, 8, 2, 7]] = [8, 1, 7, 2]  # re-pair: x0_0 - x1_3 and x1_0 - x0_3
    >>> now = {sip: steered}
    >>> dor(t, circuits=now).describe(0, 7, circuits=now)
    'h0 -> x0_0 -> sip0 -> x1_3 -> h7'
    """
    r = MinimalRoutes(topo, circuits, down_links).routing()
    r.down_links = frozenset(int(x) for x in down_links)  # what they cut off needs no route
    return r


def _bfs_all(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """All-pairs hop counts (-1 unreachable) by breadth-first search from every switch."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    if n == 0:
        return np.zeros((0, 0), dtype=np.int64)
    g = csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    d = shortest_path(g, method="D", unweighted=True, directed=True)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


def _host_switch(topo: Topology) -> np.ndarray:
    """Node of the switch each host index hangs off (its lowest port)."""
    out = topo.out_channel[topo.hosts]
    first = np.where(out >= 0, out, np.iinfo(np.int64).max).min(axis=1)
    if (first == np.iinfo(np.int64).max).any():
        h = int(np.flatnonzero(first == np.iinfo(np.int64).max)[0])
        raise RoutingError(f"host {topo.node_names[topo.hosts[h]]} is not connected")
    sw = topo.channel_dst()[first]
    if (topo.node_kind[sw] == HOST).any():
        raise RoutingError("dor needs every host on a switch")
    ends = np.where(out >= 0, topo.channel_dst()[np.maximum(out, 0)], -1)
    multi = ((ends >= 0) & (ends != sw[:, None])).any(axis=1)  # (parallel cables to one switch: fine)
    if multi.any():
        h = int(np.flatnonzero(multi)[0])
        to = sorted({topo.node_names[int(v)] for v in ends[h] if v >= 0})
        raise single_homed_error("dor", topo.node_names[topo.hosts[h]], to)
    return sw


def _host_port_at_switch(topo: Topology) -> np.ndarray:
    out = topo.out_channel[topo.hosts]
    first = np.where(out >= 0, out, np.iinfo(np.int64).max).min(axis=1)
    return topo.channel_dst_port()[first]
