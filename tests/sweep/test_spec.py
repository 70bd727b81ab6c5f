"""Sweep files: expansion into points, seeds, and refusal of bad files before anything runs."""

from __future__ import annotations

import json

import pytest
import yaml

from netsteer.errors import NetsteerError
from netsteer.sweep import load_sweep, point_scenario_text
from netsteer.sweep.point import run_point

from .helpers import netsteer


def test_grid_points_and_seeds_multiply(write_sweep):
    sw = load_sweep(write_sweep("""
        base: base.yaml
        grid:
          routing.engine: [dmodk, minhop]
          jobs.0.ranks: [4, 8, 16]
        points:
          - {jobs.0.repeat: 3}
        repeat_seeds: [1, 2]
    """))
    assert len(sw.points) == (2 * 3 + 1) * 2
    assert len({p.key for p in sw.points}) == len(sw.points)
    assert sw.params == ["routing.engine", "jobs.0.ranks", "jobs.0.repeat", "seed"]
    listed = sw.points[-1]
    # a path the point leaves alone shows the base's value in its column
    assert sw.columns(listed) == {"routing.engine": "dmodk", "jobs.0.ranks": 16, "jobs.0.repeat": 3, "seed": 2}


def test_point_scenario_sets_paths_and_every_seed(write_sweep):
    sw = load_sweep(write_sweep("""
        base: base.yaml
        grid: {jobs.0.program.0.bytes: [2MiB], topology.down: [[2, 8]]}
        repeat_seeds: [7]
    """))
    p = sw.points[0]
    sc = yaml.safe_load(point_scenario_text(sw.base_raw, p.overrides, p.seed))
    assert sc["jobs"][0]["program"][0]["bytes"] == "2MiB"
    assert sc["topology"]["down"] == [2, 8]
    assert sc["jobs"][0]["seed"] == 7
    assert sw.base_raw["topology"]["down"] == [4, 4]  # the base is never modified


def test_seeds_change_a_random_placement(write_sweep):
    sw = load_sweep(write_sweep("base: base.yaml\npoints: [{}]\nrepeat_seeds: [1, 2, 3]\n"))
    res = [run_point(sw.base_raw, p.overrides, p.seed, sw.base_file) for p in sw.points]
    assert all(r["status"] == "done" for r in res)
    assert len({r["makespan_s"] for r in res}) > 1


def test_a_refused_point_is_a_result_not_an_exception(write_sweep):
    sw = load_sweep(write_sweep("base: base.yaml\ngrid: {jobs.0.ranks: [99]}\n"))
    p = sw.points[0]
    r = run_point(sw.base_raw, p.overrides, p.seed, sw.base_file)
    assert r["status"] == "failed" and r["makespan_s"] is None
    assert "99 ranks do not fit on 16 hosts" in r["error"]


HYBRID = """\
name: hy
topology: {kind: hybrid, racks: 2, servers_per_rack: 1, server_bandwidth: 10Gbps, tor_uplinks: 1,
           core_bandwidth: 1Gbps, circuit_switches: 1, circuit_ports: 2, circuit_uplinks: 1,
           circuit_bandwidth: 10Gbps, switching_time: 1ms, link_latency: 1us}
routing: {engine: minhop}
jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1MB}]}]
controller: {hybrid: {periodic: {period: 1ms}}}
driver: {delay: {rule_time: 1ms}}
"""


def test_schema_keys_of_controller_and_driver_left_at_their_defaults_can_be_swept(write_sweep, tmp_path):
    (tmp_path / "hy.yaml").write_text(HYBRID)
    sw = load_sweep(write_sweep("""
        base: hy.yaml
        grid:
          controller.hybrid.method: [make-before-break, break-before-make]
          controller.hybrid.periodic.hold: [1]
          driver.delay.circuit_command: [1ms]
    """))
    sc = yaml.safe_load(point_scenario_text(sw.base_raw, sw.points[1].overrides, sw.points[1].seed))
    assert sc["controller"]["hybrid"] == {"periodic": {"period": "1ms", "hold": 1}, "method": "break-before-make"}
    assert sc["driver"]["delay"] == {"rule_time": "1ms", "circuit_command": "1ms"}
    with pytest.raises(NetsteerError, match="no key 'methd' under controller.hybrid"):
        load_sweep(write_sweep("base: hy.yaml\ngrid: {controller.hybrid.methd: [break-before-make]}\n"))
    with pytest.raises(NetsteerError, match="no key 'period' under driver.delay"):
        load_sweep(write_sweep("base: hy.yaml\ngrid: {driver.delay.period: [1ms]}\n"))


