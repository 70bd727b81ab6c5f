"""A priority change during a run goes through the controller core (a SetQos intent
from the QoS controller, carried out by the sim driver) and takes effect then."""

from __future__ import annotations

import json
import math

import pytest
from qos_samples import two_flows

from netsteer.control.intents import SetQos
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario

STRICT = """\
max_vls: 2
high_limit: 255
vlarb_high: [[0, 4]]
vlarb_low: [[1, 64]]
classes:
  - {name: app, sl: 0, jobs: [mpi]}
  - {name: io, sl: 1, jobs: [io]}
"""


def _run(text):
    built = build_scenario(parse_scenario(text))
    return built, run_scenario(built, sample=False)


def test_raising_io_to_mpi_sl_at_50ms():
    # 0..50 ms: mpi alone on the link (strict high), io waits; then both on VL 0 share
    # equally: mpi's last 50 MB take 100 ms (done at 150 ms), io has 50 MB left then,
    # alone at 1 GB/s (done at 200 ms)
    built, res = _run(two_flows(STRICT + "changes: [{at: 50ms, job: io, sl: 0}]\n"))
    assert res.completion_ns.tolist() == [150_000_000, 200_000_000]
    assert res.sent_bytes.tolist() == [1e8, 1e8]
    qos = [e for e in res.applied_events if e["intent"] == "qos"]
    assert qos == [{"intent": "qos", "job": "io", "sl": 0, "flows": 1, "hosts": 2, "tables": False,
                    "at_s": 0.05, "done_s": 0.05}]
    assert res.controller["qos"]["changes"][0]["job"] == "io"


def test_a_change_by_class_is_reported_under_the_class():
    # the same change named by the QoS class io (its only job is io): same times, and
    # the reports say which class moved, not a job of that name
    built, res = _run(two_flows(STRICT + "changes: [{at: 50ms, class: io, sl: 0}]\n"))
    assert res.completion_ns.tolist() == [150_000_000, 200_000_000]
    (qos,) = [e for e in res.applied_events if e["intent"] == "qos"]
    assert qos["class"] == "io" and "job" not in qos
    (change,) = res.controller["qos"]["changes"]
    assert change["class"] == "io" and "job" not in change
    assert built.qos.summary()["changes"][0]["by"] == "class"


def test_without_change_strict_priority_holds():
    built, res = _run(two_flows(STRICT))
    assert res.completion_ns.tolist() == [100_000_000, 200_000_000]


def test_lowering_mpi_mid_flow_keeps_bytes_sent():
    # mpi moves to io's low SL at 30 ms with 30 MB sent: both on VL 1 from then, 70 MB
    # left for mpi at 0.5 GB/s (done 170 ms), io 100 MB: 70 MB by 170 ms, 30 MB alone
    built, res = _run(two_flows(STRICT + "changes: [{at: 30ms, job: mpi, sl: 1}]\n"))
    assert res.completion_ns.tolist() == [170_000_000, 200_000_000]


def test_a_change_during_a_flows_compute_delay_keeps_the_rest_of_the_delay():
    # io computes 150 ms before sending; moved to mpi's SL at 50 ms it still sends from
    # 150 ms (mpi is done at 100 ms), not at once
    io = "flows: [{src: 1, dst: 3, bytes: 100MB, delay: 150ms}]"
    built, res = _run(two_flows(STRICT + "changes: [{at: 50ms, job: io, sl: 0}]\n", io=io))
    assert res.completion_ns.tolist() == [100_000_000, 250_000_000]


def test_a_change_to_the_sl_a_flow_is_on_changes_nothing():
    # 10 ms links: a flow that paid its path's latency again would finish 20 ms late
    slow = two_flows(STRICT).replace("link_latency: 0ns", "link_latency: 10ms")
    _, alone = _run(slow)
    _, res = _run(slow + "  changes: [{at: 150ms, job: io, sl: 1}]\n")
    assert res.completion_ns.tolist() == alone.completion_ns.tolist()


def test_bulk_noise_stays_background_and_keeps_its_stop():
    io = "bulk: [{src: 1, dst: 3, duration: 80ms}]"
    built, res = _run(two_flows(STRICT + "changes: [{at: 20ms, job: io, sl: 0}]\n", io=io))
    # from 20 ms the bulk flow shares VL 0 with mpi until it stops at 80 ms: mpi sends
    # 20 MB, then 30 MB in 60 ms, then 50 MB alone: done at 130 ms
    assert res.completion_ns[0] == 130_000_000
    assert res.completion_ns[1] == 80_000_000 and res.sent_bytes[1] == pytest.approx(3e7)


DEPENDENT = """\
max_vls: 2
high_limit: 255
vlarb_high: [[0, 4]]
vlarb_low: [[1, 64]]
classes: [{name: app, sl: 0, jobs: [mpi]}, {name: io, sl: 1, jobs: [io]}]
changes: [{at: 1ms, job: mpi, sl: 1}]
"""


def _dependent():
    # mpi: a (100 MB into host 3), then b (1 MB into host 2) after it; io: 100 MB into host 3
    return two_flows(DEPENDENT).replace(
        "flows: [{src: 0, dst: 3, bytes: 100MB}]",
        "flows: [{id: a, src: 0, dst: 3, bytes: 100MB}, {src: 0, dst: 2, bytes: 1MB, after: [a]}]")


