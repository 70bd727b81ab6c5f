"""Min-hop routing: rings, fat trees, balancing and circuit switches."""

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import dmodk, minhop
from netsteer.topology.model import TopologyBuilder
from netsteer.topology.pgft import pgft


def ring(n):
    b = TopologyBuilder(f"ring{n}")
    sw = [b.add_switch(f"s{i}") for i in range(n)]
    for i in range(n):  # s_i port 1 -> s_{i+1}, s_{i+1} port 2 -> s_i (s0: port 2 -> s_{n-1})
        b.add_link(sw[i], sw[(i + 1) % n], bandwidth=1e9, latency_ns=0)
    for i in range(n):
        b.add_link(b.add_host(f"h{i}"), sw[i], bandwidth=1e9, latency_ns=0)
    return b.build()


def test_ring_paths_are_shortest_and_balanced():
    t = ring(6)
    r = minhop(t)
    r.check()
    n = 6
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    off, _ = r.paths(src, dst)
    hops = np.minimum((dst - src) % n, (src - dst) % n)
    assert (np.diff(off) == np.where(src == dst, 0, hops + 2)).all()
    # at s0, h1 and h2 already use the port to s1 when h3 (a tie) comes: it goes via s5
    assert r.describe(0, 3) == "h0 -> s0 -> s5 -> s4 -> s3 -> h3"
    s0 = t.node("s0")
    assert r.node_rows([s0])[0].tolist() == [3, 1, 1, 2, 2, 2]


def test_equals_dmodk_on_a_full_two_level_tree():
    t = pgft(2, [4, 4], [1, 4], link_bandwidth=1e9, link_latency_ns=0)
    r = minhop(t)
    sw = t.switches
    assert (r.node_rows(sw) == dmodk(t).node_rows(sw)).all()
    # each leaf spreads its 12 remote destinations 3 per up port
    s10 = t.node("s1_0")
    assert np.bincount(r.node_rows([s10])[0, 4:], minlength=9)[5:].tolist() == [3, 3, 3, 3]


def circuit_topology():
    """h0,h1 on A; h2,h3 on B; A - C - B electrical; A, B, C on circuit switch X."""
    b = TopologyBuilder("hybrid")
    hs = [b.add_host(f"h{i}") for i in range(4)]
    A, B, C = b.add_switch("A"), b.add_switch("B"), b.add_switch("C")
    X = b.add_circuit_switch("X", switching_time_ns=1000)
    for h, s in zip(hs, [A, A, B, B]):
        b.add_link(h, s, bandwidth=1e9, latency_ns=0)
    b.add_link(A, C, bandwidth=1e9, latency_ns=0)
    b.add_link(C, B, bandwidth=1e9, latency_ns=0)
    for s in (A, B, C):  # X ports 1, 2, 3
        b.add_link(s, X, bandwidth=1e9, latency_ns=0)
    return b.build(), X


def test_circuit_pairing_changes_the_path():
    t, X = circuit_topology()
    electrical = minhop(t)
    assert electrical.describe(0, 2) == "h0 -> A -> C -> B -> h2"
    electrical.check()
    circuits = {X: np.array([-1, 2, 1, -1])}  # A <-> B
    optical = minhop(t, circuits=circuits)
    assert optical.describe(0, 2, circuits=circuits) == "h0 -> A -> X -> B -> h2"
    assert optical.describe(3, 1, circuits=circuits) == "h3 -> B -> X -> A -> h1"
    optical.check(circuits=circuits)
    # the same tables with the circuit torn down
    with pytest.raises(RoutingError, match=r"circuit switch X has port 1 unpaired \(path towards h2\)"):
        optical.path(0, 2)
    with pytest.raises(RoutingError, match="switch A sends traffic for h2 out of port 4, into circuit switch X whose port 1 is unpaired"):
        optical.check()
    # electrical tables still work with the circuit up (they never enter X)
    electrical.check(circuits=circuits)


def test_circuits_argument_is_validated():
    t, X = circuit_topology()
    with pytest.raises(RoutingError, match="circuits names A, which is not a circuit switch"):
        minhop(t, circuits={t.node("A"): [-1, 2, 1]})
    with pytest.raises(RoutingError, match="circuit switch X pairs port 1 with port 7"):
        minhop(t, circuits={X: [-1, 7]})


def test_unreachable_destination_is_reported():
    b = TopologyBuilder("split")
    h0, h1 = b.add_host("h0"), b.add_host("h1")
    s0, s1 = b.add_switch("s0"), b.add_switch("s1")
    b.add_link(h0, s0, bandwidth=1e9, latency_ns=0)
    b.add_link(h1, s1, bandwidth=1e9, latency_ns=0)
    r = minhop(b.build())
    # the cabling is at fault, not the tables: say so
    with pytest.raises(RoutingError, match="^the fabric is not connected: no cable path joins switch s1 to host h0$"):
        r.check()
