"""The hybrid controller against the simulator driver: make-before-break moves
traffic, failures roll back, the modes trigger when (and only when) they should."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest

from netsteer.errors import NetsteerError
from netsteer.reproduce.hybrid import IPERF, PairRecorder, _run
from netsteer.scenario import Scenario, ScenarioModel, build_scenario
from netsteer.sim.run import run_scenario


def iperf(**hybrid) -> dict:
    data = copy.deepcopy(IPERF)
    data["jobs"][0]["bulk"][0]["duration"] = "10s"
    data["controller"]["hybrid"].update(hybrid)
    return data


def one_plane(racks: int) -> dict:
    """A hybrid network of ``racks`` one-server racks, one circuit switch with a port
    per rack (one plane), a 1 Gbit/s electrical core."""
    return {"kind": "hybrid", "racks": racks, "servers_per_rack": 1, "server_bandwidth": "10Gbps",
            "tor_uplinks": 1, "core_bandwidth": "1Gbps", "circuit_switches": 1, "circuit_ports": racks,
            "circuit_uplinks": 1, "circuit_bandwidth": "10Gbps", "switching_time": "10ms", "link_latency": "1us"}


def build(data):
    return build_scenario(Scenario(ScenarioModel.model_validate(data), "t.yaml"))


def reconfigs(res):
    return res.controller["hybrid"]["reconfigurations"]


def test_make_before_break_keeps_traffic_on_the_electrical_network_during_the_window():
    rec = PairRecorder(50_000_000, [(0, 1)])
    _, res = _run(iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}], extra_rules=1000), rec)
    (r,) = reconfigs(res)
    assert r["status"] == "done" and [s["step"] for s in r["steps"]] == [1, 2, 3]
    t, g = np.array(rec.times), np.array(rec.gbps)
    inside = g[(t > r["start_s"] + 0.1) & (t < r["end_s"] - 0.05)]
    before = g[(t > 1.0) & (t < r["start_s"])]
    after = g[t > r["end_s"] + 0.1]
    # 10 Gbit/s on a circuit, the 1 Gbit/s electrical network in the window, never zero
    assert np.allclose(before, 10, rtol=1e-4) and np.allclose(after, 10, rtol=1e-4)
    assert np.allclose(inside, 1, rtol=1e-4)
    # the delay is the slowest part of step 2: tagging two ports per ToR (1.2 s) vs 1000 rules
    step2 = r["steps"][1]
    assert step2["end_s"] - step2["start_s"] == pytest.approx(max(1.2, 1002 * 0.44e-3), rel=1e-3)


def test_make_before_break_keeps_a_pair_on_the_electrical_network_until_its_first_circuit_is_up():
    # the pair has no circuit before: its new rule must not take it off the electrical
    # network before the circuit switch and the tags are in place. It needs no step-1
    # detour (it is on the electrical network); its rule goes in in step 3
    rec = PairRecorder(50_000_000, [(0, 1)])
    b, res = _run(iperf(initial=[], schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}]), rec)
    (r,) = reconfigs(res)
    assert r["status"] == "done" and [s["step"] for s in r["steps"]] == [2, 3]
    step2, step3 = r["steps"]
    assert "first circuits' rules pushed" in step3["what"]
    t, g = np.array(rec.times), np.array(rec.gbps)
    assert np.allclose(g[(t > 0.5) & (t < step3["start_s"])], 1, rtol=1e-4)  # never zero in the window
    assert np.allclose(g[t > r["end_s"] + 0.1], 10, rtol=1e-4)
    # the circuit moved in step 2, the pair's rule only after it (step 3)
    rules = [e for e in res.applied_events if e["intent"] == "push_rules"]
    assert rules and min(e["at_s"] for e in rules) >= step2["end_s"] - 1e-9


def test_a_first_circuit_whose_rule_fails_in_step_three_rolls_back_whole():
    # the rule push fails at the pair's ToR: the circuit step 2 made is undone too, and
    # the pair stays on the electrical network (its last good configuration)
    data = iperf(initial=[], schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}])
    data["driver"]["faults"] = [{"kind": "rules", "switch": "tor0", "from": "0s", "to": "20s"}]
    rec = PairRecorder(50_000_000, [(0, 1)])
    _, res = _run(data, rec)
    (r,) = reconfigs(res)
    assert r["status"].startswith("failed, rolled back")
    assert [s["step"] for s in r["steps"]] == [2, 3, 2, 3]
    assert r["steps"][1].get("failed") and "rollback" in r["steps"][2]["what"]
    assert res.controller["hybrid"]["circuits"] == []
    ocs = [e for e in res.applied_events if e["intent"] == "circuits"]
    assert len(ocs) == 2 and ocs[0]["pairs"] != ocs[1]["pairs"]  # made, then undone
    t, g = np.array(rec.times), np.array(rec.gbps)
    assert np.allclose(g[(t > 0.5)], 1, rtol=1e-4)  # electrical throughout, never zero


def test_break_before_make_loses_the_traffic_that_make_before_break_keeps():
    got = {}
    for method in ("make-before-break", "break-before-make"):
        rec = PairRecorder(100_000_000, [(0, 1)])
        _, res = _run(iperf(method=method, schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}]), rec)
        got[method] = rec.total_bytes
        assert reconfigs(res)[0]["status"] == "done"
    lost = (got["make-before-break"] - got["break-before-make"]) * 8 / 1e9
    # about the window (1.2 s) at the electrical rate (1 Gbit/s)
    assert 0.9 < lost < 1.4


def test_a_failing_circuit_switch_rolls_back_to_the_last_good_configuration():
    data = iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}])
    data["driver"]["faults"] = [{"kind": "circuits", "switch": "ocs0", "from": "0s", "to": "5s"}]
    rec = PairRecorder(100_000_000, [(0, 1)])
    _, res = _run(data, rec)
    (r,) = reconfigs(res)
    assert r["status"].startswith("failed, rolled back")
    assert res.controller["hybrid"]["circuits"] == [[0, 0, 1]]  # the old circuit is in force
    assert any("injected circuits fault" in f for s in r["steps"] for f in s.get("failed", []))
    t, g = np.array(rec.times), np.array(rec.gbps)
    assert np.allclose(g[t > r["end_s"] + 0.1], 10, rtol=1e-4)  # back on the old circuit


def unlit_once(monkeypatch, switch: str, from_ns: int, until_ns: int, times: int = 1) -> None:
    """The circuit switch ``switch`` does not light the first circuits it makes from
    ``from_ns`` on (the first ``times`` moves): their links stay down until
    ``until_ns``, as the openflow driver keeps a circuit dark when the switch refuses
    its lit table (its resync lights it once the switch takes it)."""
    from netsteer.sim.driver import SimDriver

    real = SimDriver._effect
    done = []

    def effect(self, what, payload):
        t = self.topo
        n = t.node(switch)
        if (what == "lit" and len(done) < times and from_ns <= self.now < until_ns
                and any(n in (int(t.link_a[x]), int(t.link_b[x])) for x in payload[1])):  # (command, links)
            done.append(self.now)
            self._schedule(until_ns, "lit", payload)
            return
        real(self, what, payload)

    monkeypatch.setattr(SimDriver, "_effect", effect)


def test_a_circuit_that_does_not_light_is_not_taken_as_in_force(monkeypatch):
    # ocs0 moves, but the new circuit stays dark (until 5 s): step 3 used to lift the
    # detours onto it (the pair's traffic went nowhere until 5 s) and the report gave
    # [1, 0, 1] as in force. Now step 2 fails on it and rolls back to the last good
    # circuit, which carries the traffic again
    unlit_once(monkeypatch, "ocs0", 2_000_000_000, 5_000_000_000)
    rec = PairRecorder(100_000_000, [(0, 1)])
    _, res = _run(iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}]), rec)
    (r,) = reconfigs(res)
    assert r["status"].startswith("failed, rolled back")
    assert r["steps"][1]["step"] == 2 and r["steps"][1]["failed"] == [
        "circuit [1, 0, 1] not lit: its links were still down when step 2 ended"]
    assert res.controller["hybrid"]["circuits"] == [[0, 0, 1]]
    t, g = np.array(rec.times), np.array(rec.gbps)
    assert r["end_s"] < 4.5 and np.allclose(g[(t > r["end_s"] + 0.1) & (t < 4.9)], 10, rtol=1e-4)


def test_a_mode_retries_a_circuit_that_did_not_light(monkeypatch):
    # the congestion mode's first circuit does not light (until 0.5 s): rolled back,
    # not counted as serving the flow, and planned again after the backoff
    unlit_once(monkeypatch, "ocs0", 0, 500_000_000)
    res = run_scenario(build(congestion_bulk()), sample=False)
    rc = reconfigs(res)
    assert [r["status"].split(":")[0] for r in rc] == ["failed, rolled back", "done"]
    assert "circuit [0, 0, 1] not lit" in rc[0]["steps"][0]["failed"][0]
    assert rc[1]["circuits_after"] == [[0, 0, 1]] and rc[1]["start_s"] >= rc[0]["modes_retry_from_s"]
    assert res.controller["hybrid"]["circuits"] == [[0, 0, 1]]


def test_a_rollback_whose_old_circuit_does_not_light_keeps_the_detours_until_it_does(monkeypatch):
    # ocs0 lights neither the new circuit nor, moved back by the rollback, the old one
    # (both dark until 6 s): the old configuration is not in force when the rollback's
    # step 2 ends. The rollback used to end there ("failed, rolled back") and remove the
    # step-1 detour, sending the pair onto the dark circuit (nothing got through until
    # 6 s). Now it is a failed undo: the detour stays (1 Gbit/s, never zero), the repair
    # retries ocs0 until the circuit lights, and only then lifts the detour
    unlit_once(monkeypatch, "ocs0", 2_000_000_000, 6_000_000_000, times=2)
    rec = PairRecorder(100_000_000, [(0, 1)])
    _, res = _run(iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}]), rec)
    (r,) = reconfigs(res)
    assert [s["step"] for s in r["steps"]] == [1, 2, 2]
    assert r["steps"][2]["failed"] == [
        "circuit [0, 0, 1] not lit: its links were still down when the rollback's step 2 ended"]
    assert r["status"].startswith("failed, rolled back late: the rollback went through at 6")
    high = [e for e in res.applied_events if e["intent"] == "remove_rules" and e["priority"] == 2]
    assert high and high[0]["at_s"] >= 6.0 and not high[0].get("failed")
    t, g = np.array(rec.times), np.array(rec.gbps)
    assert np.allclose(g[(t > r["steps"][2]["end_s"] + 0.1) & (t < 5.9)], 1, rtol=1e-3)  # detoured, not dark
    assert np.allclose(g[(t > high[0]["done_s"] + 0.1) & (t < 9.9)], 10, rtol=1e-4)  # back on the old circuit
    assert res.controller["hybrid"]["circuits"] == [[0, 0, 1]]
    # while it lasts, the report says what is wrong
    unlit_once(monkeypatch, "ocs0", 2_000_000_000, 60_000_000_000, times=2)
    _, res = _run(iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}]), PairRecorder(100_000_000, [(0, 1)]))
    pending = res.controller["hybrid"]["rollback_pending"]
    assert "circuit switch ocs0 moved back but circuit [0, 0, 1] not lit" in pending["status"]
    assert "step-1 detour still installed for rack pairs [[0, 1]" in pending["status"] and pending["tries"] >= 2


def test_a_repair_counts_a_circuit_switch_moved_back_once_its_circuit_lights(monkeypatch):
    # tor1 refuses tags (step 2 fails); ocs0 refuses to move back until 5 s, then takes
    # the command but its circuit stays dark until 8 s. The repair used to count the
    # accepted command as done and lift the detours onto the dark circuit at once; now
    # it backs off until the circuit is lit
    from netsteer.control.hybrid import REPAIR_MAX

    fault = [{"kind": "tags", "switch": "tor1", "from": "0s", "to": "30s"},
             {"kind": "circuits", "switch": "ocs0", "from": "0.2005s", "to": "5s"}]
    unlit_once(monkeypatch, "ocs0", 5_000_000_000, 8_000_000_000)
    res = run_scenario(build(congestion_scenario(driver_faults=fault)), sample=False)
    r0 = reconfigs(res)[0]
    assert r0["status"].startswith("failed, rolled back late: the rollback went through at 8")
    ocs = [e for e in res.applied_events if e["intent"] == "circuits" and e["switch"] == "ocs0"]
    taken = [e for e in ocs[1:] if not e.get("failed")]
    assert len(taken) >= 2 and 5.0 <= taken[0]["at_s"] < 8.0  # taken, not lit: sent again
    high = [e for e in res.applied_events if e["intent"] == "remove_rules" and e["priority"] == 2]
    assert high[0]["at_s"] >= 8.0
    # backing off between the tries that were taken but did not light
    gaps = np.diff([e["at_s"] for e in taken])
    assert all(0 < g <= 0.2 * REPAIR_MAX + 1e-6 for g in gaps)


def test_a_failing_tor_mid_step_two_undoes_the_circuit_switch_too():
    data = iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}])
    data["driver"]["faults"] = [{"kind": "tags", "switch": "tor1", "from": "0s", "to": "5s"}]
    b = build(data)
    res = run_scenario(b, sample=False)
    (r,) = reconfigs(res)
    assert r["status"].startswith("failed, rolled back")
    ocs = [e for e in res.applied_events if e["intent"] == "circuits"]
    assert [e["pairs"] for e in ocs] == [[[2, 4]], [[1, 3]]]  # moved, then moved back
    assert res.status == "done"


def test_periodic_mode_reconfigures_once_for_a_lasting_shift_and_not_for_noise():
    # three racks, one plane; demand 0->1 first, then 0->2 for good
    data = {
        "name": "periodic",
        "topology": one_plane(3),
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "a", "bulk": [{"src": 0, "dst": 1, "duration": "3s"}]},
                 {"name": "b", "bulk": [{"src": 0, "dst": 2, "start": "3s", "duration": "6s"}]}],
        "controller": {"hybrid": {"initial": [[0, 0, 1]],
                                  "periodic": {"period": "500ms", "threshold": 0.2, "hold": 2}}},
        "driver": {"delay": {"rule_time": "1ms", "vlan_tag_time": "100ms"}},
    }
    res = run_scenario(build(data), sample=False)
    rc = reconfigs(res)
    assert len(rc) == 1 and rc[0]["trigger"] == "periodic"
    assert rc[0]["circuits_after"] == [[0, 0, 2]]
    # hysteresis: two periods of gain after the shift at 3 s, not the first one
    assert 3.9 < rc[0]["start_s"] <= 4.5


def test_periodic_mode_decides_first_at_one_period():
    # the first period's bytes are known at t=period: counters read 0 at the start
    data = {
        "name": "first-period",
        "topology": one_plane(2),
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "a", "bulk": [{"src": 0, "dst": 1, "duration": "2s"}]}],
        "controller": {"hybrid": {"periodic": {"period": "500ms", "threshold": 0.1, "hold": 1}}},
    }
    res = run_scenario(build(data), sample=False)
    decisions = res.controller["hybrid"]["decisions"]
    assert decisions[0]["at_s"] == 0.5 and decisions[0]["served_now_gbps"] == 0.0
    rc = reconfigs(res)
    assert rc[0]["trigger"] == "periodic" and rc[0]["start_s"] == 0.5 and rc[0]["circuits_after"] == [[0, 0, 1]]


def test_congestion_mode_windows_open_at_the_start_and_again_when_a_reconfiguration_ends():
    # a bulk flow saturates the 1 Gbit/s electrical core from t=0: hot at the polls at
    # 0.1 and 0.2 s (the first window counts from the start), so the controller decides
    # at 0.2 s; the circuit it sets up is filled by the same flow (hot, but no plan
    # serves more), and those windows start when the reconfiguration ends: its next
    # decision comes two whole polls after that end, not on the old poll grid
    res = run_scenario(build(congestion_bulk("1s", name="congestion-windows")), sample=False)
    (r,) = reconfigs(res)
    assert r["start_s"] == 0.2 and r["circuits_after"] == [[0, 0, 1]]
    end = r["end_s"]
    assert round(end * 1e3) % 100 != 0  # off the poll grid, so the two cases differ
    decisions = res.controller["hybrid"]["decisions"]
    assert decisions[0]["at_s"] == 0.2 and decisions[0]["served_now_gbps"] == 0.0
    assert decisions[1]["at_s"] == pytest.approx(end + 0.2, abs=1e-9)
    # the flow fills its own circuit: no plan can serve more, and the bound says so
    # without planning
    assert decisions[1]["served_now_gbps"] == decisions[1]["bound_gbps"] == 10.0
    assert decisions[1]["skipped"] == "bound" and decisions[1]["served_planned_gbps"] is None


def unanswered_at(monkeypatch, t_ns: int) -> None:
    """The simulated switches do not answer the counter reading at ``t_ns``: every
    value NaN, as the openflow driver reports a read that failed."""
    from netsteer.control.driver import Counters
    from netsteer.sim.driver import SimDriver

    real = SimDriver.counters

    def counters(self):
        c = real(self)
        if c.time_ns == t_ns:
            return Counters(c.time_ns, np.full_like(c.port_bytes, np.nan),
                            None if c.pair_bytes is None else np.full_like(c.pair_bytes, np.nan))
        return c

    monkeypatch.setattr(SimDriver, "counters", counters)


def test_a_poll_whose_counters_are_missing_is_skipped_not_read_as_zero(monkeypatch):
    # as above, but the switches do not answer the poll at 0.1 s (the openflow driver
    # reports NaN, missing): that sample is skipped and the window runs on, so the
    # polls at 0.2 s (window 0..0.2 s) and 0.3 s are the two hot ones
    unanswered_at(monkeypatch, 100_000_000)
    res = run_scenario(build(congestion_bulk("1s", name="congestion-missing")), sample=False)
    (r,) = reconfigs(res)
    assert r["start_s"] == 0.3 and r["circuits_after"] == [[0, 0, 1]]
    assert res.controller["hybrid"]["decisions"][0]["served_now_gbps"] == 0.0


def silent(monkeypatch, switch: str, from_ns: int, to_ns: int | None = None, every: int = 1) -> None:
    """The simulated switch ``switch`` does not answer the counter readings from
    ``from_ns`` until before ``to_ns`` (None: for good; ``every``: only each
    ``every``-th of them): its ports' readings and, for a ToR, its rack's pair
    counters are NaN, as the openflow driver reports a switch whose request failed."""
    from netsteer.control.driver import Counters
    from netsteer.sim.driver import SimDriver

    real = SimDriver.counters
    seen = []

    def counters(self):
        c = real(self)
        if c.time_ns < from_ns or (to_ns is not None and c.time_ns >= to_ns):
            return c
        seen.append(c.time_ns) if c.time_ns not in seen else None
        if seen.index(c.time_ns) % every:
            return c
        t = self.topo
        n = t.node(switch)
        host = t.node_kind == 0
        src, dst = t.channel_src(), t.channel_dst()
        owner = np.where(host[src], dst, src)
        ports = c.port_bytes.copy()
        ports[owner == n] = np.nan
        pairs = None if c.pair_bytes is None else c.pair_bytes.copy()
        tors = [int(x) for x in t.meta.get("tors", ())]
        if pairs is not None and n in tors:
            pairs[tors.index(n)] = np.nan
        return Counters(c.time_ns, ports, pairs)

    monkeypatch.setattr(SimDriver, "counters", counters)


def congestion_bulk(duration: str = "2s", name: str = "congestion-silent") -> dict:
    """A bulk flow 0 -> 1 saturating the 1 Gbit/s electrical core of a one-plane,
    two-rack network, under the congestion mode (polls every 100 ms, hold 2)."""
    return {
        "name": name,
        "topology": one_plane(2),
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "a", "bulk": [{"src": 0, "dst": 1, "duration": duration}]}],
        "controller": {"hybrid": {"congestion": {"poll": "100ms", "utilization": 0.9, "hold": 2,
                                                 "threshold": 0.1}}},
        "driver": {"delay": {"rule_time": "1ms", "vlan_tag_time": "33ms"}},
    }


def test_a_switch_silent_for_a_while_is_named_once_with_its_recovery_and_no_plan_rests_on_the_silence(monkeypatch):
    # tor1 does not answer the polls from 0.1 s to 0.9 s (9 in a row): the mode plans
    # nothing meanwhile (it used to be silent about it); the report and the notes say
    # who, since when, how many readings and when it answered again. The first whole
    # poll (1.0 s) opens new windows, so the decision comes two hot polls later (1.2 s),
    # not at 1.1 s on a window averaged over the silence
    from netsteer.report.result import result_dict

    silent(monkeypatch, "tor1", 100_000_000, 1_000_000_000)
    b = build(congestion_bulk())
    res = run_scenario(b, sample=False)
    (r,) = reconfigs(res)
    assert r["start_s"] == 1.2 and r["circuits_after"] == [[0, 0, 1]]
    u = res.controller["hybrid"]["unanswered"]
    assert u["silent_after_readings"] == 3 and u["readings_incomplete"] == 9
    (sw,) = u["switches"]
    assert sw["switch"] == "tor1" and sw["readings_missed"] == 9
    assert sw["silences"] == [{"from_s": 0.1, "last_missed_s": 0.9, "readings": 9, "answered_again_s": 1.0}]
    notes = [n for n in result_dict(b, res)["notes"] if "did not answer" in n]
    assert notes == ["controller.hybrid: switch tor1 did not answer 9 counter readings in a row, from 100 ms to "
                     "900 ms; it answered again at 1 s; meanwhile the congestion mode planned nothing on those "
                     "readings, the circuits in force were kept"]


@pytest.mark.parametrize("schedule", [False, True])
def test_a_switch_that_never_answers_is_named_and_the_controller_keeps_running(monkeypatch, schedule):
    # the congestion mode plans nothing (and says so); a scheduled reconfiguration
    # still runs, and the note names it
    from netsteer.report.result import result_dict

    silent(monkeypatch, "tor0", 100_000_000)
    data = congestion_bulk("1s")
    if schedule:
        data["controller"]["hybrid"]["schedule"] = [{"at": "500ms", "circuits": [[0, 0, 1]]}]
    b = build(data)
    res = run_scenario(b, sample=False)
    assert [r["trigger"] for r in reconfigs(res)] == (["schedule"] if schedule else []) and res.status == "done"
    (sw,) = res.controller["hybrid"]["unanswered"]["switches"]
    (s,) = sw["silences"]
    assert sw["switch"] == "tor0" and s["from_s"] == 0.1 and s["answered_again_s"] is None
    (note,) = [n for n in result_dict(b, res)["notes"] if "did not answer" in n]
    assert "switch tor0" in note and "from 100 ms" in note
    assert "it had not answered again when the run ended at 1 s" in note
    assert note.endswith("the only reconfigurations in progress were 0 (schedule, done)" if schedule
                         else "the circuits in force were kept")


def test_a_reading_missed_now_and_then_is_counted_not_noted(monkeypatch):
    # every other poll from 0.1 s is unanswered: never 3 in a row, so no note (one
    # missed reply is no news), but the report counts them
    from netsteer.report.result import result_dict

    silent(monkeypatch, "tor1", 100_000_000, every=2)
    b = build(congestion_bulk("1s"))
    res = run_scenario(b, sample=False)
    (sw,) = res.controller["hybrid"]["unanswered"]["switches"]
    assert sw["switch"] == "tor1" and sw["readings_missed"] >= 4 and sw["silences"] == []
    assert not any("did not answer" in n for n in result_dict(b, res).get("notes", []))


def test_an_application_request_pins_its_circuit_against_the_periodic_mode():
    data = {
        "name": "api",
        "topology": one_plane(3),
        "routing": {"engine": "minhop"},
        # heavy 0->1 traffic, but a job asked for 1->2 until 4 s
        "jobs": [{"name": "heavy", "bulk": [{"src": 0, "dst": 1, "duration": "6s"}]}],
        "controller": {"hybrid": {"requests": [{"at": "100ms", "until": "4s", "src": 1, "dst": 2,
                                                "bandwidth": "10Gbps"}],
                                  "periodic": {"period": "500ms", "threshold": 0.1, "hold": 1}}},
        "driver": {"delay": {"rule_time": "1ms", "vlan_tag_time": "100ms"}},
    }
    res = run_scenario(build(data), sample=False)
    rc = reconfigs(res)
    assert rc[0]["trigger"] == "request" and rc[0]["circuits_after"] == [[0, 1, 2]]
    later = [r for r in rc[1:] if r["trigger"] == "periodic"]
    assert later and all(r["start_s"] >= 4.0 for r in later)  # only once the request ended
    assert later[0]["circuits_after"] == [[0, 0, 1]]


def test_a_request_when_the_switches_do_not_answer_is_planned_from_the_request(monkeypatch):
    # the request at 0.1 s meets a reading the switches did not answer (NaN; the one at
    # 0 s was whole): it is planned from what it asks for, not from NaN demand, and
    # gets its circuit
    unanswered_at(monkeypatch, 100_000_000)
    data = {
        "name": "request-missing",
        "topology": one_plane(3),
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "heavy", "bulk": [{"src": 0, "dst": 1, "duration": "2s"}]}],
        "controller": {"hybrid": {"requests": [{"at": "100ms", "until": "1s", "src": 1, "dst": 2,
                                                "bandwidth": "10Gbps"}]}},
        "driver": {"delay": {"rule_time": "1ms", "vlan_tag_time": "100ms"}},
    }
    res = run_scenario(build(data), sample=False)
    rc = reconfigs(res)
    assert rc[0]["trigger"] == "request" and rc[0]["circuits_after"] == [[0, 1, 2]]
    assert "failed" not in rc[0]["status"]


def test_bad_controller_input_is_one_line_and_exit_2(tmp_path):
    cases = {
        "no-such-host": {"requests": [{"at": "1s", "src": 0, "dst": 99, "bandwidth": "1Gbps"}]},
        "port-twice": {"initial": [[0, 0, 1], [0, 0, 1]]},
        "bad-plane": {"initial": [[5, 0, 1]]},
        "demand-shape": {"requests": [{"at": "1s", "demand": [[0, 1, 2], [1, 0, 2]]}]},
        "negative-demand": {"requests": [{"at": "1s", "demand": [[0, -1], [1, 0]]}]},
        "unknown-key": {"periodical": {}},
    }
    for name, hybrid in cases.items():
        data = iperf()
        data["controller"]["hybrid"] = hybrid
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(data))
        out = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True)
        assert out.returncode == 2, (name, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and str(f) in lines[0] and "controller" in lines[0], (name, out.stderr)
        assert "Traceback" not in out.stderr


@pytest.mark.parametrize("initial, reason", [
    ([[0, 0, 7]], "is not plane, rack, other rack"),
    ([[0, 0, 1], [0, 1, 0]], "port twice"),
])
def test_bad_initial_circuits_name_the_field_once(initial, reason):
    with pytest.raises(NetsteerError) as e:
        build(iperf(initial=initial))
    assert e.value.field == "controller.hybrid.initial" and reason in e.value.reason


@pytest.mark.parametrize("circuits", [[[0, 0, 7]], [[0, 0, 1], [0, 1, 0]], [[2, 0, 1]]])
def test_a_bad_scheduled_configuration_is_refused_before_the_run(circuits):
    # it was accepted (exit 0) and showed up only as a failed reconfiguration at its time
    with pytest.raises(NetsteerError) as e:
        build(iperf(schedule=[{"at": "1s", "circuits": [[1, 0, 1]]}, {"at": "2s", "circuits": circuits}]))
    assert e.value.field == "controller.hybrid.schedule.1.circuits"


@pytest.mark.parametrize("fault, field, words", [
    ({"kind": "circuits", "switch": "ocs0", "from": "3s", "to": "1s"}, "driver.faults.0.to", "ends (1s) before it starts (3s)"),
    ({"kind": "circuits", "switch": "tor0", "from": "0s"}, "driver.faults.0.switch", "tor0 is not a circuit switch"),
    ({"kind": "rules", "switch": "ocs0", "from": "0s"}, "driver.faults.0.switch", "ocs0 is not a ToR"),
    ({"kind": "tags", "switch": "core0", "from": "0s"}, "driver.faults.0.switch", "core0 is not a ToR"),
])
def test_a_fault_that_could_never_fire_is_refused(fault, field, words):
    # these were accepted and the reconfiguration went through as if no fault was given
    data = iperf(schedule=[{"at": "2s", "circuits": [[1, 0, 1]]}])
    data["driver"]["faults"] = [fault]
    with pytest.raises(NetsteerError) as e:
        build(data)
    assert e.value.field == field and words in e.value.reason


def test_more_than_4094_vlans_is_refused():
    from netsteer.control.hybrid import HybridController
    from netsteer.topology import hybrid

    t = hybrid(128, 1, server_bandwidth=1e10, tor_uplinks=1, core_bandwidth=1e9, circuit_ports=128,
               circuit_switches=33, circuit_uplinks=1, circuit_bandwidth=1e10, switching_time_ns=0, link_latency_ns=0)

    def matchings(planes):  # plane k pairs rack i with rack i xor (k + 1)
        return [(k, i, i ^ (k + 1)) for k in range(planes) for i in range(128) if i < i ^ (k + 1)]

    HybridController(t, initial=matchings(31))  # 1984 circuits, 3968 directed paths
    with pytest.raises(NetsteerError, match="4094"):
        HybridController(t, initial=matchings(33))  # 2112 circuits, 4224 paths


def test_a_scripted_circuit_change_on_a_switch_the_controller_drives_is_refused(tmp_path):
    # it was accepted, and the run stalled: the controller's VLAN paths led over
    # circuits the event had moved, and it does not re-plan for changes it did not make
    data = iperf()
    data["events"] = [{"at": "1s", "circuit": {"switch": "ocs0", "pairs": [[1, 4]]}}]
    with pytest.raises(NetsteerError) as e:
        build(data)
    assert e.value.field == "events.0.circuit"
    assert "ocs0 is driven by controller.hybrid" in e.value.reason and "controller.hybrid.schedule" in e.value.reason
    f = tmp_path / "hc.json"
    f.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f), "--no-progress"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"{f}: events.0.circuit: ocs0 is driven by controller.hybrid" in out.stderr
    del data["controller"]  # the same event without the controller is the scenario's to make
    assert [type(ev).__name__ for ev in build(data).events].count("CircuitChange") == 1


def test_a_hybrid_network_without_electrical_uplinks_says_why_it_has_no_route():
    # it said "routing: switch tor0 has no route to h1", though initial circuits joined the racks
    data = iperf()
    data["topology"]["tor_uplinks"] = 0
    with pytest.raises(NetsteerError) as e:
        build(data)
    assert e.value.field == "topology.tor_uplinks", e.value.message()
    assert "no electrical uplinks" in e.value.reason and "give tor_uplinks >= 1" in e.value.reason
    assert "controller.hybrid.initial circuits are made by the controller after routing" in e.value.reason
    del data["controller"]
    with pytest.raises(NetsteerError) as e:
        build(data)
    assert e.value.field == "topology.tor_uplinks" and "at time 0 no rack reaches another" in e.value.reason
    data["topology"].update(racks=1, servers_per_rack=2)  # one rack needs no uplink
    build(data)


def congestion_scenario(**hybrid) -> dict:
    """scenarios/hybrid-congestion.yaml with ``controller.hybrid`` keys replaced
    (None removes one); ``driver`` keys go in as ``driver_*``."""
    import pathlib

    import yaml

    data = yaml.safe_load((pathlib.Path(__file__).parents[2] / "scenarios" / "hybrid-congestion.yaml").read_text())
    for k, v in hybrid.items():
        if k.startswith("driver_"):
            data["driver"][k[len("driver_"):]] = v
        elif v is None:
            data["controller"]["hybrid"].pop(k, None)
        else:
            data["controller"]["hybrid"][k] = v
    return data


def test_a_circuit_written_the_other_way_round_sends_its_switch_no_command():
    # plane 1 joins racks 1 and 2 before and after ([1, 2, 1] then [1, 1, 2]): only
    # plane 0 moves, so only ocs0 gets a command
    data = congestion_scenario(congestion=None, schedule=[{"at": "1s", "circuits": [[0, 0, 1], [1, 1, 2]]}])
    res = run_scenario(build(data), sample=False)
    (r,) = reconfigs(res)
    assert r["status"] == "done"
    ocs = [e for e in res.applied_events if e["intent"] == "circuits"]
    assert [e["switch"] for e in ocs] == ["ocs0"]


def test_scheduled_actions_after_the_run_ended_are_named_in_its_notes():
    from netsteer.report.result import result_dict

    data = congestion_scenario(congestion=None, schedule=[{"at": "100s", "circuits": [[0, 0, 1]]}],
                               requests=[{"at": "50s", "src": 0, "dst": 2, "bandwidth": "10Gbps"}])
    b = build(data)
    res = run_scenario(b, sample=False)
    assert reconfigs(res) == []
    notes = result_dict(b, res)["notes"]
    assert any(n.startswith("controller.hybrid.schedule:") and "at 100 s" in n and "never happened" in n
               for n in notes)
    assert any(n.startswith("controller.hybrid.requests:") and "at 50 s" in n for n in notes)
    # one that happened is not named
    data = congestion_scenario(congestion=None, schedule=[{"at": "1s", "circuits": [[0, 0, 1]]}])
    b = build(data)
    assert "notes" not in result_dict(b, run_scenario(b, sample=False))


def test_congestion_mode_does_not_plan_again_for_what_it_already_knows(monkeypatch):
    # after its reconfiguration the transfer fills its circuits and the background its
    # own: polled hot every 20 ms, with no plan that could serve more. It plans once
    # (the first decision), not at every second poll
    from netsteer.control.hybrid import HybridController

    calls = []
    plan = HybridController._plan
    monkeypatch.setattr(HybridController, "_plan", lambda self, *a, **k: calls.append(1) or plan(self, *a, **k))
    data = congestion_scenario(congestion={"poll": "20ms", "utilization": 0.9, "hold": 2, "threshold": 0.1})
    res = run_scenario(build(data), sample=False)
    (r,) = reconfigs(res)
    assert r["status"] == "done" and r["circuits_after"] == [[0, 0, 1], [1, 1, 2]]
    decisions = res.controller["hybrid"]["decisions"]
    assert len(decisions) > 50 and len(calls) == 1
    assert all(d.get("skipped") for d in decisions[1:])


def test_a_bandwidth_request_gets_one_circuit_and_keeps_the_circuit_other_traffic_uses():
    # rack 2 sends to rack 1 over circuit 2-1 when a job asks for 10 Gbit/s from rack 0
    # to rack 1: it gets one circuit 0-1 (what it needs), and 2-1 stays (the source:
    # bandwidth-on-demand and monitoring coexist), not two 0-1 circuits
    data = congestion_scenario(congestion=None, requests=[{"at": "0.5s", "until": "2s", "src": 0, "dst": 2,
                                                           "bandwidth": "10Gbps"}])
    rec = PairRecorder(100_000_000, [(2, 1)])
    _, res = _run(data, rec)
    (r,) = reconfigs(res)
    assert r["trigger"] == "request" and r["status"] == "done"
    after = {(a, b) for _, a, b in r["circuits_after"]} | {(b, a) for _, a, b in r["circuits_after"]}
    assert sum(1 for _, a, b in r["circuits_after"] if {a, b} == {0, 1}) == 1
    assert (1, 2) in after
    t, g = np.array(rec.times), np.array(rec.gbps)
    assert np.allclose(g[(t > r["end_s"] + 0.1) & (t < 2.9)], 10, rtol=1e-4)  # the background keeps its circuit


def test_a_reconfiguration_that_keeps_failing_backs_off_and_costs_little_against_no_controller():
    # ocs0 refuses every command for 30 s: each try detours the transfer onto the
    # 1 Gbit/s network for its length. Retried at once (19 tries) the transfer took
    # 7.7 s against 4.9 s with no reconfiguration at all
    fault = [{"kind": "circuits", "switch": "ocs0", "from": "0s", "to": "30s"}]
    res = run_scenario(build(congestion_scenario(driver_faults=fault)), sample=False)
    static = run_scenario(build(congestion_scenario(driver_faults=fault, congestion={
        "poll": "100ms", "utilization": 0.9, "hold": 2, "threshold": 2.0})), sample=False)
    assert reconfigs(static) == []
    rc = reconfigs(res)
    assert 1 < len(rc) <= 4 and all(r["status"].startswith("failed, rolled back") for r in rc)
    gaps = [b["start_s"] - a["end_s"] for a, b in zip(rc, rc[1:])]
    assert all(g2 > 1.5 * g1 for g1, g2 in zip(gaps, gaps[1:]))  # exponential
    assert all(b["start_s"] >= a["modes_retry_from_s"] for a, b in zip(rc, rc[1:]))
    assert res.controller["hybrid"]["failed_in_a_row"] == len(rc)
    assert res.makespan_ns <= 1.1 * static.makespan_ns
    # a fault that clears: the next try (after the backoff) succeeds, and the count resets
    fault[0]["to"] = "1s"
    res = run_scenario(build(congestion_scenario(driver_faults=fault)), sample=False)
    rc = reconfigs(res)
    assert rc[0]["status"].startswith("failed") and rc[-1]["status"] == "done" and len(rc) == 2
    assert "failed_in_a_row" not in res.controller["hybrid"]


def test_what_a_failed_rollback_left_installed_is_retried_and_reported_meanwhile():
    # tor0 refuses rules from just after step 1: step 2 fails, and so does the
    # rollback's removal of step 1's detours. They are retried, backing off, until
    # rules go in again (5 s), and only then does anything new start
    from netsteer.control.hybrid import REPAIR_MAX

    fault = [{"kind": "rules", "switch": "tor0", "from": "0.2001s", "to": "5s"}]
    res = run_scenario(build(congestion_scenario(driver_faults=fault)), sample=False)
    r0 = reconfigs(res)[0]
    assert r0["status"].startswith("failed, rolled back late: the rollback went through at 5")
    rest = reconfigs(res)[1:]
    high = [e for e in res.applied_events if e["intent"] == "remove_rules" and e["priority"] == 2
            and (not rest or e["at_s"] < rest[0]["start_s"])]
    assert all(e.get("failed") for e in high[:-1]) and not high[-1].get("failed")
    assert high[-1]["at_s"] >= 5.0 and all(r["start_s"] >= high[-1]["done_s"] for r in rest)
    # the tries (after the rollback's own) double from one attempt's length (0.2 s), and the
    # wait stays bounded: a fault that clears is repaired within REPAIR_MAX of them
    gaps = np.diff([e["at_s"] for e in high[1:]])
    assert gaps == pytest.approx([0.2 * min(2 ** i, REPAIR_MAX) for i in range(len(gaps))], rel=1e-2)
    assert high[-1]["at_s"] - 5.0 <= 0.2 * REPAIR_MAX
    # a fault that never clears: the report says what is installed instead of the circuits
    fault[0]["to"] = "300s"
    res = run_scenario(build(congestion_scenario(driver_faults=fault)), sample=False)
    pending = res.controller["hybrid"]["rollback_pending"]
    assert "step-1 detour still installed for rack pairs [[0, 1]" in pending["status"]
    assert reconfigs(res)[0]["status"] == pending["status"]
    # over the 35 s run: a try every 0.2 s would be 170 of them
    assert 10 < pending["tries"] < 35 and pending["next_try_s"] > res.makespan_ns / 1e9


def test_a_repair_that_never_goes_through_blocks_later_reconfigurations_and_says_so():
    # every ToR refuses rules from 0.3 s on: reconfiguration 0's rollback cannot remove
    # its detours, and the scheduled reconfigurations (0.5 s, 1 s) must not start on top
    # of them; the notes name the repair, not a reconfiguration "in progress"
    sched = [{"at": "0.5s", "circuits": [[0, 0, 1]]}, {"at": "1s", "circuits": [[0, 0, 2], [1, 1, 2]]}]
    data = congestion_scenario(schedule=sched, driver_faults=[{"kind": "rules", "from": "0.3s"}])
    res = run_scenario(build(data), sample=False)
    assert len(reconfigs(res)) == 1
    pending = res.controller["hybrid"]["rollback_pending"]
    assert pending["blocks"] == ["schedule reconfiguration at 0.5 s", "schedule reconfiguration at 1 s"]
    notes = [n for n in res.notes if n.startswith("controller.hybrid:")]
    assert len(notes) == 3 and all("waiting for the repair of reconfiguration 0's failed rollback" in n
                                   and "in progress" not in n for n in notes[:2])
    assert "at 500 ms" in notes[0]
    assert notes[2].startswith("controller.hybrid: the rollback of reconfiguration 0 was still being repaired")
    # a request queued behind it is unserved, and says why
    data = congestion_scenario(requests=[{"at": "0.5s", "until": "2s", "src": 0, "dst": 2, "bandwidth": "10Gbps"}],
                               driver_faults=[{"kind": "rules", "from": "0.3s"}])
    res = run_scenario(build(data), sample=False)
    (u,) = res.controller["hybrid"]["unserved_requests"]
    assert u["at_s"] == 0.5 and "waiting for the repair of reconfiguration 0" in u["why"]
    assert any(n.startswith("controller.hybrid.requests: the request at 500 ms was not served") for n in res.notes)


def test_a_request_whose_reconfiguration_failed_pins_no_circuits():
    # ocs0 refuses to move until 1 s: the request's reconfiguration rolls back, so its
    # circuit was never installed; the periodic mode is not held to it until the request
    # ends (4 s), and the report says the request went unserved
    data = {
        "name": "api", "topology": one_plane(3), "routing": {"engine": "minhop"},
        "jobs": [{"name": "heavy", "bulk": [{"src": 0, "dst": 1, "duration": "6s"}]}],
        "controller": {"hybrid": {"requests": [{"at": "100ms", "until": "4s", "src": 1, "dst": 2,
                                                "bandwidth": "10Gbps"}],
                                  "periodic": {"period": "500ms", "threshold": 0.1, "hold": 1}}},
        "driver": {"delay": {"rule_time": "1ms", "vlan_tag_time": "100ms"},
                   "faults": [{"kind": "circuits", "switch": "ocs0", "from": "0s", "to": "1s"}]},
    }
    res = run_scenario(build(data), sample=False)
    rc = reconfigs(res)
    assert rc[0]["trigger"] == "request" and rc[0]["status"].startswith("failed, rolled back")
    assert rc[1]["trigger"] == "periodic" and rc[1]["start_s"] < 4.0 and rc[1]["circuits_after"] == [[0, 0, 1]]
    (u,) = res.controller["hybrid"]["unserved_requests"]
    assert u == {"at_s": 0.1, "why": "reconfiguration 0, which was to install its circuits, failed and was rolled back"}
    assert "controller.hybrid.requests: the request at 100 ms was not served: reconfiguration 0" in res.notes[0]


def test_a_repair_waits_for_every_intent_of_its_try():
    # a driver may answer a try's intents one by one: the repair must not send the one
    # still in flight again, and must count the later answer
    from netsteer.control.core import Inputs
    from netsteer.control.driver import Applied
    from netsteer.control.hybrid import Reconfiguration
    from netsteer.control.intents import SetCircuits

    h = build(congestion_scenario()).hybrid
    a, b = SetCircuits(h.ocs_nodes[0], ()), SetCircuits(h.ocs_nodes[1], ())
    r = Reconfiguration(0, "schedule", h.method, h.config, h.config, 0, rolling_back=True, not_undone=[a, b])
    h.reconfigurations.append(r)
    h._repair = {"r": r, "base": 10, "tries": 0, "next_ns": 0, "pending": [], "answered": []}
    assert h._repair_step(Inputs(1, None)) == [a, b]
    assert h._repair_step(Inputs(2, None, applied=[Applied(a, 2, 2)])) == []
    assert h._repair_step(Inputs(50, None)) == []  # b is still in flight
    assert h._repair["pending"] == [b]
    assert h._repair_step(Inputs(60, None, applied=[Applied(b, 60, 60)])) == []
    assert h._repair is None and r.status.startswith("failed, rolled back late")


def test_a_rollback_that_cannot_move_a_circuit_back_keeps_the_detours_until_it_can():
    # tor1 refuses tags (step 2 fails); ocs0 moved, then refuses to move back until 5 s:
    # the moved pairs stay detoured on the electrical network until ocs0 is back
    fault = [{"kind": "tags", "switch": "tor1", "from": "0s", "to": "30s"},
             {"kind": "circuits", "switch": "ocs0", "from": "0.2005s", "to": "5s"}]
    res = run_scenario(build(congestion_scenario(driver_faults=fault)), sample=False)
    r0 = reconfigs(res)[0]
    assert r0["status"].startswith("failed, rolled back late") and [s["step"] for s in r0["steps"]] == [1, 2, 2]
    ocs = [e for e in res.applied_events if e["intent"] == "circuits"]
    back = next(e for e in ocs[1:] if not e.get("failed"))
    assert ocs[1].get("failed") and back["at_s"] >= 5.0 and back["pairs"] == ocs[1]["pairs"]
    high = [e for e in res.applied_events if e["intent"] == "remove_rules" and e["priority"] == 2]
    assert high[0]["at_s"] >= back["done_s"]  # the detours outlived the wrong circuit


def _fft_ends(reconfig):
    """The FFT's completion (s) in hybrid-reconfig's background runs without and with
    the congestion-triggered mode, and the congestion run's result."""
    from netsteer.reproduce.hybrid import fftw_scenarios

    runs = dict(fftw_scenarios("1307ms", reconfig))
    ends = {}
    for label in ("background", "background, congestion-triggered"):
        b, res = _run(runs[label], None)
        ends[label] = float(res.completion_ns[b.job_of_flow == b.job_names.index("fftw")].max()) * 1e-9
    return ends, res


