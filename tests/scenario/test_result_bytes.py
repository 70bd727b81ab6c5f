"""Byte counts in a run's JSON are whole numbers of bytes (``1048576``, not ``1048576.0``)."""

from __future__ import annotations

import json

from netsteer.cli import run_cli

HEAD = """
name: t
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
"""


def run_json(tmp_path, capsys, text: str) -> dict:
    f = tmp_path / "s.yaml"
    f.write_text(HEAD + text)
    assert run_cli(["run", str(f), "--json", "--no-progress"]) == 0
    return json.loads(capsys.readouterr().out)


def test_job_bytes_are_integers_for_flows_timed_bulk_flows_and_streamed_programs(tmp_path, capsys):
    out = run_json(tmp_path, capsys, """
jobs:
  - {name: sized, flows: [{src: 0, dst: 3, bytes: 1MiB}, {src: 1, dst: 3, bytes: 3}]}
  - {name: timed, bulk: [{src: 2, dst: 3, duration: 333us}]}
  - {name: mpi, ranks: 4, stream: true, program: [{op: allreduce, bytes: 1MiB, algorithm: ring}]}
""")
    jobs = {j["name"]: j["bytes"] for j in out["jobs"]}
    assert all(type(b) is int for b in jobs.values()), jobs
    assert jobs["sized"] == 2**20 + 3
    # what the bulk flow sent in 333 us sharing h3's 1.25 GB/s cable, to the byte
    assert 0 < jobs["timed"] < 1.25e9 * 333e-6
    assert jobs["mpi"] > 0


def test_a_stalled_runs_bytes_sent_is_an_integer(tmp_path, capsys):
    out = run_json(tmp_path, capsys, """
jobs:
  - {name: a, flows: [{src: 0, dst: 3, bytes: 1GiB}]}
events: [{at: 1ms, link_down: [{node: h0, port: 1}]}]
reroute_on_change: false
""")
    assert out["status"] == "stalled"
    sent = out["stalled"]["bytes_sent"]
    assert type(sent) is int and abs(sent - 1.25e9 * (1e-3 - 2e-6)) <= 1, sent


def test_the_text_table_shows_the_exact_byte_count(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(HEAD + "jobs:\n  - {name: big, flows: [{src: 0, dst: 3, bytes: 16MiB}, {src: 1, dst: 3, bytes: 3}]}\n")
    assert run_cli(["run", str(f), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"{16 * 2**20 + 3:,}" in out and "e+07" not in out
