"""Bad MPI job input: a clear message and exit code 2 (the MPI workloads issue)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from netsteer.errors import LimitError, NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

MPI = textwrap.dedent(
    """
    name: mpi
    topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1],
               link_bandwidth: 10Gbps, link_latency: 1us}
    routing: {engine: dmodk}
    sharing: cm02
    jobs:
      - name: app
        ranks: 8
        placement: linear
        program:
          - {op: allreduce, bytes: 1MiB, algorithm: ring}
          - {op: compute, duration: 1ms}
        repeat: 2
    """
)


def run_file(f: Path, text: str):
    """``netsteer run`` on ``text`` written to ``f``, in a fresh process: (f, its result)."""
    f.write_text(text)
    return f, subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True,
                             timeout=120)


def test_mpi_job_runs_and_reports_operations():
    from netsteer.report.result import result_dict
    from netsteer.sim import simulate

    b = build_scenario(parse_scenario(MPI, file="m.yaml"))
    res = simulate(b.topology, b.routing, b.dag, sharing=b.sharing)
    r = result_dict(b, res)
    ops = r["jobs"][0]["operations"]
    assert ops["allreduce"]["count"] == 2 and ops["compute"]["count"] == 2
    assert ops["allreduce"]["bytes"] == 2 * 2**20
    # each allreduce takes at least what its data needs on one 10 Gbps link: 2(p-1)/p * N
    assert ops["allreduce"]["time_s"] >= 2 * (2 * 7 / 8 * 2**20 / 1.25e9)
    assert ops["compute"]["time_s"] >= 2 * 1e-3


@pytest.mark.parametrize(
    "old,new,words",
    [
        ("ranks: 8", "ranks: 17", "ranks"),
        ("op: allreduce", "op: allreducex", "allreducex"),
        ("algorithm: ring", "algorithm: magic", "magic"),
        ("bytes: 1MiB", "bytes: -1MiB", "negative"),
        ("ranks: 8", "ranks: 6\n    placement_x: 1", "unknown key"),
        ("algorithm: ring", "algorithm: recursive_doubling", None),
    ],
)
def test_mpi_bad_input(tmp_path: Path, old, new, words):
    text = MPI.replace(old, new, 1)
    if words is None:  # recursive doubling on 8 ranks is fine: a control row
        build_scenario(parse_scenario(text, file="m.yaml"))
        return
    with pytest.raises(NetsteerError) as info:
        build_scenario(parse_scenario(text, file="m.yaml"))
    assert words in info.value.message(), info.value.message()
    assert info.value.file == "m.yaml" and info.value.field.startswith("jobs.0")
    f, proc = run_file(tmp_path / "bad.yaml", text)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(f) in proc.stderr


def test_pairwise_alltoall_refuses_non_power_of_two():
    text = MPI.replace("ranks: 8", "ranks: 6").replace(
        "{op: allreduce, bytes: 1MiB, algorithm: ring}", "{op: alltoall, bytes: 1KiB, algorithm: pairwise}"
    )
    with pytest.raises(NetsteerError) as info:
        build_scenario(parse_scenario(text, file="m.yaml"))
    assert "power-of-two" in info.value.reason and info.value.field.startswith("jobs.0.program.0")


@pytest.mark.parametrize("stream", [False, True])
def test_placement_hosts_are_strict_integers_on_both_paths(stream):
    for hosts, field, got in (("[0, true, 2, 3, 4, 5, 6, 7]", "jobs.0.placement.1", "True"),
                              ("[0, 1, 2.0, 3, 4, 5, 6, 7]", "jobs.0.placement.2", "2.0")):
        text = MPI.replace("placement: linear", f"placement: {hosts}\n    stream: {str(stream).lower()}")
        with pytest.raises(NetsteerError) as info:
            build_scenario(parse_scenario(text, file="m.yaml"))
        hint = " (write 2: only a size, such as bytes, may be written 1e6 or 1000000.0)" if got == "2.0" else ""
        assert info.value.field == field and info.value.reason == f"must be an integer, got {got}{hint}"


@pytest.mark.parametrize(
    "old,new,field,reason",
    [
        # each said "Extra inputs are not permitted" at jobs.0.program.0.<key>
        ("{op: compute, duration: 1ms}", "{op: alltoall, bytes: 1KiB, root: 0}", "jobs.0.program.1",
         "unknown key 'root' for op alltoall; alltoall takes bytes, algorithm"),
        ("{op: compute, duration: 1ms}", "{op: send, src: 0, dst: 1, bytes: 1KiB, root: 0}", "jobs.0.program.1",
         "unknown key 'root' for op send; send takes src, dst, bytes"),
        ("{op: compute, duration: 1ms}", "{op: barrier, bytes: 1KiB}", "jobs.0.program.1",
         "unknown key 'bytes' for op barrier; barrier takes algorithm"),
        ("{op: compute, duration: 1ms}", "{op: compute, duration: 1ms, bytes: 1KiB}", "jobs.0.program.1",
         "unknown key 'bytes' for op compute; compute takes duration"),
        # a misspelt required key (it said "jobs.0.program.0.bytes: Field required")
        ("bytes: 1MiB, algorithm: ring", "byts: 1MiB, algorithm: ring", "jobs.0.program.0",
         "unknown key 'byts' for op allreduce; did you mean 'bytes'?"),
        ("bytes: 1MiB, algorithm: ring", "algorithm: ring", "jobs.0.program.0.bytes", "required key is missing"),
        # it said "Input tag 'alltoal' found using 'op' does not match any of the expected tags: ..."
        ("op: allreduce", "op: allreduc", "jobs.0.program.0", "unknown op 'allreduc'; did you mean 'allreduce'?"),
        # it said jobs.0.placement.literal['linear','random']: Input should be 'linear' or 'random'
        ("placement: linear", "placement: block", "jobs.0.placement",
         "placement must be linear, random or a list of host indices, got 'block'"),
        ("placement: linear", "placement: [0, 1, x, 3, 4, 5, 6, 7]", "jobs.0.placement.2", "must be an integer, got 'x'"),
        # a host list is integers as strictly as root (it ran [0, true, 2.0, 3] as [0, 1, 2, 3])
        ("placement: linear", "placement: [0, true, 2, 3, 4, 5, 6, 7]", "jobs.0.placement.1",
         "must be an integer, got True"),
        ("placement: linear", "placement: [0, 1, 2.0, 3, 4, 5, 6, 7]", "jobs.0.placement.2",
         "must be an integer, got 2.0 (write 2: only a size, such as bytes, may be written 1e6 or 1000000.0)"),
    ],
)
def test_mpi_key_errors_are_plain(tmp_path: Path, old, new, field, reason):
    text = MPI.replace(old, new, 1)
    assert text != MPI
    with pytest.raises(NetsteerError) as info:
        build_scenario(parse_scenario(text, file="m.yaml"))
    err = info.value
    assert err.field == field and reason in err.reason, err.message()
    f, proc = run_file(tmp_path / "bad.yaml", text)
    assert proc.returncode == 2 and proc.stderr.strip() == f"netsteer: error: {f}: {err.field}: {err.reason}"


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("op,blocks", [
    ("{op: alltoall, algorithm: bruck", 8), ("{op: gather, algorithm: binomial", 8),
    ("{op: scatter, algorithm: binomial, root: 3", 8), ("{op: allgather, algorithm: recursive_doubling", 8),
    ("{op: allgather, algorithm: bruck", 8),
])
def test_a_message_past_1_eib_is_refused_on_both_paths(tmp_path: Path, stream, op, blocks):
    # the step's 1 EiB passed its own check, but these algorithms send several blocks in one
    # message: the DAG crashed (exit 1, "a step sends a negative size", "Python int too large
    # to convert to C long"), the streamed run stalled at 4 us
    text = textwrap.dedent(f"""
        name: big
        topology: {{kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}}
        routing: {{engine: dmodk}}
        jobs:
          - {{name: a, ranks: 16, stream: {stream}, program: [{{op: barrier}}, {op}, bytes: 1152921504606846976}}]}}
        """)
    with pytest.raises(NetsteerError) as info:
        build_scenario(parse_scenario(text, file="m.yaml"))
    err = info.value
    assert err.file == "m.yaml" and err.field == "jobs.0.program.1.bytes", err.message()
    assert f"up to {blocks} blocks of 1152921504606846976 bytes in one message ({blocks * 2**60} bytes)" in err.reason
    assert "1 EiB" in err.reason
    if op.startswith("{op: alltoall"):
        f, proc = run_file(tmp_path / "big.yaml", text)
        assert proc.returncode == 2 and proc.stderr == f"netsteer: error: {f}: {err.field}: {err.reason}\n"


def test_a_message_of_1_eib_runs_and_the_api_refuses_more():
    from netsteer.sim.stream import MpiJobSpec, simulate_mpi
    from netsteer.topology.pgft import pgft
    from netsteer.traffic.mpi import expand_job

    # 2 x 2^59 in one message is the limit itself: accepted
    dag = expand_job(4, "linear", [{"op": "alltoall", "algorithm": "bruck", "bytes": 2**59}], 1, 4)
    assert max(dag.bytes) == 2**60 + 16
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    for run in (lambda steps: expand_job(4, "linear", steps, 1, 16),
                lambda steps: simulate_mpi(t, "dmodk", [MpiJobSpec(ranks=4, program=steps)])):
        with pytest.raises(NetsteerError) as info:
            run([{"op": "alltoall", "algorithm": "bruck", "bytes": 2**59 + 1}])
        assert info.value.field.endswith("program.0.bytes") and "a message may carry" in info.value.reason


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("job", [
    "{name: a, ranks: 8, stream: %s, repeat: 4294967296, program: [{op: allreduce, bytes: 1MiB}]}",
    "{name: a, ranks: 8, stream: %s, repeat: 2147483648, program: [{op: allreduce, bytes: 1MiB}]}",
    # no flow at all, but a record per step run: the DAG expanded it for ever
    "{name: a, ranks: 1, stream: %s, repeat: 1000000000, program: [{op: barrier}]}",
])
def test_a_repeat_past_the_memory_is_refused_on_both_paths(tmp_path: Path, stream, job):
    # streamed, 2**32 crashed ("internal error: OverflowError: out of range integral type
    # conversion attempted", exit 1) and 2**31 was taken, the engine allocating a record per
    # iteration until killed
    text = textwrap.dedent("""
        name: rep
        topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
        routing: {engine: dmodk}
        jobs:
          - JOB
        """).replace("JOB", job % stream)
    with pytest.raises(LimitError) as info:
        build_scenario(parse_scenario(text, file="m.yaml"))
    err = info.value
    assert err.file == "m.yaml" and err.field == "jobs.0.repeat", err.message()
    assert "iterations" in err.reason or "iteration" in err.reason
    assert "--max-memory" in err.reason
    if "4294967296" in job:
        f, proc = run_file(tmp_path / "rep.yaml", text)
        assert proc.returncode == 2 and proc.stderr == f"netsteer: error: {f}: {err.field}: {err.reason}\n"


def test_simulate_mpi_refuses_a_repeat_past_the_engine():
    from netsteer.sim.stream import MpiJobSpec, simulate_mpi
    from netsteer.topology.pgft import pgft

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    job = MpiJobSpec(ranks=8, repeat=2**40, program=[{"op": "allreduce", "bytes": "1MiB"}])
    with pytest.raises(NetsteerError) as info:  # the memory available
        simulate_mpi(t, "dmodk", [job])
    assert info.value.field == "jobs" and "would need about 600 TiB" in info.value.reason
    with pytest.raises(NetsteerError) as info:  # a limit that lets it through: the engine's range
        simulate_mpi(t, "dmodk", [job], memory_limit=2**62)
    assert info.value.field == "jobs.0.repeat" and "at most 4,294,967,295" in info.value.reason
