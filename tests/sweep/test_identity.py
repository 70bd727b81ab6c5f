"""A point is the scenario it runs: a path set to the base's own value changes nothing,
and one folder holds every sweep file run into it over the same base."""

from __future__ import annotations

import json

import pytest

from netsteer.sweep import ResultStore

from .helpers import netsteer

pytestmark = pytest.mark.slow


def _sweep(path, out):
    rc, stdout, err = netsteer("sweep", path, "--out", out, "--workers", "1", "--json", "--no-progress")
    assert rc == 0, err
    return json.loads(stdout)


def test_a_path_at_the_base_value_reruns_nothing_and_shows_the_base_value(write_sweep, tmp_path):
    out = tmp_path / "out"
    first = write_sweep("""
        base: base.yaml
        grid: {routing.engine: [dmodk, minhop], jobs.0.repeat: [20]}
    """)
    assert _sweep(first, out)["ran"] == 2
    rows = ResultStore(out / "results.parquet").rows
    # the grid, extended by a path at the base's own value: the same two scenarios
    more = write_sweep("""
        base: base.yaml
        grid: {routing.engine: [dmodk, minhop], jobs.0.repeat: [20], jobs.0.placement: [random]}
    """)
    s = _sweep(more, out)
    assert (s["ran"], s["skipped"], s["done"]) == (0, 2, 2)
    after = ResultStore(out / "results.parquet").rows
    assert after.keys() == rows.keys()
    assert {r["jobs.0.placement"] for r in after.values()} == {"random"}  # the base's value, not None

    rc, stdout, err = netsteer("sweep", "report", out, "--json", "--no-plots")
    assert rc == 0, err
    rep = json.loads(stdout)
    assert all(g["jobs.0.placement"] == "random" and g["jobs.0.repeat"] == 20 for g in rep["groups"])


def test_another_sweep_file_into_the_folder_is_recorded_beside_the_first(write_sweep, tmp_path):
    out = tmp_path / "out"
    a = write_sweep("""
        base: base.yaml
        grid: {routing.engine: [dmodk, minhop], jobs.0.repeat: [20]}
    """, name="a.yaml")
    b = write_sweep("""
        base: base.yaml
        grid: {jobs.0.repeat: [20, 40]}
    """, name="b.yaml")
    _sweep(a, out)
    s = _sweep(b, out)
    assert (s["ran"], s["skipped"]) == (1, 1)  # repeat 20 with the base's dmodk ran with a.yaml
    manifest = json.loads((out / "sweep.json").read_text())
    assert [x["sweep_file"] for x in manifest["sweeps"]] == [str(a), str(b)]
    assert manifest["params"] == ["routing.engine", "jobs.0.repeat"]
    rows = ResultStore(out / "results.parquet").rows.values()
    assert sorted((r["routing.engine"], r["jobs.0.repeat"]) for r in rows) == \
        [("dmodk", 20), ("dmodk", 40), ("minhop", 20)]  # no None: a path a point leaves alone is the base's
