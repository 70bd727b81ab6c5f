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
"slowdown" of QoS), events and solves. Median of 3 runs.

``--packet`` (where the packet fidelity is built) also runs the QoS workload packet by
packet, scaled down so that it ends in minutes on a shared machine (``--scale``
divides every message and checkpoint size, ``--iterations`` replaces the 20), with
the flow engine's time on the same scaled run beside it.

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


def workload(topo, scale: int = 1, iterations: int = 20):
    dag, paths = FlowDag(), {}
    n = topo.n_hosts
    prog = [{"op": "allreduce", "bytes": max(1, (1 << 20) // scale), "algorithm": "recursive_doubling"},
            {"op": "bcast", "bytes": max(1, 1024 // scale)}, {"op": "compute", "duration": "20us"}]
    build_job(512, "linear", prog, iterations, n, job_label="mpi", dag=dag)
    jobs = [0] * len(dag)
    staging_hosts = list(range(n - 33, n - 1))
    pfs = n - 1
    st = Staging(ssd_rate=2e9, pfs_rate=8e9)
    for k, h in enumerate(range(0, 960, 8)):
        st.checkpoint(dag, paths, "ckpt", [h], staging=staging_hosts[k % 32], pfs=pfs, nbytes=max(1, (64 << 20) // scale), at_ns=0)
        jobs += [1, 1]
    noise = []
    for k, h in enumerate(range(1, 960, 15)):
        noise += Staging.noise(dag, paths, "noise", [h], staging=staging_hosts[k % 32])
        jobs.append(2)
    return dag, paths, np.asarray(jobs), staging_hosts, pfs, noise


def one(with_qos: bool, scale: int = 1, iterations: int = 20, fidelity: str = "flow"):
    topo = pgft(3, [8, 8, 16], [1, 8, 8], link_bandwidth=32e9, link_latency_ns=100)
    routing = build_routing(topo, "dmodk")
    t0 = time.perf_counter()
    dag, paths, jobs, st_hosts, pfs, noise = workload(topo, scale, iterations)
    extra = {}
    if with_qos:
        plan = apply_qos(QOS, dag, jobs, ["mpi", "ckpt", "noise"], paths=paths)
        if fidelity == "packet":
            from netsteer.qos.config import packet_keys
            from netsteer.sim.packet import PacketParams

            extra = {"packet": PacketParams.model_validate(packet_keys(plan.config)).engine_dict(),
                     "sls": plan.sl.copy()}
    bg = np.zeros(len(dag), dtype=bool)
    bg[noise] = True
    drv = StagingDriver(topo, routing, dag, staging=Staging(2e9, 8e9), staging_hosts=st_hosts, pfs_hosts=[pfs],
                        background=bg, **extra)
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
    ap.add_argument("--packet", action="store_true", help="also the packet engine on a scaled-down run")
    ap.add_argument("--scale", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=2)
    a = ap.parse_args()
    out = {}
    for name, q in (("maxmin", False), ("qos", True)):
        rs = [one(q) for _ in range(a.runs)]
        out[name] = {**rs[0], "sim_s": statistics.median(r["sim_s"] for r in rs),
                     "sim_cpu_s": statistics.median(r["sim_cpu_s"] for r in rs),
                     "build_s": statistics.median(r["build_s"] for r in rs)}
    out["slowdown"] = out["qos"]["sim_s"] / out["maxmin"]["sim_s"]
    out["slowdown_cpu"] = out["qos"]["sim_cpu_s"] / out["maxmin"]["sim_cpu_s"]
    if a.packet:
        small = {"scale": a.scale, "iterations": a.iterations}
        f = one(True, a.scale, a.iterations)
        p = one(True, a.scale, a.iterations, fidelity="packet")
        out["packet"] = {**small, "flow_sim_s": f["sim_s"], "packet_sim_s": p["sim_s"],
                         "packet_sim_cpu_s": p["sim_cpu_s"], "flows": p["flows"], "ratio": p["sim_s"] / f["sim_s"],
                         "makespan_flow_ms": f["makespan_s"] * 1e3, "makespan_packet_ms": p["makespan_s"] * 1e3}
    else:
        out["packet"] = "not run (--packet)"
    if a.json:
        print(json.dumps(out))
        return
    for k in ("maxmin", "qos"):
        r = out[k]
        print(f"{k:7s} flows {r['flows']:,}  build {r['build_s']:.2f} s  simulate {r['sim_s']:.2f} s "
              f"({r['sim_cpu_s']:.2f} s CPU)  "
              f"events {r['events']:,}  makespan {r['makespan_s'] * 1e3:.2f} ms  ({r['status']})")
    print(f"QoS / plain max-min simulate time: {out['slowdown']:.2f}x wall, {out['slowdown_cpu']:.2f}x CPU")
    pk = out["packet"]
    if isinstance(pk, dict):
        print(f"packet engine, sizes / {pk['scale']}, {pk['iterations']} iterations ({pk['flows']:,} flows): "
              f"{pk['packet_sim_s']:.2f} s ({pk['packet_sim_cpu_s']:.2f} s CPU) vs flow {pk['flow_sim_s']:.2f} s: "
              f"{pk['ratio']:.0f}x; makespan {pk['makespan_packet_ms']:.3f} ms vs {pk['makespan_flow_ms']:.3f} ms")
    else:
        print(f"packet engine: {pk}")


if __name__ == "__main__":
    main()
