"""The hybrid controller on circuit links that fail (a user's link_down) or switch
with no delay at all: what the simulator driver says is lit is what it plans on."""

from __future__ import annotations

import pytest

from netsteer.sim.run import run_scenario

from .test_hybrid_controller import build, congestion_scenario, reconfigs

FAIL_OCS0_PORT2 = {"link_down": [{"node": "ocs0", "port": 2}]}


def with_events(data: dict, *events) -> dict:
    return {**data, "events": list(events)}


def transfer_end(res) -> float:
    return max(res.completion_ns[:2]) / 1e9


def test_a_circuit_over_a_failed_port_is_not_lit_and_the_reconfiguration_rolls_back():
    # ocs0 port 2 (rack 1's plane-0 uplink) fails at 100 ms; the schedule makes [0, 0, 1] on it at 200 ms
    data = congestion_scenario(congestion=None, schedule=[{"at": "200ms", "circuits": [[0, 0, 1], [1, 2, 1]]}])
    res = run_scenario(build(with_events(data, {"at": "100ms", **FAIL_OCS0_PORT2})), sample=False)
    (r,) = reconfigs(res)
    assert r["status"].startswith("failed, rolled back")
    step2 = next(s for s in r["steps"] if s["step"] == 2)
    assert step2["failed"] == ["circuit [0, 0, 1] not lit: its links were still down when step 2 ended"]
    assert res.controller["hybrid"]["circuits"] == [[0, 0, 2], [1, 2, 1]]


def test_the_modes_plan_no_circuit_on_a_failed_port():
    # the congestion mode's plan at 200 ms puts [0, 0, 1] on the failed port: left out,
    # what is left serves no more than the circuits in force, so nothing moves
    res = run_scenario(build(with_events(congestion_scenario(), {"at": "100ms", **FAIL_OCS0_PORT2})), sample=False)
    assert reconfigs(res) == []
    assert any(d.get("left_out_failed") == [[0, 0, 1]] for d in res.controller["hybrid"]["decisions"])
    assert transfer_end(res) == pytest.approx(4.936, abs=1e-3)  # as with no reconfiguration (docs/control.md)


def test_a_circuit_in_force_that_fails_sends_its_pairs_back_to_the_electrical_network():
    # reconfiguration 0 makes [0, 0, 1] for the transfer (racks 0 -> 1); its cable fails at 1 s
    res = run_scenario(build(with_events(congestion_scenario(), {"at": "1s", **FAIL_OCS0_PORT2})), sample=False)
    r0, r1 = reconfigs(res)[:2]
    assert r0["status"] == "done" and [0, 0, 1] in r0["circuits_after"]
    assert r1["trigger"] == "link failure" and r1["status"] == "done" and r1["start_s"] == 1.0
    assert [s["step"] for s in r1["steps"]] == [1, 2, 3]  # make-before-break: detoured first
    assert r1["circuits_after"] == [c for c in r0["circuits_after"] if c != [0, 0, 1]]
    assert res.status == "done" and transfer_end(res) < 8.0  # it stalled for good before


def test_a_failed_circuit_is_left_even_with_no_mode_to_replan():
    data = congestion_scenario(congestion=None, schedule=[{"at": "200ms", "circuits": [[0, 0, 1], [1, 2, 1]]}])
    res = run_scenario(build(with_events(data, {"at": "1s", **FAIL_OCS0_PORT2})), sample=False)
    r0, r1 = reconfigs(res)
    assert r0["status"] == "done" and r1["trigger"] == "link failure" and r1["status"] == "done"
    assert res.controller["hybrid"]["circuits"] == [[1, 2, 1]] and res.status == "done"


def test_with_every_delay_zero_a_reconfiguration_goes_through_at_once():
    data = congestion_scenario(driver_delay={"rule_time": "0ms", "vlan_tag_time": "0s", "push": "sequential"})
    data["topology"]["switching_time"] = 0
    res = run_scenario(build(data), sample=False)
    r = reconfigs(res)[0]
    assert r["status"] == "done" and r["start_s"] == r["end_s"]
    # faster than with the default delays, where the same reconfiguration takes 200 ms
    assert transfer_end(res) < transfer_end(run_scenario(build(congestion_scenario()), sample=False))
