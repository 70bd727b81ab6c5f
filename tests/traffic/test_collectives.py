"""Collective algorithms: flow counts, sizes, partners and depths computed by hand."""

from __future__ import annotations

import pytest

from netsteer.errors import NetsteerError
from netsteer.traffic import collectives as coll
from netsteer.traffic.collectives import Steps, dag_depth, expand, run_programs, run_steps
from netsteer.traffic.dag import FlowDag


def build(op, algorithm, p, nbytes, **kw):
    dag = FlowDag()
    front = expand(dag, op, algorithm, list(range(p)), nbytes, **kw)
    return dag, front


def sent(dag, rank):
    return [i for i in range(len(dag)) if dag.src[i] == rank]


def received(dag, rank):
    return [i for i in range(len(dag)) if dag.dst[i] == rank]


def knowledge(dag, front, p):
    """Per rank, the ranks whose data can have reached it (transitively, by deps)."""
    origin: list[set[int]] = []
    for i in range(len(dag)):
        s = {dag.src[i]}
        for d in dag.deps[i]:
            s |= origin[d]
        origin.append(s)
    out = []
    for r in range(p):
        k = {r}
        for f in front[r]:
            if dag.dst[f] == r or dag.src[f] == r:
                k |= origin[f]
        out.append(k)
    return out


# -- bcast -----------------------------------------------------------------------------


def test_binomial_bcast_8_ranks_is_7_flows_in_3_rounds():
    dag, _ = build("bcast", "binomial", 8, 1000)
    assert len(dag) == 7
    assert dag_depth(dag) == 3
    assert set(dag.bytes) == {1000}
    assert sorted(dag.dst) == [1, 2, 3, 4, 5, 6, 7]
    # the root sends to 4, then 2, then 1, one after the other
    root_flows = sent(dag, 0)
    assert [dag.dst[i] for i in root_flows] == [4, 2, 1]
    assert root_flows[0] in dag.deps[root_flows[1]]
    assert root_flows[1] in dag.deps[root_flows[2]]


def test_binomial_bcast_with_root_3_on_6_ranks():
    dag, _ = build("bcast", "binomial", 6, 10, root=3)
    assert len(dag) == 5
    assert 3 not in dag.dst
    # relative ranks: 3->(3+4)%6=1, then 3->5, 3->4; 1->2 ; 5->0
    assert [dag.dst[i] for i in sent(dag, 3)] == [1, 5, 4]
    assert dag_depth(dag) == 3


def test_scatter_allgather_bcast_moves_each_piece_once_per_rank():
    p, n = 4, 400
    dag, front = build("bcast", "scatter_allgather", p, n)
    # scatter: 0->2 (200 B: pieces 2 and 3), 0->1 (100 B), 2->3 (100 B); then 3 ring steps
    assert len(dag) == 3 + 3 * p
    scatter = [(dag.src[i], dag.dst[i], dag.bytes[i]) for i in range(3)]
    assert sorted(scatter) == [(0, 1, 100), (0, 2, 200), (2, 3, 100)]
    # the ring passes every piece around, even one a rank already got in the scatter
    assert [sum(dag.bytes[i] for i in received(dag, r)) for r in range(p)] == [300, 400, 500, 400]
    ring = range(3, len(dag))
    assert all(dag.dst[i] == (dag.src[i] + 1) % p and dag.bytes[i] == 100 for i in ring)


# -- reduce ----------------------------------------------------------------------------


def test_binomial_reduce_8_ranks_gathers_to_root():
    dag, front = build("reduce", "binomial", 8, 64)
    assert len(dag) == 7 and dag_depth(dag) == 3
    assert [dag.src[i] for i in received(dag, 0)] == [1, 2, 4]
    assert knowledge(dag, front, 8)[0] == set(range(8))


def test_rabenseifner_reduce_halves_then_gathers():
    p, n = 8, 800
    dag, front = build("reduce", "rabenseifner", p, n)
    # 3 halving steps x 8 ranks, then a 7-flow binomial gather
    assert len(dag) == 3 * p + 7
    halving = range(3 * p)
    for r in range(p):
        assert sorted(dag.bytes[i] for i in halving if dag.src[i] == r) == [100, 200, 400]
    gather = range(3 * p, len(dag))
    assert sum(dag.bytes[i] for i in gather if dag.dst[i] == 0) == n - n // p
    assert knowledge(dag, front, p)[0] == set(range(p))


