"""A host cut off by its only cable going down (a dead HCA cable) leaves the rest of
the fabric routable: the engines that route around failures re-route everything
else, and flows to or from the lost host wait until its cable comes back.

The scenarios are the tester's (/tmp/explore-topo/bad/pp*.yaml), which stalled the
unrelated flow h1 -> h3 for ever: 'switch s1_0 has no route to h0'.
"""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import build_routing
from netsteer.scenario import build_scenario, load_scenario
from netsteer.sim import run_scenario
from netsteer.topology import pgft

HEAD = """name: pp
topology: {kind: pgft, levels: 2, down: [2, 2], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: %s}
"""
ALONE = 0.800004  # 1 GB at 10 Gbps plus 4 hops of 1 us


def run(tmp_path, text):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return run_scenario(build_scenario(load_scenario(p)))


def failed(res):
    return [e for e in res.applied_events if e.get("failed")]


@pytest.mark.parametrize("engine, spine_port", [("minhop", 4), ("ecmp", 3), ("ecmp", 4), ("dor", 4)])
def test_dead_host_cable_and_spine_link_together(tmp_path, engine, spine_port):
    # pp.yaml / pp_ecmp3.yaml: h0 (in no flow) and the spine link h1 -> h3 takes die
    res = run(tmp_path, HEAD % engine + f"""jobs: [{{name: a, flows: [{{src: 1, dst: 3, bytes: 1GB}}]}}]
events:
  - {{at: 10ms, link_down: [{{node: h0, port: 1}}, {{node: s1_0, port: {spine_port}}}]}}
""")
    assert not failed(res)
    assert res.status == "done"
    assert res.completion_ns[0] == pytest.approx(ALONE * 1e9, abs=2)


def test_dead_host_cable_first_does_not_block_later_reroutes(tmp_path):
    # pp3.yaml: every re-route after h0's cable died failed
    res = run(tmp_path, HEAD % "minhop" + """jobs: [{name: a, flows: [{src: 1, dst: 3, bytes: 1GB}]}]
events:
  - {at: 10ms, link_down: [{node: h0, port: 1}]}
  - {at: 20ms, link_down: [{node: s1_0, port: 4}]}
""")
    assert not failed(res)
    assert res.status == "done"
    assert res.completion_ns[0] == pytest.approx(ALONE * 1e9, abs=2)


@pytest.mark.parametrize("engine", ["minhop", "ecmp", "dor", "dmodk", "ftree", "pftree"])
def test_flows_of_the_lost_host_wait_for_its_cable(tmp_path, engine):
    # h2 -> h0 and h0 -> h1 stall for the 90 ms h0's cable is down, then finish;
    # h1 -> h3 (on other channels) never notices
    res = run(tmp_path, HEAD % engine + """jobs:
  - {name: a, flows: [{src: 1, dst: 3, bytes: 1GB}]}
  - {name: b, flows: [{src: 2, dst: 0, bytes: 1GB}, {src: 0, dst: 1, bytes: 1GB}]}
events:
  - {at: 10ms, link_down: [{node: h0, port: 1}]}
  - {at: 100ms, link_up: [{node: h0, port: 1}]}
""")
    assert not failed(res)
    assert res.status == "done"
    c = res.completion_ns / 1e9
    assert c[0] == pytest.approx(ALONE, abs=2e-9)
    assert c[1] == pytest.approx(ALONE + 0.09, abs=1e-6)
    assert c[2] == pytest.approx(ALONE - 2e-6 + 0.09, abs=1e-6)  # two hops


@pytest.mark.parametrize("engine", ["minhop", "ecmp", "dor"])
def test_flows_to_a_host_that_never_comes_back_stall(tmp_path, engine):
    res = run(tmp_path, HEAD % engine + """jobs:
  - {name: a, flows: [{src: 1, dst: 3, bytes: 1GB}]}
  - {name: b, flows: [{src: 2, dst: 0, bytes: 1GB}]}
events:
  - {at: 10ms, link_down: [{node: h0, port: 1}]}
""")
    assert not failed(res)
    assert res.status == "stalled"
    assert res.completion_ns[0] == pytest.approx(ALONE * 1e9, abs=2)
    assert res.completion_ns[1] == -1


