"""``sample_interval: auto`` on latency-bound MPI jobs (explore-mpi F10).

The guess of the run's length used to be a pure bandwidth bound: a 200-rank 64 B
allreduce repeated 50 times (2.36 ms, its rounds' latency) was sampled every 5-20 ns,
40,919 samples, and ran out of the sample memory (``--out`` exit 2, the API a bare
``MemoryError``). Now the guess counts rounds x path latency, a streamed run that
samples past :data:`netsteer.scenario.AUTO_SAMPLE_CAP` halves its resolution, and a
run that still overflows raises :class:`netsteer.LimitError` naming ``sample_interval``.
"""

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


@pytest.mark.parametrize("op", [ns.op.barrier(), ns.op.bcast("3KiB", algorithm="scatter_allgather", root=15),
                                ns.op.allgather("8B")])
def test_auto_counts_the_rounds_of_each_collective(op):
    r = ns.simulate(small_topo(), "dmodk", [ns.mpi_job(16, [op], placement="random", seed=1, repeat=10)])
    assert 50 <= len(r.raw.sample_times_ns) <= 1000


def test_a_streamed_run_longer_than_guessed_halves_its_resolution(monkeypatch):
    import netsteer.scenario as scenario

    monkeypatch.setattr(scenario, "_expected_ns", lambda *a, **k: 1000.0)  # a guess far too short
    monkeypatch.setattr(scenario, "AUTO_SAMPLE_CAP", 40)
    r = ns.simulate(small_topo(), "dmodk", [latency_bound(True)])
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
    fine = ns.simulate(small_topo(), "dmodk", [latency_bound(True)], sample_interval="1us")
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
    if stream:
        # auto: the streamed run halves its resolution instead
        monkeypatch.setattr(scenario, "AUTO_SAMPLE_CAP", 10**9)
        r = ns.simulate(small_topo(), "dmodk", [latency_bound(stream, repeat=repeat)])
        assert r.status == "done" and len(r.raw.sample_times_ns) * small_topo().n_channels <= limits.current().max_sample_values
    else:
        with pytest.raises(ns.LimitError, match="sample_interval"):
            ns.simulate(small_topo(), "dmodk", [latency_bound(stream, repeat=repeat)])


def test_the_cli_names_the_file_and_field(tmp_path, monkeypatch, capsys, limit):  # limit: reset after
    import netsteer.scenario as scenario

    monkeypatch.setattr(scenario, "_expected_ns", lambda *a, **k: 1000.0)
    f = tmp_path / "s.yaml"
    f.write_text(ns.Scenario(small_topo(), "dmodk", [latency_bound(False)],
                             sample_interval="1ns").to_yaml())
    assert run_cli(["--max-memory", "64MiB", "run", str(f), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{f}: sample_interval: the port counters reached the limit" in err, err
