"""netsteer against SimGrid's SMPI on the same FAT_TREE platforms.

The issue asks for 5%; on these cases the two agree to 0.01% (docs/simgrid-validation.md),
so the tests hold them to 0.5%: a regression in either the expansion (sizes, order,
partners) or the engine (sharing, latency) shows up long before 5%.
"""

import shutil

import numpy as np
import pytest

from netsteer.errors import NetsteerError
from netsteer.traffic import collectives as coll
from netsteer.traffic.dag import FlowDag
from netsteer.traffic.placement import place
from netsteer.validation.simgrid import (Case, compare, parse_output, platform_xml,
                                         run_smpi, smpi_algorithm)

TOLERANCE = 0.005

needs_smpi = pytest.mark.skipif(shutil.which("smpirun") is None,
                                reason="smpirun not installed (Debian libsimgrid-dev)")


def _engine_available() -> bool:
    try:
        import netsteer._core  # noqa: F401
        from netsteer.routing import build_routing  # noqa: F401
        from netsteer.sim import simulate  # noqa: F401
    except ImportError:
        return False
    return True


needs_engine = pytest.mark.skipif(not _engine_available(), reason="netsteer engine not built")


def test_platform_is_a_split_duplex_fat_tree_with_free_loopback():
    xml = platform_xml(2, [16, 16], [1, 4], [1, 1], 10e9, 1000)
    assert 'topology="FAT_TREE" topo_parameters="2;16,16;1,4;1,1"' in xml
    assert 'radical="0-255"' in xml
    assert 'sharing_policy="SPLITDUPLEX"' in xml
    assert 'bw="10000000000bps" lat="1000ns"' in xml
    assert 'loopback_lat="0ns"' in xml


def test_bench_output_is_parsed():
    lines = "".join(f"netsteer-rank {r} start={0.5 + r / 10} end={1.25 - r / 10}\n" for r in range(4))
    head = "netsteer-bench op=allreduce bytes=64 ranks=4\n"
    assert parse_output("[0.0] noise\n" + lines + head) == (0.5, 1.25)
    with pytest.raises(RuntimeError, match="no netsteer-bench lines"):
        parse_output("smpirun said nothing useful")
    with pytest.raises(RuntimeError, match="expected 4 rank lines"):
        parse_output(lines.splitlines(keepends=True)[0] + head)


@pytest.mark.simgrid
@needs_smpi
def test_smpi_adds_a_16_byte_envelope_to_every_message():
    # 0 bytes over 2 cables of 1 us at 1 Gbps: 2 us + 16 B * 8 / 1e9 = 2.128 us
    t = run_smpi("send", 0, 2, levels=2, down=[4, 4], up=[1, 2], bandwidth_bps=1e9,
                 latency_ns=1000)
    assert t == pytest.approx(2.128e-6, rel=1e-9)
    assert coll.MPI_ENVELOPE_BYTES == 16


ISSUE_OPS = [
    ("bcast", "binomial", 4 * 2**20),
    ("allreduce", "ring", 16 * 2**20),
    ("allreduce", "recursive_doubling", 4 * 2**20),
    ("alltoall", "pairwise", 64 * 2**10),
]


@pytest.mark.simgrid
@needs_smpi
@needs_engine
@pytest.mark.parametrize("up", [(1, 16), (1, 4)], ids=["nonblocking", "oversubscribed"])
@pytest.mark.parametrize("ranks", [64, 256])
@pytest.mark.parametrize("op,algorithm,nbytes", ISSUE_OPS, ids=[f"{o}-{a}" for o, a, _ in ISSUE_OPS])
def test_issue_cases_agree_with_smpi(op, algorithm, nbytes, ranks, up):
    case = Case(op, algorithm, ranks, nbytes, levels=2, down=(16, 16), up=up)
    [c] = compare([case])
    print(c.row())
    assert abs(c.error) < TOLERANCE, c.row()


