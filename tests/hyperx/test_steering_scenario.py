"""`controller.steering` in a scenario: the controller steers for the scenario's own traffic."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from netsteer.errors import NetsteerError
from netsteer.scenario import Scenario, ScenarioModel, build_scenario
from netsteer.sim.run import run_scenario

ROOT = Path(__file__).resolve().parents[2]


def _run(data):
    built = build_scenario(Scenario(ScenarioModel.model_validate(data), None))
    return built, run_scenario(built, sample=False)


def test_the_controller_steers_as_well_as_the_scripted_pairing_and_beats_none():
    data = yaml.safe_load((ROOT / "scenarios/hyperx-steering-controller.yaml").read_text())
    for j in data["jobs"]:
        j["repeat"] = 1
    _, steered = _run(data)
    plain = copy.deepcopy(data)
    del plain["controller"]
    _, unsteered = _run(plain)
    scripted = yaml.safe_load((ROOT / "scenarios/hyperx-steering.yaml").read_text())
    for j in scripted["jobs"]:
        j["repeat"] = 1
    _, by_hand = _run(scripted)
    assert steered.status == "done"
    moves = [e for e in steered.applied_events if e.get("pairs")]
    assert len(moves) == 1 and moves[0]["at_s"] == 0  # one re-pairing, at the step's time
    assert steered.makespan_ns < unsteered.makespan_ns
    assert steered.makespan_ns <= by_hand.makespan_ns


def test_a_plan_reports_the_busiest_channel_in_seconds():
    # two 100 MB flows from x0_0 to x0_2 share one 10 Gbit/s channel: 0.16 s busy;
    # steered, a circuit splits them over two paths: 0.08 s each
    data = {
        "name": "busy",
        "topology": {"kind": "hyperx", "S": [2, 3], "T": 2, "link_bandwidth": "10Gbps", "link_latency": "1us",
                     "circuits": [{"dim": 0, "switching_time": "10us"}]},
        "routing": {"engine": "dor"},
        "jobs": [{"name": "a", "flows": [{"src": 0, "dst": 8, "bytes": "100MB"},
                                         {"src": 1, "dst": 9, "bytes": "100MB"}]}],
        "controller": {"steering": {"at": ["0s"]}},
    }
    _, res = _run(data)
    (plan,) = res.controller["steering"]["plans"]
    assert plan["before"]["max_channel_busy_s"] == pytest.approx(0.16)
    assert plan["after"]["max_channel_busy_s"] == pytest.approx(0.08)
    assert plan["after"]["total_channel_busy_s"] >= plan["after"]["max_channel_busy_s"]


def test_steering_needs_circuit_switches_and_known_jobs(tmp_path):
    base = yaml.safe_load((ROOT / "scenarios/hyperx-steering-controller.yaml").read_text())
    no_sip = copy.deepcopy(base)
    del no_sip["topology"]["circuits"]
    with pytest.raises(NetsteerError, match="circuit switches") as e:
        _run(no_sip)
    assert e.value.field == "controller.steering"
    bad_job = copy.deepcopy(base)
    bad_job["controller"]["steering"]["jobs"] = ["nosuch"]
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(bad_job))
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert str(f) in p.stderr and "controller.steering.jobs" in p.stderr and "nosuch" in p.stderr


def test_exhaustive_steering_of_too_many_configurations_names_file_and_field(tmp_path):
    # it was refused only when the controller first planned, as "method: ..." without
    # the file, and not at all when that time came after the run's end
    data = yaml.safe_load((ROOT / "scenarios/hyperx-steering-controller.yaml").read_text())
    data["topology"]["S"] = [4, 4]
    data["jobs"][0]["placement"] = "linear"
    data["controller"]["steering"] = {"at": ["1000s"], "method": "exhaustive", "max_configs": 100}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(data))
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line, = p.stderr.strip().splitlines()
    assert f"{f}: controller.steering.method: " in line and "max_configs=100" in line


def _busy_under(topo, engine, dag, pairing):
    """The busiest inter-switch channel's busy time (s) of every DAG flow's bytes, the
    flows routed as the run routes them: ``engine``'s tables over ``pairing``."""
    import numpy as np

    from netsteer.routing import build_routing
    from netsteer.sim.driver import dag_paths
    from netsteer.topology.model import HOST

    routing = build_routing(topo, engine, circuits=pairing)
    flows = np.arange(len(dag))
    off, ch = dag_paths(topo, routing, dag, flows, circuits=pairing)
    nbytes = np.repeat(dag.columns().bytes.astype(np.float64), np.diff(off))
    load = np.bincount(ch, weights=nbytes, minlength=topo.n_channels)
    kind = topo.node_kind
    src, dst = topo.channel_src(), topo.channel_dst()
    inter = (kind[src] != HOST) & (kind[dst] != HOST)  # the score leaves host links out
    return float((load * 8 / topo.channel_bandwidth())[inter].max())


