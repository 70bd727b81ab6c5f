"""The hybrid controller when circuit cables fail and come back: the rescue, what the
modes and requests do after it, and what the report says."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from netsteer.sim.run import run_scenario

from .test_hybrid_controller import build, reconfigs


def b_scenario(gib: int = 1, events=(), **hybrid) -> dict:
    """Three racks of two servers, two circuit switches (a plane each), a 1 Gbit/s core;
    hosts 0 -> 2 and 1 -> 3 (rack 0 -> rack 1), ``gib`` GiB each; circuit [0, 0, 1] in
    force. Steps of a reconfiguration: 1 at 0.20-0.24 s, 2 at 0.24-0.34 s, 3 at 0.34-0.38 s."""
    h = {"hops": 1, "initial": [[0, 0, 1]], **hybrid}
    return {
        "name": "b",
        "topology": {"kind": "hybrid", "racks": 3, "servers_per_rack": 2, "server_bandwidth": "10Gbps",
                     "tor_uplinks": 1, "core_bandwidth": "1Gbps", "circuit_switches": 2, "circuit_ports": 3,
                     "circuit_uplinks": 1, "circuit_bandwidth": "10Gbps", "switching_time": "25ms",
                     "link_latency": "1us"},
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "transfer", "flows": [{"src": 0, "dst": 2, "bytes": f"{gib}GiB"},
                                                 {"src": 1, "dst": 3, "bytes": f"{gib}GiB"}]}],
        "controller": {"hybrid": h},
        "driver": {"delay": {"rule_time": "10ms", "vlan_tag_time": "50ms", "push": "sequential"}},
        "events": list(events),
    }


def down(at: str, *ports) -> dict:
    return {"at": at, "link_down": [{"node": n, "port": p} for n, p in ports]}


def up(at: str, *ports) -> dict:
    return {"at": at, "link_up": [{"node": n, "port": p} for n, p in ports]}


def run(data):
    return run_scenario(build(data), sample=False)


PERIODIC = {"period": "200ms", "threshold": 0.1, "hold": 1}


def test_a_forced_rescue_does_not_block_the_return_to_the_repaired_circuit():
    # the periodic mode adds [1, 0, 1]; its cable (ocs1 port 2) fails at 600 ms and is back at 1 s.
    # Leaving it was forced: the mode makes it again (the run ended at 13.56 s before, every
    # decision 'return'-blocked; 7.05 s with no failure)
    res = run(b_scenario(8, [down("600ms", ("ocs1", 2)), up("1s", ("ocs1", 2))], schedule=[], periodic=PERIODIC))
    r = reconfigs(res)
    assert [x["trigger"] for x in r] == ["periodic", "link failure", "periodic"]
    assert r[2]["circuits_after"] == [[0, 0, 1], [1, 0, 1]] and r[2]["start_s"] < 1.2
    assert res.makespan_ns / 1e9 < 7.5


REQUEST = {"at": "200ms", "until": "5s", "src": 0, "dst": 2, "bandwidth": "10Gbps"}


def test_a_request_whose_circuit_fails_is_planned_again_on_a_free_plane():
    # rack 0's plane-0 port fails at 1 s for good: plane 1 is free (28.0 s before: never served again)
    data = b_scenario(4, [down("1s", ("ocs0", 1))], initial=[], schedule=[], requests=[REQUEST])
    data["jobs"][0]["flows"] = data["jobs"][0]["flows"][:1]
    res = run(data)
    r = reconfigs(res)
    assert [x["trigger"] for x in r] == ["request", "link failure", "request"]
    assert r[2]["circuits_after"] == [[1, 0, 1]] and r[2]["start_s"] == r[1]["end_s"]
    assert res.makespan_ns / 1e9 < 4.0 and "unserved_requests" not in res.controller["hybrid"]


def test_a_request_whose_circuit_fails_waits_for_the_link_up_or_is_reported_unserved():
    # both of rack 0's ports fail at 1 s: no circuit can serve the request until they are back
    fail = down("1s", ("ocs0", 1), ("ocs1", 1))
    data = b_scenario(4, [fail, up("1500ms", ("ocs0", 1), ("ocs1", 1))], initial=[], schedule=[],
                      requests=[REQUEST])
    data["jobs"][0]["flows"] = data["jobs"][0]["flows"][:1]
    r = reconfigs(run(data))
    assert [x["trigger"] for x in r] == ["request", "link failure", "request"] and r[2]["start_s"] == 1.5
    data["events"] = [fail]
    res = run(data)
    assert [x["trigger"] for x in reconfigs(res)] == ["request", "link failure"]
    (u,) = res.controller["hybrid"]["unserved_requests"]
    assert u == {"at_s": 0.2, "why": "its circuit [0, 0, 1] failed at 1 s, and every circuit it could be given "
                                     "again needed a failed port before its end at 5 s"}
    assert any("the request at 200 ms was not served: its circuit [0, 0, 1] failed" in n for n in res.notes)


def test_a_circuit_failing_during_another_reconfiguration_is_detoured_at_once():
    # [0, 0, 1] stays in force through a schedule move whose step 2 lasts 2 s (tagging); its
    # cable fails at 500 ms. The rescue waits for the move, but the pairs leave the dead
    # circuit at once (they stayed on it until 2.28 s before: 14.50 s against 12.72 s)
    data = b_scenario(1, [down("500ms", ("ocs0", 1))], initial=[[0, 0, 1], [1, 0, 2]],
                      schedule=[{"at": "200ms", "circuits": [[0, 0, 1], [1, 1, 2]]}])
    data["driver"]["delay"]["vlan_tag_time"] = "2s"
    res = run(data)
    r0, r1 = reconfigs(res)
    assert r0["failure_detours"] == [{"at_s": 0.5, "pairs": [[0, 1], [1, 0]]}]
    assert r1["trigger"] == "link failure" and r1["start_s"] == r0["end_s"]
    pushes = [e for e in res.applied_events if e["intent"] in ("push_rules", "remove_rules") and e["priority"] == 3]
    step3 = r1["steps"][-1]["start_s"]
    assert [(e["intent"], e["at_s"]) for e in pushes] == [("push_rules", 0.5), ("remove_rules", step3)]
    nofail = b_scenario(1, [down("500ms", ("ocs0", 1))], initial=[[0, 0, 1], [1, 0, 2]])
    nofail["driver"]["delay"]["vlan_tag_time"] = "2s"
    assert res.makespan_ns == run(nofail).makespan_ns  # as if the failure came with nothing running


def test_step_three_never_lifts_traffic_onto_a_circuit_that_failed_meanwhile():
    # the schedule's new circuit [1, 0, 1] fails at 350 ms, during step 3 (0.34-0.38 s)
    res = run(b_scenario(1, [down("350ms", ("ocs1", 2))], schedule=[{"at": "200ms", "circuits": [[1, 0, 1]]}]))
    r0, r1 = reconfigs(res)
    assert r0["failure_detours"] == [{"at_s": 0.35, "pairs": [[0, 1], [1, 0]]}]
    assert r1["trigger"] == "link failure" and r1["circuits_after"] == []
    assert [s["step"] for s in r1["steps"]] == [2, 3]  # detoured already: no step 1


def test_a_decision_that_reuses_the_last_plan_says_so_and_not_skipped():
    # both of rack 1's ports are down from 600 ms to 1 s: the plan of 1.14 s is the cached one,
    # and it is taken (it said 'skipped: unchanged' before)
    ports = (("ocs1", 2), ("ocs0", 2))
    res = run(b_scenario(1, [down("600ms", *ports), up("1s", *ports)], schedule=[], periodic=PERIODIC))
    r2 = reconfigs(res)[2]
    (d,) = [d for d in res.controller["hybrid"]["decisions"] if d["at_s"] == r2["start_s"]]
    assert d["plan"] == "cached" and "skipped" not in d and r2["trigger"] == "periodic"


def test_a_rack_cut_off_the_electrical_network_is_explained_and_not_detoured_onto_it():
    # rack 1's only electrical uplink (tor1 port 3) fails at 100 ms, before a schedule move at 200 ms:
    # step 1 detoured the pair onto it (nothing sent 0.20-0.38 s); now the pair stays on its circuit
    data = b_scenario(1, [down("100ms", ("tor1", 3))], schedule=[{"at": "200ms", "circuits": [[1, 0, 1]]}])
    res = run(data)
    (r,) = reconfigs(res)
    assert r["status"] == "done" and [s["step"] for s in r["steps"]] == [2, 3]
    before = run({**data, "events": [down("210ms", ("tor1", 3))]})  # the cable fails after step 1's push
    assert res.makespan_ns < before.makespan_ns - 30_000_000  # 1.82 s against 1.86 s
    (note,) = [n for n in res.notes if "electrical" in n]
    assert note.startswith("controller.hybrid: rack 1's electrical uplink (tor1:3 <-> core0:2) failed at 100 ms "
                           "and was not brought back")
    # no mode and no circuit: the run stalls at once, and the note says why the controller did nothing
    data = b_scenario(2, [down("100ms", ("tor1", 3))], initial=[], congestion={"poll": "100ms", "hold": 2})
    data["jobs"][0]["flows"] = [{"src": 4, "dst": 2, "bytes": "2GiB"}]
    res = run(data)
    assert res.status == "stalled" and reconfigs(res) == []
    (note,) = res.notes
    assert note.endswith("the congestion mode estimates a rack pair's demand from the bytes it sends, and a pair "
                         "with no path sends none, so no circuit was planned for it")


def rollback_scenario(*events, ocs0_fault=None) -> dict:
    """A schedule move of [0, 0, 1] to [1, 0, 1] at 200 ms that ocs1 refuses (until 10 s):
    ocs0 is moved back in the rollback (0.34-0.365 s)."""
    faults = [{"kind": "circuits", "switch": "ocs1", "from": "0s", "to": "10s"}]
    if ocs0_fault:
        faults.append({"kind": "circuits", "switch": "ocs0", "from": ocs0_fault[0], "to": ocs0_fault[1]})
    data = b_scenario(1, list(events), schedule=[{"at": "200ms", "circuits": [[1, 0, 1]]}])
    data["driver"]["faults"] = faults
    return data


def test_a_rollback_onto_a_failed_cable_is_not_resent_and_the_circuit_is_rescued():
    # [0, 0, 1]'s cable fails at 400 ms, during the rollback: ocs0 took the command back, and
    # nothing lights the circuit before a link_up. It was re-sent 10 times up to 13.88 s, the
    # repair pending at the end with no note and [0, 0, 1] reported in force
    res = run(rollback_scenario(down("400ms", ("ocs0", 2))))
    r0, r1 = reconfigs(res)
    assert r0["status"] == "failed, rolled back: last good configuration kept"
    assert r1["trigger"] == "link failure" and r1["circuits_after"] == []
    back = [e for e in res.applied_events
            if e["intent"] == "circuits" and e["switch"] == "ocs0" and e["pairs"] == [[1, 2]]]
    assert [e["at_s"] for e in back] == [0.34]
    h = res.controller["hybrid"]
    assert "rollback_pending" not in h and h["circuits"] == [] and "circuits_failed" not in h
    # with no mode, the rescued circuit is made again at the link_up (15.02 s before, 4.28 s now)
    res = run(rollback_scenario(down("400ms", ("ocs0", 2)), up("3s", ("ocs0", 2))))
    r2 = reconfigs(res)[2]
    assert (r2["trigger"], r2["start_s"], r2["circuits_after"]) == ("link repaired", 3.0, [[0, 0, 1]])
    assert res.makespan_ns / 1e9 < 4.5


def test_a_repair_pending_at_the_end_and_a_dead_circuit_in_force_are_noted():
    # ocs0 refuses from 300 ms on: the rollback cannot move it back, and the repair blocks the
    # rescue of [0, 0, 1], whose cable fails at 1 s
    res = run(rollback_scenario(down("1s", ("ocs0", 2)), ocs0_fault=("300ms", "60s")))
    h = res.controller["hybrid"]
    assert "rollback_pending" in h
    assert h["circuits"] == [] and h["circuits_failed"] == [[0, 0, 1]]
    assert any(n.startswith("controller.hybrid: the rollback of reconfiguration 0 was still being repaired when "
                            "the run ended") for n in res.notes)
    assert any(n.startswith("controller.hybrid: circuit [0, 0, 1] of the configuration in force was on a failed "
                            "cable") and "the rescue was waiting for the repair" in n for n in res.notes)


@pytest.mark.parametrize("change, field, words", [
    (lambda d: d["controller"]["hybrid"].update(initial=[[True, 0, 1]]), "controller.hybrid.initial.0.0",
     "a plane or rack number, got true"),  # it was taken as plane 1
    (lambda d: d["controller"]["hybrid"].update(schedule=[{"at": "1s", "circuits": [[0, False, 1]]}]),
     "controller.hybrid.schedule.0.circuits.0.1", "a plane or rack number, got false"),
    (lambda d: d["events"].append({"at": "1s", "link_down": []}), "events.0.link_down", "must not be empty"),
    (lambda d: d["controller"]["hybrid"].update(requests=[{"at": "1s", "src": True, "dst": 2, "bandwidth": "1Gbps"}]),
     "controller.hybrid.requests.0.src", "a host number or name, got true"),  # it was taken as host 1
])
def test_booleans_as_circuit_numbers_and_an_empty_link_list_are_refused(tmp_path, change, field, words):
    data = b_scenario()
    change(data)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(path), "--json", "--no-progress"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and f"{path}: {field}: {words}" in p.stderr and "Traceback" not in p.stderr


def test_the_rescue_is_make_before_break_under_break_before_make_too():
    res = run(b_scenario(1, [down("1s", ("ocs0", 1))], method="break-before-make"))
    (r,) = reconfigs(res)
    assert r["trigger"] == "link failure" and r["method"] == "make-before-break"
    assert [s["step"] for s in r["steps"]] == [1, 2, 3]


def test_no_mode_backoff_is_reported_without_modes():
    # a schedule-only controller whose move fails: nothing backs off
    res = run(rollback_scenario())
    h = res.controller["hybrid"]
    assert reconfigs(res)[0]["status"].startswith("failed, rolled back")
    assert "failed_in_a_row" not in h and "modes_retry_from_s" not in h
    assert "modes_retry_from_s" not in reconfigs(res)[0]


def test_a_new_circuit_failing_in_step_two_needs_no_failure_detour():
    # make-before-break: its pairs are on step 1's detour, and step 2 fails (not lit) and rolls back
    res = run(b_scenario(1, [down("280ms", ("ocs1", 2))], schedule=[{"at": "200ms", "circuits": [[1, 0, 1]]}]))
    (r,) = reconfigs(res)
    assert r["status"].startswith("failed, rolled back") and "failure_detours" not in r
    assert not [e for e in res.applied_events if e.get("priority") == 3]
