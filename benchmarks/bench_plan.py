"""Benchmark: circuit planning (topology engineering) for hybrid EPS/OCS rack networks.

Prints, for 320 racks (the source document's Fig. 1) with K = 4 and K = 8 circuit
switches: planning wall time (``wall_s``, median of warm runs, and the first, cold, run),
demand served against the cheap upper bound, and, where it is small enough to solve, the
LP relaxation of the degree-bounded problem (a tighter upper bound). Then the ratio to the
exact optimum (HiGHS integer program) over random small instances, single and two hops.

``--json`` prints one JSON object; record the figures in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from netsteer.control.planning import plan_circuits
from netsteer.control.planning.exact import exact_plan

C = 10.0  # Gbit/s per circuit, each way (the source's 10G ToRs)


def demand(kind: str, n: int, rng) -> np.ndarray:
    if kind == "dense":  # every pair, exponential sizes
        d = rng.exponential(1.0, (n, n)) * 5
    elif kind == "uniform":
        d = rng.uniform(0, 10, (n, n))
    elif kind == "skewed":  # heavy-tailed pair sizes
        d = rng.pareto(1.5, (n, n)) * 3
    elif kind == "sparse":  # ~2% of pairs, large
        d = rng.exponential(1.0, (n, n)) * 30 * (rng.random((n, n)) < 0.02)
    else:
        raise ValueError(kind)
    np.fill_diagonal(d, 0.0)
    return d


def lp_bound(d: np.ndarray, k: int, c: float) -> float:
    """LP relaxation: fractional degree-<=k choice of circuits (no switch matchings)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    n = d.shape[0]
    iu, ju = np.triu_indices(n, 1)
    up, dn = d[iu, ju], d[ju, iu]
    rows, cols, cost, var = [], [], [], 0
    for m in range(k):
        g = np.clip(up - m * c, 0, c) + np.clip(dn - m * c, 0, c)
        sel = np.nonzero(g > 0)[0]
        idx = np.arange(var, var + len(sel))
        rows += [iu[sel], ju[sel]]
        cols += [idx, idx]
        cost.append(-g[sel])
        var += len(sel)
    A = coo_matrix((np.ones(2 * var), (np.concatenate(rows), np.concatenate(cols))), shape=(n, var)).tocsr()
    r = linprog(np.concatenate(cost), A_ub=A, b_ub=np.full(n, k), bounds=(0, 1), method="highs")
    return float(-r.fun)


def large(repeats: int, with_lp: bool) -> list[dict]:
    out = []
    for kind in ("dense", "uniform", "skewed", "sparse"):
        for k in (4, 8):
            d = demand(kind, 320, np.random.default_rng(42))
            walls = []
            for i in range(repeats):
                p = plan_circuits(d, k, C)
                walls.append(p.wall_s)
            row = {
                "matrix": kind, "racks": 320, "k": k, "cold_ms": 1e3 * walls[0],
                "median_ms": 1e3 * statistics.median(walls[1:] or walls), "min_ms": 1e3 * min(walls),
                "circuits": len(p.circuits), "vlans": p.vlans,
                "served_gbps": p.served_gbps, "bound_gbps": p.bound_gbps, "demand_gbps": p.demand_gbps,
                "served_over_bound": p.served_gbps / p.bound_gbps,
            }
            if with_lp and kind in ("sparse", "skewed", "dense"):
                t = time.perf_counter()
                lp = lp_bound(d, k, C)
                row["lp_bound_gbps"] = lp
                row["lp_s"] = time.perf_counter() - t
                row["served_over_lp"] = p.served_gbps / lp
            if kind == "dense":
                p2 = plan_circuits(d, k, C, hops=2)
                row["hops2"] = {"wall_s": p2.wall_s, "served_gbps": p2.served_gbps, "bound_gbps": p2.bound_gbps,
                                "vlans": p2.vlans}
            out.append(row)
            print(f"320 racks K={k} {kind:8s} wall {row['median_ms']:6.1f} ms median (cold {row['cold_ms']:6.1f}) "
                  f"served {p.served_gbps:9.1f} / bound {p.bound_gbps:9.1f} = {row['served_over_bound']:.4f}"
                  + (f"  / LP {row['lp_bound_gbps']:9.1f} = {row['served_over_lp']:.4f}" if "lp_bound_gbps" in row else "")
                  + (f"  | hops=2 served {row['hops2']['served_gbps']:.1f} in {row['hops2']['wall_s']:.2f} s"
                     if "hops2" in row else ""), flush=True)
    return out


def small(instances: int, hops: int) -> dict:
    rng = np.random.default_rng(2026 + hops)
    kinds = ("dense", "uniform", "skewed", "sparse")
    ratios: dict[str, list[float]] = {k: [] for k in kinds}
    worst = None
    for i in range(instances):
        kind = kinds[i % len(kinds)]
        if hops == 1:
            n, k = int(rng.integers(5, 13)), int(rng.integers(1, 5))
        else:
            n, k = int(rng.integers(4, 8)), int(rng.integers(1, 3))
        d = demand(kind, n, rng)
        if kind == "sparse":  # 2% is empty at this size
            d = rng.exponential(1.0, (n, n)) * 15 * (rng.random((n, n)) < 0.25)
            np.fill_diagonal(d, 0.0)
        p = plan_circuits(d, k, C, hops=hops)
        e = exact_plan(d, k, C, hops=hops, time_limit_s=60)
        r = p.served_gbps / e.served_gbps if e.served_gbps > 0 else 1.0
        ratios[kind].append(r)
        if worst is None or r < worst[0]:
            worst = (r, n, k, kind)
    allr = [r for v in ratios.values() for r in v]
    res = {"hops": hops, "instances": instances, "mean": float(np.mean(allr)), "min": float(min(allr)),
           "optimal_share": float(np.mean([r > 1 - 1e-9 for r in allr])),
           "by_kind": {k: float(np.mean(v)) for k, v in ratios.items() if v},
           "worst": {"ratio": worst[0], "racks": worst[1], "k": worst[2], "matrix": worst[3]}}
    print(f"hops={hops}: {instances} random instances vs exact optimum: mean {res['mean']:.4f}, "
          f"min {res['min']:.4f}, optimal in {100 * res['optimal_share']:.0f}%; by matrix "
          + ", ".join(f"{k} {v:.4f}" for k, v in res["by_kind"].items()), flush=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--instances", type=int, default=80)
    ap.add_argument("--no-lp", action="store_true", help="skip the LP bound at 320 racks")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    res = {"machine": f"{platform.machine()} {platform.node()}", "date": time.strftime("%Y-%m-%d"),
           "large": large(args.repeats, not args.no_lp),
           "small_hops1": small(args.instances, 1), "small_hops2": small(max(args.instances // 4, 8), 2)}
    if args.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
