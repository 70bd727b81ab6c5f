"""The engine against an exact event-driven simulation written here, with weights and
strict priorities, on random multi-link paths of small fat-trees.

The reference is independent of the Rust code: float time, no incremental solves,
every active flow re-solved at every event by progressive filling, class by class.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from netsteer.routing import build_routing
from netsteer.sim import simulate
from netsteer.sim.simulate import dag_paths
from netsteer.topology import pgft
from netsteer.traffic import FlowDag

# the engine's FINISH_SLACK_NS: a starved flow this close to its end is done
FINISH_SLACK_S = 16e-9

# small trees: (down, up); 10 Gbps links, 1 ns latency
TREES = [([4, 3], [1, 1]), ([4, 3], [1, 2]), ([3, 4], [2, 2]), ([2, 2, 2], [1, 2, 2])]


@lru_cache(maxsize=None)
def _fabric(i: int):
    down, up = TREES[i]
    t = pgft(len(down), down, up, link_bandwidth=10e9, link_latency_ns=1)
    return t, build_routing(t, "dmodk")


def _fill(active, paths, weight, prio, cap):
    """Exact weighted max-min with strict priorities over the flows in ``active``."""
    rate = {}
    residual = dict(enumerate(cap))
    for cls in sorted({prio[f] for f in active}):
        flows = [f for f in active if prio[f] == cls]
        frozen: set[int] = set()
        load = {c: 0.0 for c in residual}
        while len(frozen) < len(flows):
            best, bottleneck = np.inf, None
            for c in {c for f in flows if f not in frozen for c in paths[f]}:
                w = sum(weight[f] for f in flows if f not in frozen and c in paths[f])
                level = max(residual[c] - load[c], 0.0) / w
                if level < best:
                    best, bottleneck = level, c
            for f in flows:
                if f not in frozen and bottleneck in paths[f]:
                    frozen.add(f)
                    rate[f] = weight[f] * best
                    for c in paths[f]:
                        load[c] += rate[f]
        for c in residual:
            residual[c] = max(residual[c] - load[c], 0.0)
    return rate


def exact(paths, nbytes, start_s, weight, prio, cap, lat_s):
    """Completion time (s) of every flow: event by event, everything re-solved."""
    n = len(paths)
    begin = [start_s[f] + lat_s[f] for f in range(n)]  # first byte leaves
    left = list(map(float, nbytes))
    done = [None] * n
    prev = [0.0] * n
    t = 0.0
    while any(d is None for d in done):
        active = [f for f in range(n) if done[f] is None and begin[f] <= t + 1e-15]
        rate = _fill(active, paths, weight, prio, cap) if active else {}
        # the model's resolution (docs/model.md): a flow starved with less than
        # FINISH_SLACK_S of sending left at its last rate finishes at this event
        slack = [f for f in active if prev[f] > 0 and rate[f] == 0 and left[f] <= prev[f] * FINISH_SLACK_S]
        if slack:
            for f in slack:
                done[f] = t
            continue
        for f in active:
            prev[f] = rate[f]
        nxt = min([begin[f] for f in range(n) if begin[f] > t + 1e-15] + [np.inf])
        for f in active:
            if rate[f] > 0:
                nxt = min(nxt, t + left[f] / rate[f])
        assert np.isfinite(nxt), "the reference stalled"
        for f in active:
            if rate[f] > 0 and t + left[f] / rate[f] <= nxt * (1 + 1e-12):
                done[f] = nxt
            left[f] -= rate[f] * (nxt - t)
        t = nxt
    return done


def _case(seed: int, with_priorities: bool):
    rng = np.random.default_rng(seed)
    tree = int(rng.integers(len(TREES)))
    topo, routing = _fabric(tree)
    n = int(rng.integers(2, 9))
    d = FlowDag()
    for _ in range(n):
        src, dst = rng.choice(topo.n_hosts, size=2, replace=False)
        d.add(
            int(src),
            int(dst),
            int(rng.choice([1, 2, 4, 8, 16, 32])) * 2**20,
            start_ns=int(rng.integers(0, 5)) * 1_000_000,
            weight=float(rng.integers(1, 4)),
            priority=int(rng.integers(0, 3)) if with_priorities else 0,
        )
    return topo, routing, d


@pytest.mark.parametrize("with_priorities", [False, True], ids=["weights", "weights+priorities"])
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
# two finish events rounded to whole ns 2 ns apart left a starved flow 0.7 bytes short
@example(seed=4459065)
# a starved flow 0.4 ns from its end, below the clock's resolution: it finishes at the event
@example(seed=1666609)
def test_engine_matches_the_exact_simulation(seed, with_priorities):
    topo, routing, d = _case(seed, with_priorities)
    res = simulate(topo, routing, d)
    assert res.status == "done"
    c = d.columns()
    offsets, channels = dag_paths(topo, routing, d, np.arange(len(d)))
    paths = [set(channels[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(d))]
    cap = (topo.channel_bandwidth() / 8.0).tolist()
    lat = topo.channel_latency_ns()
    lat_s = [float(sum(lat[ch] for ch in p)) * 1e-9 for p in paths]
    start_s = [max(int(s), 0) * 1e-9 for s in c.start_ns]
    want = exact(paths, c.bytes.tolist(), start_s, c.weight.tolist(), c.priority.tolist(), cap, lat_s)
    for f in range(len(d)):
        got = res.completion_ns[f] * 1e-9
        span = want[f] - start_s[f]
        assert got > 0, f"flow {f} never finished"
        assert abs(got - want[f]) <= 1e-3 * span + 1e-8, (f, got, want[f])


def test_the_issue_reproduction_finishes_the_starved_flow_at_the_exact_time():
    topo, routing = _fabric(0)
    d = FlowDag()
    rows = [(8, 6, 8, 4, 3, 0), (10, 7, 16, 2, 3, 1), (11, 2, 32, 2, 1, 0), (11, 6, 8, 4, 1, 0), (9, 3, 32, 0, 2, 0)]
    for src, dst, mib, start_ms, w, p in rows:
        d.add(src, dst, mib * 2**20, start_ns=start_ms * 1_000_000, weight=w, priority=p)
    res = simulate(topo, routing, d)
    offsets, channels = dag_paths(topo, routing, d, np.arange(len(d)))
    paths = [set(channels[offsets[i] : offsets[i + 1]].tolist()) for i in range(len(d))]
    c = d.columns()
    want = exact(
        paths,
        c.bytes.tolist(),
        [s * 1e-9 for s in c.start_ns],
        c.weight.tolist(),
        c.priority.tolist(),
        (topo.channel_bandwidth() / 8.0).tolist(),
        [4e-9] * len(d),
    )
    assert res.status == "done"
    assert abs(res.completion_ns[1] * 1e-9 - want[1]) <= 1e-6


def test_a_run_that_cannot_finish_says_stalled_and_names_the_jobs(tmp_path):
    import json
    import subprocess
    import sys

    sc = tmp_path / "dead.yaml"
    sc.write_text(
        "name: dead\n"
        "topology: {kind: pgft, levels: 2, down: [2, 2], up: [1, 1], link_bandwidth: 10Gbps, link_latency: 1ns}\n"
        "routing: {engine: dmodk}\n"
        "jobs:\n"
        "  - {name: ok, flows: [{src: 0, dst: 1, bytes: 1MiB}]}\n"
        "  - {name: cut, flows: [{src: 0, dst: 3, bytes: 1MiB, start: 1ms}]}\n"
        "events:\n"
        "  - {at: 0ms, link_down: [{node: s1_0, port: 3}]}\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "netsteer", "run", str(sc), "--json"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["status"] == "stalled"
    assert res["stalled"]["jobs"] == ["cut"]
    assert [j["completion_s"] for j in res["jobs"]][1] is None
