"""A link that goes down under packets: the packets waiting for it are dropped and
the RC senders send again (go-back-N) when the destination NAKs the hole (packets
behind it come in by the new path), or after their timeout when none follow it, so
a run that ends done at flow level ends done at packet level too.

Before, the packets queued for a dead port never left and such a run ended stalled
at packet fidelity (the reproducer below)."""

from __future__ import annotations

import math
import textwrap

import numpy as np
import pytest

from netsteer._core import Engine
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario
from netsteer.sim.packet import RC_TIMEOUT_NS, PacketParams

# Two flows from leaf s1_0 to leaf s1_1 share the spine link s1_0[5]-s2_0 (minhop
# puts both on s2_0), so packets queue at s1_0 for it; a third flow stays in the leaf
# (h1 -> h3: no channel in common with the others). The spine link dies at 50 us,
# mid-flow; minhop re-routes the two over s2_1.
REPRO = textwrap.dedent(
    """
    name: link-failure-packet
    topology: {kind: pgft, levels: 2, down: [4, 2], up: [1, 2], parallel: [1, 1],
               link_bandwidth: 32Gbps, link_latency: 100ns}
    routing: {engine: minhop}
    fidelity: packet
    PACKET
    jobs:
      - name: cross
        flows:
          - {src: 0, dst: 4, bytes: 1MiB}
          - {src: 2, dst: 6, bytes: 1MiB}
      - name: local
        flows:
          - {src: 1, dst: 3, bytes: 1MiB}
    events:
      - {at: 50us, link_down: [{node: s1_0, port: 5}]}
    """
)
MIB = 2**20
MTU = 2048


def scenario(rc_timeout: str | None = None, fault: bool = True, fidelity: str = "packet") -> str:
    text = REPRO.replace("PACKET", f"packet: {{rc_timeout: {rc_timeout}}}" if rc_timeout else "")
    if not fault:
        text = text.split("events:")[0]
    if fidelity == "flow":
        text = text.replace("fidelity: packet", "fidelity: flow")
    return text


def run(text: str):
    built = build_scenario(parse_scenario(text, file="s.yaml"))
    return built, run_scenario(built)


def test_the_reproducer_ends_done_as_at_flow_level_every_byte_delivered_once():
    _, flow = run(scenario(fidelity="flow"))
    assert flow.status == "done"
    built, res = run(scenario("100us"))
    assert res.status == "done"
    assert (res.completion_ns > 0).all()
    assert res.sent_bytes.tolist() == [MIB, MIB, MIB]
    pk = res.packet
    # the two cross flows lost the packets queued for the dead port, and only those
    assert pk["dropped"] > 0
    assert pk["dropped_per_flow"].tolist()[2] == 0 and min(pk["dropped_per_flow"][:2]) > 0
    assert sum(pk["dropped_per_flow"]) == pk["dropped"]
    dead = [c for c in range(built.topology.n_channels) if built.topology.channel_name(c) == "s1_0[5]->s2_0"]
    assert pk["xmit_discards"].sum() == pk["xmit_discards"][dead[0]].sum() == pk["dropped"]
    # each sender went back once, on its destination's NAK (packets behind the hole
    # came in by the new path): what it sent again was dropped, thrown away behind
    # the loss at the destination, or taken there exactly once
    assert (pk["naks"], pk["timeouts"]) == (2, 0)
    assert pk["retransmitted"] == sum(pk["retransmitted_per_flow"]) > pk["dropped"]
    unique = 3 * MIB // MTU
    assert pk["packets"] == unique + pk["retransmitted"]
    assert pk["packets"] == unique + pk["dropped"] + pk["discarded"]


@pytest.mark.parametrize("rc_timeout", ["10us", "100us", "1ms", None])
def test_a_flow_that_lost_packets_mid_flow_goes_back_on_the_nak_not_the_timeout(rc_timeout):
    _, base = run(scenario(rc_timeout, fault=False))
    _, res = run(scenario(rc_timeout))
    assert base.status == res.status == "done"
    t = RC_TIMEOUT_NS if rc_timeout is None else PacketParams.model_validate({"rc_timeout": rc_timeout}).rc_timeout
    lost = res.packet["dropped_per_flow"] > 0
    assert lost.tolist() == [True, True, False]
    late = res.completion_ns[lost] - base.completion_ns[lost]
    # later by what was lost and sent again, a few round trips: under the shortest
    # timeout, and the same whatever the timeout (none went off)
    assert (late > 0).all() and (late < min(t, 10_000)).all()
    _, default = run(scenario())
    assert res.completion_ns.tolist() == default.completion_ns.tolist()
    assert (res.packet["naks"], res.packet["timeouts"]) == (2, 0)
    assert base.packet["dropped"] == base.packet["retransmitted"] == base.packet["naks"] == 0


