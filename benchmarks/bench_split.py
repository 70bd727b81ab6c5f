"""Benchmark: the flow engine before and after a change, A/B on the same machine.

Runs the same flow-level simulations with two netsteer installations (their Python
interpreters), alternating, and reports each one's CPU time (median of the repeats)
and the ratio. Used for the engine split of issue 10 (``engine.rs`` became an engine
plus a ``Physics``): "before" is a checkout without it.

Workloads: the 20,000 random 1 MB flows of ``bench_solver.py`` (CM02, 256 hosts), a
256-rank MPI job (five 16 MiB ring allreduces, ``scenarios/allreduce-ft.yaml``) and
the 102,080 rack-to-rack flows of ``bench_scale.py`` on its 10,240-host fat-tree.

Prints its figures (``--json`` for one JSON object); record them in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES = {
    "random-20k": """
import numpy as np
from netsteer.routing import build_routing
from netsteer.sim import simulate
from netsteer.topology import pgft
from netsteer.traffic import FlowDag
topo = pgft(2, [16, 16], [1, 8], [1, 1], link_bandwidth=10e9, link_latency_ns=1000)
r = build_routing(topo, "dmodk")
rng = np.random.default_rng(2)
src = rng.integers(0, topo.n_hosts, 20000); dst = (src + rng.integers(1, topo.n_hosts, 20000)) % topo.n_hosts
d = FlowDag(); d.add_block(src, dst, np.full(20000, 1000000))
c0 = time.process_time(); res = simulate(topo, r, d, sharing="cm02"); cpu = time.process_time() - c0
""",
    "allreduce-256": """
from netsteer.scenario import build_scenario, load_scenario
from netsteer.sim import run_scenario
b = build_scenario(load_scenario(ROOT / "scenarios/allreduce-ft.yaml"))
c0 = time.process_time(); res = run_scenario(b, sample=False); cpu = time.process_time() - c0
""",
    "racks-102k": """
import numpy as np
from netsteer.routing import build_routing
from netsteer.sim import simulate
from netsteer.topology import pgft
from netsteer.traffic import FlowDag
topo = pgft(2, [32, 320], [1, 4], link_bandwidth=10e9, link_latency_ns=1000)
r = build_routing(topo, "dmodk")
R = 320; a, b = np.meshgrid(np.arange(R), np.arange(R), indexing="ij"); m = a != b
src = a[m] * 32 + (b[m] % 32); dst = b[m] * 32 + (a[m] % 32)
d = FlowDag(); d.add_block(src, dst, np.full(len(src), 10_000_000))
c0 = time.process_time(); res = simulate(topo, r, d); cpu = time.process_time() - c0
""",
}


def one(python: str, case: str) -> dict:
    code = ("import json, time\nfrom pathlib import Path\nROOT = Path(%r)\n" % str(ROOT)) + CASES[case] + (
        "\nprint(json.dumps({'cpu_s': cpu, 'makespan_ns': int(res.makespan_ns), 'events': int(res.stats['events'])}))"
    )
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", required=True, help="Python of the installation without the change")
    ap.add_argument("--after", default=sys.executable, help="Python of the installation with it (default: this one)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict = {"date": time.strftime("%Y-%m-%d"), "cases": {}}
    for case in a.cases:
        runs: dict = {"before": [], "after": []}
        for _ in range(a.repeats):
            for side in ("before", "after"):  # alternating, so load drifts hit both
                runs[side].append(one(getattr(a, side), case))
        med = {s: statistics.median(r["cpu_s"] for r in v) for s, v in runs.items()}
        same = {r["makespan_ns"] for r in runs["before"]} == {r["makespan_ns"] for r in runs["after"]}
        out["cases"][case] = {"before_cpu_s": med["before"], "after_cpu_s": med["after"],
                              "ratio_after_before": med["after"] / med["before"], "same_makespan": same,
                              "makespan_ns": runs["after"][0]["makespan_ns"], "events": runs["after"][0]["events"]}
    if a.json:
        print(json.dumps(out))
        return
    for case, c in out["cases"].items():
        print(f"{case}: before {c['before_cpu_s']:.3f} s CPU, after {c['after_cpu_s']:.3f} s CPU, "
              f"after/before {c['ratio_after_before']:.3f}; same makespan: {c['same_makespan']}")


if __name__ == "__main__":
    main()
