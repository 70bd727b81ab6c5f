"""The simulator driver on real topologies and routings, against hand computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from netsteer.routing import build_routing
from netsteer.scenario import build_scenario, load_scenario
from netsteer.sim import LinkChange, RoutingChange, run_scenario, simulate
from netsteer.topology import pgft
from netsteer.traffic import FlowDag

ROOT = Path(__file__).resolve().parents[2]
GBPS10 = 10e9 / 8  # bytes per second


def test_two_bulk_flows_by_hand():
    b = build_scenario(load_scenario(ROOT / "scenarios/two-bulk-flows.yaml"))
    res = simulate(b.topology, b.routing, b.dag, sharing=b.sharing)
    lat = 4_000  # 4 hops of 1 us: h0 -> leaf -> spine -> leaf -> h17
    size = 2**30
    alone = GBPS10 * (10e-3)  # A alone from its first byte until B's first byte
    a_rest = size - alone
    a_end = 10e-3 + lat * 1e-9 + a_rest / (GBPS10 / 2)
    b_end = a_end + (size - a_rest) / GBPS10
    assert abs(res.completion_ns[0] - a_end * 1e9) <= 2
    assert abs(res.completion_ns[1] - b_end * 1e9) <= 2
    assert res.makespan_ns == res.completion_ns[1]


def test_counters_conserve_bytes():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    d = FlowDag()
    for s in range(4):
        d.add(s, 15 - s, 10_000_000)
    res = simulate(t, build_routing(t, "dmodk"), d, sample_interval_ns=100_000)
    paths = [build_routing(t, "dmodk").path(s, 15 - s) for s in range(4)]
    expected = np.zeros(t.n_channels)
    for p in paths:
        expected[p] += 10_000_000
    assert np.allclose(res.final_channel_bytes, expected, rtol=1e-9, atol=1e-3)
    assert np.allclose(res.channel_bytes[-1], expected, rtol=1e-9, atol=1e-3)
    # counters never decrease
    assert (np.diff(res.channel_bytes, axis=0) >= -1e-6).all()


def test_counters_are_each_flows_bytes_exactly_under_contention_and_priorities():
    """A channel's count is the bytes of the flows that crossed it, to the byte: no
    rate integrated past a finish rounded up to whole ns, no starved flow's last bytes
    lost. Contended flows of random sizes in two priority classes, dependencies, CM02."""
    rng = np.random.default_rng(5)
    t = pgft(2, [4, 4], [1, 1], link_bandwidth=10e9, link_latency_ns=700)
    routing = build_routing(t, "dmodk")
    d, expected = FlowDag(), np.zeros(t.n_channels)
    for i in range(60):
        s, r = rng.choice(t.n_hosts, 2, replace=False)
        n = int(rng.integers(1, 3_000_000))
        deps = [int(rng.integers(i))] if i and rng.random() < 0.3 else []
        d.add(int(s), int(r), n, deps=deps, priority=int(rng.integers(2)))
        expected[routing.path(int(s), int(r))] += n
    res = simulate(t, routing, d, sharing="cm02", sample_interval_ns=50_000)
    assert res.status == "done"
    assert (res.final_channel_bytes == expected).all()
    assert (res.channel_bytes[-1] <= expected).all()
    assert (np.diff(res.channel_bytes, axis=0) >= 0).all()


def test_link_down_reroutes_flows_in_flight():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    d = FlowDag()
    d.add(0, 4, 125_000_000)  # 0.1 s alone at 10 Gbps
    r = build_routing(t, "minhop")
    used = r.path(0, 4)
    uplink = int(used[1]) // 2  # the leaf's uplink it takes
    def make(down, circuits):
        return build_routing(t, "minhop", down_links=down)
    res = simulate(t, r, d, events=[LinkChange(50_000_000, (uplink,), up=False, reroute=make)],
                   sample_interval_ns=10_000_000)
    # the reroute costs nothing: the other spine is free, so the finish time stands
    assert abs(res.completion_ns[0] - (4_000 + 100_000_000)) <= 2
    # the dead link carried nothing after 50 ms
    times = res.sample_times_ns
    after = res.channel_bytes[times >= 50_000_000][:, 2 * uplink]
    assert np.ptp(after) < 1.0


def test_link_down_without_reroute_stalls_until_it_comes_back():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=0)
    d = FlowDag()
    d.add(0, 4, 125_000_000)
    r = build_routing(t, "dmodk")
    link = int(r.path(0, 4)[1]) // 2
    res = simulate(t, r, d, events=[LinkChange(20_000_000, (link,), up=False), LinkChange(50_000_000, (link,), up=True)])
    assert res.completion_ns[0] == 130_000_000


def test_routing_change_moves_flows():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=0)
    d = FlowDag()
    d.add(0, 4, 125_000_000)
    d.add(1, 5, 125_000_000)
    dm = build_routing(t, "dmodk")
    res = simulate(t, dm, d, events=[RoutingChange(10_000_000, build_routing(t, "minhop"))])
    assert res.status == "done" and (res.completion_ns > 0).all()


def test_priority_class_goes_first():
    t = pgft(1, [4], [1], link_bandwidth=8e9, link_latency_ns=0)
    d = FlowDag()
    d.add(0, 3, 10**9, priority=1)
    d.add(1, 3, 10**9, priority=0)
    res = simulate(t, build_routing(t, "dmodk"), d)
    assert res.completion_ns[1] == 10**9  # alone on h3's link at 1 GB/s
    assert res.completion_ns[0] == 2 * 10**9


@pytest.mark.parametrize("sharing", ["maxmin", "cm02"])
def test_deterministic(sharing):
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    rng = np.random.default_rng(3)
    d = FlowDag()
    for _ in range(60):
        s, k = rng.integers(0, 16, 2)
        d.add(int(s), int(k), int(rng.integers(1, 10**7)), start_ns=int(rng.integers(0, 10**6)))
    r = build_routing(t, "dmodk")
    a = simulate(t, r, d, sharing=sharing).completion_ns
    b = simulate(t, r, d, sharing=sharing).completion_ns
    assert (a == b).all()


def test_circuit_repairing_moves_traffic_after_the_dark_period():
    b = build_scenario(load_scenario(ROOT / "scenarios/hybrid-circuit.yaml"))
    b.sample_interval_ns = 5_000_000
    res = run_scenario(b)
    electrical = 10e9 / 8  # the ToR's one electrical uplink, shared by the 4 flows
    optical = 40e9 / 8  # the circuit, once lit at 100 ms + 25 ms
    lit = 0.125
    lat = 4e-6  # h -> tor -> core -> tor -> h, 1 us each, paid before sending
    sent = electrical * (lit - lat)
    end = lit + (4 * 512 * 2**20 - sent) / optical
    assert (res.completion_ns[:4] == res.completion_ns[0]).all()
    assert abs(res.completion_ns[0] - end * 1e9) <= 4
    # the circuit carried nothing before it was lit
    t = b.topology
    circ = int(t.out_channel[t.node("tor0"), t.meta["tor_port_of"][0, 0]])
    before = res.channel_bytes[res.sample_times_ns <= 125_000_000][:, circ]
    after = res.channel_bytes[-1, circ]
    assert before.max() == 0.0
    assert abs(after - (4 * 512 * 2**20 - sent)) < 16  # ns rounding of the event times


def test_failed_reconfiguration_keeps_the_last_good_routing():
    # the flow's uplink dies and the rebuilt tables have a hole (a destination that
    # can still be reached, h5, has no entry at s2_0): they fail their check, the
    # flow keeps its route, stalls on the dead link, and finishes once it is back.
    # (A destination the failure cuts off needs no entry: tests/sim/test_host_cut_off.py.)
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=0)
    d = FlowDag()
    d.add(4, 0, 125_000_000)  # 0.1 s alone
    r = build_routing(t, "minhop")
    uplink = int(r.path(4, 0)[1]) // 2

    def make(down, circuits):
        rebuilt = build_routing(t, "minhop", down_links=down)
        if down:
            rebuilt.set_entry(t.node("s2_0"), 5, -1)
        return rebuilt

    res = simulate(t, r, d, events=[
        LinkChange(20_000_000, (uplink,), up=False, reroute=make),
        LinkChange(50_000_000, (uplink,), up=True, reroute=make),
    ])
    failed = [e["failed"] for e in res.applied_events if "failed" in e]
    assert failed == ["reconfiguration failed, last good routing kept: switch s2_0 has no route to h5"]
    assert res.status == "done"
    assert res.completion_ns[0] == 130_000_000  # stalled for the 30 ms the link was down


@pytest.mark.parametrize("gamma,rate_Bps", [("4MiB", 2**22 / 4e-3), ("0", GBPS10), ("1MiB", 2**20 / 4e-3)])
def test_cm02_tcp_gamma_bounds_a_flow_by_its_window_and_zero_means_no_bound(gamma, rate_Bps):
    """CM02 caps a flow at tcp_gamma / (2 x path latency); ``tcp_gamma: 0`` is no cap,
    the link's rate alone, as SimGrid's ``network/TCP-gamma:0`` (its teshsuite
    models/cm02-tcpgamma: "since gamma=0, the physical bandwidth is still used")."""
    from netsteer.scenario import parse_scenario

    text = f"""
