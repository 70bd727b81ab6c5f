"""controller.unisonflow in a scenario: netsteer run routes each MPI phase by its module."""

import json

import pytest

from netsteer.cli import run_cli

SCENARIO = """
name: uf-phases
topology: {kind: pgft, levels: 2, down: [4, 3], up: [1, 2], parallel: [1, 2], link_bandwidth: 1Gbps, link_latency: 1us}
routing: {engine: ecmp}
jobs:
  - name: app
    ranks: 12
    program:
      - {op: bcast, bytes: 4000, root: 0}
      - {op: reduce, bytes: 4000, root: 0, algorithm: binomial}
    repeat: 20
  - {name: bulk, flows: [{src: 3, dst: 11, bytes: 1MB}]}
controller:
  unisonflow:
    jobs:
      app: [{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: s2_1}]
    controller_rtt: 1ms
    rule_time: 0.5ms
    %s
"""


def run(tmp_path, capsys, extra=""):
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO % extra)
    rc = run_cli(["run", str(p), "--json"])
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if rc == 0 else None), out.err


def test_run_reports_packet_ins_and_tables(tmp_path, capsys):
    rc, r, _ = run(tmp_path, capsys)
    assert rc == 0 and r["status"] == "done"
    uf = r["controller"]["unisonflow"]
    # every distinct (primitive, src, dst) of the program misses once, no more
    assert uf["packet_ins"] == uf["tables"]["installed_tags"] > 0
    assert uf["by_module"] == {"pin": uf["packet_ins"]} and uf["failures"] == 0


def test_idle_timeout_in_a_scenario_brings_misses_back(tmp_path, capsys):
    _, keep, _ = run(tmp_path, capsys)
    _, drop, _ = run(tmp_path, capsys, "idle_timeout: 10us")
    assert drop["controller"]["unisonflow"]["packet_ins"] > keep["controller"]["unisonflow"]["packet_ins"]
    assert drop["controller"]["unisonflow"]["tables"]["expired"] > 0
    assert drop["makespan_s"] > keep["makespan_s"]


@pytest.mark.parametrize("extra, words", [
    ("default: nothing", "controller.unisonflow.default: unknown module 'nothing'"),
    ("idle_timeout: 0s", "controller.unisonflow.idle_timeout: must be more than 0"),
    ("table_capacity: 0", "controller.unisonflow.table_capacity"),
    ("module_files: [missing.py]", "module file does not exist"),
    ("jobs: {bulk: []}", "job 'bulk' runs no MPI program"),
    # the example is unisonflow's {job: [modules]} map, not the scenario's list of jobs
    ("jobs: app", "controller.unisonflow.jobs: jobs must be a mapping such as "
                  "{app: [{module: pin, primitive: bcast, via: s2_0}]}, got 'app'"),
])
def test_bad_sections_are_one_line_exit_2(tmp_path, capsys, extra, words):
    text = SCENARIO % extra
    if extra.startswith("jobs:"):
        text = text.replace("    jobs:\n      app: [{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: s2_1}]\n", "")
    p = tmp_path / "s.yaml"
    p.write_text(text)
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


@pytest.mark.parametrize("app, extra, words", [
    # the file's path: a job's modules are its list (jobs.app.1), there is no 'modules' key
    ("[{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: nosuch}]", "",
     "controller.unisonflow.jobs.app.1.via: switch 'nosuch'"),
    ("[{module: pin, primitive: bcast, via: s2_0, bogus: 1}]", "",
     "controller.unisonflow.jobs.app.0.bogus: module pin takes no option 'bogus'"),
    ("[{module: ecmp, primitive: bcast, via: s2_0}]", "",
     "controller.unisonflow.jobs.app.0.via: module ecmp takes no option 'via'"),
    ("[{modul: pin, primitive: bcast}]", "", "controller.unisonflow.jobs.app.0.module: no module given"),
    ("[{module: ecmp, primitive: bcast}]", "default: pin", "controller.unisonflow.default: default module pin:"),
])
def test_bad_module_entries_name_the_fields_of_the_file(tmp_path, capsys, app, extra, words):
    text = (SCENARIO % extra).replace(
        "[{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: s2_1}]", app)
    p = tmp_path / "s.yaml"
    p.write_text(text)
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_pin_through_a_switch_off_the_path_is_a_reported_failure(tmp_path, capsys):
    """pin via a leaf (s1_1): a bcast edge between two other leaves has no min-hop path
    through it. It used to take any path and count as pinned (0 failures); now the
    module fails for that tag, the default module routes it, and the report says so."""
    text = (SCENARIO % "").replace(
        "[{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: s2_1}]",
        "[{module: pin, primitive: bcast, via: s1_1}]")
    p = tmp_path / "s.yaml"
    p.write_text(text)
    assert run_cli(["run", str(p), "--json"]) == 0
    uf = json.loads(capsys.readouterr().out)["controller"]["unisonflow"]
    assert uf["failures"] > 0 and uf["failures"] == len(uf["failed"])
    assert all("crosses via s1_1" in f["reason"] for f in uf["failed"])
    assert sum(uf["by_module"].values()) == uf["packet_ins"]
    # with on_failure: fail the run stops on the first such tag, exit 2
    p.write_text(text.replace("    controller_rtt: 1ms", "    on_failure: fail\n    controller_rtt: 1ms"))
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert "crosses via s1_1" in err and err.count("\n") == 1


