"""``sample_interval: auto`` on latency-bound MPI jobs (explore-mpi F10).

The guess of the run's length used to be a pure bandwidth bound: a 200-rank 64 B
allreduce repeated 50 times (2.36 ms, its rounds' latency) was sampled every 5-20 ns,
40,919 samples, and ran out of the sample memory (``--out`` exit 2, the API a bare
``MemoryError``). Now the guess counts rounds x path latency, a streamed run that
samples past :data:`netsteer.scenario.AUTO_SAMPLE_CAP` halves its resolution, and a
run that still overflows raises :class:`netsteer.LimitError` naming ``sample_interval``.
"""

import re
from pathlib import Path

import numpy as np
import pytest

import netsteer as ns
from netsteer import limits
from netsteer.cli import run_cli


@pytest.fixture
def limit():
    yield limits.set_max_memory
    limits.reset()


def small_topo():
    return ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")


def latency_bound(stream=None, repeat=20):
    return ns.mpi_job(16, [ns.op.allreduce("64B")], placement="random", seed=3, repeat=repeat, stream=stream)


@pytest.mark.parametrize("stream", [True, False])
def test_auto_samples_a_latency_bound_job_about_200_times(stream):
    topo = ns.pgft(2, [16, 16], [1, 4], link_bandwidth="10Gbps", link_latency="1us")
    job = ns.mpi_job(200, [ns.op.allreduce("64B")], placement="random", seed=3, repeat=50, stream=stream)
    r = ns.simulate(topo, "dmodk", [job])
    assert r.status == "done"
    n = len(r.raw.sample_times_ns)
    assert 100 <= n <= 1000, n  # was 40,919 (5 ns apart), then out of memory
    assert r.built.sample_interval_ns >= 1000
    # the figures docs/scenarios.md gives for this setup
    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text().split())
    said = re.search(r"takes ([0-9.]+) ms and gets ([0-9]+) samples, ([0-9]+) us apart", doc)
    assert said, "docs/scenarios.md no longer states the latency-bound example's figures"
    assert (f"{r.makespan_s * 1e3:.3f}", str(n), f"{r.built.sample_interval_ns / 1e3:g}") == said.groups()


@pytest.mark.parametrize("op", [ns.op.barrier(), ns.op.bcast("3KiB", algorithm="scatter_allgather", root=15),
                                ns.op.allgather("8B")])
def test_auto_counts_the_rounds_of_each_collective(op):
    r = ns.simulate(small_topo(), "dmodk", [ns.mpi_job(16, [op], placement="random", seed=1, repeat=10)])
    assert 50 <= len(r.raw.sample_times_ns) <= 1000


@pytest.mark.parametrize("stream", [True, False])
def test_a_run_longer_than_guessed_halves_its_resolution(monkeypatch, stream):
    """Streamed (the driver thins) and DAG (the engine's sample cap; a DAG run used to
    sample on at the short interval until the memory limit stopped it)."""
    import netsteer.scenario as scenario

    monkeypatch.setattr(scenario, "_expected_ns", lambda *a, **k: 1000.0)  # a guess far too short
    monkeypatch.setattr(scenario, "AUTO_SAMPLE_CAP", 40)
    r = ns.simulate(small_topo(), "dmodk", [latency_bound(stream)])
    assert r.status == "done"
    t = r.raw.sample_times_ns
    assert 20 <= len(t) <= 40
    assert (np.diff(t) > 0).all()
    every = r.raw.sample_interval_ns
    assert every > r.built.sample_interval_ns and every % r.built.sample_interval_ns == 0
    gaps = np.diff(t)[1:-1]  # the first gap may be shorter, the last ends with the run
    assert (gaps == every).all(), (gaps, every)
    assert t[-1] == r.raw.end_ns and np.array_equal(r.raw.channel_bytes[-1], r.raw.final_channel_bytes)
    # the whole run's bytes: the same as sampling it finely
    fine = ns.simulate(small_topo(), "dmodk", [latency_bound(stream)], sample_interval="1us")
    assert np.array_equal(fine.raw.final_channel_bytes, r.raw.final_channel_bytes)
    assert r.to_dict()["sample_interval_s"] == pytest.approx(every * 1e-9)


