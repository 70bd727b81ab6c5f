"""Benchmark: a 320-rack make-before-break reconfiguration simulated end to end, under load.

The source's Fig. 1 system (320 racks x 32 servers = 10,240 servers, K circuit switches
of 320 ports, a 10 Gbit/s electrical uplink per ToR). Every server runs an iperf-like
bulk flow to the same-index server of a partner rack, and half the racks' partners
change at time 0 (the other half keep theirs), so the planned circuits at time 0 serve
the old pairing; the controller's schedule reconfigures at ``--at`` to the circuits
planned for the new pairing, make-before-break in the source's three steps with its
delay model (0.44 ms per rule per switch, sequential; 0.6 s per VLAN-tagged port).

Prints the wall time of the whole run (scenario build, routing, engine, controller
loop), the same run without the reconfiguration in the same process (the ratio is the
cost of reconfiguring), the reconfiguration's simulated delay, and the rack pairs it
moved. ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from netsteer.control.planning import plan_circuits
from netsteer.scenario import Scenario, ScenarioModel, build_scenario
from netsteer.sim.run import run_scenario


def pairing(racks: int, rng) -> list[tuple[int, int]]:
    p = rng.permutation(racks)
    return [(int(p[i]), int(p[i + 1])) for i in range(0, racks - 1, 2)]


def circuits_for(pairs, racks: int, k: int) -> list[list[int]]:
    d = np.zeros((racks, racks))
    for a, b in pairs:
        d[a, b] = d[b, a] = 10.0 * k
    return [[c.ocs, c.a, c.b] for c in plan_circuits(d, k, 10.0).circuits]


def scenario(racks: int, servers: int, k: int, at: str | None, duration: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    old = pairing(racks, rng)
    # half the racks keep their partner, the other half are re-paired among themselves
    keep, change = old[: len(old) // 2], old[len(old) // 2:]
    moved = [r for pr in change for r in pr]
    new = keep + pairing(len(moved), rng)
    new = keep + [(moved[a], moved[b]) for a, b in new[len(keep):]]
    bulk = [{"src": a * servers + s, "dst": b * servers + s, "duration": duration}
            for pr in new for a, b in (pr, pr[::-1]) for s in range(servers)]
    hybrid: dict = {"initial": circuits_for(old, racks, k)}
    if at is not None:
        hybrid["schedule"] = [{"at": at, "circuits": circuits_for(new, racks, k)}]
    return {
        "name": "bench-reconfig",
        "topology": {"kind": "hybrid", "racks": racks, "servers_per_rack": servers, "server_bandwidth": "10Gbps",
                     "tor_uplinks": 1, "core_switches": 1, "core_bandwidth": "10Gbps", "circuit_switches": k,
                     "circuit_ports": racks, "circuit_uplinks": 1, "circuit_bandwidth": "10Gbps",
                     "switching_time": "25ms", "link_latency": "1us"},
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "load", "bulk": bulk}],
        "controller": {"hybrid": hybrid},
        "driver": {"delay": {"rule_time": "0.44ms", "vlan_tag_time": "0.6s", "push": "sequential", "tag": "parallel"}},
    }


def one(racks, servers, k, at, duration, seed) -> dict:
    t0 = time.perf_counter()
    built = build_scenario(Scenario(ScenarioModel.model_validate(scenario(racks, servers, k, at, duration, seed)), None))
    t1 = time.perf_counter()
    res = run_scenario(built, sample=False)
    t2 = time.perf_counter()
    rc = (res.controller or {}).get("hybrid", {}).get("reconfigurations", [])
    return {"build_s": t1 - t0, "run_s": t2 - t1, "wall_s": t2 - t0, "status": res.status,
            "reconfigurations": len(rc), "delay_s": rc[0]["delay_s"] if rc else None,
            "steps": [[s["step"], s["start_s"], s["end_s"]] for s in rc[0]["steps"]] if rc else [],
            "circuits_changed": len({tuple(c) for c in rc[0]["circuits_after"]} - {tuple(c) for c in rc[0]["circuits_before"]}) if rc else 0,
            "flows": len(built.dag), "sent_gbit": float(np.sum(res.sent_bytes)) * 8 / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", type=int, default=320)
    ap.add_argument("--servers", type=int, default=32)
    ap.add_argument("--k", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--at", default="1s")
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = []
    for k in a.k:
        base = one(a.racks, a.servers, k, None, a.duration, a.seed)
        rec = one(a.racks, a.servers, k, a.at, a.duration, a.seed)
        rows.append({"k": k, "static": base, "reconfigured": rec, "ratio": rec["wall_s"] / base["wall_s"]})
        if not a.json:
            print(f"K={k}: {rec['flows']} flows, reconfiguration: wall {rec['wall_s']:.2f} s "
                  f"(build {rec['build_s']:.2f}, run {rec['run_s']:.2f}); without: {base['wall_s']:.2f} s; "
                  f"ratio {rec['wall_s'] / base['wall_s']:.2f}; simulated delay {rec['delay_s'] if rec['delay_s'] is None else round(rec['delay_s'], 3)} s, "
                  f"{rec['circuits_changed']} circuits changed; {rec['sent_gbit']:.0f} vs {base['sent_gbit']:.0f} Gbit sent",
                  flush=True)
    if a.json:
        print(json.dumps({"machine": platform.machine(), "racks": a.racks, "servers": a.servers, "rows": rows}))


if __name__ == "__main__":
    main()
