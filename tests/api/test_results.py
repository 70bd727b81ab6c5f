"""Results through the API agree with ``netsteer run``: the JSON, the Parquet
counters read back into the same frame, and the same figures."""

from __future__ import annotations

import json
import subprocess
import sys
from io import BytesIO
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest

import netsteer as ns

ROOT = Path(__file__).resolve().parents[2]
LINK_FAILURE = ROOT / "scenarios" / "link-failure.yaml"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netsteer", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "out"
    p = _cli("run", str(LINK_FAILURE), "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="module")
def api_run():
    return ns.Scenario.from_yaml(LINK_FAILURE).run()


def test_summary_is_the_cli_json(cli_run, api_run):
    cli = json.loads((cli_run / "result.json").read_text())
    api = api_run.to_dict()
    for d in (cli, api):
        d.pop("wall_s")
        d.pop("files", None)
    assert api == cli


def test_parquet_counters_read_back_into_the_same_frame(cli_run, api_run):
    back = ns.read_counters(cli_run / "counters.parquet")
    assert len(back) > 0
    pd.testing.assert_frame_equal(back, api_run.counters)


def test_counters_rates_add_up_to_the_bytes(api_run):
    c = api_run.counters
    assert set(c.direction) <= {"a->b", "b->a"}
    assert (c.channel // 2 == c.link).all()
    for _, g in c.groupby("channel"):
        dt = g.time_s.diff().to_numpy()[1:]
        sent = (g.gbps.to_numpy()[1:] * 1e9 / 8 * dt).sum()
        assert sent == pytest.approx(g.bytes_total.iloc[-1], rel=1e-9)
    # no channel faster than its link
    bw = api_run.built.topology.link_bandwidth[c.link.to_numpy()] / 1e9
    assert (c.gbps.fillna(0).to_numpy() <= bw * (1 + 1e-9)).all()


def test_events_frame_lists_the_link_changes(api_run):
    ev = api_run.events
    assert {"intent", "at_s", "done_s"} <= set(ev.columns)
    assert len(ev) == len(api_run.to_dict()["events"]) >= 2


def _pixels(png: bytes) -> np.ndarray:
    return mpimg.imread(BytesIO(png), format="png")


@pytest.mark.parametrize("kind,file", [("links", "link_throughput.png"), ("jobs", "job_completion.png")])
def test_plots_are_the_figures_of_out(cli_run, api_run, kind, file):
    fig = getattr(api_run.plot, kind)()
    buf = BytesIO()
    fig.savefig(buf, format="png")
    ours, theirs = _pixels(buf.getvalue()), _pixels((cli_run / file).read_bytes())
    assert ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)


def test_link_plot_draws_the_busiest_ports(api_run):
    fig = api_run.plot.links(top=3)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3
    peak = max(float(np.nanmax(l.get_ydata())) for l in lines)
    assert peak == pytest.approx(api_run.counters.gbps.max(), rel=1e-9)


def test_result_write_is_the_cli_directory(api_run, tmp_path):
    out = api_run.write(tmp_path / "o")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["result.json", "counters.parquet", "link_throughput.png", "job_completion.png"])
    pd.testing.assert_frame_equal(ns.read_counters(out / "counters.parquet"), api_run.counters)


def test_mpi_operations_frame():
    topo = ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")
    job = ns.mpi_job(16, [ns.op.allreduce("4MiB", algorithm="ring"), ns.op.compute("1ms")], repeat=3,
                     name="app")
    r = ns.simulate(topo, "dmodk", [job])
    ops = r.operations.set_index("op")
    assert ops.loc["allreduce", "count"] == 3 and ops.loc["compute", "count"] == 3
    assert ops.loc["allreduce", "bytes"] == 3 * 4 * 2**20
    assert ops.loc["allreduce", "algbw_Bps"] == pytest.approx(
        ops.loc["allreduce", "bytes"] / ops.loc["allreduce", "time_s"])
    assert pd.isna(ops.loc["compute", "algbw_Bps"])
    # three 1 ms phases, each spanning the ranks' skew (they leave the ring at different times)
    assert 3e-3 <= ops.loc["compute", "time_s"] < 3.1e-3
    assert r.jobs.set_index("job").loc["app", "completion_s"] == pytest.approx(r.makespan_s)