def test_on_failure_fail_names_the_file_and_the_module_entry_as_written(tmp_path, capsys):
    """A module failing at run time under on_failure: fail used to print
    'jobs.0.modules: ...' (no file; a field the file does not have). It names the
    file and the job's module entry as the file writes it: jobs.app.1 here."""
    text = (SCENARIO % "on_failure: fail").replace(
        "[{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: s2_1}]",
        "[{module: pin, primitive: reduce, via: s2_1}, {module: pin, primitive: bcast, via: s1_1}]")
    p = tmp_path / "s.yaml"
    p.write_text(text)
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{p}: controller.unisonflow.jobs.app.1: module pin failed for " in err, err
    assert "crosses via s1_1" in err


def test_rule_time_defaults_to_the_documented_1ms_and_says_so(tmp_path, capsys):
    """rule_time used to default silently to 0 (a missing one ran 10 ms faster than the
    documented 1 ms on the explorer's file). A missing one is 1 ms, in the settings
    and the notes; 0s is taken (free installation); negative is refused."""
    def go(line):
        p = tmp_path / "s.yaml"
        p.write_text((SCENARIO % "").replace("    rule_time: 0.5ms\n", line))
        rc = run_cli(["run", str(p), "--json"])
        out = capsys.readouterr()
        return rc, (json.loads(out.out) if rc == 0 else out.err)

    _, missing = go("")
    _, one = go("    rule_time: 1ms\n")
    _, zero = go("    rule_time: 0s\n")
    assert missing["makespan_s"] == one["makespan_s"] > zero["makespan_s"]
    s = missing["controller"]["unisonflow"]["settings"]
    assert s["rule_time_s"] == 0.001 and "rule_time" in s["defaults"]
    assert any("rule_time not given: 1 ms" in n for n in missing["notes"])
    assert "rule_time" not in one["controller"]["unisonflow"]["settings"]["defaults"]
    assert zero["controller"]["unisonflow"]["settings"]["rule_time_s"] == 0
    rc, err = go("    rule_time: -1ms\n")
    assert rc == 2 and "controller.unisonflow.rule_time:" in err and err.count("\n") == 1


def test_bcast_multicast_in_a_scenario_says_it_builds_no_tree(tmp_path, capsys):
    """A scenario has no multicast bcast: the module sees unicast messages only, routes
    each on one path (no rule with more than one output), and the run says so."""
    text = (SCENARIO % "").replace(
        "[{module: pin, primitive: bcast, via: s2_0}, {module: pin, primitive: reduce, via: s2_1}]",
        "[{module: bcast-multicast}]")
    p = tmp_path / "s.yaml"
    p.write_text(text)
    assert run_cli(["run", str(p), "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    uf = r["controller"]["unisonflow"]
    assert uf["by_module"]["bcast-multicast"] > 0
    assert any("jobs.app.0: bcast-multicast" in n and "no multicast tree" in n for n in r["notes"])
    # binomial over 12 ranks: 11 distinct (src, dst) tags, each a unicast path of 1 or 3 switches
    assert uf["by_module"]["bcast-multicast"] == 11
    assert uf["tables"]["rules_installed"] <= 3 * 11
