"""MPI job programs: parsing with units, expansion, labels, spans and the op report."""

import numpy as np
import pytest

from netsteer.errors import NetsteerError
from netsteer.traffic.mpi import MpiJob, build_job, expand_job, op_report, parse_program


def test_program_sizes_and_durations_are_parsed_with_units():
    steps = parse_program([
        {"op": "allreduce", "bytes": "16MiB", "algorithm": "rdb"},
        {"op": "compute", "duration": "1ms"},
        {"op": "send", "src": 0, "dst": 1, "bytes": "1MiB"},
        {"op": "bcast", "bytes": 100, "root": 2},
    ])
    assert steps[0].bytes == 16 * 2**20 and steps[0].algorithm == "recursive_doubling"
    assert steps[1].duration == 1_000_000
    assert (steps[2].src, steps[2].dst, steps[2].bytes) == (0, 1, 2**20)
    assert steps[3].root == 2


@pytest.mark.parametrize("step,field,match", [
    ({"op": "allreduce", "bytes": "-1MiB"}, "program.0.bytes", "must not be negative"),
    ({"op": "allreduce", "bytes": -5}, "program.0.bytes", "must not be negative"),
    ({"op": "compute", "duration": "-1ms"}, "program.0.duration", "must not be negative"),
    ({"op": "allreduce", "bytes": "1 parsec"}, "program.0.bytes", "unknown size unit"),
    ({"op": "alltoal", "bytes": 1}, "program.0", "unknown op 'alltoal'; did you mean 'alltoall'?"),
    ({"op": "allreduce", "bytes": 1, "algorithm": "magic"}, "program.0", "unknown algorithm"),
    ({"op": "allreduce", "bytes": 1, "root": 0}, "program.0", "unknown key 'root' for op allreduce"),
    ({"op": "send", "src": 1, "dst": 1, "bytes": 1}, "program.0", "to itself"),
])
def test_bad_steps_name_the_field(step, field, match):
    with pytest.raises(NetsteerError, match=match) as e:
        parse_program([step])
    assert e.value.field == field


def test_expansion_errors_name_the_step():
    prog = [{"op": "barrier"}, {"op": "bcast", "bytes": 8, "root": 9}]
    with pytest.raises(NetsteerError, match="root 9 is not a rank") as e:
        expand_job(4, "linear", prog, 1, n_hosts=4)
    assert e.value.field == "program.1.root"
    with pytest.raises(NetsteerError, match="power-of-two") as e:
        expand_job(6, "linear", [{"op": "alltoall", "bytes": 8}], 1, n_hosts=8)
    # no algorithm in the step: its default is the problem, at the step
    assert e.value.field == "program.0"
    assert e.value.reason.startswith("alltoall's default algorithm pairwise pairs ranks by XOR")
    assert e.value.reason.endswith("; set algorithm: bruck")
    with pytest.raises(NetsteerError, match="power-of-two") as e:
        expand_job(6, "linear", [{"op": "alltoall", "bytes": 8, "algorithm": "pairwise"}], 1, n_hosts=8)
    assert e.value.field == "program.0.algorithm"
    with pytest.raises(NetsteerError, match="do not fit") as e:
        expand_job(9, "linear", [{"op": "barrier"}], 1, n_hosts=8)
    assert e.value.field == "ranks"


def test_repeat_chains_iterations_and_compute_is_a_delay_per_rank():
    prog = [{"op": "allreduce", "bytes": 400, "algorithm": "ring"},
            {"op": "compute", "duration": "2us"}]
    x = build_job(4, "linear", prog, 3, n_hosts=4, job_label="app", envelope_bytes=0)
    per_iter = 2 * 3 * 4 + 4
    assert len(x.dag) == 3 * per_iter
    assert [(s.iteration, s.op) for s in x.spans] == [
        (i, op) for i in range(3) for op in ("allreduce", "compute")]
    compute = x.spans[1]
    assert [x.dag.delay_ns[i] for i in range(compute.first, compute.end)] == [2000] * 4
    assert all(x.dag.src[i] == x.dag.dst[i] for i in range(compute.first, compute.end))
    # iteration 1's first flows wait on iteration 0's compute
    second = x.spans[2].first
    assert all(d in range(compute.first, compute.end) for d in x.dag.deps[second])
    assert x.dag.labels == ["app:allreduce", "app:compute"]


