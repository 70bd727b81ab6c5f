"""Benchmark: the MPI validation workloads scaled to 1024 ranks on a 3-level fat-tree,
netsteer next to SimGrid's SMPI (the peer) in the same run: wall time of each, and
each one's predicted time.

netsteer's wall time is reported twice: the simulation alone, and end to end
(topology, routing, DAG expansion and simulation), which is what compares with an
smpirun process.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from netsteer.routing import build_routing
from netsteer.sim import simulate
from netsteer.topology.pgft import pgft
from netsteer.traffic import collectives as coll
from netsteer.traffic.dag import FlowDag
from netsteer.validation.simgrid import Case, run_smpi

TREE = dict(levels=3, down=(8, 8, 16), up=(1, 8, 8))
CASES = [
    ("bcast", "binomial", 16 << 20),
    ("allreduce", "ring", 16 << 20),
    ("allreduce", "recursive_doubling", 1 << 20),
    ("alltoall", "pairwise", 16 << 10),
]


def netsteer_time(case: Case) -> tuple[float, float, float]:
    """(predicted s, simulation wall s, end-to-end wall s)."""
    t0 = time.perf_counter()
    t = case.tree()
    topo = pgft(t["levels"], t["down"], t["up"], t["parallel"],
                link_bandwidth=case.bandwidth_bps, link_latency_ns=case.latency_ns)
    dag = FlowDag()
    coll.expand(dag, case.op, case.algorithm, list(range(case.ranks)), case.nbytes,
                envelope_bytes=coll.MPI_ENVELOPE_BYTES)
    res = simulate(topo, build_routing(topo, "dmodk"), dag, sharing="cm02")
    return res.makespan_ns * 1e-9, res.wall_s, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--only", help="run one op/algorithm, e.g. allreduce/ring")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    for op, algo, nbytes in CASES:
        if a.only and a.only != f"{op}/{algo}":
            continue
        case = Case(op, algo, a.ranks, nbytes, **TREE)
        pred, sim_wall, e2e = netsteer_time(case)
        run = run_smpi(op, nbytes, a.ranks, algorithm=algo, details=True,
                       bandwidth_bps=case.bandwidth_bps, latency_ns=case.latency_ns, **case.tree())
        row = {
            "case": case.name,
            "netsteer_predicted_s": pred,
            "simgrid_predicted_s": run.seconds,
            "rel_diff": (pred - run.seconds) / run.seconds,
            "netsteer_sim_wall_s": sim_wall,
            "netsteer_end_to_end_wall_s": e2e,
            "simgrid_wall_s": run.wall_s,
            "speedup_end_to_end": run.wall_s / e2e,
            "speedup_simulation": run.wall_s / sim_wall,
        }
        rows.append(row)
        if not a.json:
            print(f"{row['case']:<52} predicted netsteer {pred * 1e3:9.3f} ms, SimGrid {run.seconds * 1e3:9.3f} ms "
                  f"({100 * row['rel_diff']:+.3f}%); wall netsteer {e2e:6.2f} s end to end "
                  f"({sim_wall:6.2f} s simulating), SimGrid {run.wall_s:7.1f} s -> "
                  f"{row['speedup_end_to_end']:.0f}x ({row['speedup_simulation']:.0f}x)", flush=True)
    if a.json:
        print(json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()} cores="
                          f"{__import__('os').cpu_count()}", "tree": TREE, "rows": rows}))


if __name__ == "__main__":
    main()