@pytest.mark.parametrize("text, field, reason", [
    ("base: base.yaml\ngrid: {routing.engin: [dmodk]}\n", "grid.routing.engin", "no key 'engin' under routing"),
    ("base: base.yaml\ngrid: {}\n", "grid", "the grid is empty"),
    ("base: base.yaml\ngrid: {jobs.2.ranks: [4]}\n", "grid.jobs.2.ranks", "there is no index 2"),
    ("base: base.yaml\ngrid: {topology.dwn: [[4, 4]]}\n", "grid.topology.dwn", "no key 'dwn' under topology"),
    ("base: base.yaml\ngrid: {routing.engine: []}\n", "grid.routing.engine", "list of values is empty"),
    ("base: base.yaml\n", "grid", "needs a grid, a list of points, or both"),
    ("base: missing.yaml\ngrid: {routing.engine: [dmodk]}\n", "base", "no scenario file"),
    ("base: base.yaml\ngrids: {routing.engine: [dmodk]}\n", "grids", "unknown key 'grids'"),
    ("base: base.yaml\ngrid: {jobs.0.seed: [1]}\nrepeat_seeds: [1]\n", "grid.jobs.0.seed", "repeat_seeds sets every seed"),
    ("base: base.yaml\npoints: [{jobs.0.ranks: 4}, {jobs.0.ranks: 4}]\n", "points.1", "already in the sweep"),
    ("base: base.yaml\ngrid: {routing.engine: [dmodk]}\nrepeat_seeds: [1, one]\n", "repeat_seeds.1", "a seed is an integer"),
])
def test_bad_sweep_files_name_field_and_reason(write_sweep, text, field, reason):
    path = write_sweep(text)
    with pytest.raises(NetsteerError) as e:
        load_sweep(path)
    assert e.value.field == field and reason in e.value.reason and e.value.file == str(path)


def test_bad_sweep_file_is_one_line_exit_2_before_any_cluster(write_sweep, tmp_path):
    path = write_sweep("base: base.yaml\ngrid: {routing.engin: [dmodk, minhop]}\n")
    out = tmp_path / "out"
    rc, stdout, err = netsteer("sweep", path, "--out", out, "--workers", "1")
    assert rc == 2
    assert err.strip().splitlines() == [f"netsteer: error: {path}: grid.routing.engin: the scenario has no key "
                                        "'engin' under routing (keys: engine)"]
    assert "Traceback" not in err and not out.exists()  # refused before anything ran or was written


def test_check_counts_points_and_runs_nothing(write_sweep, tmp_path):
    path = write_sweep("base: base.yaml\ngrid: {routing.engine: [dmodk, minhop], jobs.0.ranks: [4, 8]}\n"
                       "repeat_seeds: [1, 2, 3]\n")
    out = tmp_path / "out"
    rc, stdout, err = netsteer("sweep", path, "--check", "--json", "--out", out)
    assert rc == 0, err
    info = json.loads(stdout)
    assert (info["points"], info["recorded"], info["to_run"]) == (12, 0, 12)
    assert info["params"] == ["routing.engine", "jobs.0.ranks", "seed"]
    assert not out.exists()


def test_check_validates_every_points_scenario_and_names_where_a_bad_value_is(write_sweep, tmp_path):
    path = write_sweep("base: base.yaml\ngrid: {routing.engine: [dmodk, minhop], jobs.0.ranks: [4, -8]}\n"
                       "points:\n  - {routing.engine: dmodkk}\n")
    rc, stdout, err = netsteer("sweep", path, "--check", "--out", tmp_path / "out")
    assert rc == 2 and "Traceback" not in err
    assert err.startswith(f"netsteer: error: {path}: grid.jobs.0.ranks: 3 of 5 points are refused by the scenario; "
                          'the first, {"jobs.0.ranks":-8,"routing.engine":"dmodk"}: ')
    assert "jobs.0.ranks: must be > 0, got -8" in err
    only_listed = write_sweep("base: base.yaml\ngrid: {jobs.0.ranks: [4, 8]}\npoints:\n  - {routing.engine: dmodkk}\n")
    rc, _, err = netsteer("sweep", only_listed, "--check", "--out", tmp_path / "out")
    assert rc == 2 and ": points.0.routing.engine: 1 of 3 points" in err
    assert "unknown routing engine 'dmodkk'; known engines: dmodk," in err


