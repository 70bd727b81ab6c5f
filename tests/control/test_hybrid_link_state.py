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
    # ocs0 port 2 fails at 100 ms; reconfiguration 0 (200 ms) makes a circuit on it
    res = run_scenario(build(with_events(congestion_scenario(), {"at": "100ms", **FAIL_OCS0_PORT2})), sample=False)
    r = reconfigs(res)[0]
    assert r["status"].startswith("failed, rolled back")
    step2 = next(s for s in r["steps"] if s["step"] == 2)
    assert any("not lit: its links were still down when step 2 ended" in f for f in step2["failed"])
    assert res.controller["hybrid"]["circuits"] == [[0, 0, 2], [1, 2, 1]]
    none = run_scenario(build(congestion_scenario()), sample=False)
    assert transfer_end(res) > transfer_end(none)  # a dead cable carries nothing


def test_with_every_delay_zero_a_reconfiguration_goes_through_at_once():
    data = congestion_scenario(driver_delay={"rule_time": "0ms", "vlan_tag_time": "0s", "push": "sequential"})
    data["topology"]["switching_time"] = 0
    res = run_scenario(build(data), sample=False)
    r = reconfigs(res)[0]
    assert r["status"] == "done" and r["start_s"] == r["end_s"]
    # faster than with the default delays, where the same reconfiguration takes 200 ms
    assert transfer_end(res) < transfer_end(run_scenario(build(congestion_scenario()), sample=False))
