"""Scripted controller actions after the run's end are named in its notes, not
dropped silently (a mistyped unit gets a hint)."""

from __future__ import annotations

import pathlib

import yaml

from netsteer.report.result import result_dict
from netsteer.scenario import Scenario, ScenarioModel, build_scenario
from netsteer.sim.run import run_scenario

SCENARIOS = pathlib.Path(__file__).parents[2] / "scenarios"


def run(data):
    b = build_scenario(Scenario(ScenarioModel.model_validate(data), "t.yaml"))
    return result_dict(b, run_scenario(b, sample=False))


def test_a_qos_change_after_the_run_ended_is_named_in_its_notes():
    data = yaml.safe_load((SCENARIOS / "qos-mpi-vs-io.yaml").read_text())
    data["qos"]["changes"] = [{"at": "10s", "job": "io", "sl": 0}]  # 10 s for 10 ms: the run ends first
    out = run(data)
    assert out["makespan_s"] < 1
    (note,) = out["notes"]
    assert note.startswith("qos.changes:") and "job io" in note and "at 10 s" in note and "never happened" in note
    data["qos"]["changes"] = [{"at": "20ms", "job": "io", "sl": 0}]  # the scenario's own: played
    assert "notes" not in run(data)


def _events_scenario(events):
    return {"name": "ev", "routing": {"engine": "minhop"},
            "topology": {"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "10Gbps",
                         "link_latency": "1us"},
            "jobs": [{"name": "t", "flows": [{"src": 0, "dst": 4, "bytes": "256MiB"}]}], "events": events}


def test_scripted_events_after_the_end_are_named_in_the_notes():
    # the run ends at 214.752365 ms: 10 s (ms typed as s) and the very end are not played
    down = [{"node": "s1_0", "port": 5}]
    out = run(_events_scenario([{"at": "1ms", "routing": {"engine": "dmodk"}}, {"at": "10s", "link_down": down},
                                {"at": "214752365ns", "link_up": down}]))
    assert out["makespan_s"] == 0.214752365 and len(out["events"]) == 1
    at_end, late = out["notes"]  # in time order
    assert late.startswith("events.1: the link_down at 10 s was not played: the run ended before, at 214.752365 ms")
    assert "right unit" in late
    assert at_end.startswith("events.2: the link_up at 214.752365 ms was not played: the run ended at that instant")
    # one ns earlier it is played, and there is nothing to say
    out = run(_events_scenario([{"at": "214752364ns", "link_down": down}]))
    assert "notes" not in out and out["events"][0]["intent"] == "links"


def test_a_link_change_that_changes_nothing_is_dropped_with_a_note():
    s5, s6 = {"node": "s1_0", "port": 5}, {"node": "s1_0", "port": 6}
    out = run(_events_scenario([{"at": "10ms", "link_up": [s5]}, {"at": "20ms", "link_down": [s5]},
                                {"at": "30ms", "link_down": [s5, s6]}, {"at": "40ms", "link_up": [s5, s6]}]))
    # only the real changes are applied and re-route (each used to log a change and re-route)
    links = [(e["at_s"], e["links"], e["up"]) for e in out["events"] if e["intent"] == "links" and "links" in e]
    assert links == [(0.02, ["s1_0:5 <-> s2_0:1"], False), (0.03, ["s1_0:6 <-> s2_1:1"], False),
                     (0.04, ["s1_0:5 <-> s2_0:1", "s1_0:6 <-> s2_1:1"], True)]
    assert len([e for e in out["events"] if e.get("reason") == "links changed"]) == 3
    up, twice = out["notes"]
    assert up.startswith("events.0: the link_up at 10 ms left link s1_0:5 <-> s2_0:1 as it was (up: no event")
    assert twice.startswith("events.2: the link_down at 30 ms left link s1_0:5 <-> s2_0:1 as it was (already down)")
    assert [e["at_s"] for e in out["events"] if "ignored" in e] == [0.01, 0.03]


HYBRID = """name: h
topology: {kind: hybrid, racks: %d, servers_per_rack: %d, server_bandwidth: 10Gbps, tor_uplinks: 1,
           core_bandwidth: %s, circuit_switches: %d, circuit_ports: %d, circuit_uplinks: 1,
           circuit_bandwidth: 10Gbps, switching_time: %s, link_latency: 1us}
routing: {engine: minhop}
"""


def test_circuits_and_reconfigurations_the_end_cut_short_are_noted():
    # a 10 s switching time in a 0.43 s run: "in effect at 10.01 s" never happened
    data = yaml.safe_load(HYBRID % (4, 4, "10Gbps", 1, 4, "10s") + """
jobs: [{name: r, flows: [{src: 0, dst: 4, bytes: 256MiB}, {src: 1, dst: 5, bytes: 256MiB}]}]
events: [{at: 10ms, circuit: {switch: ocs0, pairs: [[1, 2]]}}]
""")
    (note,) = run(data)["notes"]
    assert note.startswith("events.0: the circuit change of ocs0 at 10 ms would have taken effect at 10.01 s")
    assert note.endswith("after the run ended at 429.50073 ms: its circuits never carried traffic")
    # a hybrid reconfiguration whose VLAN tags take 100 s: still running at the end
    data = yaml.safe_load(HYBRID % (3, 2, "1Gbps", 2, 3, "25ms") + """
jobs:
  - {name: transfer, flows: [{src: 0, dst: 2, bytes: 2GiB}, {src: 1, dst: 3, bytes: 2GiB}]}
  - {name: background, bulk: [{src: 4, dst: 2, duration: 3s}, {src: 5, dst: 3, duration: 3s}]}
controller:
  hybrid: {hops: 2, initial: [[0, 0, 2], [1, 2, 1]], congestion: {poll: 100ms, utilization: 0.9, hold: 2,
           threshold: 0.1}}
driver: {delay: {rule_time: 0.1ms, vlan_tag_time: 100s, push: sequential}}
""")
    out = run(data)
    assert out["controller"]["hybrid"]["reconfigurations"][0]["status"] == "running"
    (note,) = out["notes"]
    assert note.startswith("controller.hybrid: reconfiguration 0 (congestion, started at 200 ms, to circuits "
                           "[[0, 0, 1], [1, 1, 2]]) was still running, in step 2, when the run ended at")
