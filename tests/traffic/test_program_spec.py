"""The streamed path's plain job spec (``netsteer.traffic.program.MpiJobSpec``, no
pydantic) accepts what the scenario model ``MpiJob`` accepts, to the same values, and
refuses what it refuses, naming the same field; and a run is the same from either."""

from __future__ import annotations

import pytest

from netsteer.errors import NetsteerError
from netsteer.traffic.mpi import MpiJob, validation_error
from netsteer.traffic.program import MpiJobSpec, Step, as_spec

GOOD = [
    dict(ranks=16, program=[{"op": "barrier"}]),
    dict(ranks=8, name="a", placement="random", seed=3, repeat=2, start="1us", traffic_class=1, priority=2,
         program=[{"op": "allreduce", "bytes": "1MiB", "algorithm": "rdb", "elem_bytes": 4},
                  {"op": "bcast", "bytes": 100, "root": 7}, {"op": "compute", "duration": "1.5us"},
                  {"op": "send", "src": 0, "dst": 5, "bytes": "4KiB"},
                  {"op": "alltoall", "bytes": "1KiB", "algorithm": "bruck"},
                  {"op": "gather", "bytes": "1KiB"}, {"op": "scatter", "bytes": "1KiB", "algorithm": "linear"},
                  {"op": "reduce", "bytes": "2MiB", "algorithm": "rabenseifner"},
                  {"op": "allgather", "bytes": 64}, {"op": "barrier", "algorithm": "bruck"}]),
    dict(ranks=4, placement=[3, 2, 1, 0], program=[{"op": "compute", "duration": 0}]),
]

BAD = [
    dict(ranks=0, program=[{"op": "barrier"}]),
    dict(program=[{"op": "barrier"}]),
    dict(ranks=4, program=[]),
    dict(ranks=4, program=[{"op": "barrier"}], repeat=0),
    dict(ranks=4, program=[{"op": "barrier"}], priority=-1),
    dict(ranks=4, program=[{"op": "barrier"}], start="-1us"),
    dict(ranks=4, program=[{"op": "barrier"}], start="1 parsec"),
    dict(ranks=4, program=[{"op": "barrier"}], size=3),
    dict(ranks=4, program=[{"op": "nope"}]),
    dict(ranks=4, program=[{"bytes": 4}]),
    dict(ranks=4, program=[{"op": "barrier"}, {"op": "allreduce"}]),
    dict(ranks=4, program=[{"op": "allreduce", "bytes": "-1MiB"}]),
    dict(ranks=4, program=[{"op": "allreduce", "bytes": "1 parsec"}]),
    dict(ranks=4, program=[{"op": "allreduce", "bytes": 2**61}]),
    dict(ranks=4, program=[{"op": "allreduce", "bytes": 8, "algorithm": "nope"}]),
    dict(ranks=4, program=[{"op": "allreduce", "bytes": 8, "root": 1}]),
    dict(ranks=4, program=[{"op": "allreduce", "bytes": 8, "elem_bytes": 0}]),
    dict(ranks=4, program=[{"op": "bcast", "bytes": 8, "root": -1}]),
    dict(ranks=4, program=[{"op": "send", "src": 1, "dst": 1, "bytes": 8}]),
    dict(ranks=4, program=[{"op": "send", "src": 1, "bytes": 8}]),
    dict(ranks=4, program=[{"op": "compute"}]),
    dict(ranks=4, program=[{"op": "compute", "duration": "-1us"}]),
    dict(ranks=4, program=[{"op": "barrier", "bytes": 8}]),
    dict(ranks=4, program=[{"op": "allreduce", "byts": 8}]),
    dict(ranks=4, program=[{"op": None}]),
    dict(ranks=4, program=[{"op": ["allreduce"]}]),  # the spec raised TypeError (unhashable)
    dict(rank=4, program=[{"op": "barrier"}]),
    dict(ranks=4, placement="block", program=[{"op": "barrier"}]),
    dict(ranks=4, placement=3, program=[{"op": "barrier"}]),
]


def _model_error(kw) -> NetsteerError:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as e:
        MpiJob(**kw)
    return validation_error(e.value)


