"""ftree: OpenSM's fat-tree routing on generated and imported fat-trees."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import build_routing
from netsteer.routing.deadlock import check_deadlock
from netsteer.routing.evaluate import link_load_stats, pattern_flows
from netsteer.routing.fattree_ranks import fat_tree
from netsteer.topology.hyperx import hyperx
from netsteer.topology.ibsim_net import read_ibsim_net, write_ibsim_net
from netsteer.topology.model import TopologyBuilder
from netsteer.topology.pgft import pgft

TREES = {
    "2lvl-1:1": (2, [4, 4], [1, 4], [1, 1]),
    "2lvl-2:1": (2, [4, 4], [1, 2], [1, 1]),
    "2lvl-parallel": (2, [4, 4], [1, 2], [1, 2]),
    "3lvl-xgft": (3, [4, 4, 4], [1, 4, 4], [1, 1, 1]),
    "3lvl-rlft": (3, [4, 2, 2], [1, 2, 2], [1, 1, 1]),
    "3lvl-oversub-parallel": (3, [4, 4, 4], [1, 2, 2], [1, 2, 1]),
}


def tree(name):
    lv, d, u, p = TREES[name]
    return pgft(lv, d, u, p, link_bandwidth=32e9, link_latency_ns=100)


def all_pairs(n):
    return pattern_flows("all-to-all", np.arange(n), np.random.default_rng(0))


@pytest.mark.parametrize("name", list(TREES))
def test_complete_loop_and_deadlock_free(name):
    t = tree(name)
    r = build_routing(t, "ftree")
    r.check()
    check_deadlock(r)
    # every switch has an entry for every host
    assert (r.node_rows(t.switches) > 0).all()


@pytest.mark.parametrize("name", list(TREES))
def test_as_balanced_as_dmodk_on_all_to_all(name):
    # D-mod-K is the textbook optimum for all-to-all on a PGFT; ftree must reach
    # the same worst link (and, being minimal, the same mean)
    t = tree(name)
    s, d = all_pairs(t.n_hosts)
    f = link_load_stats(build_routing(t, "ftree"), s, d)
    k = link_load_stats(build_routing(t, "dmodk"), s, d)
    assert f["max"] <= k["max"]
    assert f["mean"] == pytest.approx(k["mean"])


def test_same_ports_as_opensm_on_the_tree_compared_on_ibsim():
    # tests/ib found OpenSM's ftree choosing D-mod-K's ports on this tree
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=32e9, link_latency_ns=100)
    f, k = build_routing(t, "ftree"), build_routing(t, "dmodk")
    assert np.array_equal(f.node_rows(t.switches), k.node_rows(t.switches))


def test_parallel_cables_are_used_round_robin():
    t = tree("2lvl-parallel")
    r = build_routing(t, "ftree")
    # downward: a spine's two cables to a leaf each carry half of that leaf's hosts
    spine = t.node("s2_0")
    for leaf_hosts in np.arange(t.n_hosts).reshape(4, 4):
        ports = r.entry(spine, leaf_hosts)
        _, counts = np.unique(ports, return_counts=True)
        assert len(counts) == 2 and counts.max() - counts.min() <= 1
    # upward: a leaf spreads destinations over all four cables evenly
    leaf = t.node("s1_0")
    up = r.node_rows([leaf])[0, 4:]
    _, counts = np.unique(up, return_counts=True)
    assert len(counts) == 4 and counts.max() - counts.min() <= 1


def test_imported_fabric_gets_the_same_tables(tmp_path):
    t = tree("3lvl-xgft")
    write_ibsim_net(t, tmp_path / "f.net")
    imp = read_ibsim_net(tmp_path / "f.net")
    assert imp.node_names == t.node_names
    ft = fat_tree(imp)
    assert ft.top == 3
    assert [int(ft.level[imp.node(n)]) for n in ("s1_0", "s2_0", "s3_0")] == [1, 2, 3]
    a, b = build_routing(t, "ftree"), build_routing(imp, "ftree")
    s, d = all_pairs(t.n_hosts)
    assert link_load_stats(a, s, d) == link_load_stats(b, s, d)


def test_partly_filled_leaf_counts_as_full():
    # leaf 0 has one host, the others two: dummy hosts keep the spines balanced
    b = TopologyBuilder("uneven")
    leaves = [b.add_switch(f"l{i}") for i in range(3)]
    spines = [b.add_switch(f"s{i}") for i in range(2)]
    hosts = []
    for i, leaf in enumerate(leaves):
        for j in range(1 if i == 0 else 2):
            h = b.add_host(f"h{i}{j}")
            hosts.append(h)
            b.add_link(leaf, h, bandwidth=1e9, latency_ns=0, a_port=1 + j)
        for k, s in enumerate(spines):
            b.add_link(leaf, s, bandwidth=1e9, latency_ns=0, a_port=3 + k)
    t = b.build()
    r = build_routing(t, "ftree")
    r.check()
    spine_of = [t.port_peer(t.node("l1"), int(p))[0] for p in r.entry(t.node("l1"), [0])]
    # h00 took spine s0; the dummy took s1, so leaf 1's first host starts at s0 again
    assert t.node_names[spine_of[0]] == "s0"
    per_spine = np.bincount([t.port_peer(t.node("l2"), int(p))[0] for p in r.node_rows([t.node("l2")])[0, :3]])
    assert per_spine[t.node("s0")] == 2 and per_spine[t.node("s1")] == 1


def ring_of_switches():
    b = TopologyBuilder("ring")
    s = [b.add_switch(f"sw{i}") for i in range(4)]
    for i in range(4):
        h = b.add_host(f"h{i}")
        b.add_link(s[i], h, bandwidth=1e9, latency_ns=0)
        b.add_link(s[i], s[(i + 1) % 4], bandwidth=1e9, latency_ns=0)
    return b.build()


def orphan():
    b = TopologyBuilder("orphan")
    l0, l1, l2 = (b.add_switch(f"leaf{i}") for i in range(3))
    top = b.add_switch("top")
    for i, leaf in enumerate((l0, l1, l2)):
        b.add_link(leaf, b.add_host(f"h{i}"), bandwidth=1e9, latency_ns=0)
    b.add_link(l0, top, bandwidth=1e9, latency_ns=0)
    b.add_link(l1, top, bandwidth=1e9, latency_ns=0)
    mid = b.add_switch("mid")
    b.add_link(l2, mid, bandwidth=1e9, latency_ns=0)
    b.add_link(mid, b.add_switch("up2"), bandwidth=1e9, latency_ns=0)
    b.add_link(top, b.add_switch("lonely"), bandwidth=1e9, latency_ns=0)
    return b.build()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: hyperx([4], 1, 2, link_bandwidth=1e9, link_latency_ns=0), "x0 and x1 are both leaves"),
        (ring_of_switches, "sw0 and sw1 are both leaves"),
        (orphan, "reaches"),
    ],
    ids=["hyperx", "ring", "disjoint-tops"],
)
def test_not_a_fat_tree_is_refused_naming_the_switch(make, message):
    with pytest.raises(RoutingError, match="not a fat-tree") as e:
        build_routing(make(), "ftree")
    assert message in str(e.value)
    with pytest.raises(RoutingError, match="not a fat-tree"):
        build_routing(make(), "pftree")


def test_switch_without_up_link_below_the_top_is_refused():
    b = TopologyBuilder("stub")
    l0, l1, l2 = (b.add_switch(f"leaf{i}") for i in range(3))
    s, top = b.add_switch("spine"), b.add_switch("top")
    for i, leaf in enumerate((l0, l1, l2)):
        b.add_link(leaf, b.add_host(f"h{i}"), bandwidth=1e9, latency_ns=0)
    b.add_link(l0, s, bandwidth=1e9, latency_ns=0)
    b.add_link(l1, s, bandwidth=1e9, latency_ns=0)
    b.add_link(s, top, bandwidth=1e9, latency_ns=0)
    b.add_link(l2, b.add_switch("spine2"), bandwidth=1e9, latency_ns=0)
    with pytest.raises(RoutingError, match=r"spine2 \(level 2\) has no up link, but the tree has 3 levels"):
        build_routing(b.build(), "ftree")


def test_host_to_host_cable_is_refused():
    b = TopologyBuilder("hh")
    h0, h1 = b.add_host("h0"), b.add_host("h1")
    b.add_link(h0, h1, bandwidth=1e9, latency_ns=0)
    with pytest.raises(RoutingError, match="host h0 is cabled to host h1"):
        build_routing(b.build(), "ftree")


@pytest.mark.parametrize("engine", ["ftree", "pftree", "dor"])
def test_multi_homed_hosts_are_refused_up_front(engine):
    # tester's B2: a PGFT with up[0] > 1 failed with 'switch s1_1 has no route to h0'
    t = pgft(2, [2, 2], [2, 1], link_bandwidth=10e9, link_latency_ns=0)
    with pytest.raises(RoutingError, match=rf"^{engine} needs single-homed hosts: h0 is cabled to 2 switches "
                                           r"\(s1_0, s1_1\); route this fabric with minhop or ecmp"):
        build_routing(t, engine)
    for ok in ("minhop", "ecmp", "dmodk"):
        build_routing(t, ok).check()


@pytest.mark.parametrize("engine", ["ftree", "pftree", "dor"])
def test_parallel_cables_to_one_leaf_are_single_homed(engine):
    t = pgft(2, [2, 2], [1, 2], [2, 1], link_bandwidth=10e9, link_latency_ns=0)
    build_routing(t, engine).check()



@pytest.mark.parametrize("engine", ["ftree", "pftree"])
def test_circuit_switch_refusal_names_the_engine_asked_for(engine):
    # explorer's fault 5: pftree's refusal said "ftree routes packet-switched fat-trees"
    from netsteer.topology.hybrid import hybrid

    t = hybrid(2, 2, server_bandwidth=10e9, tor_uplinks=1, core_bandwidth=1e9, circuit_ports=2,
               circuit_uplinks=1, circuit_bandwidth=10e9, switching_time_ns=10_000_000, link_latency_ns=1000)
    with pytest.raises(RoutingError, match=rf"^{engine} routes packet-switched fat-trees; ocs0 is a circuit switch$"):
        build_routing(t, engine)
