"""Non-minimal routing to compare steering against: Valiant and a UGAL-like choice.

Both are per-flow path choices, not destination tables, so they are path objects:
``paths(src, dst, classes=None, flow_ids=None, circuits=None)`` like
:meth:`netsteer.routing.table.Routing.paths`, which is all the simulator driver needs.

``valiant``
    Each flow goes minimally (:mod:`netsteer.routing.dor`) to an intermediate packet
    switch drawn for it (a hash of its flow id and ``seed``), then minimally to its
    destination. Load spreads evenly whatever the traffic; paths are up to twice
    as long.
``ugal``
    Each flow takes its minimal path or a Valiant path, whichever is less loaded
    when it starts, UGAL's rule: minimal when ``q_min * h_min <= q_val * h_val``,
    with ``h`` the path's hops and ``q`` the most flows already on any of its
    channels. "When it starts" is the flows of the same *wave*: flows released by
    the same number of dependency steps (one step of a collective), which the
    flow-level engine starts together. The choice is made once, in wave order,
    from the flows placed before it in that wave (greedy, deterministic).

Examples
--------
>>> from netsteer.topology.hyperx import hyperx
>>> t = hyperx([4, 4], 1, 1, link_bandwidth=1e9, link_latency_ns=0)
>>> v = ValiantRouting(t, seed=1)
>>> off, ch = v.paths([0, 0], [1, 1], flow_ids=[0, 1])
>>> len(ch) >= 2 * 3  # two flows, each at least host-switch-switch-host
True
>>> u = UgalRouting(t, waves=[0, 0, 0])
>>> off, ch = u.paths([0, 4, 8], [3, 3, 3], flow_ids=[0, 1, 2])
>>> u.choices.tolist()  # no switch channel shared: all minimal
['minimal', 'minimal', 'minimal']
"""

from __future__ import annotations

import numpy as np

from ..errors import RoutingError
from ..topology.model import Topology
from .dor import MinimalRoutes
from .table import flow_hash


class _PathRouting:
    """Shared walking: minimal next hops towards any host, from any switch."""

    engine = "nonminimal"

    def __init__(self, topo: Topology, circuits: dict | None = None):
        self.topo = topo
        self.routes = MinimalRoutes(topo, circuits)
        m = self.routes
        H = topo.n_hosts
        self.next_edge = m.next_edges(np.arange(H))  # [switches, H]
        out = topo.out_channel
        hosts = topo.hosts
        first = np.where(out[hosts] >= 0, out[hosts], np.iinfo(np.int64).max).min(axis=1)
        self.up = first  # host -> its switch
        self.down = first ^ 1  # the same cable, switch -> host
        # a representative host per switch (the target of a Valiant first leg)
        self.rep = np.full(m.n_switches, -1, dtype=np.int64)
        self.rep[m.host_switch[::-1]] = np.arange(H)[::-1]
        self.hops_sw = m.dist

    def check(self, topo=None, circuits=None) -> None:
        if (self.routes.dist[:, self.routes.host_switch] < 0).any():
            raise RoutingError("some switch cannot reach some host")

    def _legs(self, s_sw: np.ndarray, t_host: np.ndarray) -> list[list[int]]:
        """Switch-to-switch channels from each ``s_sw`` to ``t_host``'s switch."""
        m = self.routes
        out = [[] for _ in range(len(s_sw))]
        cur = s_sw.copy()
        goal = m.host_switch[t_host]
        active = np.flatnonzero(cur != goal)
        while active.size:
            e = self.next_edge[cur[active], t_host[active]]
            if (e < 0).any():
                raise RoutingError("no minimal path")
            for i, ee in zip(active, e):
                out[i].extend(int(c) for c in m.edge_channels[ee] if c >= 0)
            cur[active] = m.edge_dst[e]
            active = active[cur[active] != goal[active]]
        return out

    def _assemble(self, src, dst, legs) -> tuple[np.ndarray, np.ndarray]:
        offsets = [0]
        chans: list[int] = []
        for s, d, mid in zip(src, dst, legs):
            if s != d:
                chans.append(int(self.up[s]))
                chans.extend(mid)
                chans.append(int(self.down[d]))
            offsets.append(len(chans))
        return np.asarray(offsets, dtype=np.int64), np.asarray(chans, dtype=np.int32)

    def _minimal(self, src, dst):
        return self._legs(self.routes.host_switch[src], dst)

    def _valiant(self, src, dst, flow_ids, seed):
        m = self.routes
        n = m.n_switches
        mid = (flow_hash(np.full(len(src), seed), src, dst, flow_ids, "flow") % np.uint64(n)).astype(np.int64)
        first = self._legs(m.host_switch[src], self.rep[mid])
        second = self._legs(mid, dst)
        return [a + b for a, b in zip(first, second)]


