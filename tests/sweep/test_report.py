"""``results.parquet`` bookkeeping and ``netsteer sweep report`` on recorded rows (no cluster)."""

from __future__ import annotations

import json
import types

import pyarrow.parquet as pq
import pytest

from netsteer.sweep import ResultStore, summarize

from .helpers import netsteer


def _result(makespan, status="done", error=None):
    return {"status": status, "error": error, "makespan_s": makespan, "wall_s": 0.01, "cpu_s": 0.009,
            "jobs": {"app": makespan}}


@pytest.fixture
def results(tmp_path):
    store = ResultStore(tmp_path / "results.parquet")
    for eng, ms in (("dmodk", 1.0), ("minhop", 2.0)):
        for ranks in (4, 8):
            for seed, jitter in ((1, 0.0), (2, 0.5)):
                key = json.dumps({"engine": eng, "ranks": ranks, "seed": seed})
                store.add(key, {"routing.engine": eng, "jobs.0.ranks": ranks, "seed": seed},
                          _result(ms * ranks + jitter))
    store.add("bad", {"routing.engine": "ftree", "jobs.0.ranks": 8, "seed": 1},
              _result(None, "failed", "ftree needs a fat-tree"))
    return store


def test_rows_are_rewritten_whole_and_read_back(results, tmp_path):
    t = pq.read_table(tmp_path / "results.parquet")
    assert t.num_rows == 9
    assert t.column_names == ["point", "routing.engine", "jobs.0.ranks", "seed", "status", "error", "makespan_s",
                              "job.app.completion_s", "wall_s", "cpu_s", "finished_at"]
    again = ResultStore(tmp_path / "results.parquet")
    assert again.rows == results.rows
    assert again.finished() == set(results.rows)
    assert "bad" not in again.finished(retry_failed=True)


def test_summary_pools_seeds(results):
    s = summarize(results)
    assert s["params"] == ["routing.engine", "jobs.0.ranks"]
    g = {(x["routing.engine"], x["jobs.0.ranks"]): x for x in s["groups"]}
    assert (g["minhop", 8]["mean"], g["minhop", 8]["min"], g["minhop", 8]["max"]) == (16.25, 16.0, 16.5)
    assert g["ftree", 8]["failed"] == 1 and g["ftree", 8]["mean"] is None
    assert s["errors"] == ["ftree needs a fat-tree"]


def test_report_cli_json_and_plots(results, tmp_path):
    rc, out, err = netsteer("sweep", "report", tmp_path, "--json", "--metric", "job.app.completion_s")
    assert rc == 0, err
    rep = json.loads(out)
    assert rep["rows"] == 9 and rep["metric"] == "job.app.completion_s"
    # named as docs/sweeps.md says: DIR/<metric>_vs_<parameter>.png, the names as written
    assert sorted(rep["plots"]) == sorted(str(tmp_path / f"job.app.completion_s_vs_{p}.png")
                                          for p in ("routing.engine", "jobs.0.ranks"))
    assert all((tmp_path / f).stat().st_size > 5000 for f in rep["plots"])


def test_plot_names_of_parameters_that_differ_only_by_a_dot_do_not_collide(tmp_path):
    store = ResultStore(tmp_path / "results.parquet")
    for a in (1, 2):
        for b in (3, 4):
            store.add(json.dumps([a, b]), {"a.b": a, "a_b": b}, _result(float(a * b)))
    rc, out, err = netsteer("sweep", "report", tmp_path, "--json")
    assert rc == 0, err
    names = sorted(p.rsplit("/", 1)[-1] for p in json.loads(out)["plots"])
    assert names == ["makespan_s_vs_a.b.png", "makespan_s_vs_a_b.png"]
    assert all((tmp_path / n).exists() for n in names)


def test_report_of_a_folder_without_results_is_exit_2(tmp_path):
    rc, out, err = netsteer("sweep", "report", tmp_path / "nothing")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "no sweep results here" in err


def test_a_second_sweep_into_a_busy_folder_is_refused(write_sweep, tmp_path):
    import fcntl

    from netsteer.errors import NetsteerError
    from netsteer.sweep import load_sweep, run_sweep

    sw = load_sweep(write_sweep("base: base.yaml\ngrid: {jobs.0.repeat: [1, 2]}\n"))
    out = tmp_path / "out"
    out.mkdir()
    with open(out / ".sweep.lock", "w") as held:  # as a running sweep holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(NetsteerError, match="another sweep is writing its results here"):
            run_sweep(sw, out, client=object())  # refused before the client is touched
    assert not (out / "results.parquet").exists()


