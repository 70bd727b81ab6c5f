"""The openflow driver and the testbed on real Open vSwitch bridges in namespaces.

Marked ``ovs``: in CI these run (scripts/setup.sh installs Open vSwitch and iperf3).
Each test checks that the run left no namespace, bridge or link behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

pytestmark = pytest.mark.ovs

if os.geteuid() != 0 or shutil.which("ovs-vsctl") is None or shutil.which("iperf3") is None:
    pytest.skip("needs root, Open vSwitch and iperf3 (scripts/setup.sh)", allow_module_level=True)

from netsteer.control.intents import PairRule, PushRules  # noqa: E402
from netsteer.drivers.openflow.driver import OpenFlowDriver  # noqa: E402
from netsteer.drivers.openflow.flows import HybridLayout  # noqa: E402
from netsteer.drivers.openflow.osken import OskenSwitch  # noqa: E402
from netsteer.drivers.openflow.switch import OfctlSwitch, SwitchError  # noqa: E402
from netsteer.emulate.hybrid_reconfig import scenario  # noqa: E402
from netsteer.emulate.run import controller_share, emulate, open_switches  # noqa: E402
from netsteer.emulate.testbed import Testbed, leftovers  # noqa: E402


def built(data):
    from netsteer.scenario import Scenario, ScenarioModel, build_scenario
    return build_scenario(Scenario(ScenarioModel.model_validate(data), None))


def run(method: str, rules: int):
    data = scenario(rules, method, period_s=1.0, duration_s=3.0, rate_div=100)
    rep = emulate(built(data), udp_bps=5e6)  # through the os-ken application
    assert rep["channel"] == "osken" and rep["testbed"].startswith("ns")
    assert not leftovers(rep["testbed"])
    return rep


def test_make_before_break_loses_nothing_and_break_before_make_loses_packets():
    mbb = run("make_before_break", 100)
    bbm = run("break_before_make", 100)
    for rep in (mbb, bbm):
        r = rep["controller"]["reconfigurations"]
        assert len(r) == 2 and all(x["status"] == "done" for x in r)
        assert rep["flows"][0]["packets"] > 500  # the stream ran the whole time
    # make-before-break: the detour carries the stream through both reconfigurations;
    # break-before-make: the stream has no path while the circuit is re-paired
    f_mbb, f_bbm = mbb["flows"][0], bbm["flows"][0]
    windows = [(r["start_s"], r["end_s"]) for r in mbb["controller"]["reconfigurations"]]
    assert f_mbb["lost_during_reconfig"] == 0, (f_mbb["lost_intervals"], windows)
    assert f_bbm["lost_during_reconfig"] > 0, (f_bbm["lost_intervals"], windows)
    assert f_bbm["lost_during_reconfig"] <= f_bbm["lost_packets"]
    # the controller's share is what the bundles took, within each step
    for s in controller_share(mbb["controller"], mbb["pushes"]):
        assert [x["step"] for x in s["steps"]] == [1, 2, 3]
        assert 0 < s["controller_delay_s"] <= s["delay_s"] + 1e-6
    # real counters: the pair's bytes went through rack 0's ToR
    assert mbb["counters"]["pair_bytes"][0][1] > 500 * 1200


class Refusing(OfctlSwitch):
    """A real switch sent one flow-mod it must refuse (an output to a port number
    OpenFlow reserves), inside the bundle of a real change."""

    def bundle(self, lines):
        super().bundle(lines + ["flow add table=0,priority=7,ip actions=output:4294967295"])


def test_a_refused_bundle_leaves_every_switch_on_its_last_good_table():
    b = built(scenario(0, "make_before_break", period_s=1.0, duration_s=2.0, rate_div=100))
    lay = HybridLayout.of(b.topology, b.routing)
    with Testbed(b.topology) as tb:
        sw = {n: OfctlSwitch(br) for n, br in tb.bridges.items()}
        sw[lay.tors[1]] = Refusing(tb.bridges[lay.tors[1]])
        drv = OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=1)
        before = {n: sorted(s.flow_bytes(t)) for n, s in sw.items() for t in range(5)}
        a = drv.apply(PushRules(2, (PairRule(0, 1), PairRule(1, 0))))
        assert not a.ok and "tor1" in a.failed and "rolled back" in a.failed
        assert {n: sorted(s.flow_bytes(t)) for n, s in sw.items() for t in range(5)} == before
        # a switch that is gone: a clear error, not a hang
        gone = OfctlSwitch("nosuchbridge0")
        with pytest.raises(SwitchError, match="nosuchbridge0"):
            gone.bundle(["flow add table=0,priority=1 actions=drop"])
        drv.close()
        prefix = tb.prefix
    assert not leftovers(prefix)


def test_cli_reproduce_emulate_json(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([shutil.which("netsteer") or ".venv/bin/netsteer", "reproduce", "--emulate", "hybrid-reconfig",
                        "--json", "--rules", "100", "--period", "1", "--duration", "2", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert json.loads(out.read_text()) == rep
    runs = rep["iperf"]
    assert [(r["rules"], r["mode"]) for r in runs] == [(100, "make_before_break"), (100, "break_before_make")]
    for r in runs:
        assert set(r) >= {"rules", "mode", "avg_gbps", "delay_s", "controller_delay_s", "lost_packets"}
        assert r["avg_gbps"] > 0 and r["delay_s"] > 0 and r["simulated"]["avg_gbps"] > 0
    assert runs[0]["lost_during_reconfig"] == 0, runs[0]["lost_at_s"]
    assert runs[0]["lost_packets"] >= runs[0]["lost_during_reconfig"]


def held(br: str) -> list[str]:
    """What a bridge holds, read independently of the driver (ovs-ofctl, no counters)."""
    cmd = ["ovs-ofctl", "-O", "OpenFlow14", "--no-stats"]
    flows = subprocess.run([*cmd, "dump-flows", br], capture_output=True, text=True, check=True).stdout
    groups = subprocess.run([*cmd, "dump-groups", br], capture_output=True, text=True, check=True).stdout
    return sorted(ln.strip() for ln in (flows + groups).splitlines() if "actions=" in ln)


def ipv4_dp_flows() -> list[str]:
    """The userspace datapath's cached IPv4 flows (the run's hosts send no other IPv4)."""
    out = subprocess.run(["ovs-appctl", "dpctl/dump-flows"], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.splitlines() if "eth_type(0x0800)" in ln]


def test_a_settled_change_leaves_no_cached_flow_of_the_old_tables():
    """A bundle's reply means the tables changed; the datapath keeps forwarding by its
    cached flows until revalidated. After the driver's settle none is left: the next
    packet of every flow goes through the tables in force."""
    b = built(scenario(0, "make_before_break", period_s=1.0, duration_s=2.0, rate_div=100))
    lay = HybridLayout.of(b.topology, b.routing)
    with Testbed(b.topology) as tb:
        sw = {n: OfctlSwitch(br) for n, br in tb.bridges.items()}
        drv = OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=60, settle=tb.settle)
        dst = lay.servers_per_rack  # a server of rack 1: its traffic crosses the ToRs
        subprocess.run(tb.exec(0, "ping", "-c", "3", "-i", "0.05", "-W", "1", tb.ips[dst]), check=True, capture_output=True)
        assert ipv4_dp_flows(), "the pings left no cached datapath flow"
        assert drv.apply(PushRules(2, (PairRule(0, 1), PairRule(1, 0)))).ok
        assert ipv4_dp_flows() == []
        # and the new tables forward: rack 0 reaches rack 1 over the electrical detour
        subprocess.run(tb.exec(0, "ping", "-c", "3", "-i", "0.05", "-W", "1", tb.ips[dst]), check=True, capture_output=True)
        drv.close()
        prefix = tb.prefix
    assert not leftovers(prefix)


class RefusingOsken(OskenSwitch):
    """Through os-ken, a bundle with one flow-mod the switch must refuse."""

    def bundle(self, lines):
        super().bundle(lines + ["flow add table=0,priority=7,ip actions=output:4294967295"])


def test_os_ken_refusal_and_a_switch_disconnecting_mid_reconfiguration_on_real_ovs():
    b = built(scenario(0, "make_before_break", period_s=1.0, duration_s=2.0, rate_div=100))
    lay = HybridLayout.of(b.topology, b.routing)
    t0, t1 = lay.tors[0], lay.tors[1]
    with Testbed(b.topology) as tb, open_switches(tb, "osken") as sw:
        ctl = sw[t0].ctl
        drv = OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=60)
        start = {n: held(br) for n, br in tb.bridges.items()}
        assert all(start.values())
        # a refused bundle through os-ken: the switch's own words, every switch as it was
        drv.switches[t1] = RefusingOsken(tb.bridges[t1], ctl, sw[t1].dpid)
        a = drv.apply(PushRules(2, (PairRule(0, 1), PairRule(1, 0))))
        assert not a.ok and "tor1" in a.failed and "OFPBAC_BAD_OUT_PORT" in a.failed and "rolled back" in a.failed
        assert {n: held(br) for n, br in tb.bridges.items()} == start
        drv.switches[t1] = sw[t1]
        drv.resync()  # the refusing switch was marked stale
        assert not drv.stale
        # step 1 of a change reaches both ToRs
        assert drv.apply(PushRules(2, (PairRule(0, 1), PairRule(1, 0)))).ok
        step1 = {n: held(br) for n, br in tb.bridges.items()}
        assert step1[t0] != start[t0] and step1[t1] != start[t1]
        # tor1's OpenFlow connection drops before step 2
        tb.disconnect(t1)
        deadline = time.monotonic() + 10
        while sw[t1].dpid in ctl.connected():
            assert time.monotonic() < deadline, "the os-ken app did not see tor1 go"
            time.sleep(0.05)
        a = drv.apply(PushRules(3, (PairRule(0, 1), PairRule(1, 0))))
        assert not a.ok and "tor1" in a.failed and "not connected" in a.failed
        assert {n: held(br) for n, br in tb.bridges.items()} == step1  # tor0 rolled back to step 1
        assert drv.stale == {t1}
        # while away tor1 loses its table (a reboot); when it reconnects it gets step 1 again
        subprocess.run(["ovs-ofctl", "-O", "OpenFlow14", "del-flows", tb.bridges[t1]], check=True)
        assert held(tb.bridges[t1]) != step1[t1]
        drv.resync()
        assert drv.stale == {t1}  # still away: stays stale, nothing raised
        tb.connect(ctl.port, [t1])
        ctl.wait_connected([sw[t1].dpid])
        assert drv.advance(drv.now) == "until"  # every advance re-syncs stale switches
        assert not drv.stale
        assert {n: held(br) for n, br in tb.bridges.items()} == step1
        drv.close()
        prefix = tb.prefix
    assert not leftovers(prefix)


def congestion_scenario():
    """Racks 0 and 1 joined through rack 2, whose own traffic to rack 1 congests
    the 2->1 circuit (scenarios/hybrid-congestion.yaml with 512 MiB transfers)."""
    import yaml
    from pathlib import Path

    d = yaml.safe_load((Path(__file__).parents[2] / "scenarios" / "hybrid-congestion.yaml").read_text())
    for f in d["jobs"][0]["flows"]:
        f["bytes"] = "512MiB"
    return d


def _gbit_until(flow: dict, t_s: float) -> float:
    """Gbit the flow's receiver counted in its 0.1 s intervals that end by ``t_s``."""
    total, prev = 0.0, flow["start_s"]
    for end, gbps in zip(flow["time_s"], flow["series_gbps"]):
        if end > t_s + 1e-9:
            break
        total += gbps * (end - max(prev, flow["start_s"]))
        prev = end
    return total