name: g
topology: {{kind: pgft, levels: 1, down: [2], up: [1], link_bandwidth: 10Gbps, link_latency: 1ms}}
routing: {{engine: dmodk}}
sharing: {{model: cm02, tcp_gamma: {gamma}, merge_window: 0ns, ticks_per_ns: 1}}
jobs: [{{name: a, flows: [{{src: 0, dst: 1, bytes: 100MB}}]}}]
"""
    b = build_scenario(parse_scenario(text, file="g.yaml"))
    res = simulate(b.topology, b.routing, b.dag, sharing=b.sharing, tcp_gamma=b.tcp_gamma)
    # two 1 ms cables: 2 ms of latency first, then the bytes at the rate
    assert res.makespan_ns == pytest.approx(2e6 + 1e8 / rate_Bps * 1e9, abs=1)


def test_bulk_flows_count_every_byte_beside_many_small_flows():
    """A bulk flow's nominal size (1e18 bytes) has an ulp of 128 B: its sent bytes
    must not be that size minus what remains, or each short step between two small
    flows' events is rounded away. 16 bulk flows into h0 beside a chain of 400
    100-byte flows keep h0's port saturated: the counters read its line rate, and the
    bulk job's bytes are the port's bytes less the chain's."""
    import json

    from netsteer.scenario import parse_scenario

    bulk = [{"src": s, "dst": 0, "duration": "10ms"} for s in range(1, 17)]
    chain = [{"id": f"c{i}", "src": 17, "dst": 0, "bytes": 100, **({"after": [f"c{i - 1}"]} if i else {})}
             for i in range(400)]
    text = json.dumps({"name": "incast", "topology": {"kind": "pgft", "levels": 1, "down": [18], "up": [1],
                                                      "link_bandwidth": "10Gbps", "link_latency": "1us"},
                       "routing": {"engine": "dmodk"}, "sample_interval": "1ms",
                       "jobs": [{"name": "bg", "bulk": bulk}, {"name": "chain", "flows": chain}]})
    b = build_scenario(parse_scenario(text, file="incast.json"))
    res = run_scenario(b)
    into_h0 = [c for c in range(b.topology.n_channels) if b.topology.channel_name(c).endswith("->h0")]
    (c,) = into_h0
    times = np.asarray(res.sample_times_ns)
    at = np.searchsorted(times, 5_000_000)
    # saturated from its first byte (2 us) on: 1.25e9 B/s, to a byte
    assert res.channel_bytes[at, c] == pytest.approx((times[at] - 2_000) * 1.25, abs=1.0)
    bg_sent = sum(float(res.sent_bytes[i]) for i in range(len(b.job_of_flow)) if b.job_of_flow[i] == 0)
    assert res.final_channel_bytes[c] - bg_sent == pytest.approx(400 * 100, abs=1.0)