class _Future:
    """What the runner reads of a Dask future that did not return a result."""

    def __init__(self, status, exc=None):
        self.status, self._exc = status, exc

    def exception(self):
        return self._exc


def test_dask_failures_are_lost_and_run_again(tmp_path):
    from distributed import KilledWorker

    from netsteer.sweep.runner import _outcome

    worker = types.SimpleNamespace(address="tcp://10.0.0.7:40000")
    killed = _outcome(_Future("error", KilledWorker("netsteer-point-3", worker, 3)))
    assert killed["status"] == "lost" and "netsteer-point-3" in killed["error"]
    assert _outcome(_Future("cancelled"))["status"] == "lost"
    bug = _outcome(_Future("error", ModuleNotFoundError("No module named 'netsteer'")))
    assert bug == {"status": "failed", "error": "internal error: ModuleNotFoundError: No module named 'netsteer'"}
    store = ResultStore(tmp_path / "results.parquet")
    store.add("a", {}, {**killed, "makespan_s": None, "wall_s": None})
    store.add("b", {}, {**bug, "makespan_s": None, "wall_s": None})
    assert ResultStore(tmp_path / "results.parquet").finished() == {"b"}  # the lost point runs again


def test_an_interrupted_rewrite_keeps_the_old_results_and_leaves_no_temporary_file(results, monkeypatch):
    import netsteer.sweep.results as mod

    before = pq.read_table(results.path).to_pylist()

    def write_half_then_ctrl_c(table, where):
        with open(where, "wb") as f:
            f.write(b"PAR1 half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(mod.pq, "write_table", write_half_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        results.add("new", {"routing.engine": "minhop", "jobs.0.ranks": 16, "seed": 1}, _result(9.0))
    assert [p.name for p in results.path.parent.iterdir()] == ["results.parquet"]
    assert pq.read_table(results.path).to_pylist() == before


def test_values_with_units_sort_and_plot_by_value(tmp_path):
    from netsteer.sweep.report import _positions, plot_against

    store = ResultStore(tmp_path / "results.parquet")
    for bw, ms in (("10Gbps", 1.0), ("1Gbps", 4.0), ("2Gbps", 3.0), ("5Gbps", 2.0)):
        for t in ("1s", "10ms", "200ms"):
            store.add(bw + t, {"topology.core_bandwidth": bw, "driver.delay.vlan_tag_time": t}, _result(ms))
    s = summarize(store)
    order = [(g["topology.core_bandwidth"], g["driver.delay.vlan_tag_time"]) for g in s["groups"]]
    assert order[:4] == [("1Gbps", "10ms"), ("1Gbps", "200ms"), ("1Gbps", "1s"), ("2Gbps", "10ms")]
    assert order[-1] == ("10Gbps", "1s")
    assert _positions(["1Gbps", "2Gbps", "10Gbps"]) == ({"1Gbps": 1e9, "2Gbps": 2e9, "10Gbps": 1e10}, True)
    assert _positions(["10ms", "1s"]) == ({"10ms": 1e7, "1s": 1e9}, True)
    assert _positions(["1Gbps", "10ms", "ecmp"]) == ({"1Gbps": 0, "10ms": 1, "ecmp": 2}, False)
    assert plot_against(s, "topology.core_bandwidth", tmp_path / "bw.png").stat().st_size > 5000


def test_report_table_keeps_every_digit_of_a_time(tmp_path):
    """The table printed 4 significant digits (1.600002001 s read 1.6, 2.003 us 2.003e-06,
    two makespans 3 ns apart the same): times now in adaptive units, to 0.1 ns."""
    store = ResultStore(tmp_path / "results.parquet")
    for eng, t in (("dmodk", 1.600002001), ("minhop", 1.600002004), ("ecmp", 2.003e-06)):
        store.add(eng, {"routing.engine": eng}, _result(t))
    rc, out, err = netsteer("sweep", "report", tmp_path, "--no-plots")
    assert rc == 0, err
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 3}
    assert rows["dmodk"].count("1.600002001 s") == 3 and rows["minhop"].count("1.600002004 s") == 3, out
    assert rows["ecmp"].count("2.003 us") == 3, out