def test_congestion_triggers_on_real_switches_and_links_hold_their_rates():
    from netsteer.emulate.run import compare, predict

    # half the default rate: two cores forward the four flows at their rates even
    # when the rest of the test suite loads them
    rep = emulate(built(congestion_scenario()), max_rate_bps=50e6)
    assert rep["scale"] == 50e6 / 10e9
    sim = predict(built(congestion_scenario()))
    assert not leftovers(rep["testbed"])
    recs = rep["controller"]["reconfigurations"]
    assert recs and recs[0]["trigger"] == "congestion" and recs[0]["status"] == "done"
    assert sim["reconfigurations"] and sim["reconfigurations"][0]["trigger"] == "congestion"
    diff = compare(rep, sim)
    assert diff["reconfigurations"][0]["same_circuits"]
    # hosts 0 and 4 both send to host 2: what host 2 received from both is at most its
    # 10 Gbit/s NIC (shaped on both directions of every link, switch ports included)
    # times the span from the first start to the last end. Their average rates cannot
    # be added: they cover different spans (the transfer ends first), and the 0.1 s
    # intervals of the two iperf servers do not line up closely enough to sum them
    by = {(f["src"], f["dst"]): f for f in rep["flows"]}
    span = max(by[k]["time_s"][-1] for k in ((0, 2), (4, 2))) - min(by[k]["start_s"] for k in ((0, 2), (4, 2)))
    gbit = sum(_gbit_until(by[k], by[k]["time_s"][-1]) for k in ((0, 2), (4, 2)))
    assert gbit <= 10 * 1.05 * span, (gbit, span)
    g = {k: f["gbps"] for k, f in by.items()}
    assert min(g.values()) > 1.0
    assert len(diff["flow_gbps"]) == 4 and all(x is not None for x in diff["flow_gbps"])
    # the controller's share includes its decision (planning) time
    share = controller_share(rep["controller"], rep["pushes"], rep["decisions"])[0]
    assert share["decide_s"] > 0 and share["controller_delay_s"] <= share["delay_s"] + 1e-6
