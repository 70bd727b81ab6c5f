"""HyperX generator: counts, wiring and port numbering, checked by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from netsteer.topology import HOST, hyperx
from netsteer.topology.metrics import bisection_bandwidth, switch_diameter


def cables(t):
    """Multiset of switch pairs (by name) joined by a cable."""
    out = {}
    for a, b in zip(t.link_a.tolist(), t.link_b.tolist()):
        key = frozenset((t.node_names[a], t.node_names[b]))
        out[key] = out.get(key, 0) + 1
    return out


def test_counts_4x4_k1_t2():
    t = hyperx([4, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=100)
    assert t.n_switches == 16
    assert t.n_hosts == 32
    switch_links = int(((t.node_kind[t.link_a] != HOST) & (t.node_kind[t.link_b] != HOST)).sum())
    assert switch_links == 16 * 6 // 2 == 48
    assert t.n_links == 48 + 32


def test_counts_trunked_3x4():
    # dim 0: 3 pairs per row x 4 rows x K=2; dim 1: 6 pairs per column x 3 columns x K=1
    t = hyperx([3, 4], [2, 1], 1, link_bandwidth=1e9, link_latency_ns=0)
    assert t.n_links == 24 + 18 + 12
    assert (t.n_ports[t.switches] == 1 + 2 * 2 + 1 * 3).all()


def test_every_pair_differing_in_one_coordinate_has_k_cables():
    S, K = [3, 2, 3], [1, 3, 2]
    t = hyperx(S, K, 1, link_bandwidth=1e9, link_latency_ns=0)
    got = cables(t)
    for c1, c2 in itertools.combinations(itertools.product(*map(range, S)), 2):
        diff = [d for d in range(3) if c1[d] != c2[d]]
        key = frozenset(("x" + "_".join(map(str, c1)), "x" + "_".join(map(str, c2))))
        assert got.get(key, 0) == (K[diff[0]] if len(diff) == 1 else 0)


def test_port_order_hosts_then_dimensions():
    t = hyperx([4, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=0)
    sw = t.node("x1_2")
    peers = {p: t.node_names[n] for p, n, _ in t.neighbors(sw)}
    assert peers == {1: "h18", 2: "h19", 3: "x0_2", 4: "x2_2", 5: "x3_2",
                     6: "x1_0", 7: "x1_1", 8: "x1_3"}
    # x1_2 is x1_1's dimension-1 peer of rank 1 (values 0, 2, 3): port 6 + 1
    assert t.port_peer(sw, 7) == (t.node("x1_1"), 7)


def test_trunk_ports_are_consecutive():
    t = hyperx([3], [2], 1, link_bandwidth=1e9, link_latency_ns=0)
    x0, x1, x2 = (t.node(n) for n in ("x0", "x1", "x2"))
    assert [t.port_peer(x1, p) for p in (2, 3, 4, 5)] == [(x0, 2), (x0, 3), (x2, 4), (x2, 5)]


def test_meta_coords_and_host_switch():
    t = hyperx([2, 3], 1, 2, link_bandwidth=1e9, link_latency_ns=0, host_bandwidth=5e8)
    assert t.meta["kind"] == "hyperx"
    assert t.meta["coords"].shape == (t.n_nodes, 2)
    h = t.node("h7")  # switch 3 = coords (1, 1)
    assert t.meta["host_switch"][t.host_index[h]] == t.node("x1_1")
    assert list(t.meta["coords"][h]) == [1, 1]
    assert t.meta["switch_at"][1, 2] == t.node("x1_2")
    host_links = t.node_kind[t.link_a] == HOST
    assert set(t.link_bandwidth[host_links]) == {5e8}
    assert set(t.link_bandwidth[~host_links]) == {1e9}


@pytest.mark.parametrize("S,K,T,match", [
    ([], 1, 1, "at least one dimension"),
    ([4, 0], 1, 1, "S entries"),
    ([4, 4], [1], 1, "K has 1 entries"),
    ([4, 4], 0, 1, "K entries"),
    ([4, 4], 1, 0, "T"),
])
def test_bad_shapes(S, K, T, match):
    with pytest.raises(ValueError, match=match):
        hyperx(S, K, T, link_bandwidth=1e9, link_latency_ns=0)


def test_bisection_and_diameter_by_hand():
    t = hyperx([4, 6], [2, 1], 3, link_bandwidth=10e9, link_latency_ns=0)
    # cutting dim 0: (4/2)^2 pairs x K=2 x 6 rows = 48 cables; dim 1: 3*3 x 1 x 4 = 36
    assert bisection_bandwidth(t) == pytest.approx(36 * 10e9)
    assert switch_diameter(t) == 2
    assert switch_diameter(hyperx([3, 3, 3], 1, 1, link_bandwidth=1, link_latency_ns=0)) == 3


def test_bisection_limited_by_hosts():
    # one host per switch on 1 Gbit/s, fat 100 Gbit/s trunks: the hosts are the cut
    t = hyperx([4], 1, 1, link_bandwidth=100e9, link_latency_ns=0, host_bandwidth=1e9)
    assert bisection_bandwidth(t) == pytest.approx(2e9)
    assert np.isfinite(bisection_bandwidth(t))


def test_flexible_hyperx_diameter_is_its_standing_pairings():
    # the dimension-0 cables all run through the SiP switch: the diameter was null
    from netsteer.topology.hyperx import CircuitSpec

    t = hyperx([2, 4], 1, 2, link_bandwidth=1, link_latency_ns=0, circuits=[CircuitSpec(dim=0)])
    assert switch_diameter(t) == switch_diameter(hyperx([2, 4], 1, 2, link_bandwidth=1, link_latency_ns=0)) == 2
    t = hyperx([3, 3, 3], 1, 1, link_bandwidth=1, link_latency_ns=0, circuits=[CircuitSpec(dim=1)])
    assert switch_diameter(t) == 3