def test_a_change_on_a_flow_others_wait_for_runs_and_they_start_when_it_ends():
    # (the flow engine used to refuse this: its continuation would have released b early)
    built, res = _run(_dependent())
    assert [e.get("failed") for e in res.applied_events if e["intent"] == "qos"] == [None]
    assert res.status == "done"
    a, b, io = 0, 1, 2
    rate, t = 1e9, 1_000_000  # the 8 Gbit/s links in bytes/s; the change, ns
    # a alone (strict high) until t, then on io's low VL beside it: half the link each
    a_done = t + math.ceil((100e6 - rate * t * 1e-9) / (rate / 2) * 1e9)
    assert res.completion_ns[a] == a_done
    assert res.release_ns[b] == a_done
    assert res.completion_ns[b] == a_done + math.ceil(1e6 / rate * 1e9)  # alone into host 2, no latency
    io_sent = rate / 2 * (a_done - t) * 1e-9
    assert res.completion_ns[io] == a_done + math.ceil((100e6 - io_sent) / rate * 1e9)


def test_a_change_mid_flow_pays_no_path_latency_again():
    # 1 us links: 2 us of latency per flow. mpi (high) sends alone from 2 us; at 50 ms
    # io joins its VL and they share the link
    text = two_flows(STRICT + "changes: [{at: 50ms, job: io, sl: 0}]\n").replace("link_latency: 0ns",
                                                                                  "link_latency: 1us")
    built, res = _run(text)
    rate, lat, t = 1e9, 2 * 1000, 50_000_000
    mpi_sent = rate * (t - lat) * 1e-9
    mpi_done = t + math.ceil((100e6 - mpi_sent) / (rate / 2) * 1e9)
    io_sent = rate / 2 * (mpi_done - t) * 1e-9  # starved until t: nothing before
    io_done = mpi_done + math.ceil((100e6 - io_sent) / rate * 1e9)
    assert res.completion_ns.tolist() == [mpi_done, io_done]
    assert res.release_ns.tolist() == [0, 0]
    assert res.sent_bytes.tolist() == [1e8, 1e8]


def test_a_run_with_changes_is_the_same_to_the_ns():
    runs = [_run(_dependent())[1] for _ in range(2)]
    for k in ("completion_ns", "release_ns", "sent_bytes", "final_channel_bytes"):
        assert getattr(runs[0], k).tolist() == getattr(runs[1], k).tolist(), k
    assert runs[0].stats == runs[1].stats


def test_sim_driver_refuses_unknown_flow():
    built = build_scenario(parse_scenario(two_flows(STRICT)))
    from netsteer.sim.driver import SimDriver

    drv = SimDriver(built.topology, built.routing, built.dag)
    a = drv.apply(SetQos(sl=0, job="x", flows=(7,), config=built.qos.config))
    assert a.failed == "flow 7 does not exist"


def test_cli_reports_the_change(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(STRICT + "changes: [{at: 50ms, job: io, sl: 0}]\n"))
    code, out, err = cli("run", f, "--json", "--no-progress")
    assert code == 0, err
    d = json.loads(out)
    assert [j["completion_s"] for j in d["jobs"]] == pytest.approx([0.15, 0.2], abs=1e-12)


def test_the_same_change_at_packet_level_moves_the_flow_in_place():
    # at packet level the intent is Engine.set_sl: the same shape as the flow level's
    # change (150 and 200 ms), within the headers' 1.3 % and the packet timing
    text = two_flows(STRICT + "changes: [{at: 50ms, job: io, sl: 0}]\n").replace(
        "routing: {engine: dmodk}", "routing: {engine: dmodk}\nfidelity: packet")
    built, res = _run(text)
    assert [e.get("failed") for e in res.applied_events if e["intent"] == "qos"] == [None]
    assert res.completion_ns[0] == pytest.approx(150_000_000, rel=0.02)
    assert res.completion_ns[1] == pytest.approx(200_000_000, rel=0.02)


def test_a_flow_moved_twice_gets_the_second_sl_s_weight():
    # low table only, VL 0 sends 8 packets a turn and VL 1 two: mpi (SL 0) 0.8 of the
    # link, io (SL 1) 0.2. io moves to SL 0 at 20 ms (equal shares), back to SL 1 at
    # 40 ms: 0.8 : 0.2 again, its weight from the scenario's own, not from the last SL's
    weighted = """\
max_vls: 2
vlarb_low: [[0, 255], [1, 34]]
classes: [{name: app, sl: 0, jobs: [mpi]}, {name: io, sl: 1, jobs: [io]}]
changes: [{at: 20ms, job: io, sl: 0}, {at: 40ms, job: io, sl: 1}]
"""
    built, res = _run(two_flows(weighted))
    assert [e.get("failed") for e in res.applied_events if e["intent"] == "qos"] == [None, None]
    rate, t1, t2 = 1e9, 20_000_000, 40_000_000
    mpi_sent = 0.8 * rate * t1 * 1e-9 + 0.5 * rate * (t2 - t1) * 1e-9
    mpi_done = t2 + math.ceil((100e6 - mpi_sent) / (0.8 * rate) * 1e9)
    assert res.completion_ns[0] == mpi_done
    assert res.completion_ns[1] == 200_000_000  # the link never idles: 200 MB at 1 GB/s