def test_a_flow_away_from_the_dead_link_is_not_affected():
    _, base = run(scenario("100us", fault=False))
    _, res = run(scenario("100us"))
    assert res.packet["dropped_per_flow"][2] == 0
    assert res.completion_ns[2] == base.completion_ns[2]
    assert res.sent_bytes[2] == base.sent_bytes[2] == MIB


def test_the_same_scenario_gives_the_same_result_to_the_ns():
    keys = ("packets", "dropped", "retransmitted", "timeouts", "naks", "discarded")
    runs = [run(scenario("10us"))[1] for _ in range(2)]
    assert runs[0].completion_ns.tolist() == runs[1].completion_ns.tolist()
    assert [runs[0].packet[k] for k in keys] == [runs[1].packet[k] for k in keys]
    assert np.array_equal(runs[0].final_channel_bytes, runs[1].final_channel_bytes)


def test_a_destination_cut_off_ends_stalled_as_at_flow_level():
    # h3's only link dies: minhop re-routes the rest and leaves the cut-off h3 out of
    # its tables (as OpenSM does), so h0 -> h3 keeps its dead path (stalled at flow
    # level); h1 -> h2 finishes
    text = textwrap.dedent(
        """
        name: cut-off
        topology: {kind: pgft, levels: 2, down: [2, 2], up: [1, 2], parallel: [1, 1],
                   link_bandwidth: 32Gbps, link_latency: 100ns}
        routing: {engine: minhop}
        fidelity: packet
        packet: {rc_timeout: 20us}
        jobs:
          - name: j
            flows:
              - {src: 0, dst: 3, bytes: 1MiB}
              - {src: 1, dst: 2, bytes: 1MiB}
        events:
          - {at: 50us, link_down: [{node: h3, port: 1}]}
        """
    )
    _, flow = run(text.replace("fidelity: packet\n", "").replace("packet: {rc_timeout: 20us}\n", ""))
    _, pkt = run(text)
    assert flow.status == pkt.status == "stalled"
    assert (flow.completion_ns < 0).tolist() == (pkt.completion_ns < 0).tolist() == [True, False]
    assert 0 < pkt.sent_bytes[0] < MIB and pkt.sent_bytes[1] == MIB
    assert [e.get("failed") is not None for e in pkt.applied_events] == [False, False]  # the re-route installs
    # it timed out once, went back, and waits for a path: it sends nothing into the
    # dead link (which would never end)
    assert pkt.packet["timeouts"] == 1 and pkt.packet["retransmitted"] == 0


def test_by_hand_one_flow_one_switch_a_link_dies_with_packets_queued():
    # host -> switch at 16 GB/s, switch -> host at 4 GB/s: the switch's buffer (16 KiB,
    # seven 2,112-byte packets in credits) takes the flow's seven packets at once and
    # sends them on at the slow rate. The slow link dies at t1, comes back at t2.
    params = PacketParams.model_validate({"rc_timeout": "10us"})
    cfg = params.engine_dict()
    lat, sw, t_out = 100_000, cfg["switch_latency_ns"] * 1000, params.rc_timeout * 1000  # ps
    wire = cfg["mtu"] + cfg["header"]
    slow = math.ceil(wire * 1e12 / 4e9)  # ps a packet takes on the slow link
    a = lat + sw  # packet i is on the slow link in [a + i * slow, a + (i + 1) * slow)
    n, t1 = 7, 1_000  # ns
    on_wire = (t1 * 1000 - a) // slow  # it finishes
    lost = n - on_wire - 1  # those queued behind it are dropped
    last = a + (on_wire + 1) * slow + lat  # the destination's last progress

    def resend(start_ps: int) -> int:  # the lost ones again, through the same pipeline
        return math.ceil((start_ps + a + lost * slow + lat) / 1000)

    for t2, start in [(5_000, last + t_out), (20_000, 20_000 * 1000)]:
        e = Engine(np.array([16e9, 4e9]), np.array([100, 100], dtype=np.int64), packet=cfg)
        e.add_flows(np.array([n * 2048.0]), np.array([0, 2]), np.array([0, 1]), np.zeros(1, np.int64),
                    np.zeros(1, np.int64), np.ones(1), np.zeros(1, np.int64), np.zeros(2, np.int64),
                    np.zeros(0, np.int64))
        assert e.run(t1) == "until"
        e.set_channels_up(np.array([1]), False)
        assert e.run(t2) == "until"
        e.set_channels_up(np.array([1]), True)
        assert e.run() == "done"
        assert e.completion_ns().tolist() == [resend(start)]
        assert e.sent_bytes().tolist() == [n * 2048.0]
        r = e.packet_report()
        assert (r["dropped"], r["timeouts"], r["retransmitted"], r["discarded"]) == (lost, 1, lost, 0)
        assert r["xmit_discards"].tolist() == [[0.0], [float(lost)]]
        assert r["packets"] == n + lost
