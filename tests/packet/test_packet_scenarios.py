"""The packet fidelity through scenarios and the CLI: the same scenarios, MPI
programs and reports as flows, plus what only packets show."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from netsteer.cli import run_cli
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario
from netsteer.sim.packet import message_times, packet_summary

CAP = 4e9  # 32 Gbit/s in bytes/s
WIRE = 2048 + 26


def hotspot(sl2vl: str, vls: int = 2) -> str:
    return textwrap.dedent(
        f"""
        name: hotspot
        topology: {{kind: pgft, levels: 1, down: [8], up: [1], parallel: [1],
                   link_bandwidth: 32Gbps, link_latency: 100ns}}
        routing: {{engine: dmodk}}
        fidelity: packet
        packet: {{vls: {vls}, vlarb_low: "0:64,1:64", sl2vl: "{sl2vl}"}}
        jobs:
          - name: hot
            flows:
              - {{src: 0, dst: 7, bytes: 16MiB}}
              - {{src: 1, dst: 7, bytes: 16MiB}}
              - {{src: 2, dst: 7, bytes: 16MiB}}
          - name: victim
            flows:
              - {{src: 0, dst: 6, bytes: 2MiB, class: 1}}
        """
    )


def run(text: str, fidelity: str | None = None):
    built = build_scenario(parse_scenario(text, file="s.yaml"), fidelity=fidelity)
    return built, run_scenario(built)


def victim_share(text: str) -> float:
    _, res = run(text)
    t = res.completion_ns[3] - res.release_ns[3]
    return (2 * 2**20 / (t * 1e-9)) / (CAP * 2048 / WIRE)


def test_victim_behind_a_hot_spot_gets_a_third_and_its_own_vl_gives_two_thirds_back():
    # by hand (see crates/netsteer-core/tests/packet_by_hand.rs): host 0's input buffer
    # at the switch holds H, V, H, V...; the H packets leave one in three packet
    # times, each V packet follows one: 1/3 of the link. Max-min says 2/3.
    shared = "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"
    own = "0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0"
    assert victim_share(hotspot(shared)) == pytest.approx(1 / 3, rel=0.05)
    assert victim_share(hotspot(own)) == pytest.approx(2 / 3, rel=0.05)
    # at flow level (no packet parameters), max-min gives it 2/3 either way
    flow = hotspot(shared).replace("fidelity: packet\n", "").split("packet:")[0] + hotspot(shared).split("jobs:")[1]
    flow = flow.replace("routing: {engine: dmodk}\n", "routing: {engine: dmodk}\njobs:")
    _, res = run(flow)
    t = res.completion_ns[3] - res.release_ns[3]
    assert (2 * 2**20 / (t * 1e-9)) / CAP == pytest.approx(2 / 3, rel=0.02)


def test_cli_json_and_out_carry_the_packet_measurements(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(hotspot("0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"))
    assert run_cli(["run", str(f), "--json", "--no-progress", "--out", str(tmp_path / "out")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["fidelity"] == "packet" and res["status"] == "done"
    pk = res["packet"]
    # every byte of every flow went out as packets of at most 2 KiB
    assert pk["packets"] == 3 * 16 * 2**20 // 2048 + 2**20 // 1024
    # the three hosts feeding the hot spot waited for credits; the hot spot's port did not
    waiting = {p["port"] for p in pk["ports_waiting_most"]}
    assert waiting == {"h0[1]->s1_0", "h1[1]->s1_0", "h2[1]->s1_0"}
    v = pk["messages"]["victim"]
    assert v["queueing_max_s"] > 0.5 * v["latency_max_s"]  # it mostly waited
    out = tmp_path / "out"
    ports = pq.read_table(out / "packet_ports.parquet").to_pydict()
    assert max(ports["peak_occupancy_bytes"]) <= 16 * 1024
    occ = np.asarray(pq.read_table(out / "queue_occupancy.parquet").column("bytes"))
    assert 0 < occ.max() <= 16 * 1024
    msgs = pq.read_table(out / "messages.parquet").to_pydict()
    assert len(msgs["flow"]) == 4
    assert pq.read_table(out / "messages.parquet").schema.field("bytes").type == "int64"
    assert sorted(msgs["bytes"]) == [2 * 2**20] + [16 * 2**20] * 3
    assert all(q <= lat for q, lat in zip(msgs["queueing_s"], msgs["latency_s"]))
    assert (out / "queue_occupancy.png").stat().st_size > 0


def mpi(op: str, algo: str, nbytes: str) -> str:
    return textwrap.dedent(
        f"""
        name: mpi
        topology: {{kind: pgft, levels: 2, down: [4, 4], up: [1, 4], parallel: [1, 1],
                   link_bandwidth: 32Gbps, link_latency: 100ns}}
        routing: {{engine: dmodk}}
        jobs:
          - name: app
            ranks: 16
            program:
              - {{op: {op}, bytes: {nbytes}, algorithm: {algo}}}
              - {{op: compute, duration: 10us}}
            repeat: 2
        """
    )


@pytest.mark.parametrize("op,algo,nbytes", [("allreduce", "ring", "8MiB"), ("bcast", "binomial", "2MiB"),
                                            ("allgather", "ring", "512KiB")])
def test_collectives_run_unchanged_and_agree_with_flows_for_large_messages(op, algo, nbytes):
    # no blocking on a non-blocking tree with linear placement: within 5% (headers
    # are 1.3%, switch latencies a few hundred ns per message)
    text = mpi(op, algo, nbytes)
    _, flow = run(text)
    _, pkt = run(text, fidelity="packet")
    assert flow.status == pkt.status == "done"
    assert pkt.makespan_ns == pytest.approx(flow.makespan_ns, rel=0.05)
    assert pkt.makespan_ns > flow.makespan_ns  # headers cost something
    # the same messages, in the same DAG order, every one delivered
    assert (pkt.completion_ns >= 0).all() and len(pkt.completion_ns) == len(flow.completion_ns)


def test_a_link_failure_stalls_packets_and_reroutes_them_like_flows():
    text = textwrap.dedent(
        """
        name: lf
        topology: {kind: pgft, levels: 2, down: [2, 2], up: [1, 2], parallel: [1, 1],
                   link_bandwidth: 32Gbps, link_latency: 100ns}
        routing: {engine: minhop}
        fidelity: packet
        jobs:
          - name: j
            flows:
              - {src: 0, dst: 3, bytes: 4MiB}
        events:
          - {at: 100us, link_down: [{node: s1_0, port: 4}]}  # the spine the flow takes}
        """
    )
    built, res = run(text)
    assert res.status == "done"
    assert [e["intent"] for e in res.applied_events] == ["links", "routing"]
    # it went on over the other spine at once: its time alone, as at flow level
    alone = 4 * 2**20 / 2048 * WIRE / CAP * 1e9
    assert res.makespan_ns == pytest.approx(alone, rel=0.02)
    _, flow = run(text.replace("fidelity: packet", "fidelity: flow"))
    assert res.makespan_ns == pytest.approx(flow.makespan_ns, rel=0.02)
    # with the link down and nothing re-routed, the packets wait for it
    _, stuck = run(text.replace("routing: {engine: minhop}", "routing: {engine: minhop}\nreroute_on_change: false"))
    assert stuck.status == "stalled"
    assert 0 < stuck.sent_bytes[0] < 4 * 2**20


@pytest.mark.parametrize("tree, placement", [("up: [1, 4]", "linear"), ("up: [1, 2]", "random")])
def test_a_streamed_mpi_job_runs_packet_by_packet_as_its_dag_does(tree, placement):
    # the stream posts each message when its ranks reach it; at packet level the
    # messages are the same, so the times are the DAG's to the ns, and so are the
    # per-message figures the engine sums as streamed flows finish (their slots reused)
    text = (mpi("allreduce", "ring", "1MiB").replace("up: [1, 4]", tree)
            .replace("    ranks: 16\n", f"    ranks: 16\n    placement: {placement}\n    seed: 5\n    stream: true\n")
            .replace("      - {op: compute", "      - {op: alltoall, bytes: 8KiB, algorithm: pairwise}\n      - {op: compute"))
    sb, streamed = run(text, fidelity="packet")
    db, dag = run(text.replace("    stream: true\n", ""), fidelity="packet")
    assert streamed.status == dag.status == "done"
    assert sb.streamed and not db.streamed
    assert streamed.makespan_ns == dag.makespan_ns
    assert streamed.stats["packet_hops"] == dag.stats["packet_hops"]
    got, want = packet_summary(sb, streamed)["messages"], packet_summary(db, dag)["messages"]
    assert got["app"]["messages"] == want["app"]["messages"] == 2 * (2 * 15 * 16 + 15 * 16)
    for k in ("latency_mean_s", "latency_max_s", "queueing_mean_s", "queueing_max_s"):
        assert got["app"][k] == pytest.approx(want["app"][k], rel=1e-12, abs=1e-15), k
    # on the 2:1 tree, randomly placed, the messages meet; never on the non-blocking one
    assert (got["app"]["queueing_max_s"] > 0) == (placement == "random")


@pytest.mark.parametrize("servers, circuit_gbps", [(4, 40), (3, 25)])
def test_a_circuit_faster_than_the_servers_carries_their_sum_as_at_flow_level(servers, circuit_gbps):
    # a rack's servers send over one fast circuit into the partner rack's servers:
    # each packet goes onto the circuit once its tail is in, and the circuit's input
    # at the far ToR feeds every server's port at once (no input held at a server's
    # rate), so each server gets its line rate as max-min says
    flows = "\n".join(f"      - {{src: {i}, dst: {servers + i}, bytes: 4MiB, start: 2ms}}"
                      for i in range(servers))
    text = textwrap.dedent(
        f"""
        name: circuit
        topology: {{kind: hybrid, racks: 2, servers_per_rack: {servers},
                   server_bandwidth: 10Gbps, tor_uplinks: 1, core_bandwidth: 10Gbps,
                   circuit_ports: 2, circuit_uplinks: 1, circuit_bandwidth: {circuit_gbps}Gbps,
                   switching_time: 1ms, link_latency: 1us}}
        routing: {{engine: minhop}}
        jobs:
          - name: over-the-circuit
            flows:
        """
    ) + flows + "\nevents:\n  - {at: 0ms, circuit: {switch: ocs0, pairs: [[1, 2]]}}\n"
    spans = {}
    for fidelity in ("flow", "packet"):
        built, res = run(text, fidelity)
        spans[fidelity] = (res.completion_ns[:servers] - res.release_ns[:servers]).max()
    assert spans["packet"] / spans["flow"] == pytest.approx(1 + 26 / 2048, rel=0.01)


@pytest.mark.parametrize("method", ["make-before-break", "break-before-make"])
def test_a_hybrid_reconfiguration_at_packet_level_ends_done(method):
    # the circuits move under two flows from one host: a path that is not there for
    # a while (break-before-make, or rules ahead of their circuit) drops what it gets,
    # as a switch with no matching rule does, instead of holding it at the head of
    # the host's input buffer (which blocked every packet behind it for good)
    text = textwrap.dedent(
        f"""
        name: moving-circuits
        topology: {{kind: hybrid, racks: 3, servers_per_rack: 2, server_bandwidth: 10Gbps,
                   tor_uplinks: 1, core_bandwidth: 2Gbps, circuit_ports: 3, circuit_uplinks: 1,
                   circuit_bandwidth: 10Gbps, switching_time: 1ms, link_latency: 1us}}
        routing: {{engine: minhop}}
        fidelity: packet
        jobs:
          - name: a
            flows: [{{src: 0, dst: 2, bytes: 8MB}}]
          - name: b
            flows: [{{src: 0, dst: 4, bytes: 8MB}}]
        controller:
          hybrid:
            method: {method}
            initial: [[0, 0, 1]]
            schedule: [{{at: 2ms, circuits: [[0, 0, 2]]}}]
        driver:
          delay: {{rule_time: 0.1ms, vlan_tag_time: 5ms, push: sequential}}
        """
    )
    _, res = run(text)
    assert res.status == "done"
    assert res.sent_bytes.tolist() == [8e6, 8e6]
    # losses, if any, are recovered on a NAK: no flow waits out the 1.07 s timeout
    assert res.packet["timeouts"] == 0
    assert res.completion_ns.max() < 50e6


def lone(topology: str, packet: str, nbytes: str) -> str:
    return textwrap.dedent(
        f"""
        name: lone
        topology: {topology}
        routing: {{engine: dmodk}}
        fidelity: packet
        packet: {packet}
        jobs:
          - name: one
            flows:
              - {{src: 0, dst: 1, bytes: {nbytes}}}
        """
    )


PGFT1 = "{kind: pgft, levels: 1, down: [2], up: [1], parallel: [1], link_bandwidth: 32Gbps, link_latency: %s}"


@pytest.mark.parametrize("text, done_ns", [
    # slow -> fast -> slow, cut-through: the last packet is serialised at 10 Gbit/s
    # twice (4 wires, 3 switches, 33 packet times of 1,659.2 ns: 55,453.6 ns)
    (lone("{kind: pgft, levels: 2, down: [1, 2], up: [1, 1], parallel: [1, 1], "
          "link_bandwidth: [10Gbps, 40Gbps], link_latency: 100ns}", "{}", "64KiB"), 55454),
    # store-and-forward, a short last packet that waits for the one before it
    (lone(PGFT1 % "100ns", "{switching: store-and-forward}", "5000"), 2088),
    # 10 us links, 16 KiB buffers: 7 packets per credit loop of 20,618.5 ns
    (lone(PGFT1 % "10us", "{}", "1MiB"), 1525769),
])
def test_a_message_alone_shows_no_queueing(text, done_ns):
    # crates/netsteer-core/tests/packet_by_hand.rs works these out by hand
    built, res = run(text)
    assert list(res.completion_ns) == [done_ns]
    assert res.packet["ideal_ns"][0] == done_ns - res.packet["start_ns"][0]
    lat, queue = message_times(res, built.dag.columns().bytes)
    assert (lat[0], queue[0]) == (done_ns, 0)
    assert packet_summary(built, res)["messages"]["one"]["queueing_max_s"] == 0.0


BULK = textwrap.dedent(
    """
    name: bulk
    topology: {kind: pgft, levels: 1, down: [4], up: [1], parallel: [1],
               link_bandwidth: 32Gbps, link_latency: 100ns}
    routing: {engine: dmodk}
    fidelity: packet
    jobs:
      - name: mix
        flows:
          - {src: 0, dst: 1, bytes: 64KiB}
        bulk:
          - {src: 2, dst: 3, duration: 50us}
      - name: iperf
        bulk:
          - {src: 3, dst: 2, duration: 30us}
    """
)


def test_bulk_flows_stopped_by_their_duration_have_no_queueing(tmp_path, capsys):
    # a bulk flow's nominal size (10^18 B) has no time alone within the clock, and a
    # flow stopped short has none to measure against: it is left out of the queueing
    # figures (it used to show its whole latency plus a ns as queueing)
    built, res = run(BULK)
    lat, queue = message_times(res, built.dag.columns().bytes)
    assert list(lat) == [res.completion_ns[0], 50_000, 30_000]
    assert list(queue[1:]) == [-1, -1] and 0 <= queue[0] <= lat[0]
    msgs = packet_summary(built, res)["messages"]
    assert msgs["mix"]["messages"] == 2 and msgs["mix"]["latency_max_s"] == pytest.approx(50e-6)
    assert msgs["mix"]["queueing_max_s"] == queue[0] * 1e-9  # the sized flow's only
    assert msgs["iperf"]["queueing_mean_s"] is None and msgs["iperf"]["queueing_max_s"] is None
    f = tmp_path / "s.yaml"
    f.write_text(BULK)
    assert run_cli(["run", str(f), "--no-progress", "--out", str(tmp_path / "out")]) == 0
    assert "iperf" in capsys.readouterr().out
    m = pq.read_table(tmp_path / "out" / "messages.parquet").to_pydict()
    assert m["queueing_s"][0] >= 0 and np.isnan(m["queueing_s"][1:]).all()


def test_message_times_leave_out_what_has_no_time_alone():
    # per flow: done; its time alone beyond the clock (-1); stopped at half its bytes
    # though its time alone is known; never done
    res = SimpleNamespace(completion_ns=np.array([500, 900, 700, -1]), release_ns=np.array([100, 0, 0, 0]),
                          sent_bytes=np.array([1e6, 5e5, 5e5, 0.0]),
                          packet={"start_ns": np.array([150, 0, 0, 0]), "ideal_ns": np.array([300, -1, 400, 10])})
    lat, queue = message_times(res, np.array([1e6, 1e18, 1e6, 1e6]))
    assert list(lat) == [400, 900, 700, -1]
    assert list(queue) == [50, -1, -1, -1]
    # without the sizes, only the time alone decides
    assert list(message_times(res)[1]) == [50, -1, 300, -1]
