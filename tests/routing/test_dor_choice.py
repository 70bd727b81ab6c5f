"""dor's next-hop choice against a plain reference (the ``E x hosts`` implementation it
replaced): same tables, same ``choice`` matrices, same channel loads, on HyperX of
1 to 4 dimensions, with trunks, down links and circuit switches, and on networks
without coordinates (hybrid, fat tree)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing.dor import MinimalRoutes, _host_port_at_switch
from netsteer.topology import hybrid
from netsteer.topology.hyperx import CircuitSpec, hyperx, paired_lines
from netsteer.topology.model import CIRCUIT, HOST
from netsteer.topology.pgft import pgft

BW = 10e9
dor_module = importlib.import_module("netsteer.routing.dor")  # the package's ``dor`` is the function


# -- the reference: dor as it was before next hops were picked per (switch, target) --

def reference_candidates(m: MinimalRoutes, targets) -> np.ndarray:
    """``[E, len(targets)]`` bool: the edges on a shortest path to each target of the
    lowest rank available at their switch."""
    dt = m.dist[:, targets]
    ds, dn = dt[m.edge_src], dt[m.edge_dst]
    on = (dn >= 0) & (ds > 0) & (dn == ds - 1)
    big = m.n_dims + 1
    r = np.where(on, m.edge_rank[:, None], big)
    best = np.full((m.n_switches, len(targets)), big, dtype=np.int64)
    starts = m.edge_first[:-1]
    has = m.edge_first[1:] > starts
    if has.any():
        best[has] = np.minimum.reduceat(r, starts[has], axis=0)
    return on & (r == best[m.edge_src])


def reference_choice(m: MinimalRoutes, hosts) -> np.ndarray:
    """``[E, len(hosts)]`` bool: the one edge each switch takes towards each host."""
    hosts = np.asarray(hosts, dtype=np.int64)
    targets, of = np.unique(m.host_switch[hosts], return_inverse=True)
    cand = reference_candidates(m, targets)
    cs = np.cumsum(cand, axis=0, dtype=np.int64)
    before = np.zeros((m.n_switches + 1, len(targets)), dtype=np.int64)
    starts = m.edge_first[:-1]
    has = starts > 0
    before[:-1][has] = cs[starts[has] - 1]
    before[-1] = cs[-1] if len(cs) else 0
    rank = cs - before[m.edge_src]  # 1-based among the switch's candidates
    count = before[1:] - before[:-1]
    k = hosts[None, :] % np.maximum(count[:, of], 1)
    return cand[:, of] & (rank[:, of] == k[m.edge_src] + 1)


def reference_next_edges(m: MinimalRoutes, hosts) -> np.ndarray:
    """As nonminimal routing made its ``next_edge`` table from the choice matrix."""
    out = np.full((m.n_switches, len(hosts)), -1, dtype=np.int64)
    e, j = np.nonzero(reference_choice(m, hosts))
    out[m.edge_src[e], j] = e
    return out


def reference_table(m: MinimalRoutes) -> np.ndarray:
    topo = m.topo
    H = topo.n_hosts
    table = np.full((m.n_switches, H), -1, dtype=np.int32)
    hosts = np.arange(H)
    e, j = np.nonzero(reference_choice(m, hosts))
    table[m.edge_src[e], hosts[j]] = m.edge_port[e]
    table[m.host_switch, hosts] = _host_port_at_switch(topo)
    return table


def reference_load(m: MinimalRoutes, demand: np.ndarray) -> np.ndarray:
    dist_h = m.dist[:, m.host_switch]
    load = np.zeros(m.topo.n_channels)
    hosts = np.flatnonzero((demand > 0).any(axis=0))
    pick = reference_choice(m, hosts)
    flow = demand[:, hosts].copy()
    dist = dist_h[:, hosts]
    edge_load = np.zeros(len(m.edge_src))
    for level in range(int(dist.max(initial=0)), 0, -1):
        at = np.where(dist == level, flow, 0.0)
        moved = np.where(pick, at[m.edge_src], 0.0)
        edge_load += moved.sum(axis=1)
        np.add.at(flow, m.edge_dst, moved)
    for k in (0, 1):
        ch = m.edge_channels[:, k]
        np.add.at(load, ch[ch >= 0], edge_load[ch >= 0])
    return load


# -- fabrics --

def _hyperx(S, K, T, circuits=None):
    return hyperx(S, K, T, link_bandwidth=BW, link_latency_ns=0, circuits=circuits)


def _hybrid():
    return hybrid(6, 2, server_bandwidth=BW, tor_uplinks=2, core_switches=2, core_bandwidth=BW,
                  circuit_switches=2, circuit_ports=6, circuit_uplinks=1, circuit_bandwidth=BW,
                  switching_time_ns=0, link_latency_ns=0)


FABRICS = {
    "1d": lambda: _hyperx([5], 1, 1),
    "1d-trunks": lambda: _hyperx([6], 3, 2),
    "1d-pair-trunks": lambda: _hyperx([2], 3, 3),
    "2d": lambda: _hyperx([4, 4], 1, 3),
    "2d-trunks": lambda: _hyperx([3, 4], [1, 2], 2),
    "2d-trunks-all": lambda: _hyperx([4, 3], 2, 5),
    "3d": lambda: _hyperx([2, 3, 2], 1, 1),
    "3d-trunks": lambda: _hyperx([3, 3, 2], [2, 1, 1], 3),
    "4d": lambda: _hyperx([3, 2, 2, 2], [2, 1, 1, 1], 1),
    "flex-dim0": lambda: _hyperx([2, 4], 1, 2, [CircuitSpec(dim=0, switching_time_ns=0)]),
    "flex-dim1-trunks": lambda: _hyperx([3, 4], 2, 3, [CircuitSpec(dim=1, switching_time_ns=0)]),
    "flex-links": lambda: _hyperx([4, 4], [2, 1], 2, [CircuitSpec(
        links=(("x0_0", "x1_0", 0), ("x2_0", "x3_0", 1), ("x0_1", "x0_2"), ("x1_1", "x1_3")))]),
    "flex-paired-lines": lambda: _hyperx([8, 8], 1, 2, paired_lines([8, 8], 8, 0)),
    "hybrid": _hybrid,
    "fat-tree": lambda: pgft(2, [4, 4], [1, 2], [1, 1], link_bandwidth=BW, link_latency_ns=0),
}


def _down_links(topo, rng, share):
    """A random ``share`` of the switch-to-switch (or circuit) cables."""
    ch = np.arange(0, topo.n_channels, 2)
    src, dst = topo.channel_src()[ch], topo.channel_dst()[ch]
    inner = ch[(topo.node_kind[src] != HOST) & (topo.node_kind[dst] != HOST)] // 2
    return tuple(sorted(rng.choice(inner, size=int(share * len(inner)), replace=False).tolist()))


def _random_pairing(topo, rng, unpaired=0):
    """Every circuit switch's connected ports paired at random, ``unpaired`` pairs left out."""
    out = {}
    for node in np.flatnonzero(topo.node_kind == CIRCUIT):
        ports = rng.permutation(np.flatnonzero(topo.out_channel[node] >= 0))
        ports = ports[:len(ports) // 2 * 2][2 * unpaired:]
        arr = np.full(topo.out_channel.shape[1], -1, dtype=np.int64)
        arr[ports[0::2]], arr[ports[1::2]] = ports[1::2], ports[0::2]
        out[int(node)] = arr
    return out


def _cases():
    for name, build in FABRICS.items():
        topo = build()
        circuit = (topo.node_kind == CIRCUIT).any()
        yield pytest.param(name, build, "standing", 0.0, id=f"{name}")
        yield pytest.param(name, build, "standing", 0.2, id=f"{name}-down")
        yield pytest.param(name, build, "standing", 0.6, id=f"{name}-cut")  # mostly disconnected
        if circuit:
            yield pytest.param(name, build, "random", 0.0, id=f"{name}-repaired")
            yield pytest.param(name, build, "random-partial", 0.1, id=f"{name}-repaired-partial-down")


@pytest.fixture(params=[None, 7], ids=["budget-default", "budget-tiny"])
def budget(request, monkeypatch):
    """Tiny chunk budgets split every fabric into many host and target chunks."""
    if request.param is not None:
        for name in ("_CELLS", "_EDGE_CELLS"):
            monkeypatch.setattr(dor_module, name, request.param)
    return request.param


def _routes(name, build, circuits, share, seed=0):
    rng = np.random.default_rng([seed, len(name), int(share * 100)])
    topo = build()
    pairing = None
    if circuits == "random":
        pairing = _random_pairing(topo, rng)
    elif circuits == "random-partial":
        pairing = _random_pairing(topo, rng, unpaired=1)
    down = _down_links(topo, rng, share) if share else ()
    return MinimalRoutes(topo, pairing, down), rng


@pytest.mark.parametrize("name,build,circuits,share", list(_cases()))
def test_tables_choice_and_loads_match_the_reference(name, build, circuits, share, budget):
    m, rng = _routes(name, build, circuits, share)
    H = m.topo.n_hosts
    for targets in (np.arange(m.n_switches), rng.integers(0, m.n_switches, 5)):
        assert np.array_equal(m.candidates(targets), reference_candidates(m, targets))
    assert np.array_equal(m.routing().table, reference_table(m))
    for hosts in (np.arange(H), rng.permutation(H)[: max(1, H // 3)], rng.integers(0, H, 2 * H)):
        assert np.array_equal(m.choice(hosts), reference_choice(m, hosts))
        assert np.array_equal(m.next_edges(hosts), reference_next_edges(m, hosts))
    reach = m.dist[:, m.host_switch] >= 0
    demand = rng.uniform(0, 1, (m.n_switches, H)) * reach
    demand[:, rng.random(H) < 0.3] = 0.0  # hosts nobody sends to
    demand[rng.random(demand.shape) < 0.2] = 0.0
    want = reference_load(m, demand)
    for chunk in (None, 1, 3):
        assert np.allclose(m.channel_load(demand, chunk=chunk), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["1d-trunks", "2d-trunks", "flex-dim1-trunks", "hybrid", "fat-tree"])
def test_some_switches_have_several_candidates(name):
    """The cases above would prove little if every switch had one candidate."""
    m = MinimalRoutes(FABRICS[name]())
    cand = reference_candidates(m, np.arange(m.n_switches)).astype(np.int64)
    assert np.add.reduceat(cand, m.edge_first[:-1], axis=0).max() >= 2


def test_unreachable_demand_is_refused():
    topo = _hyperx([2], 1, 1)
    m = MinimalRoutes(topo, down_links=_down_links(topo, np.random.default_rng(0), 1.0))
    demand = np.zeros((2, 2))
    demand[0, 1] = 1.0
    with pytest.raises(RoutingError, match="switch x0 cannot reach h1"):
        m.channel_load(demand)
    assert np.array_equal(m.routing().table, reference_table(m))
