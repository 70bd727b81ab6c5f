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
from .table import Routing


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
        self.edge_src = src_node[keep].astype(np.int64)
        self.edge_port = port[keep].astype(np.int64)
        self.edge_dst = idx[far[keep]]
        self.edge_channels = np.stack([ch1[keep], ch2[keep]], axis=1).astype(np.int64)
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

    @property
    def n_switches(self) -> int:
        return len(self.switches)

    def candidates(self, targets: np.ndarray) -> np.ndarray:
        """``[E, len(targets)]`` bool: edge ``e`` is a chosen next hop towards switch
        ``t`` (on a shortest path, of the lowest rank available at its switch)."""
        d = self.dist
        ds, dn = d[self.edge_src][:, targets], d[self.edge_dst][:, targets]
        on = (dn >= 0) & (ds > 0) & (dn == ds - 1)
        big = self.n_dims + 1
        r = np.where(on, self.edge_rank[:, None], big)
        best = np.full((self.n_switches, len(targets)), big, dtype=np.int64)
        np.minimum.at(best, self.edge_src, r)
        return on & (r == best[self.edge_src])

    def channel_load(self, demand: np.ndarray, chunk: int | None = None) -> np.ndarray:
        """Channel loads of a switch-to-switch ``demand`` matrix (``[n, n]``, any
        unit), each pair's demand split evenly over its equal next hops.

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
        n = self.n_switches
        demand = np.asarray(demand, dtype=np.float64)
        if demand.shape != (n, n):
            raise RoutingError(f"demand is {demand.shape}, the network has {n} switches")
        np.fill_diagonal(demand := demand.copy(), 0.0)
        unreachable = (demand > 0) & (self.dist < 0)
        if unreachable.any():
            s, t = np.argwhere(unreachable)[0]
            names = self.topo.node_names
            raise RoutingError(f"switch {names[self.switches[s]]} cannot reach {names[self.switches[t]]}")
        load = np.zeros(self.topo.n_channels, dtype=np.float64)
        E = len(self.edge_src)
        chunk = chunk or max(1, min(n, 20_000_000 // max(E, 1)))
        for a in range(0, n, chunk):
            targets = np.arange(a, min(n, a + chunk))
            cand = self.candidates(targets)
            count = np.zeros((n, len(targets)))
            np.add.at(count, self.edge_src, cand)
            share = cand / np.maximum(count[self.edge_src], 1)
            flow = demand[:, targets].copy()  # what sits at each switch for each target
            dist = self.dist[:, targets]
            edge_load = np.zeros(E)
            for level in range(int(dist.max(initial=0)), 0, -1):
                at = np.where(dist == level, flow, 0.0)
                moved = at[self.edge_src] * share
                edge_load += moved.sum(axis=1)
                np.add.at(flow, self.edge_dst, moved)
            for k in (0, 1):
                ch = self.edge_channels[:, k]
                m = ch >= 0
                np.add.at(load, ch[m], edge_load[m])
        return load

    def routing(self, engine: str = "dor") -> Routing:
        """Destination tables: every switch's port towards every host."""
        topo = self.topo
        H, n = topo.n_hosts, self.n_switches
        host_sw = self.index[_host_switch(topo)]
        host_port = _host_port_at_switch(topo)
        table = np.full((n, H), -1, dtype=np.int32)
        cand = self.candidates(np.arange(n))
        order = np.lexsort((self.edge_port, self.edge_src))  # by switch, then port
        for s in range(n):
            es = order[np.searchsorted(self.edge_src[order], s):np.searchsorted(self.edge_src[order], s, "right")]
            c = cand[es][:, host_sw]  # [edges of s, hosts]
            cnt = c.sum(axis=0)
            k = np.arange(H) % np.maximum(cnt, 1)
            pick = c & (np.cumsum(c, axis=0) - 1 == k[None, :])
            has = cnt > 0
            table[s, has] = self.edge_port[es][pick[:, has].argmax(axis=0)]
            local = host_sw == s
            table[s, local] = host_port[local]
        return Routing(topo, table, rows=self.switches, engine=engine)


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
    return MinimalRoutes(topo, circuits, down_links).routing()


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
    return sw


def _host_port_at_switch(topo: Topology) -> np.ndarray:
    out = topo.out_channel[topo.hosts]
    first = np.where(out >= 0, out, np.iinfo(np.int64).max).min(axis=1)
    return topo.channel_dst_port()[first]
