"""Sweeps on real Dask clusters: a worker process killed mid-sweep, and an interrupted sweep resumed.

Both wait on real conditions: the first point's row in ``results.parquet`` before
killing or interrupting, and the processes' own exits after.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from netsteer.sweep import ResultStore, load_sweep, point_scenario_text, run_sweep

from .helpers import netsteer, run_json

pytestmark = pytest.mark.slow


def test_a_point_dropped_with_its_worker_is_submitted_again(write_sweep, tmp_path, monkeypatch):
    """A future the scheduler cancels (it forgets a dead worker's task at times instead
    of running it elsewhere) is submitted again, not recorded as lost."""
    from distributed import Client, LocalCluster

    sw = load_sweep(write_sweep("""
        base: base.yaml
        grid:
          routing.engine: [dmodk, minhop]
    """))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        real, dropped = client.submit, []

        def submit(*args, **kwargs):
            f = real(*args, **kwargs)
            if kwargs["key"].startswith("netsteer-point-0-") and len(dropped) < 2:  # dropped twice
                dropped.append(kwargs["key"])
                client.cancel([f])
            return f

        monkeypatch.setattr(client, "submit", submit)
        summary = run_sweep(sw, tmp_path / "out", client=client)
    assert len(dropped) == 2 and dropped[0] != dropped[1]
    assert summary["done"] == 2 and summary["lost"] == 0 and summary["failed"] == 0
    rows = pq.read_table(tmp_path / "out" / "results.parquet").to_pylist()
    assert sorted(r["point"] for r in rows) == sorted(p.key for p in sw.points)
    assert all(r["makespan_s"] > 0 for r in rows)


def test_killed_worker_every_point_once_with_netsteer_run_makespans(write_sweep, tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    import netsteer.sweep.runner as runner

    monkeypatch.setattr(runner, "WINDOW", 1)  # 4 in flight (2 per worker) of 6: later points are submitted as others end

    sw = load_sweep(write_sweep("""
        base: base.yaml
        grid:
          routing.engine: [dmodk, minhop]
        points:
          - {jobs.0.ranks: 99}   # refused (16 hosts): recorded as failed, the sweep goes on
        repeat_seeds: [1, 2]
    """))
    out = tmp_path / "out"
    first_row = threading.Event()
    summary: dict = {}

    def progress(p):
        if p.done:
            first_row.set()

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        sweeper = threading.Thread(target=lambda: summary.update(run_sweep(sw, out, client=client, progress=progress)))
        sweeper.start()
        assert first_row.wait(timeout=120), "no point finished"
        # the file's bytes read once: pyarrow opens a path again for its pages, and the
        # sweep may have renamed a newer file over it in between (metadata of one, pages
        # of the other)
        rows_at_kill = pq.read_table(pa.BufferReader((out / "results.parquet").read_bytes())).num_rows
        busy = [w for w, keys in client.processing().items() if keys and w in pids]
        victim = busy[0] if busy else next(iter(pids))  # prefer a worker in the middle of a point
        os.kill(pids[victim], signal.SIGKILL)
        sweeper.join(timeout=300)
        assert not sweeper.is_alive(), "the sweep did not finish after a worker died"
        # workers that answer now (one being replaced by its nanny may be listed, and not answer)
        pids_after = client.run(os.getpid, on_error="ignore")

    assert 0 < rows_at_kill < len(sw.points), "the kill did not land mid-sweep"
    assert pids[victim] not in pids_after.values()  # that process really is gone
    table = pq.read_table(out / "results.parquet").to_pylist()
    keys = [r["point"] for r in table]
    assert sorted(keys) == sorted(p.key for p in sw.points)  # every point, each exactly once
    assert summary["done"] == 4 and summary["failed"] == 2 and summary["lost"] == 0
    rows = {r["point"]: r for r in table}
    for i, p in enumerate(sw.points):
        row = rows[p.key]
        if p.overrides.get("jobs.0.ranks") == 99:
            assert row["status"] == "failed" and "99 ranks do not fit" in row["error"]
            continue
        scenario = tmp_path / f"point{i}.yaml"  # beside the base, as the point saw it
        scenario.write_text(point_scenario_text(sw.base_raw, p.overrides, p.seed))
        ref = run_json(scenario)
        assert row["status"] == "done"
        assert row["makespan_s"] == ref["makespan_s"]
        assert row["job.app.completion_s"] == ref["jobs"][0]["completion_s"]


def test_interrupted_sweep_resumes_and_runs_no_point_twice(write_sweep, tmp_path):
    path = write_sweep("""
        base: base.yaml
        grid: {jobs.0.repeat: [200, 300, 400, 500]}
        repeat_seeds: [1, 2]
    """)
    out = tmp_path / "out"
    results = out / "results.parquet"
    args = ["sweep", path, "--out", out, "--workers", "1", "--json", "--no-progress"]
    first = subprocess.Popen([sys.executable, "-m", "netsteer", *map(str, args)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not results.exists():  # the first point's row: the sweep is under way
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline, "no point finished"
        time.sleep(0.02)
    first.send_signal(signal.SIGINT)  # Ctrl-C
    stdout, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert "Traceback" not in err
    before = ResultStore(results).rows
    assert 0 < len(before) < 8
    # --json: one object on stdout, saying what was kept as the text on stderr does
    assert f"finished points are in {results}" in err
    s = json.loads(stdout)
    assert (s["status"], s["signal"], s["points"], s["out"], s["results"]) == \
        ("interrupted", "SIGINT", 8, str(out), str(results))
    assert (s["recorded"], s["done"]) == (len(before), sum(r["status"] == "done" for r in before.values()))

    rc, stdout, err = netsteer(*args)
    assert rc == 0, err
    s = json.loads(stdout)
    assert (s["skipped"], s["ran"], s["done"]) == (len(before), 8 - len(before), 8)
    after = ResultStore(results).rows
    assert len(after) == 8
    for key, row in before.items():  # recorded rows were not run again
        assert after[key] == row

    rc, stdout, err = netsteer(*args)
    assert rc == 0, err
    assert (json.loads(stdout)["ran"], ResultStore(results).rows) == (0, after)


def test_a_cluster_the_user_started_runs_the_sweep_with_netsteer_run_makespans(write_sweep, tmp_path):
    """`dask scheduler` and `dask worker` started as a user would, then `netsteer sweep --scheduler`."""
    from pathlib import Path

    path = write_sweep("""
        base: base.yaml
        grid: {routing.engine: [dmodk, minhop]}
    """)
    dask = Path(sys.executable).parent / "dask"
    info = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                               "--scheduler-file", str(info)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 120
        while not info.exists():  # the scheduler writes its address once it listens
            assert procs[0].poll() is None and time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.05)
        address = json.loads(info.read_text())["address"]
        procs.append(subprocess.Popen([str(dask), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                       "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        out = tmp_path / "out"
        rc, stdout, err = netsteer("sweep", path, "--scheduler", address, "--out", out, "--json", "--no-progress")
        assert rc == 0, err
        s = json.loads(stdout)
        assert (s["scheduler"], s["points"], s["done"], s["failed"], s["lost"]) == (address, 2, 2, 0, 0)
        rc, _, err = netsteer("sweep", path, "--scheduler", address, "--workers", "2", "--out", out)
        assert rc == 2 and "--workers" in err  # the user's cluster has its own workers
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=60)
    sw = load_sweep(path)
    rows = ResultStore(out / "results.parquet").rows
    for i, p in enumerate(sw.points):
        scenario = tmp_path / f"point{i}.yaml"
        scenario.write_text(point_scenario_text(sw.base_raw, p.overrides, p.seed))
        assert rows[p.key]["makespan_s"] == run_json(scenario)["makespan_s"]


def test_ctrl_c_while_the_cluster_starts_leaves_no_folder(write_sweep, tmp_path):
    path = write_sweep("""
        base: base.yaml
        grid: {routing.engine: [dmodk, minhop]}
    """)
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, "-m", "netsteer", "sweep", str(path), "--out", str(out), "--workers", "1",
                          "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / ".sweep.lock").exists():  # the folder is claimed; the cluster starts next
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.01)
    assert not (out / "results.parquet").exists()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert err == "netsteer: interrupted: stopped by signal SIGINT\n"  # no "resume" hint: nothing to resume
    assert not out.exists()  # nothing recorded, nothing left