@pytest.mark.parametrize("p,root", [(12, 0), (12, 1), (5, 4), (7, 3)])
def test_rabenseifner_reduce_folds_non_powers_of_two(p, root):
    """SMPI's scatter_gather runs on any rank count with at least one element per
    rank: the first 2 rem ranks fold in pairs (odd sends its buffer to even), an odd
    root below 2 rem gets the result from place 0."""
    n = 100 * p
    dag, front = build("reduce", "rabenseifner", p, n, root=root)
    rem = p - (1 << (p.bit_length() - 1))
    fold = [(dag.src[i], dag.dst[i], dag.bytes[i]) for i in range(len(dag)) if dag.src[i] < 2 * rem
            and dag.src[i] % 2 and dag.dst[i] == dag.src[i] - 1 and dag.bytes[i] == n]
    assert sorted(fold) == [(r, r - 1, n) for r in range(1, 2 * rem, 2)]
    assert knowledge(dag, front, p)[root] == set(range(p))


def test_rabenseifner_reduce_on_short_buffers_does_as_smpi():
    """SMPI 3.32: nothing on 0 elements; fewer elements than ranks padded to one per
    rank on a power of two; refused elsewhere (SMPI aborts with MPI_ERR_TRUNCATE)."""
    assert len(build("reduce", "rabenseifner", 8, 0)[0]) == 0
    assert len(build("reduce", "rabenseifner", 12, 0)[0]) == 0
    short, _ = build("reduce", "rabenseifner", 8, 3, root=5)
    full, _ = build("reduce", "rabenseifner", 8, 8, root=5)
    assert list(zip(short.src, short.dst, short.bytes)) == list(zip(full.src, full.dst, full.bytes))
    with pytest.raises(NetsteerError, match="reduce rabenseifner on a non-power-of-two rank count "
                                            "needs at least one element per rank: 11 elements "
                                            "for 12 ranks .*MPI_ERR_TRUNCATE"):
        build("reduce", "rabenseifner", 12, 11)
    build("reduce", "rabenseifner", 12, 12)


def test_empty_binomial_reduce_sends_nothing():
    """SMPI's binomial reduce returns at once when count == 0."""
    assert len(build("reduce", "binomial", 8, 0, root=3)[0]) == 0
    # so a 0-byte ring allreduce whose job reduces binomially is only the bcast
    dag, _ = build("allreduce", "ring", 5, 0, job_algorithms={"reduce": "binomial"})
    assert len(dag) == 4 and set(dag.src) == {0, 2} and set(dag.bytes) == {0}


# -- allreduce -------------------------------------------------------------------------


