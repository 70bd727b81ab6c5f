"""The flow count a DAG job is refused on (``estimate_step_flows``) against the flows
the expansion really makes: exact for every algorithm, rank count, size, root,
element size and (for a ring allreduce's leftover) the job's reduce and bcast.

The count used to be extrapolated from 16 and 32 ranks: x1.5-3 too high for the
p log p algorithms at 1000 ranks, x5,000 for a 4096-rank 1 KiB ring allreduce (count
< p: only the leftover reduce + bcast), so jobs that fit were refused."""

import pytest

from netsteer.errors import LimitError, NetsteerError
from netsteer.limits import FLOW_BYTES, SPAN_BYTES
from netsteer.traffic import collectives as coll
from netsteer.traffic.algorithms import TABLE
from netsteer.traffic.collectives.counts import message_count
from netsteer.traffic.dag import FlowDag
from netsteer.traffic.mpi import MpiJob, check_job_size, estimate_step_flows, expand_job, parse_program

RANKS = [1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 16, 17, 24, 31, 33, 48, 64, 65, 100, 129]
ROOTED = ("bcast", "reduce", "gather", "scatter")


def _expanded(op, name, p, nbytes, root, elem, ja):
    d = FlowDag()
    try:
        coll.expand(d, op, name, list(range(p)), nbytes, root=root, elem_bytes=elem, job_algorithms=ja)
    except NetsteerError as e:
        return None, e.reason
    return len(d), None


