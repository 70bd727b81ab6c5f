"""The report of MPI jobs, streamed or expanded as a flow DAG: the same keys, counts
and byte totals either way, for jobs that finish, jobs that stall and jobs that also
have flows of their own."""

import json

import pytest

from netsteer.report.result import result_dict
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario


def run(text: str):
    b = build_scenario(parse_scenario(text))
    res = run_scenario(b)
    return result_dict(b, res)


SMALL = """
name: ops
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
jobs:
  - name: a
    ranks: 8
    stream: %s
    program: [{op: allreduce, bytes: 1MiB}, {op: compute, duration: 1us}, {op: bcast, bytes: 4KiB}]
"""


@pytest.mark.parametrize("stream", ["true", "false"])
def test_operations_keys_come_in_the_documented_order(stream):
    ops = run(SMALL % stream)["jobs"][0]["operations"]
    assert list(ops) == ["allreduce", "compute", "bcast"]
    assert list(ops["allreduce"]) == ["count", "time_s", "bytes", "algbw_Bps", "busbw_Bps"]
    assert list(ops["compute"]) == ["count", "time_s", "bytes"]


MIXED = """
name: mixed
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
jobs:
  - name: app
    ranks: 8
    stream: %s
    program: [{op: allreduce, bytes: 1MiB}]
    %s
"""


@pytest.mark.parametrize("own", [
    "flows: [{src: 0, dst: 15, bytes: 64MiB}]",  # outlasts the program
    "flows: [{src: 0, dst: 15, bytes: 1KiB}]",  # over before it
    "bulk: [{src: 0, dst: 15, duration: 100us}]",  # timed: what it sent counts
    "bulk: [{src: 0, dst: 15}]",  # endless: ends with the others, counted in flows only
])
def test_a_streamed_job_counts_its_own_flows_beside_its_program(own):
    dag, st = run(MIXED % ("false", own)), run(MIXED % ("true", own))
    got, want = st["jobs"][0], dag["jobs"][0]
    assert got.pop("streamed") is True
    assert got == want
    assert st["makespan_s"] == dag["makespan_s"] and st["flows"] == dag["flows"]
    if "64MiB" in own:
        assert got["completion_s"] == st["makespan_s"] > 0.05  # the 64 MiB flow's end
        assert got["bytes"] > 64 * 2**20


TWO = """
name: two
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
reroute_on_change: false
jobs:
  - {name: ok, ranks: 4, placement: [4, 5, 6, 7], stream: %(s)s, program: [{op: allreduce, bytes: 1MiB}]}
  - {name: dead, ranks: 4, placement: [0, 1, 2, 3], stream: %(s)s, program: [{op: allreduce, bytes: 1MiB}]}
events: [{at: 10us, link_down: [{node: h0, port: 1}]}]
"""


def test_one_stalled_mpi_job_leaves_the_others_operations_report_whole():
    dag, st = run(TWO % {"s": "false"}), run(TWO % {"s": "true"})
    assert dag["status"] == st["status"] == "stalled"
    ok_dag, ok_st = dag["jobs"][0], st["jobs"][0]
    assert ok_dag["completion_s"] is not None
    assert list(ok_dag["operations"]) == ["allreduce"]
    assert ok_dag["operations"] == ok_st["operations"]
    assert ok_dag["operations"]["allreduce"]["count"] == 1
    # the job left unfinished has no operations, streamed or not
    assert dag["jobs"][1]["operations"] == st["jobs"][1]["operations"] == {}


HUGE = """
name: huge
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
jobs:
  - name: a
    ranks: %(ranks)d
    stream: %(s)s
    repeat: %(repeat)d
    program: [%(op)s]
"""


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("ranks, repeat, op, want", [
    # three 2**60 - 1 byte sends, each with its 16-byte envelope: past 2**53 and past float
    (2, 3, "{op: send, src: 0, dst: 1, bytes: 1152921504606846975}", 3 * (2**60 - 1 + 16)),
    # 255 messages of 2**60 / 16 bytes and more, each with its envelope: as the DAG sums them
    (16, 1, "{op: bcast, algorithm: scatter_allgather, bytes: 1152921504606846976}", None),
])
def test_byte_totals_past_2_53_are_exact(stream, ranks, repeat, op, want):
    out = json.loads(json.dumps(run(HUGE % {"ranks": ranks, "s": stream, "repeat": repeat, "op": op})))
    got = out["jobs"][0]["bytes"]
    assert type(got) is int
    if want is None:  # the DAG's own sum of its flows' sizes, exactly
        b = build_scenario(parse_scenario(HUGE % {"ranks": ranks, "s": "false", "repeat": repeat, "op": op}))
        want = sum(b.dag.columns().bytes.tolist())
    assert got == want
