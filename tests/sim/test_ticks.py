"""The engine's clock finer than 1 ns (``ticks_per_ns``): times cross the API in ns,
rounded up; rates and bytes are those of the real network. Cases by hand."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer._core import Engine
from netsteer.errors import NetsteerError
from netsteer.routing import build_routing
from netsteer.sim import simulate
from netsteer.topology import pgft
from netsteer.traffic import FlowDag


def _chain_engine(ticks):
    # one channel of 2 bytes/ns, no latency: A (3 B) then B (3 B) after it
    e = Engine(np.array([2e9]), np.array([0], dtype=np.int64), "maxmin", ticks_per_ns=ticks)
    i64 = lambda *x: np.array(x, dtype=np.int64)  # noqa: E731
    e.add_flows(np.array([3.0, 3.0]), i64(0, 1, 2), i64(0, 0), i64(0, 0), i64(0, 0),
                np.array([1.0, 1.0]), i64(0, 0), i64(0, 0, 1), i64(0))
    return e


def test_a_finer_clock_rounds_once_not_at_every_finish():
    # each flow takes 1.5 ns: on the ns clock A ends at 2 and B at 4; on 0.1 ns ticks
    # A ends at 1.5 (reported 2, rounded up) and B at 3.0
    for ticks, (a, b) in [(1, (2, 4)), (10, (2, 3))]:
        e = _chain_engine(ticks)
        assert e.run() == "done"
        assert list(e.completion_ns()) == [a, b] and list(e.release_ns()) == [0, a if ticks == 1 else 2]
        assert e.now == b


def test_times_given_in_ns_and_rates_of_the_real_network():
    e = _chain_engine(10)
    assert e.run(until_ns=1) == "until" and e.now == 1
    assert e.rates()[0] == pytest.approx(2e9)  # bytes per second, not per tick-second
    e.set_sample_interval(1)
    e.run()
    times, rows = e.samples()
    assert list(times[:3]) == [1, 2, 3] and rows[-1][0] == pytest.approx(6.0)


def test_a_dag_on_a_fat_tree_agrees_with_the_network_scaled_by_hand():
    # 10 ticks per ns is the network 10x slower and 10x longer, times divided back
    def run(bw, lat, ticks):
        t = pgft(2, [4, 4], [1, 2], link_bandwidth=bw, link_latency_ns=lat)
        d = FlowDag()
        a = d.add(0, 5, 12_345)
        d.add(5, 9, 777, deps=[a])
        d.add(1, 6, 54_321)
        return simulate(t, build_routing(t, "dmodk"), d, sharing="cm02", ticks_per_ns=ticks).completion_ns

    fine = run(10e9, 1000, 10)
    scaled = run(1e9, 10_000, 1)
    assert list(fine) == [-(-int(x) // 10) for x in scaled]


def test_bad_ticks_are_refused():
    t = pgft(1, [2], [1], link_bandwidth=8e9, link_latency_ns=0)
    d = FlowDag()
    d.add(0, 1, 10)
    for bad in (0, 1001):
        with pytest.raises(NetsteerError, match="ticks_per_ns"):
            simulate(t, build_routing(t, "dmodk"), d, ticks_per_ns=bad)
    with pytest.raises(ValueError, match="packet"):
        Engine(np.array([1e9]), np.array([0], dtype=np.int64), packet={}, ticks_per_ns=10)


CONTENDED = """\
name: vdg
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
sharing: SHARING
jobs:
  - {name: b, ranks: 16, placement: random, seed: 50,
     program: [{op: bcast, algorithm: scatter_allgather, bytes: 35887B, root: 0}]}
"""


def _run(sharing):
    from netsteer.report.result import result_dict
    from netsteer.scenario import build_scenario, parse_scenario
    from netsteer.sim import run_scenario

    b = build_scenario(parse_scenario(CONTENDED.replace("SHARING", sharing)))
    return result_dict(b, run_scenario(b))


def test_cm02_runs_with_simgrids_timing_unless_the_scenario_says_otherwise():
    """A contended van de Geijn bcast (docs/simgrid-validation.md, "SimGrid's timing
    precision"): CM02 takes the 1 ns merge on 0.1 ns ticks by default; the scenario's
    ``sharing`` can ask for the exact ns clock, and max-min is exact by default."""
    from netsteer.sim.stream import simulate_mpi
    from netsteer.traffic.program import MpiJobSpec

    default, exact = _run("cm02"), _run("{model: cm02, merge_window: 0ns, ticks_per_ns: 1}")
    assert default["timing"] == {"merge_window_ns": 1, "ticks_per_ns": 10}
    assert exact["timing"] == {"merge_window_ns": 0, "ticks_per_ns": 1}
    assert _run("maxmin")["timing"] == {"merge_window_ns": 0, "ticks_per_ns": 1}
    assert default["makespan_s"] != exact["makespan_s"]  # the workload this is about
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    job = MpiJobSpec(name="b", ranks=16, placement="random", seed=50,
                     program=[{"op": "bcast", "algorithm": "scatter_allgather", "bytes": 35887, "root": 0}])
    for got, timing in [(default, {}), (exact, dict(merge_window_ns=0, ticks_per_ns=1))]:
        want = simulate_mpi(t, "dmodk", [job], sharing="cm02", **timing).makespan_ns
        assert got["makespan_s"] == pytest.approx(want * 1e-9, abs=1e-15)


LATENCY_FREE = """\
name: cm02lat
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: [0ns, 1us]}
routing: {engine: dmodk}
sharing: {model: cm02, merge_window: 0ns, ticks_per_ns: TICKS}
jobs:
  - name: free
    flows: [{src: 1, dst: 0, bytes: 1GB}]
  - name: lat2us
    flows: [{src: 4, dst: 0, bytes: 1GB}]
"""


@pytest.mark.parametrize("ticks", [1, 10, 100])
def test_cm02_latency_free_penalty_does_not_depend_on_the_clock(ticks):
    """A latency-free flow has CM02 penalty 1 (1 s), the other its 2 us path latency,
    whatever the engine's tick: ``lat2us`` gets 1/(1 + 2e-6) of the 10 Gbps link once
    its latency is paid, and ends at 2 us + 1 GB / that rate."""
    from netsteer.report.result import result_dict
    from netsteer.scenario import build_scenario, parse_scenario
    from netsteer.sim import run_scenario

    b = build_scenario(parse_scenario(LATENCY_FREE.replace("TICKS", str(ticks))))
    got = {j["name"]: j["completion_s"] for j in result_dict(b, run_scenario(b))["jobs"]}
    lat = 2e-6
    rate = 10e9 / 8 * (1 / lat) / (1 / lat + 1 / 1.0)  # bytes/s: weights 1/penalty
    want = lat + 1e9 / rate
    assert got["lat2us"] == pytest.approx(want, abs=2e-9)
    # the free flow: alone during lat2us's latency, then the rest, then alone again
    assert got["free"] == pytest.approx(2 * 1e9 / (10e9 / 8), abs=2e-9)