def test_congestion_mode_does_not_flap_between_two_configurations_that_each_favour_the_other():
    # the source's FFT (8 MiB blocks: short transposes) beside the background: with both
    # circuits the background leaves the FFT on the electrical network, where it looks
    # network-limited, so the next plan gives it a circuit; there its short bursts look
    # small and the next plan gives the background both again, and so on, each move
    # detouring traffic for 1.2 s. Going back to a configuration that lasted 0.4 s must
    # pay for both moves in 0.4 s: it never does, and the FFT keeps its circuit
    from netsteer.reproduce.hybrid import Reconfig

    ends, res = _fft_ends(Reconfig(fft_bytes="8MiB", fft_phases=8))
    rc = reconfigs(res)
    assert [r["circuits_after"] for r in rc] == [[[0, 1, 2], [1, 1, 2]], [[0, 1, 2], [1, 0, 1]]]
    back = [d for d in res.controller["hybrid"]["decisions"] if d.get("skipped") == "return"]
    assert back and all(d["returned_to_lasted_s"] == pytest.approx(0.4, abs=0.02) and d["gain_gbit"] < d["cost_gbit"]
                        for d in back)
    # flapping, it ended 33 % after the run with no reconfiguration (16.4 s against 12.4 s)
    assert ends["background, congestion-triggered"] < 1.1 * ends["background"]