def test_ring_allreduce_sends_2_p_minus_1_chunks_of_n_over_p():
    p, n = 5, 1000
    dag, front = build("allreduce", "ring", p, n)
    assert len(dag) == 2 * (p - 1) * p
    assert set(dag.bytes) == {n // p}
    assert dag_depth(dag) == 2 * (p - 1)
    for r in range(p):
        mine = sent(dag, r)
        assert len(mine) == 2 * (p - 1)
        assert {dag.dst[i] for i in mine} == {(r + 1) % p}
    assert all(k == set(range(p)) for k in knowledge(dag, front, p))


@pytest.mark.parametrize("p,n", [(3, 1000), (6, 1003), (5, 4), (7, 0)])
def test_ring_allreduce_passes_what_it_leaves_over_to_a_reduce_then_a_bcast(p, n):
    """SMPI's lr: the ring moves ``n // p`` per step; the ``n % p`` left over (all of
    it when ``n < p``) goes to rank 0 in one round (every receive posted at once),
    then out again down a binomial tree."""
    dag, front = build("allreduce", "ring", p, n)
    ring = 2 * (p - 1) * p if n >= p else 0
    rest = n % p if n >= p else n
    assert len(dag) == ring + 2 * (p - 1)
    assert sorted(set(dag.bytes[ring:])) == [rest]
    assert set(dag.bytes[:ring]) <= {n // p}
    reduce = range(ring, ring + p - 1)
    assert sorted(dag.src[i] for i in reduce) == list(range(1, p)) and {dag.dst[i] for i in reduce} == {0}
    ceil_log2 = (p - 1).bit_length()
    assert dag_depth(dag) == (2 * (p - 1) if ring else 0) + 1 + ceil_log2
    assert all(k == set(range(p)) for k in knowledge(dag, front, p))


def test_ring_allreduce_leftover_runs_the_jobs_reduce_and_bcast():
    p, n = 6, 1003
    dag, _ = build("allreduce", "ring", p, n,
                   job_algorithms={"reduce": "binomial", "bcast": "scatter_allgather"})
    ring = 2 * (p - 1) * p
    want = FlowDag()
    expand(want, "reduce", "binomial", list(range(p)), n % p)
    expand(want, "bcast", "scatter_allgather", list(range(p)), n % p)
    assert sorted(list(zip(dag.src, dag.dst, dag.bytes))[ring:]) == sorted(zip(want.src, want.dst, want.bytes))
    with pytest.raises(NetsteerError, match="passes its 1 leftover elements to the job's reduce "
                                            "rabenseifner"):
        build("allreduce", "ring", 6, 1003, job_algorithms={"reduce": "rabenseifner"})
    # on a power of two SMPI pads the 3 left over to one element per rank
    dag, _ = build("allreduce", "ring", 4, 1003, job_algorithms={"reduce": "rabenseifner"})
    want = FlowDag()
    expand(want, "reduce", "rabenseifner", list(range(4)), 4)
    expand(want, "bcast", "binomial", list(range(4)), 3)
    assert sorted(list(zip(dag.src, dag.dst, dag.bytes))[2 * 3 * 4:]) == sorted(zip(want.src, want.dst, want.bytes))


def test_nonblocking_linear_reduce_takes_every_message_in_one_round():
    dag, _ = build("reduce", "nonblocking_linear", 6, 10, root=4)
    assert len(dag) == 5 and dag_depth(dag) == 1
    assert sorted(dag.src[i] for i in received(dag, 4)) == [0, 1, 2, 3, 5]
    assert coll.lookup("reduce", "default").name == "nonblocking_linear"  # SMPI's name


def test_recursive_doubling_power_of_two_exchanges_the_whole_buffer():
    p, n = 8, 777
    dag, front = build("allreduce", "recursive_doubling", p, n)
    assert len(dag) == 3 * p and set(dag.bytes) == {n} and dag_depth(dag) == 3
    partners = sorted({dag.dst[i] for i in sent(dag, 5)})
    assert partners == sorted([5 ^ 1, 5 ^ 2, 5 ^ 4])
    assert all(k == set(range(p)) for k in knowledge(dag, front, p))


def test_recursive_doubling_folds_extra_ranks_on_6():
    # rem = 2: 0->1 and 2->3 fold, 4 ranks double twice, 1->0 and 3->2 unfold
    dag, front = build("allreduce", "recursive_doubling", 6, 100)
    assert len(dag) == 2 + 2 * 4 + 2
    assert dag_depth(dag) == 4
    assert sorted((dag.src[i], dag.dst[i]) for i in sent(dag, 0) + sent(dag, 2)) == [(0, 1), (2, 3)]
    assert all(k == set(range(6)) for k in knowledge(dag, front, 6))


def test_rabenseifner_allreduce_sends_2n_p_minus_1_over_p_per_rank():
    p, n = 8, 800
    dag, front = build("allreduce", "rabenseifner", p, n)
    assert len(dag) == 2 * 3 * p and dag_depth(dag) == 6
    for r in range(p):
        assert sum(dag.bytes[i] for i in sent(dag, r)) == 2 * n * (p - 1) // p
    assert all(k == set(range(p)) for k in knowledge(dag, front, p))


def test_rabenseifner_allreduce_on_12_ranks_reaches_everyone():
    dag, front = build("allreduce", "rabenseifner", 12, 1200)
    # 4 folds, 8 ranks x (3 halving + 3 doubling), 4 unfolds
    assert len(dag) == 4 + 8 * 6 + 4
    assert all(k == set(range(12)) for k in knowledge(dag, front, 12))


# -- alltoall, allgather -----------------------------------------------------------------


def test_pairwise_alltoall_exchanges_every_pair_once():
    p, n = 8, 300
    dag, front = build("alltoall", "pairwise", p, n)
    assert len(dag) == p * (p - 1) and set(dag.bytes) == {n} and dag_depth(dag) == p - 1
    pairs = {(dag.src[i], dag.dst[i]) for i in range(len(dag))}
    assert len(pairs) == p * (p - 1)
    # step i pairs r with r ^ i
    assert [dag.dst[i] for i in sent(dag, 3)] == [3 ^ i for i in range(1, p)]


def test_pairwise_alltoall_refuses_non_power_of_two():
    with pytest.raises(NetsteerError, match="power-of-two"):
        build("alltoall", "pairwise", 6, 10)


def test_bruck_alltoall_on_5_ranks_sends_blocks_by_bit():
    # blocks 1..4: bit 1 -> {1, 3}, bit 2 -> {2, 3}, bit 4 -> {4}
    dag, front = build("alltoall", "bruck", 5, 10)
    assert len(dag) == 15 and dag_depth(dag) == 3
    assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, 0)] == [(1, 20), (2, 20), (4, 10)]
    assert all(k == set(range(5)) for k in knowledge(dag, front, 5))


