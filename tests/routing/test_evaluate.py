"""Patterns, metrics, deadlock detection and pFTree's effect on victims, from the model."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.drivers.opensm.partitions import Partition
from netsteer.errors import NetsteerError, RoutingError
from netsteer.routing import build_routing
from netsteer.routing.deadlock import PairPolicy, check_deadlock, find_cycle
from netsteer.routing.evaluate import PATTERNS, evaluate, pattern_flows
from netsteer.routing.table import Routing
from netsteer.topology.model import TopologyBuilder
from netsteer.topology.pgft import pgft


@pytest.mark.parametrize(
    "pattern, n_flows",
    [("all-to-all", 30), ("partition-local", 30), ("shift", 6), ("bisect", 6),
     ("random-ring", 6), ("gather", 5), ("scatter", 5)],
)
def test_pattern_sizes(pattern, n_flows):
    s, d = pattern_flows(pattern, np.arange(10, 16), np.random.default_rng(1))
    assert len(s) == n_flows
    assert (s != d).all() and set(s) | set(d) <= set(range(10, 16))
    if pattern in ("bisect", "random-ring", "shift"):
        assert sorted(s) == list(range(10, 16)) and sorted(d) == list(range(10, 16))


def test_single_switch_is_a_crossbar():
    t = pgft(1, [8], [1], link_bandwidth=8e9, link_latency_ns=0)
    rep = evaluate(build_routing(t, "ftree"), "random-ring", seeds=3)
    assert rep["effective_bisection_bandwidth"] == pytest.approx(1.0)
    assert rep["throughput"] == pytest.approx(1.0)
    assert rep["max_link_load"] == 0  # no switch-to-switch channel: the host links are not the routing's


def test_gather_is_limited_by_the_root_link():
    t = pgft(2, [4, 4], [1, 4], link_bandwidth=8e9, link_latency_ns=0)
    rep = evaluate(build_routing(t, "ftree"), "gather", seeds=2)
    assert rep["throughput"] == pytest.approx(1 / 15)
    assert rep["max_link_load"] == 12  # the other leaves' 12 hosts share the root's down link


def test_link_loads_are_all_over_switch_to_switch_channels():
    from netsteer.topology.hyperx import hyperx

    # DOR all-to-all on a 3x3 HyperX loads every switch link the same (12 flows);
    # a host link carries 17: a maximum over it would sit above a mean with std 0
    t = hyperx([3, 3], 1, 2, link_bandwidth=10e9, link_latency_ns=0)
    rep = evaluate(build_routing(t, "dor"), "all-to-all")
    assert (rep["max_link_load"], rep["mean_link_load"], rep["std_link_load"]) == (12, 12.0, 0.0)


def test_oversubscription_lowers_ebb():
    full = pgft(2, [8, 8], [1, 8], link_bandwidth=8e9, link_latency_ns=0)
    half = pgft(2, [8, 8], [1, 2], link_bandwidth=8e9, link_latency_ns=0)
    a = evaluate(build_routing(full, "ftree"), "bisect", seeds=5)["effective_bisection_bandwidth"]
    b = evaluate(build_routing(half, "ftree"), "bisect", seeds=5)["effective_bisection_bandwidth"]
    assert b < a <= 1.0
    assert b <= 0.5  # a quarter of the up links: random bisections cannot beat that by much


def test_partition_report_counts_shared_links():
    t = pgft(2, [4, 4], [1, 4], link_bandwidth=8e9, link_latency_ns=0)
    # two hosts of each partition on every leaf, at positions that differ from
    # leaf to leaf (ftree's spine for a host follows its position)
    in_a = [(h % 4 < 2) == (h // 4 % 2 == 0) for h in range(16)]
    a = Partition("a", 1, {t.host_node(h): "full" for h in range(16) if in_a[h]})
    b = Partition("b", 2, {t.host_node(h): "full" for h in range(16) if not in_a[h]})
    f = evaluate(build_routing(t, "ftree", partitions=[a, b]), "partition-local", seeds=2)
    p = evaluate(build_routing(t, "pftree", partitions=[a, b]), "partition-local", seeds=2)
    assert set(f["partitions"]) == {"a", "b"}
    assert f["partitions"]["a"]["flows"] == 8 * 7
    assert f["partitions"]["a"]["shared_links"] > 0
    assert p["partitions"]["a"]["shared_links"] == 0 == p["partitions"]["b"]["shared_links"]
    # only partition members talk: 2 x 8 x 7 flows
    assert p["flows"] == 112


def test_limited_members_do_not_talk_to_each_other_in_a_pattern():
    # a partition of one full member and three limited ones (OpenSM's default when a
    # GUID has no =full): only pairs with the full member are traffic; all twelve
    # pairs were counted, with a throughput, while the partition's links said 0
    t = pgft(2, [4, 4], [1, 4], link_bandwidth=8e9, link_latency_ns=0)
    a = Partition("a", 1, {t.host_node(0): "full", t.host_node(1): "limited",
                           t.host_node(4): "limited", t.host_node(5): "limited"})
    b = Partition("b", 2, {t.host_node(h): "limited" for h in (2, 3, 6, 7)})
    rep = evaluate(build_routing(t, "ftree", partitions=[a, b]), "all-to-all")
    assert rep["partitions"]["a"]["flows"] == 6 and rep["partitions"]["b"]["flows"] == 0
    assert rep["partitions"]["a"]["throughput"] == pytest.approx(1 / 3)
    assert rep["partitions"]["b"]["throughput"] is None and rep["partitions"]["b"]["links"] == 0


def test_pftree_victims_do_at_least_as_well_as_under_ftree_on_a_full_tree():
    from netsteer.reproduce.pftree import run

    rep = run(seeds=3, only=["C"])
    v = rep["victims"]["C"]["bisect"]
    assert v["pftree"] > v["ftree"]
    assert v["alone"] >= v["pftree"]


def test_unknown_pattern_and_bad_seeds():
    r = build_routing(pgft(1, [4], [1], link_bandwidth=1e9, link_latency_ns=0), "ftree")
    with pytest.raises(NetsteerError, match="unknown pattern 'ring'"):
        evaluate(r, "ring")
    with pytest.raises(NetsteerError, match="seeds must be at least 1"):
        evaluate(r, "bisect", seeds=0)
    assert len(PATTERNS) == 7


def test_find_cycle():
    assert find_cycle(np.array([0, 1]), np.array([1, 2]), 3) == []
    cyc = find_cycle(np.array([0, 1, 2, 3]), np.array([1, 2, 1, 0]), 4)
    assert sorted(cyc) == [1, 2]


def ring():
    b = TopologyBuilder("ring")
    s = [b.add_switch(f"s{i}") for i in range(4)]
    h = [b.add_host(f"h{i}") for i in range(4)]
    for i in range(4):
        b.add_link(s[i], h[i], bandwidth=1e9, latency_ns=0, a_port=1)
        b.add_link(s[i], s[(i + 1) % 4], bandwidth=1e9, latency_ns=0, a_port=2, b_port=3)
    t = b.build()
    lft = np.full((t.n_nodes, 4), 2)
    lft[s, np.arange(4)] = 1
    lft[h] = -1
    return t, Routing(t, lft)


def test_clockwise_ring_deadlocks_and_the_message_names_switches_and_destination():
    t, r = ring()
    r.check()  # complete and loop-free ...
    with pytest.raises(RoutingError, match=r"deadlock on VL 0: channel dependency cycle s\d\[2\]->s\d .*towards h\d"):
        check_deadlock(r)  # ... but not deadlock-free


def test_a_deadlock_message_names_the_destinations_that_make_its_cycle():
    """No one destination's packets make a cycle (they never leave their own switch):
    the message names, for every dependency of the cycle, a destination whose packets
    make it, checked here against the tables."""
    import re

    from netsteer.routing.deadlock import next_channels

    t, r = ring()
    with pytest.raises(RoutingError) as err:
        check_deadlock(r)
    m = re.search(r"cycle (.*) \(its dependencies made by packets towards (.*)\)", str(err.value))
    names = m.group(2).split(", ")
    assert len(names) == len(set(names)) >= 2
    by_name = {t.channel_name(c): c for c in range(t.n_channels)}
    ring_chans = [by_name[c] for c in m.group(1).split(" -> ")]
    dsts = np.array([t.node_names.index(n) for n in names])
    hosts = np.array([int(np.flatnonzero(np.asarray(t.hosts) == d)[0]) for d in dsts])
    nc = next_channels(r, hosts)
    src = t.channel_src()
    for a, b in zip(ring_chans, ring_chans[1:]):
        # some named destination's packets, at a's switch, take a, and at b's, take b
        assert ((nc[src[a]] == a) & (nc[src[b]] == b)).any(), (t.channel_name(a), t.channel_name(b))


def test_separate_vls_break_a_cycle_made_by_two_partitions():
    t, r = ring()
    # each partition's clockwise traffic covers three of the four ring channels;
    # only together do they close the cycle
    p0 = Partition("a", 1, {t.node("h0"): "full", t.node("h1"): "full"})
    p1 = Partition("b", 2, {t.node("h2"): "full", t.node("h3"): "full"})
    check_deadlock(r, PairPolicy(t, [p0], {1: 0}))
    with pytest.raises(RoutingError, match="deadlock on VL 0"):
        check_deadlock(r, PairPolicy(t, [p0, p1], {1: 0, 2: 0}))
    check_deadlock(r, PairPolicy(t, [p0, p1], {1: 0, 2: 1}))


def test_partition_figures_hold_beyond_64_partitions():
    # a uint64 bitmask gave partitions 65+ no bit: 0 links, 0 shared, silently
    t = pgft(2, [12, 12], [1, 12], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "ftree")
    n = t.n_hosts // 2  # 72 partitions, each one cross-leaf pair
    parts = [Partition(f"p{i}", 0x10 + i, {t.host_node(i): "full", t.host_node(i + n): "full"}) for i in range(n)]
    rep = evaluate(r, "partition-local", partitions=parts, seeds=1)
    links = np.arange(t.n_channels) // 2
    used = [set(links[r.channel_load(np.array([i, i + n]), np.array([i + n, i])) > 0]) for i in range(n)]
    for i, p in enumerate(parts):
        others = set().union(*(u for j, u in enumerate(used) if j != i))
        got = rep["partitions"][p.name]
        assert (got["links"], got["shared_links"]) == (len(used[i]), len(used[i] & others)), p.name
    assert rep["partitions"]["p71"]["links"] > 0