def test_send_only_involves_its_two_ranks_and_carries_the_envelope():
    x = build_job(4, [3, 2, 1, 0], [{"op": "send", "src": 1, "dst": 3, "bytes": "1KiB"}],
                  1, n_hosts=4)
    assert (x.dag.src, x.dag.dst, x.dag.bytes) == ([2], [0], [1024 + 16])
    assert x.frontier == [[], [0], [], [0]]


def test_op_report_sums_time_per_kind_and_bandwidth():
    x = build_job(2, "linear", [{"op": "allreduce", "bytes": 1000},
                                {"op": "compute", "duration": "5us"}],
                  2, n_hosts=2, job_label="a", envelope_bytes=0)
    # per iteration: 4 ring flows (2 steps), then 2 compute delays
    comp = np.array([1000, 1000, 3000, 3000, 8000, 8000,
                     9000, 9000, 10000, 10000, 15000, 15000])
    rep = op_report(x.spans, x.dag, comp)["a"]
    assert rep["completion_ns"] == 15000
    # busbw: 2 (p-1)/p = 1 on 2 ranks
    assert rep["ops"]["allreduce"] == {"count": 2, "time_ns": 3000 + 2000, "bytes": 2000,
                                      "algbw_Bps": 2000 * 1e9 / 5000, "busbw_Bps": 2000 * 1e9 / 5000}
    assert rep["ops"]["compute"] == {"count": 2, "time_ns": 10000, "bytes": 0}


@pytest.mark.parametrize("op,nbytes,algbw,busbw", [
    # 8 ranks, 14 ms each (the 8 MB ring allreduce on 8 Gb/s links: 14 x 1 MB)
    ("allreduce", 8_000_000, 8e6 / 14e-3, 8e6 / 14e-3 * 2 * 7 / 8),  # 571 MB/s, bus 1 GB/s
    ("allgather", 1_000_000, 8e6 / 14e-3, 8e6 / 14e-3 * 7 / 8),  # nccl-tests' size: count x ranks
    ("alltoall", 1_000_000, 8e6 / 14e-3, 8e6 / 14e-3 * 7 / 8),
    ("gather", 1_000_000, 8e6 / 14e-3, 8e6 / 14e-3 * 7 / 8),
    ("scatter", 1_000_000, 8e6 / 14e-3, 8e6 / 14e-3 * 7 / 8),
    ("bcast", 8_000_000, 8e6 / 14e-3, 8e6 / 14e-3),
    ("reduce", 8_000_000, 8e6 / 14e-3, 8e6 / 14e-3),
    ("send", 8_000_000, 8e6 / 14e-3, 8e6 / 14e-3),
])
def test_busbw_is_algbw_times_the_nccl_tests_factor(op, nbytes, algbw, busbw):
    from netsteer.traffic.program import OpSpan, aggregate_ops

    spans = [(OpSpan("j", i, 0, op, None, nbytes, 8, 0, 1), i * 20_000_000, i * 20_000_000 + 14_000_000)
             for i in range(2)]
    o = aggregate_ops(spans)["j"]["ops"][op]
    assert o["time_ns"] == 28_000_000
    assert o["algbw_Bps"] == pytest.approx(algbw, rel=1e-12)
    assert o["busbw_Bps"] == pytest.approx(busbw, rel=1e-12)


def test_compute_and_barrier_have_no_bandwidth():
    from netsteer.traffic.program import OpSpan, aggregate_ops

    ops = aggregate_ops([(OpSpan("j", 0, 0, "barrier", None, 0, 8, 0, 1), 0, 100),
                         (OpSpan("j", 0, 1, "compute", None, 0, 8, 1, 2), 100, 1100)])["j"]["ops"]
    assert all("algbw_Bps" not in o and "busbw_Bps" not in o for o in ops.values())


def test_mpi_job_model_forbids_unknown_keys_and_validates_program():
    job = MpiJob(name="app", ranks=256, placement="linear",
                 program=[{"op": "allreduce", "bytes": "16MiB", "algorithm": "ring"},
                          {"op": "compute", "duration": "1ms"}], repeat=5)
    assert job.repeat == 5 and job.program[0].bytes == 16 * 2**20
    with pytest.raises(Exception, match="Extra inputs"):
        MpiJob(ranks=2, program=[{"op": "barrier"}], colour="red")
    with pytest.raises(Exception, match="greater than or equal to 1"):
        MpiJob(ranks=0, program=[{"op": "barrier"}])