def test_ring_alltoall_sends_one_block_to_rank_plus_i():
    # step i (1..p-1): the block for rank + i goes to it, the one from rank - i comes in
    for p in (5, 8):
        dag, front = build("alltoall", "ring", p, 30)
        assert len(dag) == p * (p - 1) and set(dag.bytes) == {30} and dag_depth(dag) == p - 1
        for r in range(p):
            assert [dag.dst[i] for i in sent(dag, r)] == [(r + i) % p for i in range(1, p)]
            assert [dag.src[i] for i in received(dag, r)] == [(r - i) % p for i in range(1, p)]
        assert len({(dag.src[i], dag.dst[i]) for i in range(len(dag))}) == p * (p - 1)


def test_bruck_allgather_sends_what_it_has_to_rank_minus_pof2():
    # 6 ranks: 1 block to rank - 1, 2 to rank - 2, then the 6 - 4 left to rank - 4
    dag, front = build("allgather", "bruck", 6, 10)
    assert len(dag) == 18 and dag_depth(dag) == 3
    for r in range(6):
        assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, r)] == [
            ((r - 1) % 6, 10), ((r - 2) % 6, 20), ((r - 4) % 6, 20)]
        assert [dag.src[i] for i in received(dag, r)] == [(r + 1) % 6, (r + 2) % 6, (r + 4) % 6]
    # 8 ranks: no remainder step; each rank receives the 7 other blocks
    dag, front = build("allgather", "bruck", 8, 10)
    assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, 3)] == [(2, 10), (1, 20), (7, 40)]
    assert [sum(dag.bytes[i] for i in received(dag, r)) for r in range(8)] == [70] * 8
    assert all(k == set(range(8)) for k in knowledge(dag, front, 8))


def test_recursive_doubling_allgather_doubles_then_fills_the_short_group():
    # 8 ranks: exchange 1, 2, 4 blocks with rank ^ 1, ^ 2, ^ 4
    dag, front = build("allgather", "recursive_doubling", 8, 10)
    assert len(dag) == 24 and dag_depth(dag) == 3
    for r in range(8):
        assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, r)] == [(r ^ 1, 10), (r ^ 2, 20), (r ^ 4, 40)]
    # 6 ranks: groups {0..3} and {4, 5} at mask 4. 2 and 3 have no partner (6, 7), and
    # 4, 5 send the 2 blocks they hold; 0 and 1, which got {4, 5}, pass them to 2 and 3
    dag, front = build("allgather", "recursive_doubling", 6, 10)
    flows = lambda r: [(dag.dst[i], dag.bytes[i]) for i in sent(dag, r)]  # noqa: E731
    assert flows(0) == [(1, 10), (2, 20), (4, 40), (2, 20)]
    assert flows(1) == [(0, 10), (3, 20), (5, 40), (3, 20)]
    assert flows(2) == [(3, 10), (0, 20)] and flows(3) == [(2, 10), (1, 20)]
    assert flows(4) == [(5, 10), (0, 20)] and flows(5) == [(4, 10), (1, 20)]
    assert [sum(dag.bytes[i] for i in received(dag, r)) for r in range(6)] == [50] * 6
    assert all(k == set(range(6)) for k in knowledge(dag, front, 6))
    # 5 ranks: 4 is alone until mask 4; 0 then passes its block down the group {0..3}
    # (to 2, then 0 to 1 and 2 to 3, halving it)
    dag, front = build("allgather", "recursive_doubling", 5, 10)
    assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, 0)] == [(1, 10), (2, 20), (4, 40), (2, 10), (1, 10)]
    assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, 2)] == [(3, 10), (0, 20), (3, 10)]
    assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, 4)] == [(0, 10)]
    assert [sum(dag.bytes[i] for i in received(dag, r)) for r in range(5)] == [40] * 5
    assert all(k == set(range(5)) for k in knowledge(dag, front, 5))


