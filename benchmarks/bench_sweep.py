"""Benchmark: the same sweep on a local Dask cluster of 1 and of 2 worker processes.

Runs every point of a sweep file (default: scenarios/sweeps/allreduce-routing.yaml,
16 points) into a fresh results folder, alternating 1 and 2 workers ``--rounds``
times, and reports the best sweep time of each and the speed-up. Cluster start-up
(and the workers' first import of netsteer) is timed apart, since a long sweep pays
it once. The same points split over 1 and 2 plain processes (no Dask) give the
ceiling: what the machine offers two processes at that moment. The points' CPU time is reported beside their wall time, with the CPU the
sweep process itself used and the cores the rest of the machine kept busy meanwhile
(from /proc/stat): on a machine shared with other work, a point waits for a core
and the speed-up is bounded by the CPU left free. Checks that both worker counts give the same makespan for every point.
Prints figures (``--json`` for one JSON object); records nothing by itself: copy the
output into benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_sweep.py [--sweep FILE] [--rounds N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from netsteer.sweep import ResultStore, dask_client, load_sweep, run_point, run_sweep

ROOT = Path(__file__).resolve().parent.parent


def _warm() -> None:
    import netsteer.scenario  # noqa: F401 - the first point would pay these imports
    import netsteer.sim  # noqa: F401


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent busy (every process, every core) since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def measure(sweep, workers: int) -> dict:
    t0 = time.perf_counter()
    with dask_client(workers=workers) as client:
        client.wait_for_workers(workers)
        client.run(_warm)
        start_s = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as d:
            busy0, own0 = machine_busy_s(), time.process_time()
            t1 = time.perf_counter()
            summary = run_sweep(sweep, d, client=client)
            sweep_s = time.perf_counter() - t1
            busy = machine_busy_s() - busy0
            own = time.process_time() - own0  # this process: scheduler, client, Parquet rewrites
            rows = ResultStore(Path(d) / "results.parquet").rows
    assert summary["done"] == len(sweep.points), summary
    point_cpu = sum(r["cpu_s"] for r in rows.values())
    return {
        "workers": workers,
        "start_s": start_s,
        "sweep_s": sweep_s,
        "point_wall_sum_s": sum(r["wall_s"] for r in rows.values()),
        "point_cpu_sum_s": point_cpu,
        "driver_cpu_s": own,
        # what everything else on the machine took meanwhile: the cores our workers could not have
        "others_cores": max(busy - point_cpu - own, 0.0) / sweep_s,
        "makespans": {k: r["makespan_s"] for k, r in rows.items()},
    }


def _points(args) -> int:
    sweep_file, start, step = args
    sw = load_sweep(sweep_file)
    for p in sw.points[start::step]:
        run_point(sw.base_raw, p.overrides, p.seed, sw.base_file)
    return 0


def plain(sweep_file: str, n: int) -> float:
    """The same points split over ``n`` plain processes, no Dask: what the machine
    gives to ``n`` processes at this moment, the ceiling of the Dask speed-up."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(n) as pool:
        list(pool.map(_warm_plain, range(n)))
        t = time.perf_counter()
        list(pool.map(_points, [(sweep_file, i, n) for i in range(n)]))
        return time.perf_counter() - t


def _warm_plain(_) -> None:
    _warm()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", default=str(ROOT / "scenarios/sweeps/allreduce-routing.yaml"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sweep = load_sweep(args.sweep)
    load_before = os.getloadavg()[0]
    runs: dict[int, list[dict]] = {1: [], 2: []}
    ceiling: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for n in (1, 2):
            runs[n].append(measure(sweep, n))
            ceiling[n].append(plain(args.sweep, n))
    best = {n: min(rs, key=lambda r: r["sweep_s"]) for n, rs in runs.items()}
    same = all(r["makespans"] == runs[1][0]["makespans"] for rs in runs.values() for r in rs)
    out = {
        "sweep": Path(args.sweep).name,
        "points": len(sweep.points),
        "rounds": args.rounds,
        "machine": f"{platform.node()}, {os.cpu_count()} cores",
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "sweep_s": {n: [round(r["sweep_s"], 3) for r in rs] for n, rs in runs.items()},
        "start_s": {n: round(min(r["start_s"] for r in rs), 3) for n, rs in runs.items()},
        "point_wall_sum_s": {n: round(best[n]["point_wall_sum_s"], 3) for n in best},
        "point_cpu_sum_s": {n: round(best[n]["point_cpu_sum_s"], 3) for n in best},
        "driver_cpu_s": {n: round(best[n]["driver_cpu_s"], 3) for n in best},
        # cores the points actually got: their CPU over the sweep's wall time (the speed-up follows it)
        "points_cores": {n: round(best[n]["point_cpu_sum_s"] / best[n]["sweep_s"], 2) for n in best},
        "others_cores": {n: [round(r["others_cores"], 2) for r in rs] for n, rs in runs.items()},
        "speedup": best[1]["sweep_s"] / best[2]["sweep_s"],
        "plain_s": {n: [round(t, 3) for t in ts] for n, ts in ceiling.items()},
        "plain_speedup": min(ceiling[1]) / min(ceiling[2]),
        "same_makespans": same,
    }
    if args.json:
        print(json.dumps(out))
        return
    print(f"sweep {out['sweep']}: {out['points']} points, {args.rounds} rounds, {out['machine']}, "
          f"1-min load {out['load_1min'][0]} before, {out['load_1min'][1]} after")
    print("| workers | sweep time (best; all rounds) | points' wall time, summed | points' CPU time, summed "
          "| cores the points got | sweep process CPU | cores busy with other work (each round) | cluster start |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (1, 2):
        alls = ", ".join(f"{s:.2f}" for s in out["sweep_s"][n])
        others = ", ".join(f"{c:.2f}" for c in out["others_cores"][n])
        print(f"| {n} | {best[n]['sweep_s']:.2f} s ({alls}) | {out['point_wall_sum_s'][n]:.2f} s "
              f"| {out['point_cpu_sum_s'][n]:.2f} s | {out['points_cores'][n]:.2f} "
              f"| {out['driver_cpu_s'][n]:.2f} s | {others} "
              f"| {out['start_s'][n]:.2f} s |")
    print(f"speed-up 1 -> 2 workers: {out['speedup']:.2f}x; same makespans for every point: {same}")
    print(f"ceiling, the same points in 1 and 2 plain processes (no Dask): {min(ceiling[1]):.2f} s and "
          f"{min(ceiling[2]):.2f} s, {out['plain_speedup']:.2f}x")


if __name__ == "__main__":
    main()