@pytest.mark.parametrize("kw", GOOD)
def test_the_spec_takes_what_the_model_takes_to_the_same_values(kw):
    spec, model = MpiJobSpec(**kw), MpiJob(**kw)
    assert as_spec(model) == spec == as_spec(kw)
    for s, m in zip(spec.program, model.program):
        for name in ("bytes", "algorithm", "root", "elem_bytes", "src", "dst", "duration"):
            if hasattr(m, name):
                assert getattr(s, name) == getattr(m, name), name


@pytest.mark.parametrize("kw", BAD)
def test_the_spec_refuses_what_the_model_refuses_naming_the_same_field(kw):
    want = _model_error(kw)
    with pytest.raises(NetsteerError) as got:
        as_spec(kw)
    # the same words too: a streamed job's error reads as the same job's in a DAG run
    assert (got.value.field, got.value.reason) == (want.field, want.reason)


def test_types_are_checked_strictly():
    for kw in [dict(ranks=True, program=[{"op": "barrier"}]), dict(ranks="4", program=[{"op": "barrier"}]),
               dict(ranks=4, program="barrier"), dict(ranks=4, program=[{"op": "bcast", "bytes": 8, "root": 1.0}]),
               dict(ranks=4, placement="diagonal", program=[{"op": "barrier"}]), dict(ranks=4, name=3, program=[{"op": "barrier"}])]:
        with pytest.raises(NetsteerError) as e:
            MpiJobSpec(**kw)
        assert e.value.field in ("ranks", "program", "program.0.root", "placement", "name")


def test_steps_are_frozen_and_hashable():
    s = MpiJobSpec(ranks=2, program=[{"op": "barrier"}]).program[0]
    assert isinstance(s, Step) and hash(s) == hash(Step("barrier"))
    with pytest.raises(AttributeError):
        s.op = "compute"
    job = MpiJobSpec(ranks=2, placement=[1, 0], program=[{"op": "barrier"}])
    assert job.placement == (1, 0) and hash(job) == hash(as_spec(dict(ranks=2, placement=(1, 0), program=[{"op": "barrier"}])))


def test_a_streamed_run_is_the_same_from_the_model_the_spec_and_a_dict():
    from netsteer.sim.stream import simulate_mpi
    from netsteer.topology.pgft import pgft

    t = pgft(2, [4, 8], [1, 4], link_bandwidth=10e9, link_latency_ns=1000)
    kw = dict(ranks=32, placement="random", seed=2, repeat=2, name="j",
              program=[{"op": "allreduce", "bytes": "256KiB", "algorithm": "rabenseifner"},
                       {"op": "alltoall", "bytes": "1KiB", "algorithm": "bruck"},
                       {"op": "bcast", "bytes": "64KiB", "algorithm": "scatter_allgather", "root": 5}])
    runs = [simulate_mpi(t, "dmodk", [j], sharing="cm02") for j in (MpiJob(**kw), MpiJobSpec(**kw), kw)]
    assert len({r.makespan_ns for r in runs}) == 1 and runs[0].status == "done"
    assert runs[0].report == runs[1].report == runs[2].report


def test_a_bad_job_in_a_streamed_run_names_its_index():
    from netsteer.sim.stream import simulate_mpi
    from netsteer.topology.pgft import pgft

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    with pytest.raises(NetsteerError) as e:
        simulate_mpi(t, "dmodk", [{"ranks": 4, "program": [{"op": "barrier"}]},
                                  {"ranks": 4, "program": [{"op": "bcast", "bytes": "1x"}]}])
    assert e.value.field == "jobs.1.program.0.bytes"


def test_the_integer_shortcuts_are_the_unit_parser():
    from netsteer.traffic import program
    from netsteer.units import MAX_BYTES, checked_duration, checked_size

    assert program._MAX_BYTES == MAX_BYTES
    for v in [0, 1, 4096, MAX_BYTES - 1, MAX_BYTES]:
        assert program._size(v) == checked_size(v)
    for v in [MAX_BYTES + 1, -1, True, 1.5, "1KiB", "-1B", 2**80]:
        try:
            want = checked_size(v)
        except ValueError as e:
            with pytest.raises(ValueError, match=None) as got:
                program._size(v)
            assert str(got.value) == str(e)
        else:
            assert program._size(v) == want
    assert program._duration(0) == checked_duration(0) == 0
    for v in [1, -1, "1us", 0.0, False]:
        try:
            want = checked_duration(v)
        except ValueError as e:
            with pytest.raises(ValueError) as got:
                program._duration(v)
            assert str(got.value) == str(e)
        else:
            assert program._duration(v) == want