def test_sweep_out_follows_the_output_directory_rule_and_still_resumes(write_sweep, results, tmp_path):
    """--out must be new, empty or a sweep's own folder (results, sweep.json, the lock,
    sweep report's plots): a folder of user files or another command's result is
    refused, nothing written, before any cluster starts; --out . too."""
    from netsteer.errors import NetsteerError
    from netsteer.sweep import load_sweep, run_sweep
    from netsteer.sweep.runner import check_out, plan

    sw = load_sweep(write_sweep("base: base.yaml\ngrid: {jobs.0.repeat: [1, 2]}\n"))
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("mine")
    other = tmp_path / "other"  # a run --out result
    other.mkdir()
    (other / "result.json").write_text(json.dumps({"files": ["result.json", "a.png"]}))
    (other / "a.png").write_bytes(b"x")
    for d in (junk, other):
        before = sorted(p.name for p in d.iterdir())
        for call in (lambda: run_sweep(sw, d, client=object()), lambda: plan(sw, d)):
            with pytest.raises(NetsteerError) as e:
                call()
            assert e.value.field == "--out" and "not a netsteer result" in e.value.reason
        assert sorted(p.name for p in d.iterdir()) == before
    rc, out, err = netsteer("sweep", write_sweep("base: base.yaml\ngrid: {jobs.0.repeat: [1, 2]}\n"),
                            "--out", junk, "--json")
    assert rc == 2 and "--out" in err and "notes.txt" in err
    assert sorted(p.name for p in junk.iterdir()) == ["notes.txt"]
    rc, out, err = netsteer("sweep", write_sweep("base: base.yaml\ngrid: {jobs.0.repeat: [1, 2]}\n"),
                            "--out", ".", cwd=tmp_path)
    assert rc == 2 and "current directory" in err
    # a sweep's own folder, with sweep report's plots beside its results, stays a place to resume
    assert netsteer("sweep", "report", tmp_path)[0] == 0
    assert any(p.name.endswith(".png") for p in tmp_path.iterdir())
    own = tmp_path / "own"
    own.mkdir()
    for p in tmp_path.iterdir():
        if p.name in ("results.parquet", "sweep.json", ".sweep.lock") or p.name.endswith(".png"):
            (own / p.name).write_bytes(p.read_bytes())
    (own / ".sweep.lock").write_text("")
    assert check_out(own) == own
    assert plan(sw, own)["points"] == 2
    assert check_out(tmp_path / "new" / "folder") == tmp_path / "new" / "folder"


def test_plots_use_a_log_axis_for_geometric_values_and_cap_the_legend(tmp_path):
    """1Gbps..400Gbps on a linear axis crowded three ticks at 0 (one read '100bps');
    250 lines ran the legend off the figure, with matplotlib's layout warning on stderr."""
    import warnings

    from netsteer.sweep.report import LEGEND_LINES, TICKED_VALUES, _figure

    store = ResultStore(tmp_path / "results.parquet")
    for bw, ms in (("1Gbps", 8.0), ("10Gbps", 1.0), ("100Gbps", 0.1), ("400Gbps", 0.05)):
        for noise in range(250):
            store.add(f"{bw}-{noise}", {"topology.link_bandwidth": bw, "jobs.1.flows.0.bytes": f"{noise + 1}KiB"},
                      _result(ms + noise * 1e-3))
    s = summarize(store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = _figure(s, "topology.link_bandwidth")
        ax = fig.axes[0]
        assert ax.get_xscale() == "log"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1Gbps", "10Gbps", "100Gbps", "400Gbps"]
        labels = ax.get_legend_handles_labels()[1]
        assert len(labels) == LEGEND_LINES and labels[-1] == "... and 239 more lines (sweep report --json)"
        fig = _figure(s, "jobs.1.flows.0.bytes")  # 250 values: ticks spread, the first and last shown
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert fig.axes[0].get_xscale() == "log" and len(ticks) <= TICKED_VALUES + 1
        assert ticks[0] == "1KiB" and ticks[-1] == "250KiB"


def test_a_column_that_is_not_a_metric_is_called_so(results, tmp_path):
    rc, out, err = netsteer("sweep", "report", tmp_path, "--metric", "wall_s")
    assert rc == 2, err
    assert "no column" not in err
    assert "'wall_s' is a column of results.parquet but not a metric" in err
    assert "metrics: makespan_s, job.app.completion_s" in err
    rc, out, err = netsteer("sweep", "report", tmp_path, "--metric", "nope")
    assert rc == 2 and "no column 'nope'" in err
