"""The s4u flow peer (benchmarks/peers/simgrid_flows.cpp) against netsteer, and the
SimGrid 3.32 bug behind the drift that benchmarks/bench_solver.py's peer_bench shows.

SimGrid's default ``network/optim:Lazy`` re-solves only the constraints its
"modified" set reaches from a changed variable. ``System::update_variable_penalty``
(a flow's latency ends) marks the flow's *first* link only
(``update_modified_cnst_set_from_variable``: ``var->cnsts_[0]``), and the recursion
from there stops at links already marked. When two flows sharing their first link
end their latency at the same instant, the second flow's other links are never
marked: flows there keep their old rate and their old finish date, and links carry
more than their capacity. ``network/optim:Full`` solves everything every time and
agrees with netsteer to the nanosecond. Still so in SimGrid's master of 2025.
"""

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from netsteer.routing import dmodk
from netsteer.sim import simulate
from netsteer.topology.pgft import pgft
from netsteer.traffic.dag import FlowDag
from netsteer.validation.simgrid import platform_from_topology

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _peers import run_simgrid_flows  # noqa: E402

pytestmark = [
    pytest.mark.simgrid,
    pytest.mark.skipif(shutil.which("smpirun") is None or shutil.which("g++") is None,
                       reason="needs SimGrid (Debian libsimgrid-dev) and g++"),
]

CM02 = ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0"]
FULL = ["--cfg=network/optim:Full"]


def both(topo, flows):
    """netsteer's makespan (s) and its lower bound from the busiest channel."""
    dag = FlowDag()
    for s, d, b in flows:
        dag.add(s, d, b)
    r = dmodk(topo)
    res = simulate(topo, r, dag, sharing="cm02")
    src, dst, nb = (np.array(x) for x in zip(*flows))
    off, ch = r.paths(src, dst)
    load = np.zeros(topo.n_channels)
    np.add.at(load, ch, np.repeat(nb, np.diff(off)))
    bound = (load * 8 / topo.channel_bandwidth()).max()
    return res.makespan_ns * 1e-9, bound


def test_three_flows_lazy_update_overloads_a_link():
    # h12 -> h1 and h12 -> h5 share their first cable and both start at 4 us; h4 -> h5
    # (2 us path) shares h5's cable with the second. Lazy never re-rates h4 -> h5.
    topo = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    flows = [(12, 1, 250_000), (12, 5, 750_000), (4, 5, 500_000)]
    mine, bound = both(topo, flows)
    # h5's cable carries 1.25 MB at 1.25 GB/s, and nothing reaches it before 2 us
    assert bound == pytest.approx(1.0e-3)
    assert mine == pytest.approx(1.002e-3, abs=1e-12)
    xml = platform_from_topology(topo)
    named = [(f"h{s}", f"h{d}", b) for s, d, b in flows]
    full = run_simgrid_flows(xml, named, CM02 + FULL)["makespan_s"]
    lazy = run_simgrid_flows(xml, named, CM02)["makespan_s"]
    assert full == pytest.approx(1.002e-3, abs=1e-12)
    # SimGrid 3.32 Lazy: 0.804 ms, below what h5's cable can carry in that time
    assert lazy == pytest.approx(0.804e-3, abs=1e-12)
    assert lazy < bound


def test_random_flows_match_simgrid_full_update():
    # 400 random 1 MB flows at t=0 on 32 hosts: Lazy ends 4% early, below the busiest
    # channel's bound (50 flows x 0.8 ms); Full and netsteer agree exactly
    topo = pgft(2, [8, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    rng = np.random.default_rng(2)
    src = rng.integers(0, topo.n_hosts, 400)
    dst = (src + rng.integers(1, topo.n_hosts, 400)) % topo.n_hosts
    flows = [(int(s), int(d), 1_000_000) for s, d in zip(src, dst)]
    mine, bound = both(topo, flows)
    assert bound == pytest.approx(0.040)
    assert mine == pytest.approx(0.040004, abs=1e-12)
    xml = platform_from_topology(topo)
    named = [(f"h{s}", f"h{d}", b) for s, d, b in flows]
    assert run_simgrid_flows(xml, named, CM02 + FULL)["makespan_s"] == pytest.approx(mine, abs=1e-12)
    lazy = run_simgrid_flows(xml, named, CM02)["makespan_s"]
    assert lazy == pytest.approx(0.038404, abs=1e-12)
    assert lazy < bound


@pytest.mark.parametrize("gamma", [None, 0.0])
def test_tcp_gamma_zero_is_no_window_bound_in_both(gamma):
    # two 1 ms cables: SimGrid's default window (4 MiB / 4 ms) holds a 10 Gb/s flow to
    # 1.05 GB/s; network/TCP-gamma:0 makes the bound 0, which its max-min solver takes
    # as no bound (maxmin.cpp: var.bound_ > 0), so the cable's 1.25 GB/s is used
    topo = pgft(1, [2], [1], link_bandwidth=10e9, link_latency_ns=1_000_000)
    dag = FlowDag()
    dag.add(0, 1, 100_000_000)
    mine = simulate(topo, dmodk(topo), dag, sharing="cm02", tcp_gamma=gamma).makespan_ns * 1e-9
    cfg = CM02 + FULL + ([] if gamma is None else ["--cfg=network/TCP-gamma:0"])
    theirs = run_simgrid_flows(platform_from_topology(topo), [("h0", "h1", 100_000_000)], cfg)["makespan_s"]
    assert mine == pytest.approx(0.002 + (1e8 / 1.25e9 if gamma == 0.0 else 1e8 * 4e-3 / 2**22), abs=1e-9)
    assert theirs == pytest.approx(mine, abs=1e-9)
