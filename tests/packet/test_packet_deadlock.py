"""Packet runs model credit-based flow control, so routes with a cycle of channel
dependencies on one VL can deadlock (a credit loop); a stalled run names the cycle."""

from __future__ import annotations

import textwrap

from netsteer.report.result import result_dict
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario

# ECMP on a 2x2 HyperX with one-packet buffers: the diagonal flows take both
# dimension orders, x0_0 -> x0_1 -> x1_1 -> x1_0 -> x0_0 closes on VL 0
DIAG = textwrap.dedent("""\
    name: deadlock2
    topology: {kind: hyperx, S: [2, 2], T: 2, link_bandwidth: 10Gbps, link_latency: 100ns}
    routing: {engine: ENGINE, hash: src-dst}
    fidelity: FIDELITY
    packet: {buffer: 2112}
    jobs:
      - name: diag
        flows:
          - {src: 0, dst: 6, bytes: 4MiB}
          - {src: 1, dst: 7, bytes: 4MiB}
          - {src: 2, dst: 4, bytes: 4MiB}
          - {src: 3, dst: 5, bytes: 4MiB}
          - {src: 4, dst: 2, bytes: 4MiB}
          - {src: 5, dst: 3, bytes: 4MiB}
          - {src: 6, dst: 0, bytes: 4MiB}
          - {src: 7, dst: 1, bytes: 4MiB}
    """)


def _run(engine="ecmp", fidelity="packet"):
    text = DIAG.replace("ENGINE", engine).replace("FIDELITY", fidelity)
    if engine != "ecmp":
        text = text.replace(", hash: src-dst", "")
    if fidelity == "flow":
        text = text.replace("packet: {buffer: 2112}\n", "")
    b = build_scenario(parse_scenario(text))
    return b, result_dict(b, run_scenario(b))


def test_a_credit_loop_is_named_when_a_packet_run_stalls():
    b, d = _run()
    assert d["status"] == "stalled"
    loop = d["stalled"]["credit_loop"]
    vl, chans = loop.split(": ", 1)
    assert vl == "VL 0"
    names = chans.split(" -> ")
    assert names[0] == names[-1] and len(set(names)) >= 2
    # each channel leads into the switch the next one leaves: a cycle of the fabric
    topo = b.topology
    by_name = {topo.channel_name(c): c for c in range(topo.n_channels)}
    ids = [by_name[n] for n in names]
    src, dst = topo.channel_src(), topo.channel_dst()
    assert all(dst[a] == src[c] for a, c in zip(ids, ids[1:]))
    hosts = set(topo.hosts.tolist())
    assert all(int(src[c]) not in hosts and int(dst[c]) not in hosts for c in ids)


def test_the_same_traffic_finishes_without_the_loop():
    # at flow level, and at packet level on dimension-order routes (no cycle)
    assert _run(fidelity="flow")[1]["status"] == "done"
    _, d = _run(engine="dor")
    assert d["status"] == "done"


def test_cli_warning_names_the_loop_not_links_down(tmp_path, capsys):
    from netsteer.cli import run_cli

    p = tmp_path / "dl.yaml"
    p.write_text(DIAG.replace("ENGINE", "ecmp").replace("FIDELITY", "packet"))
    assert run_cli(["run", str(p)]) == 0
    err = capsys.readouterr().err
    assert "credit loop on VL 0" in err and "link that stayed down" not in err


def test_a_streamed_mpi_job_names_its_credit_loop_as_a_dag_job_does():
    # the same fabric and routes, an alltoall streamed through the engine: its messages are
    # no flows of the DAG, and the stalled run used to name no loop at all
    head = DIAG.replace("ENGINE", "ecmp").replace("FIDELITY", "packet").split("jobs:")[0]
    loops = {}
    for stream in ("true", "false"):
        b = build_scenario(parse_scenario(
            head + f"jobs:\n  - {{name: a2a, ranks: 8, stream: {stream}, program: [{{op: alltoall, bytes: 4MiB}}]}}\n"))
        assert bool(b.streamed) == (stream == "true")
        d = result_dict(b, run_scenario(b))
        assert d["status"] == "stalled"
        loops[stream] = d["stalled"].get("credit_loop")
    assert loops["false"] and loops["false"].startswith("VL 0: ")
    assert loops["true"] and loops["true"].startswith("VL 0: "), loops
