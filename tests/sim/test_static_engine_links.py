"""Under a static engine (dmodk, ftree, pftree) a link change re-routes nothing: the
event log used to record a routing installed for "links changed" that was the very
tables in place. It now says that the tables are static and kept."""

from __future__ import annotations

import pytest

from netsteer.scenario import build_scenario, load_scenario
from netsteer.sim import run_scenario

SCENARIO = """name: lf
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: %s}
jobs: [{name: t, flows: [{src: 0, dst: 4, bytes: 256MiB}, {src: 1, dst: 5, bytes: 256MiB}]}]
events:
  - {at: 50ms, link_down: [{node: s1_0, port: 5}]}
  - {at: 120ms, link_up: [{node: s1_0, port: 5}]}
"""


def run(tmp_path, engine):
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO % engine)
    return run_scenario(build_scenario(load_scenario(p)))


@pytest.mark.parametrize("engine", ["ftree", "pftree", "dmodk"])
def test_static_engine_keeps_its_tables_and_says_so(tmp_path, engine):
    res = run(tmp_path, engine)
    assert not [e for e in res.applied_events if e.get("intent") == "routing" and "reason" in e]
    kept = [e for e in res.applied_events if e.get("kept")]
    assert [e["at_s"] for e in kept] == [0.05, 0.12]
    assert all(f"{engine} tables are static" in e["kept"] for e in kept)


def test_minhop_still_reroutes(tmp_path):
    res = run(tmp_path, "minhop")
    assert [e["at_s"] for e in res.applied_events if e.get("reason") == "links changed"] == [0.05, 0.12]
    assert not [e for e in res.applied_events if e.get("kept")]


SWITCHED = """name: sw
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: %s}
jobs: [{name: t, flows: [{src: 0, dst: 4, bytes: 256MiB}, {src: 1, dst: 5, bytes: 256MiB}]}]
events:
  - {at: 20ms, routing: {engine: %s}}
  - {at: 30ms, link_down: [{node: s1_0, port: 5}]}
"""


def test_a_scripted_routing_change_handles_the_next_link_change(tmp_path):
    # dmodk, then minhop: minhop routes around the failure (the dmodk tables used to be kept: a stall)
    p = tmp_path / "s.yaml"
    p.write_text(SWITCHED % ("dmodk", "minhop"))
    res = run_scenario(build_scenario(load_scenario(p)))
    assert res.status == "done" and res.makespan_ns == 399_504_730
    assert [e["at_s"] for e in res.applied_events if e.get("reason") == "links changed"] == [0.03]
    assert not [e for e in res.applied_events if e.get("kept")]
    # minhop, then dmodk: the link change keeps the dmodk tables (it used to install minhop's)
    p.write_text(SWITCHED % ("minhop", "dmodk"))
    res = run_scenario(build_scenario(load_scenario(p)))
    assert not [e for e in res.applied_events if e.get("reason") == "links changed"]
    assert [e["at_s"] for e in res.applied_events if "dmodk tables are static" in e.get("kept", "")] == [0.03]


def test_the_event_log_and_the_title_name_the_engine_a_routing_change_put_in_force(tmp_path, capsys):
    # the routing event used to say only "routing (reason=scripted)", and the title the first engine
    from netsteer.cli import run_cli

    p = tmp_path / "s.yaml"
    p.write_text(SWITCHED % ("dmodk", "minhop"))
    res = run_scenario(build_scenario(load_scenario(p)))
    assert [(e.get("engine"), e["reason"]) for e in res.applied_events if e["intent"] == "routing"][:2] == [
        ("minhop", "scripted"), ("minhop", "links changed")]
    assert run_cli(["run", str(p), "--no-progress"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # (a narrow console wraps the title)
    assert "routing dmodk, then minhop at 20 ms)" in out and "routing (engine=minhop, reason=scripted)" in out
