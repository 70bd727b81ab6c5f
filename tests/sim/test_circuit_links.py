"""A link's two states in the simulator driver: failed (a user's link_down, until a
link_up) and dark (a circuit switch moving its port, until the command that moved it
last lights it). It carries traffic only if neither holds, at flow and packet level."""

from __future__ import annotations

import pytest

from netsteer.scenario import Scenario, ScenarioModel, build_scenario
from netsteer.sim.run import run_scenario

# 4 racks; flows rack 0 -> rack 2 (10 Gbit/s electrical, 40 Gbit/s once ocs0 pairs ports 1 and 3)
BASE = {
    "name": "circuit-links",
    "topology": {"kind": "hybrid", "racks": 4, "servers_per_rack": 4, "server_bandwidth": "10Gbps",
                 "tor_uplinks": 1, "core_bandwidth": "10Gbps", "circuit_ports": 4, "circuit_uplinks": 1,
                 "circuit_bandwidth": "40Gbps", "switching_time": "25ms", "link_latency": "1us"},
    "routing": {"engine": "minhop"},
    "jobs": [{"name": "r02", "flows": [{"src": 0, "dst": 8, "bytes": "64MiB"},
                                       {"src": 1, "dst": 9, "bytes": "64MiB"}]}],
}
PAIR = {"at": "10ms", "circuit": {"switch": "ocs0", "pairs": [[1, 3]]}}
DOWN = {"node": "ocs0", "port": 1}


def run(events, fidelity=None):
    built = build_scenario(Scenario(ScenarioModel.model_validate({**BASE, "events": events}), "t.yaml"),
                           fidelity=fidelity)
    return run_scenario(built, sample=False)


@pytest.fixture(scope="module", params=["flow", "packet"])
def ref(request):
    """(fidelity, makespan with the circuit alone, makespan with no circuit ever)."""
    f = request.param
    return f, run([PAIR], f).makespan_ns, run([], f).makespan_ns


@pytest.mark.parametrize("at", ["5ms", "15ms"])  # before the command, and in its dark period
def test_a_failed_link_stays_down_when_its_circuit_switch_re_pairs_the_port(ref, at):
    fidelity, with_circuit, electrical = ref
    events = sorted([PAIR, {"at": at, "link_down": [DOWN]}], key=lambda e: int(e["at"][:-2]))
    res = run(events, fidelity)
    assert res.status == "done"
    # no traffic crosses the dead cable: both flows share the electrical uplink as with no circuit
    assert res.makespan_ns == electrical > with_circuit
    # a link_up afterwards brings it back: the circuit lights (its switching is long over)
    res = run(events + [{"at": "60ms", "link_up": [DOWN]}], fidelity)
    assert with_circuit < res.makespan_ns < electrical


def test_a_link_up_during_the_dark_period_does_not_light_the_circuit_early(ref):
    fidelity, with_circuit, _ = ref
    up = {"at": "15ms", "link_up": [DOWN, {"node": "ocs0", "port": 3}]}
    assert run([PAIR, up], fidelity).makespan_ns == with_circuit


def test_a_re_pairing_during_another_s_dark_period_lights_at_its_own_time(ref):
    fidelity, _, _ = ref
    first = {"at": "10ms", "circuit": {"switch": "ocs0", "pairs": [[1, 2], [3, 4]]}}
    second = {"at": "20ms", "circuit": {"switch": "ocs0", "pairs": [[1, 3], [2, 4]]}}
    alone = run([second], fidelity)
    res = run([first, second], fidelity)
    assert res.makespan_ns == alone.makespan_ns
    e0, e1 = [e for e in res.applied_events if e["intent"] == "circuits"]
    # the first never took effect: its record says so, and when it was superseded
    assert e0["done_s"] == pytest.approx(0.020) and e0["superseded"].startswith("never in effect")
    assert e1["done_s"] == pytest.approx(0.045) and "superseded" not in e1


def test_a_re_pairing_that_moves_some_of_the_ports_again_lets_the_rest_light():
    first = {"at": "10ms", "circuit": {"switch": "ocs0", "pairs": [[1, 3]]}}
    other = {"at": "20ms", "circuit": {"switch": "ocs0", "pairs": [[1, 3], [2, 4]]}}
    res = run([first, other])
    e0 = res.applied_events[0]
    # the later command moves ports 2 and 4 only: the first lights 1-3 on its own timer
    assert e0["done_s"] == pytest.approx(0.035) and "superseded" not in e0
    assert res.makespan_ns == run([first]).makespan_ns
    first = {"at": "10ms", "circuit": {"switch": "ocs0", "pairs": [[1, 3], [2, 4]]}}
    res = run([first, {"at": "20ms", "circuit": {"switch": "ocs0", "pairs": [[1, 3]]}}])
    e0 = res.applied_events[0]
    # 2 and 4 move again (unpaired), 1-3 is still the first's: lit on its timer
    assert e0["done_s"] == pytest.approx(0.035) and e0["superseded"].startswith("partly")
    assert res.makespan_ns == run([PAIR]).makespan_ns
