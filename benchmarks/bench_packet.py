"""Benchmark: the packet-level fabric model.

1. Packet-hop events per second on one core (an all-to-all on a 64-host fat-tree).
2. A 256-host fat-tree, all-to-all with 1 MiB per pair and a 2 KiB MTU: wall time and
   peak memory at packet level, and the same run at flow level, as a ratio (each run
   in its own process, so each peak is its own).
3. A 1,024-host run of something real: a recursive-doubling allreduce of 1 MiB on
   every host beside I/O noise (64 hosts streaming to 8 storage hosts), wall time.

Prints its figures (``--json`` for one JSON object); record them in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np


def _alltoall(topo, nbytes: int):
    from netsteer.traffic import FlowDag

    H = topo.n_hosts
    src = np.repeat(np.arange(H), H - 1)
    off = np.concatenate([np.arange(1, H)] * H)
    dst = (src + off) % H
    d = FlowDag()
    d.add_block(src, dst, np.full(len(src), nbytes))
    return d


def _peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_run(case: str, fidelity: str, hosts: int, nbytes: int) -> dict:
    """One simulation in this process: wall time, peak memory, engine counters."""
    from netsteer.routing import build_routing
    from netsteer.sim import run_scenario
    from netsteer.scenario import build_scenario, parse_scenario
    from netsteer.sim.driver import SimDriver
    from netsteer.sim.packet import PacketParams
    from netsteer.sim.simulate import legacy_controller, run_driver
    from netsteer.topology import pgft

    if case == "alltoall":
        k = int(round(hosts ** 0.5))
        topo = pgft(2, [k, hosts // k], [1, k], link_bandwidth=32e9, link_latency_ns=100)
        dag = _alltoall(topo, nbytes)
        routing = build_routing(topo, "dmodk")
        packet = PacketParams().engine_dict() if fidelity == "packet" else None
        t0, c0 = time.perf_counter(), time.process_time()
        ctl, _ = legacy_controller([])
        res = run_driver(SimDriver(topo, routing, dag, packet=packet), ctl)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        flows = len(dag)
    else:
        k = int(round(hosts ** 0.5))
        text = textwrap.dedent(f"""
            name: allreduce-io
            topology: {{kind: pgft, levels: 2, down: [{k}, {hosts // k}], up: [1, {k}], parallel: [1, 1],
                       link_bandwidth: 32Gbps, link_latency: 100ns}}
            routing: {{engine: dmodk}}
            fidelity: {fidelity}
            jobs:
              - name: app
                ranks: {hosts}
                program:
                  - {{op: allreduce, bytes: {nbytes}, algorithm: recursive_doubling}}
              - name: io
                bulk: [{", ".join(f"{{src: {h}, dst: {hosts - 1 - (h % 8)}}}" for h in range(0, hosts, hosts // 64))}]
            """)
        built = build_scenario(parse_scenario(text, file="bench"))
        t0, c0 = time.perf_counter(), time.process_time()
        res = run_scenario(built, sample=False)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        flows = len(built.dag)
    return {
        "case": case, "fidelity": fidelity, "hosts": hosts, "bytes": nbytes, "flows": flows,
        "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": _peak_rss_mib(), "makespan_s": res.makespan_ns * 1e-9,
        "status": res.status, "events": int(res.stats["events"]), "packet_hops": int(res.stats.get("packet_hops", 0)),
    }


def _sub(case: str, fidelity: str, hosts: int, nbytes: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--one", case, fidelity, str(hosts), str(nbytes)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smaller runs (64 and 256 hosts, less data)")
    ap.add_argument("--one", nargs=4, metavar=("CASE", "FIDELITY", "HOSTS", "BYTES"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        case, fid, hosts, nbytes = a.one
        print(json.dumps(one_run(case, fid, int(hosts), int(nbytes))))
        return
    q = a.quick
    rate = _sub("alltoall", "packet", 64, 64 * 1024 if q else 256 * 1024)
    a2a_p = _sub("alltoall", "packet", 256, (256 if q else 1024) * 1024)
    a2a_f = _sub("alltoall", "flow", 256, (256 if q else 1024) * 1024)
    big_hosts = 256 if q else 1024
    big_p = _sub("allreduce", "packet", big_hosts, 1 << 20)
    big_f = _sub("allreduce", "flow", big_hosts, 1 << 20)
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()} {platform.processor() or ''} cores={__import__('os').cpu_count()}",
        # per CPU second of this process (one thread): the machine is shared, wall time is not one core's
        "hop_rate": dict(rate, packet_hops_per_s=rate["packet_hops"] / rate["cpu_s"],
                         events_per_s=rate["events"] / rate["cpu_s"]),
        "alltoall_256": {"packet": a2a_p, "flow": a2a_f,
                         "wall_ratio": a2a_p["wall_s"] / a2a_f["wall_s"],
                         "cpu_ratio": a2a_p["cpu_s"] / a2a_f["cpu_s"],
                         "memory_ratio": a2a_p["peak_rss_mib"] / a2a_f["peak_rss_mib"],
                         "makespan_ratio": a2a_p["makespan_s"] / a2a_f["makespan_s"]},
        "allreduce_io": {"packet": big_p, "flow": big_f},
    }
    if a.json:
        print(json.dumps(out))
        return
    r = out["hop_rate"]
    print(f"packet hops: {r['packet_hops']:,} in {r['cpu_s']:.2f} s CPU ({r['wall_s']:.2f} s wall) on one core: "
          f"{r['packet_hops_per_s'] / 1e6:.2f} M packet hops/s, {r['events_per_s'] / 1e6:.2f} M events/s "
          f"(all-to-all, {r['hosts']} hosts, {r['bytes']} B per pair)")
    x = out["alltoall_256"]
    for f in ("packet", "flow"):
        v = x[f]
        print(f"all-to-all 256 hosts, {v['bytes']} B per pair, {f}: {v['wall_s']:.2f} s wall ({v['cpu_s']:.2f} s CPU), "
              f"peak {v['peak_rss_mib']:.0f} MiB, makespan {v['makespan_s'] * 1e3:.3f} ms")
    print(f"  packet / flow: wall {x['wall_ratio']:.1f}x, CPU {x['cpu_ratio']:.1f}x, memory {x['memory_ratio']:.2f}x, "
          f"makespan {x['makespan_ratio']:.3f}")
    for f in ("packet", "flow"):
        v = out["allreduce_io"][f]
        print(f"allreduce (recursive doubling, 1 MiB) on {v['hosts']} hosts beside I/O noise, {f}: "
              f"{v['wall_s']:.2f} s wall ({v['cpu_s']:.2f} s CPU), peak {v['peak_rss_mib']:.0f} MiB, makespan {v['makespan_s'] * 1e3:.3f} ms, "
              f"{v['packet_hops']:,} packet hops")


if __name__ == "__main__":
    main()
