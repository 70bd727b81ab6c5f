"""``netsteer emulate``'s bookkeeping (emulate/run.py), without a testbed: iperf3
reports as captured on the testbed, the simulator's prediction, the comparison."""

from __future__ import annotations

from pathlib import Path

import pytest

import netsteer.emulate.testbed as _testbed
from netsteer.emulate.run import Flow, _summary, predict

CHECK_MACHINE = _testbed.check_machine  # the real one, before a test replaces it

ROOT = Path(__file__).resolve().parents[2]


def congestion():
    from netsteer.scenario import build_scenario, load_scenario

    return build_scenario(load_scenario(ROOT / "scenarios" / "hybrid-congestion.yaml"))


class Started(Exception):
    """emulate got as far as building its testbed."""


def no_testbed(monkeypatch) -> None:
    """emulate raises :class:`Started` where it would build a testbed (no OVS, no root
    needed here)."""
    import netsteer.emulate.run as run
    import netsteer.emulate.testbed as testbed

    def fake(*a, **k):
        raise Started()

    monkeypatch.setattr(run, "Testbed", fake)
    monkeypatch.setattr(testbed, "check_machine", lambda topo, max_rate_bps=100e6, **k: max_rate_bps / 10e9)


def _udp_server(rx_bytes: int, seconds: float) -> dict:
    """An iperf3 3.12 UDP server's ``--json`` report as captured on the testbed: its
    ``end.sum`` holds 0 bytes, what it received is in ``end.sum_received``."""
    zero = {"start": 0, "end": seconds, "seconds": seconds, "bytes": 0, "bits_per_second": 0, "jitter_ms": 0.03,
            "lost_packets": 0, "packets": rx_bytes // 1200, "lost_percent": 0, "sender": False}
    got = dict(zero, bytes=rx_bytes, bits_per_second=rx_bytes * 8 / seconds)
    return {"intervals": [{"sum": dict(got, end=0.1, seconds=0.1, lost_packets=2)}],
            "end": {"streams": [{"udp": dict(zero, out_of_order=3)}], "sum": zero,
                    "sum_sent": dict(zero, sender=True), "sum_received": got}}


def test_a_udp_flow_reports_what_the_server_received_not_zero():
    client = {"end": {"sum": {"lost_packets": 9, "packets": 17896}}}
    r = _summary(Flow(0, 2, 0.0, 1.0), client, _udp_server(625_200, 1.0), udp=True, scale=0.01)
    assert r["received_bytes"] == 625_200
    assert r["emulated_mbps"] == pytest.approx(5.0016)
    assert r["gbps"] == pytest.approx(0.50016)  # back at the topology's rates
    assert (r["lost_packets"], r["packets"], r["out_of_order"]) == (9, 17896, 3)


def test_the_prediction_for_a_udp_run_is_capped_at_the_udp_rate_and_says_so():
    full = predict(congestion())
    assert min(f["gbps"] for f in full["flows"]) > 4  # TCP-like flows share 10 Gbit/s links
    udp = predict(congestion(), udp_bps=2e9)
    assert [f["gbps"] for f in udp["flows"]] == [2.0] * 4
    assert all(f["capped_at_udp"] for f in udp["flows"])
    assert "UDP at 2 Gbit/s" in udp["note"]


def test_the_planners_scipy_import_is_loaded_before_the_timed_run_not_by_the_simulator():
    """The emulation imports scipy.optimize before its testbed (and clock) starts, so
    the first reconfiguration's decide_s holds no cold import; building a scenario
    (the simulator's start-up) still does not import it."""
    import subprocess
    import sys

    code = f"""
import sys
import netsteer.emulate.run as run
from netsteer.scenario import build_scenario, load_scenario
built = build_scenario(load_scenario({str(ROOT / 'scenarios' / 'hybrid-congestion.yaml')!r}))
assert 'scipy.optimize' not in sys.modules, 'imported by the simulator'
class Started(Exception):
    pass
def testbed(*a, **k):
    raise Started('scipy.optimize' in sys.modules)
run.Testbed = testbed
run.check_machine = lambda topo, **k: 0.01  # no root, no tools needed to get there
import netsteer.emulate.testbed as tb
tb.check_machine = run.check_machine
try:
    run.emulate(built)
except Started as e:
    print('loaded' if e.args[0] else 'cold')
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "loaded", p.stderr[-2000:]


def test_with_a_time_scale_only_the_start_is_scaled_back_not_the_delay():
    """Scenario times are multiplied by --time-scale, so an emulated start is divided
    by it; a reconfiguration's delay (pushes, settle, switching time) is not scaled,
    and the JSON difference matches the text's 'delay 0.636 s ... simulated 0.025 s'."""
    from netsteer.emulate.run import compare

    circ = [[0, 0, 1]]
    emulated = {"time_scale": 2.0, "flows": [],
                "controller": {"reconfigurations": [{"start_s": 1.0, "delay_s": 0.636, "circuits_after": circ}]}}
    simulated = {"flows": [], "reconfigurations": [{"start_s": 0.5, "delay_s": 0.025, "circuits_after": circ}]}
    d = compare(emulated, simulated)["reconfigurations"][0]
    assert d["start_s"] == pytest.approx(0.0)
    assert d["delay_s"] == pytest.approx(0.611)
    assert d["same_circuits"]


@pytest.mark.parametrize("extra,field", [
    ("driver:\n  faults: [{kind: circuits, switch: ocs0, from: 0s, to: 30s}]\n", "driver.faults"),
    ("events:\n  - {at: 0ms, routing: {engine: minhop}}\n", "events.0"),
])
def test_driver_faults_and_events_the_testbed_would_leave_out_are_refused_naming_the_file(tmp_path, monkeypatch,
                                                                                          extra, field):
    """The simulator applies them; an emulation that ignored them would be compared with
    a simulated run that had failures it did not have."""
    from netsteer.emulate.run import emulate

    no_testbed(monkeypatch)
    from netsteer.errors import NetsteerError
    from netsteer.scenario import build_scenario, load_scenario

    text = (ROOT / "scenarios" / "hybrid-congestion.yaml").read_text().replace("driver:\n", "driver_:\n")
    f = tmp_path / "s.yaml"
    # the scenario's own driver block, with the faults added to it
    f.write_text(text.replace("driver_:\n", extra if field == "driver.faults" else "driver:\n") +
                 ("" if field == "driver.faults" else extra))
    with pytest.raises(NetsteerError) as e:
        emulate(build_scenario(load_scenario(f)))
    assert e.value.message().startswith(f"{f}: {field}: emulate does not")


def scenario_file(tmp_path, **replace) -> Path:
    """hybrid-congestion.yaml with some of its text replaced."""
    text = (ROOT / "scenarios" / "hybrid-congestion.yaml").read_text()
    for old, new in replace.values():
        assert old in text
        text = text.replace(old, new)
    f = tmp_path / "s.yaml"
    f.write_text(text)
    return f


def test_a_transfers_deadline_follows_its_own_path_not_the_slowest_link(tmp_path, monkeypatch):
    """With a 100 Mbit/s core that no transfer crosses, the run is not refused ('would
    last 172 s'): `netsteer run` finishes it in 3.64 s, and each transfer's deadline
    follows from its simulated time; no -1 ns start leaks from the DAG."""
    import netsteer.emulate.run as run
    from netsteer.scenario import build_scenario, load_scenario

    no_testbed(monkeypatch)
    seen = {}
    real = run.check_length
    monkeypatch.setattr(run, "check_length",
                        lambda built, flows, *a: (seen.update(flows=flows), real(built, flows, *a)))
    f = scenario_file(tmp_path, core=("core_bandwidth: 1Gbps", "core_bandwidth: 100Mbps"))
    with pytest.raises(Started):
        run.emulate(build_scenario(load_scenario(f)))
    flows = seen["flows"]
    assert [x.start_s for x in flows] == [0.0] * 4
    transfers = [x for x in flows if x.bytes is not None]
    assert len(transfers) == 2 and all(5 < x.duration_s < 20 for x in transfers)


def test_a_long_job_is_refused_naming_the_job_in_the_file_not_the_time_scale(tmp_path, monkeypatch):
    from netsteer.emulate.run import emulate
    from netsteer.errors import NetsteerError
    from netsteer.scenario import build_scenario, load_scenario

    no_testbed(monkeypatch)
    f = scenario_file(tmp_path, bulk=("{src: 4, dst: 2, duration: 3s}", "{src: 4, dst: 2, duration: 400s}"))
    with pytest.raises(NetsteerError) as e:
        emulate(build_scenario(load_scenario(f)))
    msg = e.value.message()
    assert msg.startswith(f"{f}: jobs.1: job 'background': its flow 4 -> 2 runs until 400 s"), msg
    assert "time" not in msg.split(":")[1]


class _Proc:
    """An iperf3 client that sends until ``ends_ns`` and then writes its report, a
    long run's more than a pipe holds: it exits only once that is read."""

    def __init__(self, ends_ns, drv):
        self.ends_ns, self.drv, self.read = ends_ns, drv, False

    def poll(self):
        return 0 if self.read else None

    def communicate(self, timeout=None):
        import time

        while self.drv.now < self.ends_ns:
            time.sleep(0.001)
        self.read = True
        return '{"end": {}}', ""


class _Driver:
    """A driver on a simulated clock whose deadline (end_ns) is far away."""

    def __init__(self):
        self.now, self.end_ns, self._pending = 0, 60_000_000_000, []

    def advance(self, until):
        import time

        time.sleep(0.02)  # the wall time a tick takes: the report readers run meanwhile
        self.now = self.end_ns if until is None else min(until, self.end_ns)
        return "done" if self.now >= self.end_ns else "until"


def test_the_run_ends_when_its_flows_do_not_at_the_deadline():
    """The loop stopped at the deadline (17.7 s on hybrid-congestion, whose flows end
    at about 5.6 s: 12 s of idle wall time); it ends within a tick of the last flow,
    once the last scheduled reconfiguration came, also when a client exits only once
    its report is read (at --udp 500Mbps: a 34 s run's report outgrew the pipe)."""
    from netsteer.emulate.run import TICK_NS, _Starter

    drv = _Driver()
    procs = [_Proc(3_000_000_000, drv), _Proc(5_600_000_000, drv)]
    st = _Starter(drv, None, [(Flow(0, 1, 0.0, 3.0), []), (Flow(2, 3, 0.0, 17.0, 1 << 30), [])], procs)
    while st.advance(None) != "done":
        pass
    assert 5_600_000_000 <= drv.now <= 5_600_000_000 + 5 * TICK_NS
    assert st.report(procs[1]) == {"end": {}}
    drv = _Driver()
    st = _Starter(drv, None, [(Flow(0, 1, 0.0, 3.0), [])], [_Proc(1_000_000_000, drv)], 8_000_000_000)
    while st.advance(None) != "done":
        pass
    assert drv.now == 8_000_000_000  # a scheduled reconfiguration after the flows still comes


def test_a_transfer_reports_how_long_it_ran_not_its_deadline():
    client = {"end": {"sum_sent": {"seconds": 5.61, "bytes": 1}, "sum_received": {"bits_per_second": 4e7}}}
    r = _summary(Flow(0, 2, 0.0, 12.9, 1 << 30), client, {"end": {}}, udp=False, scale=0.01)
    assert (r["duration_s"], r["deadline_s"], r["start_s"]) == (5.61, 12.9, 0.0)


@pytest.mark.parametrize("replace,field", [
    ({"ctl": ("controller:\n  hybrid:", "controller_:\n  hybrid:")}, "controller"),
    ({"racks": ("racks: 3, servers_per_rack: 2", "racks: 3, servers_per_rack: 12")}, "topology"),
    ({"core": ("core_bandwidth: 1Gbps", "core_bandwidth: 1Mbps")}, "topology"),
])
def test_emulate_refusals_of_what_the_scenario_holds_name_its_file(tmp_path, monkeypatch, replace, field):
    """'controller: emulate needs ...', 'topology: ... has 36 hosts', 'topology: link
    rates ... cannot all be emulated' named no file, where a parse error does."""
    import netsteer.emulate.testbed as testbed
    from netsteer.emulate.run import emulate
    from netsteer.errors import NetsteerError
    from netsteer.scenario import build_scenario, load_scenario

    no_testbed(monkeypatch)
    # the real machine check, on a machine that has root and every tool
    monkeypatch.setattr(testbed, "check_machine", CHECK_MACHINE)
    monkeypatch.setattr(testbed.os, "geteuid", lambda: 0)
    monkeypatch.setattr(testbed.shutil, "which", lambda tool: "/bin/" + tool)
    f = scenario_file(tmp_path, **replace)
    text = f.read_text()
    if field == "controller":  # a scenario without a hybrid controller: drop the block
        text = text.split("controller_:")[0] + "driver:" + text.split("driver:")[1]
        f.write_text(text)
    with pytest.raises(NetsteerError) as e:
        emulate(build_scenario(load_scenario(f)))
    assert e.value.message().startswith(f"{f}: {field}: "), e.value.message()