@pytest.mark.parametrize("engine", ["ecmp", "minhop", "dor"])
def test_the_plan_is_scored_with_the_routing_the_run_uses(engine):
    # the plan was scored with dor whatever the scenario routed with: under ecmp it
    # claimed 122.4 -> 61.2 ms for the busiest channel while the run kept ecmp's paths
    data = yaml.safe_load((ROOT / "scenarios/hyperx-steering-controller.yaml").read_text())
    data["routing"] = {"engine": engine}
    for j in data["jobs"]:
        j["repeat"] = 1
    built, res = _run(data)
    (plan,) = res.controller["steering"]["plans"]
    assert plan["routing"] == engine
    topo = built.topology
    sip = topo.node("sip")
    before = {sip: topo.meta["initial_circuits"][sip]}
    moves = [e for e in res.applied_events if e.get("pairs")]
    after = dict(before)
    if moves:
        arr = np.full(topo.out_channel.shape[1], -1)
        for p, q in moves[-1]["pairs"]:
            arr[p], arr[q] = q, p
        after = {sip: arr}
    assert plan["before"]["max_channel_busy_s"] == pytest.approx(_busy_under(topo, engine, built.dag, before))
    assert plan["after"]["max_channel_busy_s"] == pytest.approx(_busy_under(topo, engine, built.dag, after))


def test_a_steering_time_given_twice_is_refused_naming_the_entry(tmp_path):
    # at: [0s, 0s] was steered twice, each plan "8 ports moved" from the same pairing,
    # and two circuits intents went out at 0 s
    data = yaml.safe_load((ROOT / "scenarios/hyperx-steering-controller.yaml").read_text())
    data["controller"]["steering"]["at"] = ["0s", "0.2s", "0ms"]
    f = tmp_path / "dup.yaml"
    f.write_text(yaml.safe_dump(data))
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line, = p.stderr.strip().splitlines()
    assert f"{f}: controller.steering.at.2: " in line and "at.0" in line


def test_two_steps_at_one_instant_plan_the_second_from_the_first_ones_pairing():
    # the Python controller given two steps at one time: the second plan starts from
    # the pairing the first chose, so it moves nothing for the same demand
    from netsteer.control.core import Inputs
    from netsteer.control.driver import NetworkView
    from netsteer.control.steering import SteeringController, switch_demand
    from netsteer.topology.hyperx import CircuitSpec, hyperx

    t = hyperx([2, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=0,
               circuits=[CircuitSpec(dim=0, switching_time_ns=10_000)])
    d = switch_demand(t, [0, 2], [14, 14], [1.0, 1.0])
    c = SteeringController(t, [(0, d), (0, d)])
    out = c.decide(Inputs(0, NetworkView(0, frozenset(), dict(t.meta["initial_circuits"]))))
    first, second = c.plans
    assert first["moved_ports"] > 0 and second["moved_ports"] == 0
    assert second["before"] == first["after"]
    assert len(out) == 1


def test_the_configuration_count_is_the_same_in_the_plan_and_in_the_refusal(tmp_path):
    # the plan said "106 configurations" (the start counted again) where max_configs
    # was refused with "105 configurations are more than max_configs"
    from netsteer.control.steering import _matchings, _port_ends, configuration_count

    data = yaml.safe_load((ROOT / "scenarios/hyperx-steering-controller.yaml").read_text())
    for j in data["jobs"]:
        j["repeat"] = 1
    built, res = _run(data)
    (plan,) = res.controller["steering"]["plans"]
    topo = built.topology
    (ends,) = _port_ends(topo).values()
    listed = sum(1 for _ in _matchings(ends))  # every pairing exhaustive scores, the start among them
    assert plan["evaluated"] == listed == configuration_count(topo)
    data["controller"]["steering"].update(method="exhaustive", max_configs=listed - 1)
    f = tmp_path / "mc.yaml"
    f.write_text(yaml.safe_dump(data))
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and f"{listed} configurations are more than max_configs={listed - 1}" in p.stderr