@pytest.mark.parametrize("op,name", [(op, name) for op, name, *_ in TABLE])
def test_message_count_is_the_expanded_count(op, name):
    cases = 0
    for p in RANKS:
        for nbytes in sorted({0, 1, 8, p - 1, p, p + 1, 3 * p + 8, 1000, 100003}):
            for elem in (1, 8):
                if nbytes % elem and elem > 1:
                    continue
                roots = sorted({0, 1 % p, p // 2, p - 1}) if op in ROOTED else [0]
                jas = [None]
                if (op, name) == ("allreduce", "ring"):
                    jas = [{"reduce": r, "bcast": b}
                           for r in ("binomial", "nonblocking_linear", "rabenseifner")
                           for b in ("binomial", "scatter_allgather")]
                for root in roots:
                    for ja in jas:
                        real, why = _expanded(op, name, p, nbytes, root, elem, ja)
                        try:
                            got, why_not = message_count(op, name, p, nbytes, root, elem, ja), None
                        except NetsteerError as e:
                            got, why_not = None, e.reason
                        assert (got, why_not) == (real, why), (p, nbytes, root, elem, ja)
                        cases += 1
    assert cases > 150


@pytest.mark.parametrize("step,p,flows", [
    ({"op": "alltoall", "bytes": 8, "algorithm": "bruck"}, 4096, 4096 * 12),
    ({"op": "alltoall", "bytes": 8, "algorithm": "bruck"}, 1000, 1000 * 10),
    ({"op": "allgather", "bytes": 8, "algorithm": "bruck"}, 1000, 1000 * 10),
    ({"op": "barrier", "algorithm": "recursive_doubling"}, 1000, 2 * 488 + 512 * 9),
    ({"op": "allreduce", "bytes": 8000, "algorithm": "recursive_doubling"}, 1000, 2 * 488 + 512 * 9),
    ({"op": "allreduce", "bytes": 8000, "algorithm": "rabenseifner"}, 1000, 2 * 488 + 2 * 512 * 9),
    # count < p: the ring is only the leftover's reduce (nonblocking linear) and bcast (binomial)
    ({"op": "allreduce", "bytes": "1KiB"}, 4096, 2 * 4095),
    ({"op": "compute", "duration": "1us"}, 300, 300),
    ({"op": "send", "src": 3, "dst": 9, "bytes": 8}, 300, 1),
])
def test_large_jobs_are_counted_exactly(step, p, flows):
    st = parse_program([step])[0]
    assert estimate_step_flows(st, p) == flows
    if p <= 1000 and step["op"] != "alltoall":
        assert len(expand_job(p, "linear", [st], 1, p)) == flows


def test_allgather_recursive_doubling_on_a_non_power_of_two_is_not_undercounted():
    st = parse_program([{"op": "allgather", "bytes": 8, "algorithm": "recursive_doubling"}])[0]
    assert estimate_step_flows(st, 33) == len(expand_job(33, "linear", [st], 1, 33)) == 193


def test_jobs_that_fit_are_not_refused():
    # /tmp/explore-mpi/sc/est.yaml: 4096 x 12 x 100 = 4,915,200 flows, refused as 9,765,700
    job = MpiJob(ranks=4096, program=[{"op": "alltoall", "bytes": 8, "algorithm": "bruck"}], repeat=100)
    dag = FlowDag()
    # and a record of each of the 100 steps run (as many flows' bytes, rounded up)
    dag.max_flows = 4096 * 12 * 100 + -(-100 * SPAN_BYTES // FLOW_BYTES)
    check_job_size(job, dag)
    dag.max_flows -= 1
    with pytest.raises(LimitError, match=r"100 iterations x 1 step, a record of 600 B per step run, and 4,915,200 flows"):
        check_job_size(job, dag)
    dag.max_flows = 4096 * 12 * 100 - 1
    with pytest.raises(LimitError, match=r"about 4,915,200 flows \(49,152 per iteration x 100"):
        check_job_size(job, dag)
    # est2.yaml: 8,190 flows, refused as 40,892,596
    small = MpiJob(ranks=4096, program=[{"op": "allreduce", "bytes": "1KiB"}])
    dag.max_flows = 8190 + 2
    check_job_size(small, dag)


def test_a_start_counts_its_delay_flows():
    job = MpiJob(ranks=8, program=[{"op": "barrier"}], start="1us")
    dag = FlowDag()
    dag.max_flows = 8 * 3 + 8 + 2  # (+ the record of the one step run: 600 B)
    check_job_size(job, dag)
    dag.max_flows -= 1
    with pytest.raises(LimitError):
        check_job_size(job, dag)


def test_rounds_are_a_lower_bound_of_the_dag_depth():
    """``rounds`` sizes auto sampling of latency-bound jobs (least_time_ns): never more
    rounds than the DAG has, and within a few times of them."""
    from netsteer.traffic.collectives.counts import rounds

    for op, name, *_ in TABLE:
        for p in (2, 3, 5, 8, 12, 16, 33, 64):
            for nbytes in (0, 8, 1000):
                d = FlowDag()
                try:
                    coll.expand(d, op, name, list(range(p)), nbytes)
                except NetsteerError:
                    continue
                depth = coll.dag_depth(d)
                r = rounds(op, name, p, nbytes)
                assert r <= depth and (r > 0) == (depth > 0), (op, name, p, nbytes, r, depth)  # empty reduces: 0
                if (op, name) != ("scatter", "binomial"):  # smallest subtree first: deeper (explore-mpi F4)
                    assert depth <= 3 * r + 2, (op, name, p, nbytes, r, depth)


#: The algorithms whose messages gather several blocks of the step's bytes.
BLOCKS = {("alltoall", "bruck"), ("allgather", "recursive_doubling"), ("allgather", "bruck"),
          ("gather", "binomial"), ("scatter", "binomial")}


@pytest.mark.parametrize("op,name", [(op, name) for op, name, *_ in TABLE])
def test_message_blocks_is_the_largest_expanded_message(op, name):
    # the 1 EiB limit of a step's bytes was not checked against these: 16 x 2^60 overflowed
    # int64 in the DAG ("a step sends a negative size", "int too large to convert to C long")
    from netsteer.traffic.algorithms import message_blocks

    nbytes = 1000 * 8
    for p in RANKS:
        for root in (sorted({0, 1 % p, p // 2, p - 1}) if op in ROOTED else [0]):
            d = FlowDag()
            try:
                coll.expand(d, op, name, list(range(p)), nbytes, root=root, elem_bytes=8)
            except NetsteerError:
                continue  # (pairwise on a non-power of two)
            largest = max(d.bytes, default=0)
            blocks = message_blocks(op, name, p)
            if (op, name) in BLOCKS or p == 1:
                assert largest == blocks * nbytes, (p, root, largest, blocks)
            else:
                assert largest <= nbytes and blocks == 1, (p, root, largest)