def test_a_return_pays_when_the_configuration_left_had_lasted():
    # the rule itself: the same gain pays for a return to a configuration that held for
    # 20 s, not for one that held for 0.4 s (each move: 1 s detouring 10 Gbit/s)
    from netsteer.control.hybrid import HybridController
    from netsteer.control.planning import Circuit

    h = build(congestion_scenario()).hybrid
    assert isinstance(h, HybridController)
    plan = h._plan(np.array([[0, 10.0, 0], [10.0, 0, 0], [0, 0, 0]]))  # a circuit 0-1 instead of 0-2
    target = frozenset(h._align(plan)[0].circuits)
    demand = np.array([[0, 0, 10.0], [0, 0, 0], [10.0, 0, 0]])  # what the circuits in force (0-2) serve
    h._reconfig_ns = 1_000_000_000
    for lasted, pays in ((400_000_000, False), (20_000_000_000, True)):
        h._left = {target: (10.0, lasted)}
        h.decisions.append({})
        _, ok = h._pays(demand, plan, cur=20.0, new=22.0)
        assert ok is pays
        d = h.decisions[-1]
        assert d["cost_gbit"] == pytest.approx(10.0 + 1.0 * 20.0) and d["gain_gbit"] == pytest.approx(2.0 * lasted / 1e9)
        assert d.get("skipped") == (None if pays else "return")
    h._left = {}
    assert h._pays(demand, plan, cur=20.0, new=22.0)[1]  # a configuration not left recently: at once
    assert Circuit(0, 0, 2) in h.config.circuits


def test_a_pairs_second_circuit_counts_less_than_another_pairs_first():
    # 16 FFT ranks and the background each want more than two circuits' worth: counted by
    # Gbit/s alone, the background's second circuit and the FFT's first tie, and the
    # background, first to send, kept both while the FFT crawled on the electrical network
    # (106 s against 37 s with no reconfiguration over 20 phases). Counted fairly, the FFT
    # gets a circuit once it shows
    from netsteer.reproduce.hybrid import Reconfig

    ends, res = _fft_ends(Reconfig(fft_ranks=16, fft_bytes="8MiB", fft_phases=8))
    rc = reconfigs(res)
    assert [r["circuits_after"] for r in rc] == [[[0, 1, 2], [1, 1, 2]], [[0, 1, 2], [1, 0, 1]]]
    assert ends["background, congestion-triggered"] < ends["background"]
