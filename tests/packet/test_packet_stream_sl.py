"""Streamed MPI messages all travel on SL 0 at packet level (the engine gives them no
other), so a job whose messages need another SL, by its ``class`` or by its
partition's SL under pFTree, runs as a flow DAG there: refused with ``stream: true``,
a DAG with a note by default."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from netsteer.cli import run_cli

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _mpi_beside_bulk(ranks: int, down: str, stream: str) -> str:
    """An alltoall on SL 1 beside bulk flows on SL 0 into the same hosts, VL 1 weighted
    255 to VL 0's 1: on its own SL the alltoall goes first."""
    return textwrap.dedent(
        f"""
        name: sl-stream
        topology: {{kind: pgft, levels: 2, down: {down}, up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}}
        routing: {{engine: minhop}}
        fidelity: packet
        packet: {{vls: 2, vlarb_low: "0:1,1:255"}}
        jobs:
          - {{name: mpi, ranks: {ranks}, class: 1, {stream}program: [{{op: alltoall, algorithm: pairwise,
              bytes: 16KiB}}]}}
          - name: bg
            flows:
              - {{src: 0, dst: 12, bytes: 2MB}}
              - {{src: 1, dst: 13, bytes: 2MB}}
              - {{src: 2, dst: 14, bytes: 2MB}}
              - {{src: 3, dst: 15, bytes: 2MB}}
        """)


def _run(tmp_path, name: str, text: str, capsys) -> tuple[int, dict | None, str]:
    path = tmp_path / name
    path.write_text(text)
    rc = run_cli(["run", str(path), "--json", "--no-progress"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 else None), err


def test_a_streamed_job_with_a_class_is_refused_at_packet_level(tmp_path, capsys):
    rc, _, err = _run(tmp_path, "a.yaml", _mpi_beside_bulk(16, "[4, 4]", "stream: true, "), capsys)
    assert rc == 2
    assert "jobs.0.stream" in err and "class (1)" in err and "SL 0" in err and "Traceback" not in err


def test_a_large_job_with_a_class_runs_as_a_dag_on_its_sl_with_a_note(tmp_path, capsys):
    # 128 ranks stream by default; on its class's SL the job is a DAG, and finishes
    # as the same job with stream: false does, not as one on SL 0 behind the bulk flows
    rc, default, err = _run(tmp_path, "d.yaml", _mpi_beside_bulk(128, "[16, 8]", ""), capsys)
    assert rc == 0, err
    assert any("runs as a flow DAG" in n and "class (1)" in n for n in default["notes"])
    assert not default["jobs"][0].get("streamed")
    rc, dag, err = _run(tmp_path, "f.yaml", _mpi_beside_bulk(128, "[16, 8]", "stream: false, "), capsys)
    assert rc == 0, err
    assert default["jobs"][0]["completion_s"] == dag["jobs"][0]["completion_s"]


def test_a_job_of_class_0_still_streams_at_packet_level(tmp_path, capsys):
    text = _mpi_beside_bulk(16, "[4, 4]", "stream: true, ").replace("class: 1, ", "")
    rc, res, err = _run(tmp_path, "z.yaml", text, capsys)
    assert rc == 0, err
    assert res["jobs"][0]["streamed"]


def test_a_streamed_job_in_a_pftree_partition_with_its_own_sl_is_refused(tmp_path, capsys):
    for f in ("pftree-16.net", "pftree-victim-aggressor.conf"):
        shutil.copy(SCENARIOS / f, tmp_path / f)
    text = textwrap.dedent(
        """
        name: pftree-stream
        topology: {kind: ibsim, path: pftree-16.net}
        routing: {engine: pftree, partitions: pftree-victim-aggressor.conf}
        fidelity: packet
        packet: {vls: 4, vlarb_low: "0:64,1:64,2:64,3:64"}
        jobs:
          - {name: victim, ranks: 4, placement: [2, 6, 8, 11], stream: true,
             program: [{op: alltoall, algorithm: pairwise, bytes: 4KiB}]}
        """)
    rc, _, err = _run(tmp_path, "p.yaml", text, capsys)
    assert rc == 2, err
    assert "jobs.0.stream" in err and "partitions their own SLs" in err
    rc, res, err = _run(tmp_path, "q.yaml", text.replace("stream: true", "stream: false"), capsys)
    assert rc == 0, err
