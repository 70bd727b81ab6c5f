"""A circuit's cable fails and comes back on the real testbed: the openflow driver
sees it in the switches' port states, the hybrid controller's rescue moves the pairs
back to the electrical network, and traffic keeps flowing.

Marked ``ovs``: in CI these run (scripts/setup.sh installs Open vSwitch and iperf3).
One emulation (module fixture) serves both tests: the cable at the circuit switch's
end goes down at 1.5 s (``ip link set ... down`` on the bridge's veth) and up at 3.5 s,
once through each channel (the os-ken app's port descriptions, ``ovs-ofctl dump-ports-desc``).
"""

from __future__ import annotations

import os
import shutil

import pytest

pytestmark = pytest.mark.ovs

if os.geteuid() != 0 or shutil.which("ovs-vsctl") is None or shutil.which("iperf3") is None:
    pytest.skip("needs root, Open vSwitch and iperf3 (scripts/setup.sh)", allow_module_level=True)

from netsteer.drivers.openflow.flows import HybridLayout  # noqa: E402
from netsteer.emulate.hybrid_reconfig import scenario  # noqa: E402
from netsteer.emulate.run import emulate  # noqa: E402
from netsteer.emulate.testbed import leftovers  # noqa: E402

DOWN_S, UP_S, DURATION_S = 1.5, 3.5, 5.5


def built():
    from netsteer.scenario import Scenario, ScenarioModel, build_scenario

    data = scenario(0, "make_before_break", period_s=1.0, duration_s=DURATION_S, rate_div=100)
    data["controller"]["hybrid"]["schedule"] = []  # the initial circuit carries the stream throughout
    return build_scenario(Scenario(ScenarioModel.model_validate(data), None))


@pytest.fixture(scope="module", params=["osken", "ofctl"])
def failed_run(request):
    b = built()
    lay = HybridLayout.of(b.topology, b.routing)
    (circuit,) = b.hybrid.config.circuits  # rack 0 - rack 1 on circuit switch plane circuit.ocs
    tor = lay.tors[circuit.a]
    cable = int(b.topology.out_channel[tor, int(lay.tor_port_of[circuit.a, circuit.ocs])]) // 2
    ocs = lay.ocs[circuit.ocs]
    core_bps = float(scenario(0, "make_before_break", period_s=1.0, duration_s=DURATION_S, rate_div=100)
                     ["topology"]["core_bandwidth"].removesuffix("Mbps")) * 1e6
    rep = emulate(b, udp_bps=0.5 * core_bps, channel=request.param,  # half the electrical rate: the detour carries all of it
                  actions=[(DOWN_S, lambda tb: tb.set_link(cable, False, ocs)),
                           (UP_S, lambda tb: tb.set_link(cable, True, ocs))])
    assert not leftovers(rep["testbed"])
    return rep, cable, b


def _received_after(flow: dict, t_s: float) -> float:
    """Gbit/s the receiver counted, averaged over its 0.1 s intervals that start after ``t_s``."""
    rates = [g for end, g in zip(flow["time_s"], flow["series_gbps"]) if end - 0.1 >= t_s]
    return sum(rates) / len(rates) if rates else 0.0


def test_a_failed_circuit_cable_is_reported_rescued_and_traffic_keeps_flowing(failed_run):
    rep, cable, b = failed_run
    down_at = rep["actions"][0]["ran_s"]
    # the driver saw the cable fail, from the port state, within a poll or two
    (seen,) = [c for c in rep["link_changes"] if not c["up"]]
    assert seen["link_ids"] == [cable] and 0 <= seen["at_s"] - down_at < 1.0, (seen, down_at)
    # the rescue: a make-before-break reconfiguration off the dead circuit, done
    (rescue,) = [r for r in rep["controller"]["reconfigurations"] if r["trigger"] == "link failure"]
    assert rescue["status"] == "done" and rescue["method"] == "make-before-break"
    assert rescue["circuits_before"] and rescue["circuits_after"] == []
    step1 = rescue["steps"][0]
    assert step1["step"] == 1 and seen["at_s"] - 1e-6 <= step1["start_s"] and step1["end_s"] - down_at < 1.5
    # traffic kept flowing: the stream's bytes arrived after the rescue, over the
    # electrical network, at about its rate (half the electrical link)
    f = rep["flows"][0]
    sent = f["series_gbps"][: max(1, int(DOWN_S / 0.1) - 2)]
    assert _received_after(f, step1["end_s"] + 0.3) > 0.5 * (sum(sent) / len(sent)), f["series_gbps"]
    assert f["received_bytes"] > 0
    print(f"\n[link failure, {rep['channel']}] ip link down at {down_at:.3f} s; reported at {seen['at_s']:.3f} s "
          f"(+{(seen['at_s'] - down_at) * 1e3:.0f} ms); rescue step 1 in force at {step1['end_s']:.3f} s "
          f"(+{(step1['end_s'] - down_at) * 1e3:.0f} ms); rescue done at {rescue['end_s']:.3f} s; "
          f"lost {f['lost_packets']} of {f['packets']} packets")