@pytest.mark.parametrize("engine", ["minhop", "ecmp", "dor"])
def test_tables_leave_out_only_what_cannot_be_reached(engine):
    t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, engine, down_links=frozenset({0}))  # h0's cable
    r.check()
    missed = []
    off, ch = r.paths([1, 2, 3, 0], [0, 0, 1, 3], missed=missed)
    # dor's leaf keeps its port to h0 (the flows wait on the dead cable itself)
    assert sorted(missed) == ([] if engine == "dor" else [0, 1])
    assert r.describe(3, 1) in ("h3 -> s1_1 -> s2_0 -> s1_0 -> h1", "h3 -> s1_1 -> s2_1 -> s1_0 -> h1")
    if engine != "dor":
        with pytest.raises(RoutingError, match="no route to h0"):
            r.paths([2], [0])  # without ``missed``, a miss is an error


def test_a_leaf_cut_off_whole():
    # both uplinks of s1_0 down: h0 and h1 cannot be reached from the other side
    t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    ups = [int(t.out_channel[t.node("s1_0"), p]) // 2 for p in (3, 4)]
    for engine in ("minhop", "ecmp", "dor"):
        r = build_routing(t, engine, down_links=frozenset(ups))
        r.check()
        assert r.describe(0, 1) == "h0 -> s1_0 -> h1"


def test_a_table_missing_a_reachable_destination_is_still_refused():
    t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "minhop", down_links=frozenset({0}))
    r.set_entry(t.node("s2_0"), 3, -1)  # h3 is reachable: s2_0 needs a route
    with pytest.raises(RoutingError, match="switch s2_0 has no route to h3"):
        r.check()
    r = build_routing(t, "minhop", down_links=frozenset({0}))
    r.set_entry(t.node("s1_0"), 0, 3)  # an entry for the lost host is not checked
    r.check()


def test_a_multi_homed_host_with_one_cable_down_is_still_routed():
    t = pgft(2, [2, 2], [2, 1], link_bandwidth=1e9, link_latency_ns=0)
    h0 = t.node("h0")
    link = int(t.out_channel[h0, 1]) // 2
    for engine in ("minhop", "ecmp"):  # (dor takes single-homed hosts only)
        r = build_routing(t, engine, down_links=frozenset({link}))
        r.check()
        assert link not in {c // 2 for c in r.path(3, 0)}
        assert link not in {c // 2 for c in r.path(0, 3)}


@pytest.mark.parametrize("engine", ["minhop", "ecmp", "dor"])
def test_a_host_without_a_cable_is_refused_when_built(engine):
    from netsteer.topology.model import TopologyBuilder

    b = TopologyBuilder("t")
    s = b.add_switch("s0")
    hosts = [b.add_host(f"h{i}") for i in range(3)]
    for h in hosts[:2]:
        b.add_link(h, s, bandwidth=1e9, latency_ns=0)
    t = b.build()
    with pytest.raises(RoutingError, match="host h2 (has no cable|is not connected)"):
        build_routing(t, engine).check()


def test_a_fabric_in_pieces_is_refused_with_the_reason():
    from netsteer.topology.model import TopologyBuilder

    b = TopologyBuilder("t")
    s0, s1 = b.add_switch("s0"), b.add_switch("s1")
    for i, s in enumerate((s0, s0, s1, s1)):
        b.add_link(b.add_host(f"h{i}"), s, bandwidth=1e9, latency_ns=0)
    t = b.build()
    with pytest.raises(RoutingError, match="the fabric is not connected: no cable path joins switch s1 to host h0"):
        build_routing(t, "minhop").check()
    assert np.all(t.out_channel[t.hosts].max(axis=1) >= 0)