def test_operation_counts_stay_integers_when_mpi_and_flow_jobs_mix():
    topo = ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")
    jobs = [ns.mpi_job(4, [ns.op.allreduce("1MiB")], name="m"), ns.job([ns.flow(0, 5, "1MiB")], name="f")]
    ops = ns.simulate(topo, "dmodk", jobs, sample=False).operations.set_index("job")
    assert ops.loc["m", "count"] == 1 and ops.loc["f", "flows"] == 1
    assert all(pd.api.types.is_integer_dtype(ops[c]) for c in ("count", "bytes", "flows"))
    assert pd.isna(ops.loc["f", "count"]) and pd.isna(ops.loc["m", "flows"])


def test_a_job_that_moves_nothing_lists_its_compute_steps_only():
    """As api.md and collectives.md say: one rank's allreduce moves nothing and has no
    row; its compute step is an operation like any other, and the job ends after it."""
    topo = ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")
    r = ns.simulate(topo, "dmodk", [ns.mpi_job(1, [ns.op.allreduce("1MiB"), ns.op.compute("1ms")], start="5ms")],
                    sample=False)
    assert r.operations[["op", "count", "time_s"]].to_dict("records") == [{"op": "compute", "count": 1,
                                                                            "time_s": 0.001}]
    assert r.jobs.completion_s.tolist() == [0.006]
    r = ns.simulate(topo, "dmodk", [ns.mpi_job(4, [ns.op.reduce(0)], start="5ms")], sample=False)
    assert r.operations.empty and r.jobs.completion_s.tolist() == [0.005]


def test_a_bulk_flow_running_past_the_other_traffic_is_sampled_over_its_duration():
    """The automatic interval covers a bulk flow's whole duration, not only the
    traffic with a size (which ends 1,000x sooner): about 200 samples, not a limit hit."""
    topo = ns.pgft(2, [16, 16], [1, 8], link_bandwidth="10Gbps", link_latency="1us")
    r = ns.simulate(topo, "dmodk", [ns.mpi_job(16, [ns.op.allreduce("1MiB")], name="app"),
                                    ns.job(bulk=[ns.bulk(100, 200, duration="2s")], name="iperf")])
    assert r.makespan_s == pytest.approx(2.0)
    assert 100 <= r.counters["time_s"].nunique() <= 1000


def test_an_unsampled_run_says_so():
    topo = ns.pgft(1, [2], [1], link_bandwidth="1Gbps")
    r = ns.simulate(topo, jobs=[ns.job([ns.flow(0, 1, "1MB")])], sample=False)
    with pytest.raises(ns.NetsteerError, match="sample=True"):
        r.counters


def test_a_controller_in_the_loop():
    """The controller core through the top level: a controller that takes the only
    path's link down at 1 ms stalls the flow; the default policy does not."""
    topo = ns.pgft(1, [2], [1], link_bandwidth="8Gbps", link_latency="0us")
    sc = ns.Scenario(topo, "dmodk", [ns.job([ns.flow(0, 1, "1GB")], name="x")])

    class CutAt1ms(ns.Controller):
        name = "cut"

        def __init__(self):
            super().__init__()
            self.done = False

        def next_wakeup(self, now):
            return None if self.done else 1_000_000

        def decide(self, inp):
            if inp.now < 1_000_000 or self.done:
                return []
            self.done = True
            return [ns.intents.SetLinks((0,), up=False)]

    assert sc.run(sample=False).status == "done"
    # unsampled: a stalled run's counters would sample until the memory limit (as netsteer run --out does)
    cut = sc.run(controller=ns.ControllerStack([CutAt1ms()]), sample=False)
    assert cut.status == "stalled"
    assert cut.events.at_s.tolist() == [0.001]


def test_to_dict_is_the_run_json_object_engine_events_included(tmp_path):
    """The API samples the counters and `run --json` does not: the engine counts the
    same events either way, samples apart in `sample_events` (the only other difference
    from `--json` besides `wall_s`)."""
    two = ROOT / "scenarios" / "two-bulk-flows.yaml"
    p = _cli("run", str(two), "--json", "--no-progress")
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    api = ns.Scenario.from_yaml(two).run().to_dict()
    assert api["engine"]["sample_events"] > 0 and cli["engine"]["sample_events"] == 0
    assert api["engine"]["events"] == cli["engine"]["events"] == 6
    for d in (cli, api):
        d.pop("wall_s")
        d["engine"].pop("sample_events")
    assert api == cli
    unsampled = ns.Scenario.from_yaml(two).run(sample=False).to_dict()
    assert unsampled["engine"] == {**cli["engine"], "sample_events": 0}