def test_ring_allgather_shifts_partner_each_step():
    dag, front = build("allgather", "ring", 4, 50)
    assert len(dag) == 12 and set(dag.bytes) == {50}
    assert [dag.dst[i] for i in sent(dag, 1)] == [2, 3, 0]
    assert all(k == set(range(4)) for k in knowledge(dag, front, 4))


# -- gather, scatter, barrier -----------------------------------------------------------


def test_binomial_gather_on_6_ranks_sends_subtrees():
    # children of 0: 1 (1 block), 2 (2 blocks: 2, 3), 4 (min(4, 6-4) = 2 blocks: 4, 5)
    dag, front = build("gather", "binomial", 6, 10)
    assert len(dag) == 5
    assert [(dag.src[i], dag.bytes[i]) for i in received(dag, 0)] == [(1, 10), (2, 20), (4, 20)]
    assert knowledge(dag, front, 6)[0] == set(range(6))


def test_binomial_scatter_mirrors_gather():
    dag, _ = build("scatter", "binomial", 6, 10)
    assert [(dag.dst[i], dag.bytes[i]) for i in sent(dag, 0)] == [(1, 10), (2, 20), (4, 20)]
    assert sum(dag.bytes) == 10 * (1 + 2 + 2 + 1 + 1)


@pytest.mark.parametrize("p,depth", [(2, 1), (4, 3), (8, 6), (16, 10), (32, 15)])
def test_binomial_scatter_sends_smallest_subtree_first_as_smpi(p, depth):
    """SMPI's scatter-ompi.cpp (not Open MPI's, largest first): log p (log p + 1) / 2
    rounds, as docs/collectives.md says."""
    dag, _ = build("scatter", "binomial", p, 10)
    assert dag_depth(dag) == depth == (p.bit_length() - 1) * p.bit_length() // 2
    assert [dag.dst[i] for i in sent(dag, 0)] == [1 << k for k in range(p.bit_length() - 1)]
    gather, _ = build("gather", "binomial", p, 10)
    assert dag_depth(gather) == p.bit_length() - 1


def test_linear_gather_is_sequential_at_the_root():
    dag, _ = build("gather", "linear", 5, 10, root=2)
    assert len(dag) == 4 and dag_depth(dag) == 4
    assert [dag.src[i] for i in received(dag, 2)] == [0, 1, 3, 4]


def test_dissemination_barrier_on_5_ranks():
    dag, front = build("barrier", None, 5, 0)
    assert len(dag) == 15 and set(dag.bytes) == {0} and dag_depth(dag) == 3
    assert all(k == set(range(5)) for k in knowledge(dag, front, 5))


def test_recursive_doubling_barrier_on_6_ranks():
    dag, front = build("barrier", "recursive_doubling", 6, 0)
    # 4 and 5 check in (2 flows), 4 ranks x 2 exchanges, 0 and 1 release them (2 flows)
    assert len(dag) == 2 + 8 + 2
    assert all(k == set(range(6)) for k in knowledge(dag, front, 6))


# -- mechanics ------------------------------------------------------------------------


def test_hosts_map_ranks_and_frontier_chains_collectives():
    dag = FlowDag()
    hosts = [10, 11, 12, 13]
    front = expand(dag, "allreduce", "ring", hosts, 400)
    first = len(dag)
    expand(dag, "bcast", "binomial", hosts, 8, front)
    assert set(dag.src) | set(dag.dst) == set(hosts)
    # the bcast's first flow (root -> rank 2) waits for both ranks' last ring step
    assert (dag.src[first], dag.dst[first]) == (10, 12)
    assert sorted(dag.deps[first]) == sorted(set(front[0] + front[2]))


