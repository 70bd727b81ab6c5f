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
