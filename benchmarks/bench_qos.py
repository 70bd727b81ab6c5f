"""Benchmark: the flow engine under InfiniBand QoS, against plain max-min on the same run.

A 1,024-host 3-level fat-tree (PGFT levels=3 down=[8,8,16] up=[1,8,8], 32 Gbit/s
links, dmodk) carries four traffic classes at once, so both VL arbitration tables
are in use (high_limit 10: one priority class with limit-share weights):

- ``mpi``: a 512-rank job (hosts 0..511), 20 iterations of a 1 MiB recursive-doubling allreduce, a 1 KiB bcast
  and 20 us of compute (SL 0, VL 0, high table);
- ``staging``: every 8th host writes a 64 MiB checkpoint to one of 32 staging hosts,
  drained to a file system host (SL 1 and SL 2, low table);
- ``noise``: dd-like bulk writes from 64 hosts (SL 3, low table).

Both runs are the same DAG with the same routing; the QoS run has the flow weights
and priorities the approximation gives (``netsteer.qos``), the plain run the DAG's
defaults. Printed: wall time of building and of simulating each, their ratio (the
"slowdown" of QoS), events and solves. The packet engine's wall time on the same run
is printed when the packet fidelity is installed (``fidelity: packet``), else the
reason it is not. Median of 3 runs.

``--json`` prints one JSON object; record the figures in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from netsteer.control.core import Controller
from netsteer.qos.scenario import apply_qos
from netsteer.qos.staging import Staging, StagingDriver
from netsteer.routing import build_routing
from netsteer.sim.simulate import run_driver
from netsteer.topology.pgft import pgft
from netsteer.traffic.dag import FlowDag
from netsteer.traffic.mpi import build_job

QOS = {
    "max_vls": 4, "high_limit": 10, "vlarb_high": [[0, 32]],
    "vlarb_low": [[1, 64], [2, 32], [3, 8]], "sl2vl": [0, 1, 2, 3] * 4,
    "classes": [{"name": "mpi", "sl": 0, "kind": "mpi"}, {"name": "staging", "sl": 1, "kind": "staging"},
                {"name": "storage", "sl": 2, "kind": "storage"}, {"name": "noise", "sl": 3, "kind": "bulk"}],
}


def workload(topo):
    dag, paths = FlowDag(), {}
    n = topo.n_hosts
    prog = [{"op": "allreduce", "bytes": "1MiB", "algorithm": "recursive_doubling"}, {"op": "bcast", "bytes": "1KiB"}, {"op": "compute", "duration": "20us"}]
    build_job(512, "linear", prog, 20, n, job_label="mpi", dag=dag)
    jobs = [0] * len(dag)
    staging_hosts = list(range(n - 33, n - 1))
    pfs = n - 1
    st = Staging(ssd_rate=2e9, pfs_rate=8e9)
    for k, h in enumerate(range(0, 960, 8)):
        st.checkpoint(dag, paths, "ckpt", [h], staging=staging_hosts[k % 32], pfs=pfs, nbytes=64 << 20, at_ns=0)
        jobs += [1, 1]
    noise = []
    for k, h in enumerate(range(1, 960, 15)):
        noise += Staging.noise(dag, paths, "noise", [h], staging=staging_hosts[k % 32])
        jobs.append(2)
    return dag, paths, np.asarray(jobs), staging_hosts, pfs, noise


def one(with_qos: bool):
    topo = pgft(3, [8, 8, 16], [1, 8, 8], link_bandwidth=32e9, link_latency_ns=100)
    routing = build_routing(topo, "dmodk")
    t0 = time.perf_counter()
    dag, paths, jobs, st_hosts, pfs, noise = workload(topo)
    if with_qos:
        apply_qos(QOS, dag, jobs, ["mpi", "ckpt", "noise"], paths=paths)
    bg = np.zeros(len(dag), dtype=bool)
    bg[noise] = True
    drv = StagingDriver(topo, routing, dag, staging=Staging(2e9, 8e9), staging_hosts=st_hosts, pfs_hosts=[pfs],
                        background=bg)
    t1, c1 = time.perf_counter(), time.process_time()
    res = run_driver(drv, Controller())
    t2, c2 = time.perf_counter(), time.process_time()
    return {"flows": len(dag), "build_s": t1 - t0, "sim_s": t2 - t1, "sim_cpu_s": c2 - c1, "status": res.status,
            "makespan_s": res.makespan_ns / 1e9, "events": int(res.stats.get("events", 0)),
            "solves": int(res.stats.get("solves", res.stats.get("recomputes", 0)))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = {}
    for name, q in (("maxmin", False), ("qos", True)):
        rs = [one(q) for _ in range(a.runs)]
        out[name] = {**rs[0], "sim_s": statistics.median(r["sim_s"] for r in rs),
                     "sim_cpu_s": statistics.median(r["sim_cpu_s"] for r in rs),
                     "build_s": statistics.median(r["build_s"] for r in rs)}
    out["slowdown"] = out["qos"]["sim_s"] / out["maxmin"]["sim_s"]
    out["slowdown_cpu"] = out["qos"]["sim_cpu_s"] / out["maxmin"]["sim_cpu_s"]
    try:
        from netsteer.sim import packet  # noqa: F401  (the packet fidelity)
        out["packet"] = "installed: run with --packet (not measured by this version)"
    except ImportError:
        out["packet"] = "not measured: the packet fidelity is not on this branch yet"
    if a.json:
        print(json.dumps(out))
        return
    for k in ("maxmin", "qos"):
        r = out[k]
        print(f"{k:7s} flows {r['flows']:,}  build {r['build_s']:.2f} s  simulate {r['sim_s']:.2f} s "
              f"({r['sim_cpu_s']:.2f} s CPU)  "
              f"events {r['events']:,}  makespan {r['makespan_s'] * 1e3:.2f} ms  ({r['status']})")
    print(f"QoS / plain max-min simulate time: {out['slowdown']:.2f}x wall, {out['slowdown_cpu']:.2f}x CPU")
    print(f"packet engine: {out['packet']}")


if __name__ == "__main__":
    main()