@pytest.mark.parametrize("stream", [True, False])
def test_sampling_past_the_memory_limit_is_a_limit_error_not_a_memory_error(stream, monkeypatch, limit):
    import netsteer.scenario as scenario

    monkeypatch.setattr(scenario, "_expected_ns", lambda *a, **k: 1000.0)
    limit(64 << 20)  # about 100,000 sample values: some 1,300 samples of these channels
    repeat = 200 if stream else 20  # (a DAG's flows take the memory too)
    with pytest.raises(ns.LimitError, match=r"the port counters reached the limit of [\d,]+ values") as e:
        ns.simulate(small_topo(), "dmodk", [latency_bound(stream, repeat=repeat)], sample_interval="1ns")
    assert e.value.field == "sample_interval"
    # auto: the run halves its resolution instead, streamed (the driver) or a DAG (the
    # engine's sample cap; a DAG run on auto used to stop with the LimitError above)
    monkeypatch.setattr(scenario, "AUTO_SAMPLE_CAP", 10**9)
    r = ns.simulate(small_topo(), "dmodk", [latency_bound(stream, repeat=repeat)])
    assert r.status == "done" and len(r.raw.sample_times_ns) * small_topo().n_channels <= limits.current().max_sample_values


def test_the_cli_names_the_file_and_field(tmp_path, monkeypatch, capsys, limit):  # limit: reset after
    import netsteer.scenario as scenario

    monkeypatch.setattr(scenario, "_expected_ns", lambda *a, **k: 1000.0)
    f = tmp_path / "s.yaml"
    f.write_text(ns.Scenario(small_topo(), "dmodk", [latency_bound(False)],
                             sample_interval="1ns").to_yaml())
    assert run_cli(["--max-memory", "64MiB", "run", str(f), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{f}: sample_interval: the port counters reached the limit" in err, err


def _flows_scenario(tmp_path, flows, name="s"):
    f = tmp_path / f"{name}.yaml"
    rows = "\n".join(f"      - {{{r}}}" for r in flows)
    f.write_text("name: s\ntopology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1], "
                 "link_bandwidth: 10Gbps, link_latency: 1us}\nrouting: {engine: dmodk}\n"
                 f"jobs:\n  - name: app\n    flows:\n{rows}\n")
    return f


def _run(path):
    from netsteer.scenario import build_scenario, load_scenario
    from netsteer.sim import run_scenario

    b = build_scenario(load_scenario(path))
    return b, run_scenario(b)


@pytest.mark.parametrize("delay_ms", [10, 50])
def test_auto_counts_the_delay_of_explicit_flows(tmp_path, delay_ms):
    """The flow-dag pattern (gather, compute, bcast) with a compute ``delay``: the guess
    took the busiest host's bytes (8 KiB: 6.6 us) and sampled a 10 ms run every 50 ns
    (200,000 samples); at 50 ms ``--out`` ran out of sample memory (exit 2)."""
    f = _flows_scenario(tmp_path, [
        "id: g1, src: 4, dst: 0, bytes: 4KiB", "id: g2, src: 8, dst: 0, bytes: 4KiB",
        f"id: compute, src: 0, dst: 0, bytes: 0, delay: {delay_ms}ms, after: [g1, g2]",
        "id: b1, src: 0, dst: 4, bytes: 4KiB, after: [compute]",
        "id: b2, src: 0, dst: 8, bytes: 4KiB, after: [compute]"])
    b, r = _run(f)
    assert r.status == "done"
    # the critical path: 4 KiB in (2 us of host links + 3.3 us), the delay, 4 KiB out
    path_ns = 2 * (2_000 + 4096 / 1.25)
    assert r.makespan_ns >= delay_ms * 1e6 + path_ns
    n = len(r.sample_times_ns)
    assert 100 <= n <= 1000, n  # ~200, as docs/scenarios.md says (was 200,000 at 10 ms)
    assert b.sample_interval_ns >= (delay_ms * 1e6 + path_ns) / 1000


def test_auto_counts_chains_of_after(tmp_path):
    """60 flows, each after the last, each from another host: no host is busy (4 KiB,
    3.3 us), but the chain takes 60 x (2 us + 3.3 us) = 317 us."""
    hosts = 16
    chain = [f"id: f{i}, src: {i % hosts}, dst: {(i + 1) % hosts}, bytes: 4KiB"
             + (f", after: [f{i - 1}]" if i else "") for i in range(60)]
    b, r = _run(_flows_scenario(tmp_path, chain))
    assert r.makespan_ns >= 60 * (2_000 + 4096 / 1.25)
    assert 100 <= len(r.sample_times_ns) <= 1000, len(r.sample_times_ns)


def test_auto_follows_after_to_a_later_flow(tmp_path):
    """``after`` may name a flow listed later: the longest path goes in dependency
    order, not file order."""
    f = _flows_scenario(tmp_path, ["id: b, src: 1, dst: 2, bytes: 1KiB, after: [a]",
                                   "id: a, src: 3, dst: 1, bytes: 1KiB, delay: 20ms"])
    b, r = _run(f)
    assert r.makespan_ns >= 20e6
    assert 100 <= len(r.sample_times_ns) <= 1000


def test_a_long_delay_is_sampled_at_its_length(tmp_path):
    """A 100 s delay reported sample_interval_s 5e-09 (a run never sampled to its end
    at 1 ns steps); it is now about 100 s / 200."""
    b, r = _run(_flows_scenario(tmp_path, ["id: f1, src: 0, dst: 5, bytes: 100, delay: 100s"]))
    assert r.makespan_ns >= 100e9
    assert 100e9 / 1000 <= r.sample_interval_ns <= 100e9 / 50


def test_the_advice_names_auto_only_when_it_is_not_in_use():
    from netsteer.routing import build_routing
    from netsteer.sim.driver import SimDriver
    from netsteer.traffic.dag import FlowDag

    t = small_topo()
    dag = FlowDag()
    dag.add(0, 5, 1000)
    given = SimDriver(t, build_routing(t, "dmodk"), dag, sample_interval_ns=10)
    auto = SimDriver(t, build_routing(t, "dmodk"), dag, sample_interval_ns=10, sample_cap=1000)
    assert given._or_auto() == " (or auto)" and auto._or_auto() == ""


@pytest.mark.parametrize("program", [
    "[{op: barrier}, {op: allreduce, bytes: 64KiB, algorithm: recursive_doubling}]",
    "[{op: alltoall, bytes: 4KiB}, {op: gather, bytes: 1KiB, root: 3}]",
])
def test_auto_interval_is_the_same_streamed_and_as_a_dag(program):
    """One guess for both runs of a scenario (explore-scale: 0.5 ms streamed, 1 ms as a
    DAG, 662 vs 332 samples): the DAG's count of every message per host, the stream's
    least time only. Both now count the job's bytes from its program and placement,
    so the counters are sampled at the same times, as docs/streaming.md says."""
    from netsteer.scenario import build_scenario, parse_scenario

    def interval(stream):
        text = f"""
name: ctr
topology: {{kind: pgft, levels: 2, down: [8, 8], up: [1, 2], parallel: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}}
routing: {{engine: dmodk}}
sharing: cm02
jobs:
  - {{name: a, ranks: 32, stream: {str(stream).lower()}, placement: random, seed: 4, repeat: 30, program: {program}}}
  - {{name: bg, flows: [{{src: 1, dst: 60, bytes: 1MiB}}]}}
"""
        built = build_scenario(parse_scenario(text, file="ctr.yaml"))
        assert bool(built.streamed) == stream
        return built.sample_interval_ns

    assert interval(True) == interval(False)
