"""Timed bulk flows at packet level: when a flow's duration ends, its packets still
in buffers are thrown away (``stopped_discards``) instead of crossing more links,
and every byte figure accounts for the same packets."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from netsteer.cli import run_cli

TBULK = """\
name: tbulk
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 100ns}
routing: {engine: dmodk}
fidelity: packet
jobs:
  - name: b
    bulk:
      - {src: 0, dst: 1, duration: 1ms}
      - {src: 2, dst: 1, start: 500us, duration: 1ms}
  - name: f
    flows:
      - {src: 3, dst: 2, bytes: 1MiB}
"""
WIRE, MTU = 2048 + 26, 2048


def test_timed_bulk_byte_figures_agree(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(TBULK)
    out = tmp_path / "out"
    assert run_cli(["run", str(f), "--json", "--out", str(out)]) == 0
    d = json.loads(capsys.readouterr().out)
    job_b = next(j for j in d["jobs"] if j["name"] == "b")
    msgs = pq.read_table(out / "messages.parquet").to_pydict()
    # messages.parquet names jobs, and gives a bulk flow what it delivered, not 10^18
    assert msgs["job"] == ["b", "b", "f"]
    assert sum(b for b, j in zip(msgs["bytes"], msgs["job"]) if j == "b") == job_b["bytes"]
    assert msgs["bytes"][2] == 2**20
    delivered = job_b["bytes"] // MTU  # full packets only: nothing else was sent
    assert delivered * MTU == job_b["bytes"]
    ports = pq.read_table(out / "packet_ports.parquet").to_pydict()
    xmit = dict(zip(ports["port"], ports["xmit_bytes"]))
    injected = (xmit["h0[1]->s1_0"] + xmit["h2[1]->s1_0"]) / WIRE
    last = xmit["s1_0[2]->h1"] / WIRE
    stopped = d["packet"]["stopped_discards"]
    assert stopped > 0
    # what the hosts put on the wire = delivered + thrown away after the stops + the
    # packets on the last link when their flow stopped (at most one per flow), which
    # are also all the last link carried beyond what was delivered
    on_wire = last - delivered
    assert 0 <= on_wire <= 2
    assert injected == delivered + stopped + on_wire