def test_check_past_its_limit_still_validates_every_value(write_sweep):
    from netsteer.sweep.check import refused_points

    sw = load_sweep(write_sweep("base: base.yaml\ngrid: {jobs.0.ranks: [4, 8, 16, -1], jobs.0.repeat: [1, 2, 3, 4, 5]}\n"
                                "repeat_seeds: [1, 2]\n"))
    r = refused_points(sw, limit=6)
    # a sample: past the limit only to hold each of the 11 values (4 ranks, 5 repeats, 2 seeds)
    assert 6 <= r["checked"] <= 11 and r["refused"] >= 1
    assert {json.loads(e["point"])["jobs.0.ranks"] for e in r["examples"]} == {-1}
    assert refused_points(sw)["refused"] == 10  # all 40: -1 with each repeat and seed


def test_seeds_go_to_mpi_jobs_only_so_a_base_with_a_flow_job_runs(write_sweep, tmp_path):
    # the scenario refuses a seed on a job without a program (it draws nothing); a
    # sweep with repeat_seeds over a base with background flows must not add one
    base = yaml.safe_load((tmp_path / "base.yaml").read_text())
    base["jobs"].append({"name": "bg", "flows": [{"src": 0, "dst": 1, "bytes": "1MiB"}]})
    (tmp_path / "base-bg.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
    sw = load_sweep(write_sweep("base: base-bg.yaml\npoints: [{}]\nrepeat_seeds: [1, 2]\n"))
    for p in sw.points:
        sc = yaml.safe_load(point_scenario_text(sw.base_raw, p.overrides, p.seed))
        assert sc["jobs"][0]["seed"] == p.seed and "seed" not in sc["jobs"][-1]
        r = run_point(sw.base_raw, p.overrides, p.seed, sw.base_file)
        assert r["status"] == "done", r


@pytest.mark.parametrize("grid, field, reason", [
    ("topology.link_bandwidth: [10Gbps, 10Gbs]", "grid.topology.link_bandwidth", "unknown bandwidth unit 'Gbs'"),
    ("topology.link_latency: [1us, 500ps]", "grid.topology.link_latency", "not a whole number of nanoseconds"),
    ("topology.levels: [3]", "grid.topology.levels", "down has 2 entries but levels is 3"),
    ("jobs.0.program.0.algorithm: [ring, ringg]", "grid.jobs.0.program.0.algorithm", "unknown algorithm 'ringg'"),
    ("jobs.0.ranks: [16, 17]", "grid.jobs.0.ranks", "17 ranks do not fit on 16 hosts"),
    ("routing.partitions: [p.conf]", "grid.routing.partitions", "takes no parameters, not 'partitions'"),
])
def test_check_refuses_what_netsteer_run_refuses_before_simulating(write_sweep, tmp_path, grid, field, reason):
    # each point is what `netsteer run` refuses as bad input: the check must too
    (tmp_path / "p.conf").write_text("Default=0x7fff, ipoib : ALL=full ;\n")
    path = write_sweep(f"base: base.yaml\ngrid: {{{grid}}}\n")
    rc, _, err = netsteer("sweep", path, "--check", "--out", tmp_path / "out")
    assert rc == 2 and "Traceback" not in err, err
    assert err.startswith(f"netsteer: error: {path}: {field}: "), err
    assert reason in err
    # and the same point run alone is refused with the same reason
    from netsteer.sweep.point import point_scenario_text

    sw = load_sweep(path)
    bad = next(p for p in sw.points if reason in (run_point(sw.base_raw, p.overrides, p.seed, sw.base_file)["error"] or ""))
    assert bad is not None and point_scenario_text(sw.base_raw, bad.overrides, bad.seed)


def test_check_says_how_many_points_it_built(write_sweep, tmp_path):
    path = write_sweep("base: base.yaml\ngrid: {routing.engine: [dmodk, minhop], jobs.0.ranks: [4, 8]}\n")
    rc, stdout, err = netsteer("sweep", path, "--check", "--json", "--out", tmp_path / "out")
    assert rc == 0, err
    info = json.loads(stdout)
    assert info["checked"] == info["built"] == 4 and info["refused"] == 0


def test_a_packet_key_is_swept_on_a_base_without_a_packet_section(write_sweep, tmp_path):
    # the schema knows packet.mtu; the base leaves the section out: each point creates it
    base = yaml.safe_load((tmp_path / "base.yaml").read_text())
    base["fidelity"] = "packet"
    base["jobs"][0]["repeat"] = 1
    base["jobs"][0]["ranks"] = 4
    (tmp_path / "base-pk.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
    sw = load_sweep(write_sweep("base: base-pk.yaml\ngrid: {packet.mtu: [1KiB, 4KiB]}\n"))
    texts = [yaml.safe_load(point_scenario_text(sw.base_raw, p.overrides, p.seed)) for p in sw.points]
    assert [t["packet"] for t in texts] == [{"mtu": "1KiB"}, {"mtu": "4KiB"}]
    runs = [run_point(sw.base_raw, p.overrides, p.seed, sw.base_file) for p in sw.points]
    assert [r["status"] for r in runs] == ["done", "done"], runs
    # smaller packets carry more headers: the same allreduce takes longer
    assert runs[0]["makespan_s"] > runs[1]["makespan_s"]
    with pytest.raises(NetsteerError, match=r"grid\.packet\.mtuu: packet has no key 'mtuu' .*did you mean 'mtu'"):
        load_sweep(write_sweep("base: base-pk.yaml\ngrid: {packet.mtuu: [1KiB]}\n", name="bad.yaml"))


@pytest.mark.parametrize("text", [
    "base: base.yaml\ngrid: {jobs.0.ranks: [4]}\nrepeat_seeds: [-1, 2]\n",
    "base: base.yaml\npoints:\n  - {jobs.0.ranks: 4}\nrepeat_seeds: [-5]\n",
])
def test_a_bad_seed_is_blamed_on_repeat_seeds(write_sweep, tmp_path, text):
    path = write_sweep(text)
    rc, _, err = netsteer("sweep", path, "--check", "--out", tmp_path / "out")
    assert rc == 2 and "Traceback" not in err
    assert err.startswith(f"netsteer: error: {path}: repeat_seeds.0: a seed is an integer >= 0"), err


def test_check_blames_a_seed_the_scenario_refuses_on_repeat_seeds(write_sweep):
    """A seed the scenario refuses (whatever its rule) is repeat_seeds', not a path's of the point."""
    import dataclasses

    from netsteer.sweep.check import refused_points

    sw = load_sweep(write_sweep("base: base.yaml\ngrid: {jobs.0.ranks: [4, 8]}\nrepeat_seeds: [1, 2]\n"))
    sw.points = [p if p.seed == 1 else dataclasses.replace(p, seed=-2) for p in sw.points]
    r = refused_points(sw)
    assert r["refused"] == 2
    assert {e["field"] for e in r["examples"]} == {"repeat_seeds.1"}


@pytest.mark.parametrize("values", ["[1MiB, 1048576, 1024KiB]", "[10Gbps, 10000Mbps]", "[1ms, 1000us]"])
def test_a_value_written_twice_differently_is_refused(write_sweep, values):
    path = write_sweep(f"base: base.yaml\ngrid: {{jobs.0.program.0.bytes: {values}}}\n")
    with pytest.raises(NetsteerError) as exc:
        load_sweep(path)
    assert exc.value.field == "grid.jobs.0.program.0.bytes"
    assert exc.value.reason.startswith("a value is listed twice (")


def test_distinct_values_and_booleans_are_not_repeats(write_sweep):
    path = write_sweep("base: base.yaml\ngrid: {jobs.0.program.0.bytes: [1MiB, 1MB, 1048577]}\n")
    assert len(load_sweep(path).points) == 3


def test_a_scenario_given_as_sweep_file_is_called_a_scenario(base, tmp_path):
    out = tmp_path / "out"
    rc, stdout, err = netsteer("sweep", base, "--out", out, "--workers", "1")
    assert rc == 2
    assert err.strip().splitlines() == [f"netsteer: error: {base}: this is a scenario, not a sweep file (a sweep file "
                                        "has base: and grid:/points:; see docs/sweeps.md)"]
    assert not out.exists()