def _random_cases():
    hosts = place(12, "random", 32, seed=12)
    for (op, name), algo in coll.REGISTRY.items():
        n = 2**14 if op in ("alltoall", "allgather", "gather", "scatter") else 12 * 2**14
        try:
            coll.expand(FlowDag(), op, name, hosts, n, root=5 if algo.rooted else 0)
        except NetsteerError:
            continue  # pairwise alltoall needs a power of two
        yield op, name, n, (5 if algo.rooted else 0)
    # what the ring leaves over (all of it below 12 elements): SMPI's reduce and bcast
    yield "allreduce", "ring", 12 * 2**14 + 5, 0
    yield "allreduce", "ring", 7, 0


@pytest.mark.simgrid
@needs_smpi
@needs_engine
@pytest.mark.parametrize("op,algorithm,nbytes,root", list(_random_cases()),
                         ids=lambda v: str(v))
def test_every_algorithm_agrees_with_smpi_on_random_placement(op, algorithm, nbytes, root):
    """12 ranks scattered over an oversubscribed 32-host tree: sizes, partners and
    order of every algorithm, and the CM02 sharing of contended uplinks."""
    from netsteer.routing import build_routing
    from netsteer.sim import simulate
    from netsteer.topology.pgft import pgft

    hosts = place(12, "random", 32, seed=12)
    smpi = run_smpi(op, nbytes, 12, levels=2, down=[8, 4], up=[1, 2], bandwidth_bps=10e9,
                    latency_ns=1000, algorithm=algorithm, root=root, hosts=hosts)
    topo = pgft(2, [8, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    dag = FlowDag()
    coll.expand(dag, op, algorithm, hosts, nbytes, root=root,
                envelope_bytes=coll.MPI_ENVELOPE_BYTES)
    mine = simulate(topo, build_routing(topo, "dmodk"), dag, sharing="cm02").makespan_ns * 1e-9
    assert mine == pytest.approx(smpi, rel=TOLERANCE)
    assert np.isfinite(mine) and mine > 0


@pytest.mark.simgrid
@needs_smpi
@needs_engine
@pytest.mark.parametrize("op,algorithm,ranks,nbytes,root,job", [
    ("reduce", "rabenseifner", 8, 0, 3, {}),  # SMPI returns at once on count 0
    ("reduce", "rabenseifner", 8, 5, 3, {}),  # pads to one element per rank
    ("reduce", "rabenseifner", 7, 7 * 1000 + 3, 6, {}),  # folds the first 2 rem ranks
    ("reduce", "binomial", 8, 0, 3, {}),  # returns at once on count 0
    ("allreduce", "ring", 5, 0, 0, {"reduce": "binomial"}),  # so the leftover is the bcast
    ("allreduce", "ring", 8, 8 * 100 + 3, 0, {"reduce": "rabenseifner"}),  # padded leftover
], ids=str)
def test_short_and_empty_reduces_agree_with_smpi(op, algorithm, ranks, nbytes, root, job):
    """Reduces where SMPI 3.32 has special cases: 0 elements, fewer elements than
    ranks, a non-power of two."""
    from netsteer.routing import build_routing
    from netsteer.sim import simulate
    from netsteer.topology.pgft import pgft

    hosts = place(ranks, "random", 32, seed=3)
    cfg = {f"smpi/{o}": smpi_algorithm(o, a) for o, a in job.items()}  # the job's other ops
    smpi = run_smpi(op, nbytes, ranks, levels=2, down=[8, 4], up=[1, 2], bandwidth_bps=10e9,
                    latency_ns=1000, algorithm=algorithm, root=root, hosts=hosts, extra_cfg=cfg)
    topo = pgft(2, [8, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    dag = FlowDag()
    coll.expand(dag, op, algorithm, hosts, nbytes, root=root, envelope_bytes=coll.MPI_ENVELOPE_BYTES,
                job_algorithms=job)
    mine = simulate(topo, build_routing(topo, "dmodk"), dag, sharing="cm02").makespan_ns * 1e-9
    assert mine == pytest.approx(smpi, rel=TOLERANCE, abs=1e-12)


@needs_smpi
def test_smpi_aborts_rabenseifner_reduce_below_one_element_per_rank_off_powers_of_two():
    """Why netsteer refuses it: SMPI's folding step sends p elements to a receive of
    count and aborts."""
    with pytest.raises(RuntimeError, match="smpirun failed"):
        run_smpi("reduce", 11, 12, levels=2, down=[8, 4], up=[1, 2], bandwidth_bps=10e9,
                 latency_ns=1000, algorithm="rabenseifner")
    with pytest.raises(NetsteerError, match="MPI_ERR_TRUNCATE"):
        coll.expand(FlowDag(), "reduce", "rabenseifner", list(range(12)), 11)


# Under random placement ranks contend for the oversubscribed uplinks. netsteer still
# matches bcast and the allreduces to 1e-6; contended pairwise alltoall drifts by up
# to 0.8% (netsteer later on every rank, cause open: docs/simgrid-validation.md).
RANDOM_TOLERANCE = {"alltoall": 0.02}


@pytest.mark.simgrid
@needs_smpi
@needs_engine
@pytest.mark.parametrize("op,algorithm,nbytes", ISSUE_OPS, ids=[f"{o}-{a}" for o, a, _ in ISSUE_OPS])
def test_issue_cases_with_random_placement_on_the_oversubscribed_tree(op, algorithm, nbytes):
    from netsteer.routing import build_routing
    from netsteer.sim import simulate
    from netsteer.topology.pgft import pgft

    hosts = place(64, "random", 256, seed=1)
    smpi = run_smpi(op, nbytes, 64, levels=2, down=[16, 16], up=[1, 4], bandwidth_bps=10e9,
                    latency_ns=1000, algorithm=algorithm, hosts=hosts)
    topo = pgft(2, [16, 16], [1, 4], link_bandwidth=10e9, link_latency_ns=1000)
    dag = FlowDag()
    coll.expand(dag, op, algorithm, hosts, nbytes, envelope_bytes=coll.MPI_ENVELOPE_BYTES)
    mine = simulate(topo, build_routing(topo, "dmodk"), dag, sharing="cm02").makespan_ns * 1e-9
    print(f"random {op}/{algorithm}: smpi {smpi * 1e3:.4f} ms netsteer {mine * 1e3:.4f} ms "
          f"err {(mine - smpi) / smpi * 100:+.4f}%")
    assert mine == pytest.approx(smpi, rel=RANDOM_TOLERANCE.get(op, TOLERANCE))


@pytest.mark.simgrid
@needs_smpi
@needs_engine
def test_a_latency_bound_ring_alltoall_on_31_ranks_is_within_the_documented_0_02_percent():
    """explore-mpi: 31 ranks at random on the 3-level `down=[4,4,4] up=[1,2,2]` tree,
    1 B per peer, CM02's default timing (1 ns merge on 0.1 ns ticks): 181.098 us
    against SMPI's 181.1509 us (-0.029%), outside docs/simgrid-validation.md's 0.02%.
    The cause was the float ceil of whole-tick finishes (a time a hair above a whole
    0.1 ns tick gained one), which changed which finishes the 1 ns merge joined; with
    whole ticks kept whole: 181.150 us (-0.0005%)."""
    from netsteer.routing import build_routing
    from netsteer.sim import simulate
    from netsteer.topology.pgft import pgft

    hosts = [9, 19, 13, 58, 42, 38, 5, 44, 62, 31, 46, 48, 56, 20, 18, 63, 14, 22, 59, 50, 23, 7, 51, 28,
             36, 60, 17, 40, 33, 55, 29]  # the explorer's draw
    tree = dict(levels=3, down=[4, 4, 4], up=[1, 2, 2])
    smpi = run_smpi("alltoall", 1, 31, **tree, bandwidth_bps=10e9, latency_ns=1000, algorithm="ring",
                    hosts=hosts)
    topo = pgft(**tree, link_bandwidth=10e9, link_latency_ns=1000)
    dag = FlowDag()
    coll.expand(dag, "alltoall", "ring", hosts, 1, envelope_bytes=coll.MPI_ENVELOPE_BYTES)
    mine = simulate(topo, build_routing(topo, "dmodk"), dag, sharing="cm02").makespan_ns * 1e-9
    print(f"SMPI {smpi * 1e6:.4f} us, netsteer {mine * 1e6:.4f} us ({mine / smpi - 1:+.4%})")
    assert mine == pytest.approx(smpi, rel=2e-4)