class ValiantRouting(_PathRouting):
    """Valiant routing (see the module text)."""

    engine = "valiant"

    def __init__(self, topo: Topology, circuits: dict | None = None, seed: int = 0):
        super().__init__(topo, circuits)
        self.seed = seed

    def paths(self, src_hosts, dst_hosts, classes=None, flow_ids=None, circuits=None):
        src = np.asarray(src_hosts, dtype=np.int64)
        dst = np.asarray(dst_hosts, dtype=np.int64)
        fid = np.arange(len(src)) if flow_ids is None else np.asarray(flow_ids, dtype=np.int64)
        return self._assemble(src, dst, self._valiant(src, dst, fid, self.seed))


class UgalRouting(_PathRouting):
    """UGAL-like adaptive choice per flow (see the module text).

    Parameters
    ----------
    waves : array_like of int
        Wave of each flow id (:func:`flow_waves`).
    """

    engine = "ugal"

    def __init__(self, topo: Topology, waves, circuits: dict | None = None, seed: int = 0):
        super().__init__(topo, circuits)
        self.waves = np.asarray(waves, dtype=np.int64)
        self.seed = seed
        self.choices = np.array([], dtype=object)

    def paths(self, src_hosts, dst_hosts, classes=None, flow_ids=None, circuits=None):
        src = np.asarray(src_hosts, dtype=np.int64)
        dst = np.asarray(dst_hosts, dtype=np.int64)
        fid = np.arange(len(src)) if flow_ids is None else np.asarray(flow_ids, dtype=np.int64)
        mins = self._minimal(src, dst)
        vals = self._valiant(src, dst, fid, self.seed)
        wave = self.waves[fid]
        load = np.zeros(self.topo.n_channels, dtype=np.int64)
        chosen: list[list[int]] = [[] for _ in range(len(src))]
        choices = np.empty(len(src), dtype=object)
        current = None
        for i in np.lexsort((fid, wave)):
            if wave[i] != current:
                current, touched = wave[i], []
                load[:] = 0
            a, b = mins[i], vals[i]
            q_min = int(load[a].max()) if a else 0
            q_val = int(load[b].max()) if b else 0
            take_min = (q_min + 1) * (len(a) + 2) <= (q_val + 1) * (len(b) + 2)
            path = a if take_min else b
            choices[i] = "minimal" if take_min else "valiant"
            chosen[i] = path
            if path:
                load[path] += 1
        self.choices = choices
        return self._assemble(src, dst, chosen)


def flow_waves(dag) -> np.ndarray:
    """Dependency depth of every flow of ``dag`` (0: released at its start).

    >>> from netsteer.traffic.dag import FlowDag
    >>> d = FlowDag(); a = d.add(0, 1, 10); b = d.add(1, 2, 10, deps=[a]); c = d.add(2, 3, 1, deps=[a, b])
    >>> flow_waves(d).tolist()
    [0, 1, 2]
    """
    c = dag.columns()
    n = len(c.src)
    depth = np.zeros(n, dtype=np.int64)
    off, deps = c.dep_offsets, c.deps
    for i in range(n):  # flows are added after the flows they depend on
        if off[i + 1] > off[i]:
            depth[i] = depth[deps[off[i]:off[i + 1]]].max() + 1
    return depth


def mean_hops(paths_result, topo: Topology) -> float:
    """Mean switch-to-switch hops of flows that cross the network (circuit
    switches are looked through: a cable through one counts once)."""
    from ..topology.model import CIRCUIT

    offsets, ch = paths_result
    n = np.diff(offsets)
    moving = n > 0
    if not moving.any():
        return 0.0
    src = topo.channel_src()[ch]
    # channels leaving a packet switch towards a switch or a circuit switch
    sw_hop = (topo.node_kind[src] == 1) & (topo.node_kind[topo.channel_dst()[ch]] != 0)
    per_flow = np.add.reduceat(sw_hop.astype(np.int64), offsets[:-1][moving]) if len(ch) else np.zeros(0)
    _ = CIRCUIT
    return float(per_flow.mean())