def test_rendezvous_waits_for_the_receiver_and_eager_does_not():
    progs = coll.reduce_binomial(4, 10)
    rdv, eager = FlowDag(), FlowDag()
    run_programs(rdv, progs, [0, 1, 2, 3])
    run_programs(eager, progs, [0, 1, 2, 3], rendezvous=False)
    i = next(k for k in range(len(rdv)) if (rdv.src[k], rdv.dst[k]) == (2, 0))
    j = next(k for k in range(len(eager)) if (eager.src[k], eager.dst[k]) == (2, 0))
    first_rdv = next(k for k in range(len(rdv)) if (rdv.src[k], rdv.dst[k]) == (1, 0))
    assert first_rdv in rdv.deps[i]  # rank 0 posts its receive from 2 after the one from 1
    assert all(eager.dst[d] == 2 for d in eager.deps[j])


def test_envelope_bytes_ride_on_every_message():
    dag, _ = build("allgather", "ring", 4, 50, envelope_bytes=16)
    assert set(dag.bytes) == {66}


@pytest.mark.parametrize("op,algo", [
    ("allreduce", "ring"), ("alltoall", "pairwise"), ("alltoall", "bruck"), ("alltoall", "ring"),
    ("allgather", "ring"), ("allgather", "recursive_doubling"), ("allgather", "bruck"),
    ("barrier", "dissemination"), ("allreduce", "recursive_doubling"),
])
@pytest.mark.parametrize("rendezvous", [True, False])
def test_lock_step_fast_path_equals_message_matching(op, algo, rendezvous):
    p = 8
    steps = coll.lookup(op, algo).programs(p, 64 * p, 0, 1)
    assert isinstance(steps, Steps)
    a, b = FlowDag(), FlowDag()
    fa = run_steps(a, steps, list(range(p)), rendezvous=rendezvous)
    fb = run_programs(b, steps.programs(), list(range(p)), rendezvous=rendezvous)

    def shape(d):
        depth = []
        for i in range(len(d)):
            depth.append(1 + max((depth[x] for x in d.deps[i]), default=0))
        return sorted((d.src[i], d.dst[i], d.bytes[i], depth[i],
                       tuple(sorted((d.src[x], d.dst[x], depth[x]) for x in d.deps[i])))
                      for i in range(len(d)))

    assert shape(a) == shape(b)
    ends = lambda d, f: [sorted((d.src[x], d.dst[x]) for x in fr) for fr in f]  # noqa: E731
    assert ends(a, fa) == ends(b, fb)


def test_every_algorithm_expands_without_deadlock_on_odd_counts():
    for (op, name), algo in coll.REGISTRY.items():
        for p in (2, 3, 7, 16):
            try:
                dag, front = build(op, name, p, 16 * p * 8, root=p - 1 if algo.rooted else 0)
            except NetsteerError:
                continue
            assert len(front) == p and len(dag) >= p - 1, (op, name, p)


# -- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize("kw,match", [
    (dict(op="allreduce", algorithm="magic"), "unknown algorithm 'magic' for allreduce"),
    (dict(op="reduce_scatter", algorithm=None), "unknown collective"),
    (dict(op="bcast", algorithm=None, root=4), "root 4 is not a rank"),
    (dict(op="allreduce", algorithm=None, root=1), "has no root"),
    (dict(op="bcast", algorithm=None, nbytes=-1), "negative"),
])
def test_bad_input_is_refused_with_a_reason(kw, match):
    args = dict(nbytes=400, root=0)
    args.update(kw)
    with pytest.raises(NetsteerError, match=match):
        expand(FlowDag(), args.pop("op"), args.pop("algorithm"), [0, 1, 2, 3], **args)


def test_simgrid_names_are_accepted_as_aliases():
    assert coll.lookup("allreduce", "lr").name == "ring"
    assert coll.lookup("alltoall", "pair").name == "pairwise"
    assert coll.lookup("allgather", "rdb").name == "recursive_doubling"
    assert coll.lookup("bcast", "scatter_LR_allgather").name == "scatter_allgather"