def test_a_repaired_circuit_cable_is_reported_up(failed_run):
    rep, cable, b = failed_run
    up_at = rep["actions"][1]["ran_s"]
    (back,) = [c for c in rep["link_changes"] if c["up"]]
    assert back["link_ids"] == [cable] and 0 <= back["at_s"] - up_at < 1.0, (back, up_at)
    assert rep["actions"][1]["result"] == rep["actions"][0]["result"]  # the same veth, down then up
    # the controller makes the circuit the rescue took out again, on the repaired cable
    (rescue,) = [r for r in rep["controller"]["reconfigurations"] if r["trigger"] == "link failure"]
    (again,) = [r for r in rep["controller"]["reconfigurations"] if r["trigger"] == "link repaired"]
    assert again["status"] == "done" and again["start_s"] >= back["at_s"] - 1e-6
    assert again["circuits_after"] == rescue["circuits_before"]
    print(f"\n[link repair, {rep['channel']}] ip link up at {up_at:.3f} s; reported at {back['at_s']:.3f} s "
          f"(+{(back['at_s'] - up_at) * 1e3:.0f} ms); reconfigurations: "
          + "; ".join(f"{r['trigger']} {r['status']} {r['start_s']:.2f}-{r['end_s']}" for r in
                      rep["controller"]["reconfigurations"]))


def test_a_scenarios_link_events_are_played_on_the_testbed_as_in_the_simulation():
    """The same cable's failure and repair given as the scenario's ``events``
    (``link_down``/``link_up`` by switch and port): the testbed pulls and plugs it at
    those times, the driver sees it, and the controller rescues and restores the circuit
    as the simulated prediction of the same scenario does."""
    from netsteer.scenario import Scenario, ScenarioModel, build_scenario

    b0 = built()
    lay = HybridLayout.of(b0.topology, b0.routing)
    (circuit,) = b0.hybrid.config.circuits
    tor = lay.tors[circuit.a]
    port = int(lay.tor_port_of[circuit.a, circuit.ocs])
    cable = int(b0.topology.out_channel[tor, port]) // 2
    data = scenario(0, "make_before_break", period_s=1.0, duration_s=DURATION_S, rate_div=100)
    data["controller"]["hybrid"]["schedule"] = []
    ref = {"node": b0.topology.node_names[tor], "port": port}
    data["events"] = [{"at": f"{DOWN_S}s", "link_down": [ref]}, {"at": f"{UP_S}s", "link_up": [ref]}]
    b = build_scenario(Scenario(ScenarioModel.model_validate(data), None))
    core_bps = float(data["topology"]["core_bandwidth"].removesuffix("Mbps")) * 1e6
    rep = emulate(b, udp_bps=0.5 * core_bps)
    assert not leftovers(rep["testbed"])
    down, up = rep["actions"]
    assert down["at_s"] == DOWN_S and up["at_s"] == UP_S and down["result"] == up["result"]
    seen = [(c["up"], c["link_ids"]) for c in rep["link_changes"]]
    assert seen == [(False, [cable]), (True, [cable])], rep["link_changes"]
    triggers = [r["trigger"] for r in rep["controller"]["reconfigurations"] if r["status"] == "done"]
    simulated = [r["trigger"] for r in rep["simulated"]["reconfigurations"]]
    assert triggers == ["link failure", "link repaired"] and simulated == triggers, (triggers, simulated)
