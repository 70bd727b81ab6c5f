"""Streamed MPI programs (netsteer.sim.stream) against SMPI running the same program.

The SimGrid side is benchmarks/peers/smpi_program.c: the collectives one after the
other on every rank, each with SMPI's algorithm pinned. Random placement on an
oversubscribed tree, so ranks contend for the uplinks. Held to the 0.5% of
test_smpi_validation.py.
"""

import shutil
import sys
from pathlib import Path

import pytest

from netsteer.sim.stream import simulate_mpi
from netsteer.topology.pgft import pgft
from netsteer.traffic.mpi import MpiJob
from netsteer.traffic.placement import place
from netsteer.validation.simgrid import SMPI_CONFIG, platform_xml

pytestmark = [
    pytest.mark.simgrid,
    pytest.mark.skipif(shutil.which("smpirun") is None or shutil.which("smpicc") is None,
                       reason="needs SimGrid's smpicc and smpirun (Debian libsimgrid-dev)"),
]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

TOLERANCE = 0.005
PROGRAMS = {
    "rabenseifner-bruck-vandegeijn": [("allreduce", "rabenseifner", 24 * 2**14, 0),
                                      ("alltoall", "bruck", 2**12, 0),
                                      ("bcast", "scatter_allgather", 24 * 2**13, 5)],
    "gather-reduce-barrier-allgather": [("gather", "linear", 2**13, 3), ("reduce", "binomial", 2**18, 7),
                                        ("barrier", "recursive_doubling", 0, 0),
                                        ("allgather", "ring", 2**12, 0)],
    # SMPI's lr passes what the ring leaves over to the job's reduce, then its bcast
    "ring-leftover-vandegeijn": [("allreduce", "ring", 24 * 2**12 + 17, 0),
                                 ("bcast", "scatter_allgather", 24 * 2**10 + 3, 5)],
    # 24 ranks: the first 16 fold in pairs; root 3 is odd and folded, so it gets the
    # result from place 0 (SMPI runs it on non-powers of two from one element per rank)
    "rabenseifner-reduce-folded": [("reduce", "rabenseifner", 24 * 2**12 + 5, 3),
                                   ("reduce", "rabenseifner", 2**14, 20),
                                   ("reduce", "rabenseifner", 0, 0)],
    "ring-leftover-smpi-defaults": [("allreduce", "ring", 24 * 2**12 + 23, 0),
                                    ("allreduce", "ring", 20, 0)],
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_streamed_program_agrees_with_smpi(name):
    from _peers import run_smpi_program

    program = PROGRAMS[name]
    tree = dict(levels=2, down=[8, 4], up=[1, 2])
    hosts = place(24, "random", 32, seed=5)
    xml = platform_xml(2, tree["down"], tree["up"], None, 10e9, 1000)
    smpi = run_smpi_program(program, hosts, xml, SMPI_CONFIG)["seconds"]
    steps = [{"op": op, "algorithm": a, **({"bytes": n} if op != "barrier" else {}),
              **({"root": r} if op in ("bcast", "reduce", "gather", "scatter") else {})}
             for op, a, n, r in program]
    job = MpiJob(name="j", ranks=24, placement=hosts, program=steps)
    topo = pgft(**tree, link_bandwidth=10e9, link_latency_ns=1000)
    mine = simulate_mpi(topo, "dmodk", [job], sharing="cm02").makespan_ns * 1e-9
    print(f"{name}: smpi {smpi * 1e3:.4f} ms netsteer {mine * 1e3:.4f} ms "
          f"err {(mine - smpi) / smpi:+.4%}")
    assert mine == pytest.approx(smpi, rel=TOLERANCE)
