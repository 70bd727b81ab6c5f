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


LINK_DOWN = """
name: ld
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
reroute_on_change: false
jobs:
  - {name: a, ranks: 16, stream: %(s)s, start: %(start)s, program: [{op: allreduce, bytes: 1MiB}, {op: compute, duration: 1us}],
     repeat: 2}
  - {name: b, ranks: 2, placement: [14, 15], stream: %(s)s, program: [{op: send, src: 0, dst: 1, bytes: 1KiB}]}
events: [{at: 100us, link_down: [{node: h0, port: 1}]}]
"""


@pytest.mark.parametrize("start", ["0us", "5us"])
def test_a_stalled_streamed_job_counts_as_its_dag_does(start):
    dag = run(LINK_DOWN % {"s": "false", "start": start})
    st = run(LINK_DOWN % {"s": "true", "start": start})
    assert dag["status"] == st["status"] == "stalled"
    for got, want in zip(st["jobs"], dag["jobs"]):
        assert got.pop("streamed") is True
        assert got == want
    assert st["flows"] == dag["flows"]
    # the messages and compute steps never done, and what those in flight had sent
    for key in ("flows", "jobs", "bytes_sent"):
        assert st["stalled"][key] == dag["stalled"][key], key
    assert st["stalled"]["flows"] > 0 and st["stalled"]["ranks_left"] == {"a": 16}


def test_the_warning_of_a_stalled_streamed_run_counts_what_is_left(tmp_path, capsys):
    from netsteer.cli import run_cli

    f = tmp_path / "ld.yaml"
    f.write_text(LINK_DOWN % {"s": "true", "start": "0us"})
    assert run_cli(["run", str(f), "--no-progress"]) == 0
    err = capsys.readouterr().err
    flows = run(LINK_DOWN % {"s": "false", "start": "0us"})["stalled"]["flows"]
    assert f"{flows} flows never finished (jobs: a; ranks left: a 16)" in " ".join(err.split())


@pytest.mark.parametrize("program", [
    [{"op": "bcast", "bytes": 1000003, "algorithm": "scatter_allgather", "root": 3}],
    [{"op": "allreduce", "bytes": 1000003, "algorithm": "ring"}, {"op": "compute", "duration": "1us"}],
    [{"op": "allreduce", "bytes": 4096, "algorithm": "rabenseifner"}, {"op": "reduce", "bytes": 4096,
                                                                       "algorithm": "rabenseifner", "root": 5}],
    [{"op": "alltoall", "bytes": 777, "algorithm": "bruck"}, {"op": "allgather", "bytes": 5,
                                                               "algorithm": "recursive_doubling"}],
    [{"op": "gather", "bytes": 9}, {"op": "scatter", "bytes": 9, "algorithm": "linear"}, {"op": "barrier"},
     {"op": "send", "src": 2, "dst": 7, "bytes": 3}],
])
@pytest.mark.parametrize("ranks", [8, 12])
def test_a_programs_totals_without_running_it_are_what_it_runs(program, ranks):
    from netsteer.sim.stream import StreamedJob, job_steps, program_totals
    from netsteer.traffic.program import as_spec

    text = ("name: t\ntopology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, "
            "link_latency: 1us}\nrouting: {engine: dmodk}\njobs: [%s]\n"
            % json.dumps({"name": "j", "ranks": ranks, "program": program, "repeat": 2, "start": "1us"}))
    b = build_scenario(parse_scenario(text))  # expanded: every flow the DAG holds
    want = (len(b.dag), sum(b.dag.columns().bytes.tolist()))
    job = as_spec({"name": "j", "ranks": ranks, "program": program, "repeat": 2, "start": "1us"})
    assert program_totals(StreamedJob(0, job, list(range(ranks)), job_steps(job))) == want
    st = build_scenario(parse_scenario(text.replace('"repeat"', '"stream": true, "repeat"')))
    res = run_scenario(st)
    assert (res.mpi["steps"]["j"]["flows"], res.mpi["steps"]["j"]["bytes"]) == want


def test_streamed_progress_ends_at_the_result_flows():
    """The bar of a streamed run counts what the result's `flows` counts: messages and
    compute steps (it used to end below it, compute steps left out)."""
    import netsteer as ns

    topo = ns.pgft(levels=2, down=[4, 4], up=[1, 2], link_bandwidth="10Gbps", link_latency="1us")
    job = ns.mpi_job(16, [ns.op.allreduce("64KiB", algorithm="ring"), ns.op.compute("1ms")], repeat=2,
                     stream=True)
    seen = []
    res = ns.simulate(topo, "dmodk", [job], sample=False, progress=lambda d, t, now: seen.append((d, t)))
    flows = res.to_dict()["flows"]
    assert res.to_dict()["streamed"]  # the job streamed
    assert seen[-1][1] is None  # no total while jobs stream
    assert seen[-1][0] == flows
