"""Benchmark: MPI jobs of thousands of ranks under table routing engines, end to end.

D-mod-K on a PGFT is computed per hop inside the engine; every other engine builds
its tables in Python, checks them (complete, loop-free) and hands them to the
engine, which walks them per streamed message. This times that whole path as a user
meets it: ``netsteer run --json`` on a scenario per (fabric, engine), in a child
process, with its peak RSS, its predicted makespan, whether the job streamed, and
the engine's own wall time (the simulation). No peer runs: OpenSM's engines on
ibsim would need fabrics of 9,000 to 70,000 nodes. Prints figures (``--json`` for
one JSON object); records nothing by itself: copy the output into
benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_routing_scale.py [--json] [--only NAME] [--big]

``--big`` adds 65,536 ranks on a 5,120-switch fat-tree routed by ECMP (about a
minute, 3.3 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HYPERX = "{kind: hyperx, S: [32, 32], T: 8, link_bandwidth: 25Gbps, link_latency: 200ns}"
TREE = ("{kind: pgft, levels: 3, down: [16, 32, 32], up: [1, 16, 32], link_bandwidth: 100Gbps, "
        "link_latency: 100ns}")
BIG_TREE = ("{kind: pgft, levels: 3, down: [32, 32, 64], up: [1, 32, 32], link_bandwidth: 100Gbps, "
            "link_latency: 100ns}")
MIXED = """
      - {op: alltoall, bytes: 1KiB, algorithm: bruck}
      - {op: allreduce, bytes: 4MiB, algorithm: rabenseifner}
      - {op: gather, bytes: 2KiB, root: 17}"""
TREE_PROGRAM = """
      - {op: bcast, bytes: 1MiB, algorithm: binomial, root: 5}
      - {op: allreduce, bytes: 1MiB, algorithm: recursive_doubling}"""

CASES = [
    ("hyperx-8k", HYPERX, 8192, "random", MIXED, ["minhop", "ecmp", "dor"]),
    ("fat-tree-16k", TREE, 16384, "random", TREE_PROGRAM, ["dmodk", "ecmp", "minhop", "ftree"]),
]
BIG = [("fat-tree-64k", BIG_TREE, 65536, "linear", TREE_PROGRAM, ["ecmp"])]


def scenario(name: str, topology: str, ranks: int, placement: str, program: str, engine: str) -> str:
    return f"""name: {name}-{engine}
topology: {topology}
routing: {{engine: {engine}}}
jobs:
  - name: app
    ranks: {ranks}
    placement: {placement}
    seed: 7
    program:{program}
"""


def run_one(text: str) -> dict:
    """``netsteer run --json`` in a child process: its result, wall time and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="netsteer-bench-") as tmp:
        path = Path(tmp) / "s.yaml"
        path.write_text(text)
        cmd = [sys.executable, "-m", "netsteer", "--max-memory", "16GiB", "run", str(path), "--json"]
        t0 = time.perf_counter()
        with open(Path(tmp) / "out", "w+") as out, open(Path(tmp) / "err", "w+") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            out.seek(0)
            err.seek(0)
            text_out, text_err = out.read(), err.read()
    if status != 0:
        raise RuntimeError(f"netsteer run failed ({status}): {text_err[-2000:]}")
    res = json.loads(text_out)
    return {"wall_s": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "simulation_s": round(res["wall_s"], 2), "makespan_ns": round(res["makespan_s"] * 1e9),
            "streamed": bool(res["jobs"][0].get("streamed")), "messages": res["flows"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", help="run only the case of this name")
    ap.add_argument("--big", action="store_true", help="add the 65,536-rank fat-tree")
    a = ap.parse_args()
    rows = []
    for name, topo, ranks, placement, program, engines in CASES + (BIG if a.big else []):
        if a.only and a.only != name:
            continue
        for engine in engines:
            row = {"case": name, "ranks": ranks, "engine": engine,
                   **run_one(scenario(name, topo, ranks, placement, program, engine))}
            rows.append(row)
            if not a.json:
                print(f"{name:14} {engine:7} {row['wall_s']:7.2f} s  {row['peak_rss_mb']:6} MB  "
                      f"simulation {row['simulation_s']:6.2f} s  makespan {row['makespan_ns']:,} ns  "
                      f"{'streamed' if row['streamed'] else 'DAG'}  {row['messages']:,} messages", flush=True)
    if a.json:
        print(json.dumps({"date": time.strftime("%Y-%m-%d"), "rows": rows}))


if __name__ == "__main__":
    main()
