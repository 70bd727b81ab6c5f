"""Benchmark: one weighted max-min solve with 100,000 flows on a 3-level fat-tree,
and, in the same run, a whole simulation of the same kind of workload against
SimGrid (the peer), as a wall-time ratio.

Prints its figures (``--json`` for one JSON object); record them in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from netsteer._core import maxmin  # noqa: E402
from netsteer.routing import build_routing  # noqa: E402
from netsteer.sim import simulate  # noqa: E402
from netsteer.topology import pgft  # noqa: E402
from netsteer.traffic import FlowDag  # noqa: E402
from netsteer.validation.simgrid import platform_from_topology  # noqa: E402

from _peers import run_simgrid_flows  # noqa: E402


def random_pairs(n_hosts: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n_hosts, n)
    dst = (src + rng.integers(1, n_hosts, n)) % n_hosts
    return src, dst


def solve_bench(flows: int, repeats: int) -> dict:
    levels, down, up = 3, [16, 16, 16], [1, 16, 16]
    topo = pgft(levels, down, up, link_bandwidth=100e9, link_latency_ns=100)
    routing = build_routing(topo, "dmodk")
    src, dst = random_pairs(topo.n_hosts, flows, 1)
    offsets, channels = routing.paths(src, dst)
    offsets = np.asarray(offsets, dtype=np.int64)
    channels = np.asarray(channels, dtype=np.int64)
    cap = topo.channel_bandwidth() / 8.0
    w = np.ones(flows)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        rates = maxmin(cap, offsets, channels, w)
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    hops = int(len(channels))
    return {
        "topology": f"pgft levels={levels} down={down} up={up}",
        "hosts": topo.n_hosts,
        "flows": flows,
        "flow_hops": hops,
        "solve_ms_median": med * 1e3,
        "solve_ms_min": min(times) * 1e3,
        "ns_per_flow_hop": med * 1e9 / hops,
        "rate_sum_Bps": float(rates.sum()),
    }


def peer_bench(flows: int, nbytes: int) -> dict:
    """Same flows, all at t=0, simulated to the end by netsteer (cm02) and SimGrid (CM02)."""
    levels, down, up, par = 2, [16, 16], [1, 8], [1, 1]
    bw, lat = 10e9, 1000
    topo = pgft(levels, down, up, par, link_bandwidth=bw, link_latency_ns=lat)
    routing = build_routing(topo, "dmodk")
    src, dst = random_pairs(topo.n_hosts, flows, 2)
    dag = FlowDag()
    for s, d in zip(src, dst):
        dag.add(int(s), int(d), nbytes)
    res = simulate(topo, routing, dag, sharing="cm02")
    xml = platform_from_topology(topo)
    names = topo.node_names
    sg = run_simgrid_flows(
        xml,
        [(names[topo.host_node(int(s))], names[topo.host_node(int(d))], nbytes) for s, d in zip(src, dst)],
        ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
         # SimGrid's default Lazy update mis-solves flows whose latency ends together
         # (docs/simgrid-validation.md): Full is the correct peer
         "--cfg=network/optim:Full"],
    )
    ns_make = res.makespan_ns * 1e-9
    return {
        "topology": f"pgft levels={levels} down={down} up={up}",
        "flows": flows,
        "bytes_per_flow": nbytes,
        "netsteer_wall_s": res.wall_s,
        "simgrid_wall_s": sg["wall_s"],
        "speedup_vs_simgrid": sg["wall_s"] / res.wall_s,
        "netsteer_makespan_s": ns_make,
        "simgrid_makespan_s": sg["makespan_s"],
        "makespan_rel_diff": abs(ns_make - sg["makespan_s"]) / sg["makespan_s"],
        "netsteer_solves": res.stats["solves"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--flows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--peer-flows", type=int, default=20_000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {platform.processor() or ''} cores={__import__('os').cpu_count()}",
        "solve": solve_bench(a.flows, a.repeats),
        "peer": peer_bench(a.peer_flows, 1_000_000),
    }
    if a.json:
        print(json.dumps(out))
        return
    s, p = out["solve"], out["peer"]
    print(f"max-min solve: {s['flows']} flows, {s['flow_hops']} flow-hops on {s['topology']} ({s['hosts']} hosts)")
    print(f"  median {s['solve_ms_median']:.2f} ms (min {s['solve_ms_min']:.2f} ms), {s['ns_per_flow_hop']:.1f} ns per flow-hop")
    print(f"whole simulation vs SimGrid: {p['flows']} flows of {p['bytes_per_flow']} B at t=0 on {p['topology']}")
    print(f"  netsteer {p['netsteer_wall_s']:.3f} s wall, SimGrid {p['simgrid_wall_s']:.3f} s wall: "
          f"{p['speedup_vs_simgrid']:.1f}x faster")
    print(f"  makespan netsteer {p['netsteer_makespan_s']:.6f} s vs SimGrid {p['simgrid_makespan_s']:.6f} s "
          f"({100 * p['makespan_rel_diff']:.2f}% apart)")


if __name__ == "__main__":
    main()
