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
