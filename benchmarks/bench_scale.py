"""Benchmark: the hybrid source document's architecture at full scale -- 10,240
servers in 320 racks, an oversubscribed electrical core and an array of 320-port
optical circuit switches -- with an all-to-all between racks (one flow per ordered
rack pair). Reports wall times and peak memory; and, in the same run, the same
rack-level all-to-all on an electrical fat-tree simulated by netsteer and by
SimGrid (the peer), as a wall-time ratio at a size SimGrid finishes.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))

from netsteer.routing import build_routing  # noqa: E402
from netsteer.sim import CircuitState, simulate  # noqa: E402
from netsteer.topology import pgft  # noqa: E402
from netsteer.topology.hybrid import hybrid  # noqa: E402
from netsteer.traffic import FlowDag  # noqa: E402
from netsteer.validation.simgrid import platform_from_topology  # noqa: E402

from _peers import run_simgrid_flows  # noqa: E402


def rack_all_to_all(racks: int, per_rack: int, nbytes: int) -> FlowDag:
    """One flow per ordered rack pair, spread over the servers of each rack."""
    dag = FlowDag()
    for i in range(racks):
        for j in range(racks):
            if i != j:
                dag.add(i * per_rack + j % per_rack, j * per_rack + i % per_rack, nbytes)
    return dag


def matchings(topo, racks: int) -> CircuitState:
    """Circuit switch k pairs rack i with rack i XOR 2**k: a perfect matching each."""
    cs = CircuitState.empty(topo)
    port_of = topo.meta["circuit_port_of"]  # [rack, k, (node, port)]
    for k in range(port_of.shape[1]):
        node = int(port_of[0, k, 0])
        pairs = []
        for i in range(racks):
            j = i ^ (1 << k)
            if i < j < racks:
                pairs.append((int(port_of[i, k, 1]), int(port_of[j, k, 1])))
        cs.pair(node, pairs)
    return cs


def hybrid_bench(racks: int, per_rack: int, nbytes: int) -> dict:
    t0 = time.perf_counter()
    topo = hybrid(
        racks, per_rack, server_bandwidth=10e9, tor_uplinks=1, core_switches=1, core_bandwidth=10e9,
        circuit_switches=4, circuit_ports=racks, circuit_uplinks=1, circuit_bandwidth=10e9,
        switching_time_ns=25_000_000, link_latency_ns=500,
    )
    circuits = matchings(topo, racks)
    routing = build_routing(topo, "minhop", circuits=circuits.as_dict())
    dag = rack_all_to_all(racks, per_rack, nbytes)
    setup = time.perf_counter() - t0
    res = simulate(topo, routing, dag, circuits=circuits)
    return {
        "servers": topo.n_hosts,
        "racks": racks,
        "flows": len(dag),
        "bytes_per_flow": nbytes,
        "setup_s": setup,
        "sim_wall_s": res.wall_s,
        "makespan_s": res.makespan_ns * 1e-9,
        "solves": res.stats["solves"],
        "solved_flow_hops": res.stats["solved_flow_hops"],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def peer_bench(racks: int, per_rack: int, nbytes: int) -> dict:
    """Rack all-to-all on a 2-level fat-tree (racks = leaf switches), both simulators."""
    levels, down, up, par = 2, [per_rack, racks], [1, 4], [1, 1]
    bw, lat = 10e9, 500
    topo = pgft(levels, down, up, par, link_bandwidth=bw, link_latency_ns=lat)
    routing = build_routing(topo, "dmodk")
    dag = rack_all_to_all(racks, per_rack, nbytes)
    res = simulate(topo, routing, dag, sharing="cm02")
    names = topo.node_names
    flows = [(names[topo.host_node(s)], names[topo.host_node(d)], nbytes) for s, d in zip(dag.src, dag.dst)]
    sg = run_simgrid_flows(
        platform_from_topology(topo),
        flows, ["--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
         # SimGrid's default Lazy update mis-solves flows whose latency ends together
         # (docs/simgrid-validation.md): Full is the correct peer
         "--cfg=network/optim:Full"],
    )
    return {
        "topology": f"pgft levels={levels} down={down} up={up}",
        "flows": len(dag),
        "netsteer_wall_s": res.wall_s,
        "simgrid_wall_s": sg["wall_s"],
        "speedup_vs_simgrid": sg["wall_s"] / res.wall_s,
        "netsteer_makespan_s": res.makespan_ns * 1e-9,
        "simgrid_makespan_s": sg["makespan_s"],
        "makespan_rel_diff": abs(res.makespan_ns * 1e-9 - sg["makespan_s"]) / sg["makespan_s"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--racks", type=int, default=320)
    ap.add_argument("--per-rack", type=int, default=32)
    ap.add_argument("--bytes", type=int, default=10_000_000)
    ap.add_argument("--peer-racks", type=int, default=320)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} cores={__import__('os').cpu_count()}",
        "peer": peer_bench(a.peer_racks, a.per_rack, a.bytes),
        "hybrid": hybrid_bench(a.racks, a.per_rack, a.bytes),
    }
    if a.json:
        print(json.dumps(out))
        return
    h, p = out["hybrid"], out["peer"]
    print(f"hybrid: {h['servers']} servers in {h['racks']} racks, {h['flows']} rack-to-rack flows of {h['bytes_per_flow']} B")
    print(f"  set-up (topology, circuits, minhop routing) {h['setup_s']:.2f} s; simulation {h['sim_wall_s']:.2f} s wall "
          f"({h['solves']} solves); makespan {h['makespan_s']:.4f} s; peak RSS {h['peak_rss_mib']:.0f} MiB")
    print(f"peer: {p['flows']} rack-to-rack flows on {p['topology']}: netsteer {p['netsteer_wall_s']:.3f} s, "
          f"SimGrid {p['simgrid_wall_s']:.3f} s wall -> {p['speedup_vs_simgrid']:.1f}x; makespans "
          f"{p['netsteer_makespan_s']:.6f} vs {p['simgrid_makespan_s']:.6f} s ({100 * p['makespan_rel_diff']:.2f}% apart)")


if __name__ == "__main__":
    main()
