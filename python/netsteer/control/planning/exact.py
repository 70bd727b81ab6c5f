"""Exact circuit plans by integer programming (scipy's HiGHS), for small instances only.

Used to measure how far the fast planner is from the optimum (tests, ``benchmarks/bench_plan.py``).
Symmetric circuit switches make the program hard beyond a dozen racks; keep ``n * k`` small.

Formulation, single hop: binary ``x[o, e]`` (circuit on switch ``o`` for rack pair ``e``),
``sum_e∋r x[o, e] <= 1`` for every switch and rack (a matching per switch); the ``m``-th circuit
of pair ``e`` serves ``g_e(m) = min(d_ab - (m-1)c, c)^+ + min(d_ba - (m-1)c, c)^+``, concave in
``m``, modelled by continuous ``z[e, m] in [0, 1]`` with ``sum_m z[e, m] <= sum_o x[o, e]``.
Two hops adds flows on direct paths and on every path ``s -> v -> t``, with
``flow on the directed circuit i -> j <= c * sum_o x[o, {i, j}]`` and ``flow of s -> t <= d_st``.

Examples
--------
>>> import numpy as np
>>> d = np.array([[0, 9, 1], [9, 0, 1], [1, 1, 0.]])
>>> exact_plan(d, 1, 10.0).served_gbps
18.0
>>> exact_plan(d, 1, 10.0, hops=2).served_gbps   # one circuit only: no relay possible
18.0
>>> exact_plan(d, 2, 10.0, hops=2).served_gbps
22.0
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import combinations

import numpy as np


@dataclass(frozen=True)
class ExactPlan:
    """The optimum found by the integer program."""

    served_gbps: float
    circuits: tuple[tuple[int, int, int], ...]  # (ocs, a, b)
    optimal: bool
    wall_s: float


def exact_plan(demand, k: int, capacity_gbps: float, *, hops: int = 1, pinned=(),
               time_limit_s: float = 60.0) -> ExactPlan:
    """Solve the planning problem exactly with ``scipy.optimize.milp`` (HiGHS).

    Parameters
    ----------
    demand : array_like
        ``n x n`` Gbit/s, diagonal ignored.
    k : int
        Circuit switches, one uplink per rack on each.
    capacity_gbps : float
        Capacity of a circuit, each way.
    hops : {1, 2}
        Direct service only, or also over one intermediate rack (flows may split).
    pinned : iterable of (ocs, a, b)
        Circuits that must be made.
    time_limit_s : float
        Give up after this long; ``optimal`` then says False and ``served_gbps`` is the
        best solution found.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    t0 = time.perf_counter()
    d = np.array(demand, dtype=float)
    np.fill_diagonal(d, 0.0)
    n, c = d.shape[0], float(capacity_gbps)
    pairs = list(combinations(range(n), 2))
    pidx = {p: i for i, p in enumerate(pairs)}
    P = len(pairs)
    nx = k * P
    rows, cols, vals, lo, hi = [], [], [], [], []
    row = 0

    def xi(o, e):
        return o * P + e

    # a matching per switch
    for o in range(k):
        for r in range(n):
            for e, (a, b) in enumerate(pairs):
                if r in (a, b):
                    rows.append(row)
                    cols.append(xi(o, e))
                    vals.append(1.0)
            lo.append(-np.inf)
            hi.append(1.0)
            row += 1
    cost = []
    if hops == 1:
        nz = P * k
        for e, (a, b) in enumerate(pairs):
            for m in range(k):
                rows.append(row)
                cols.append(nx + e * k + m)
                vals.append(1.0)
                g = min(max(d[a, b] - m * c, 0.0), c) + min(max(d[b, a] - m * c, 0.0), c)
                cost.append(-g)
            for o in range(k):
                rows.append(row)
                cols.append(xi(o, e))
                vals.append(-1.0)
            lo.append(-np.inf)
            hi.append(0.0)
            row += 1
        nvar = nx + nz
        ub_extra = [1.0] * nz
    else:
        # flow variables: direct s->t, then relayed s->v->t
        flows = [(s, t) for s in range(n) for t in range(n) if s != t]
        relays = [(s, v, t) for s in range(n) for v in range(n) for t in range(n) if len({s, v, t}) == 3]
        fidx = {f: nx + i for i, f in enumerate(flows)}
        ridx = {f: nx + len(flows) + i for i, f in enumerate(relays)}
        nvar = nx + len(flows) + len(relays)
        cost = [-1.0] * (len(flows) + len(relays))
        ub_extra = [float(d[s, t]) for s, t in flows] + [float(min(d[s, t], c * k)) for s, _, t in relays]
        # capacity of each directed circuit i -> j
        uses: dict[tuple[int, int], list[int]] = {(i, j): [fidx[(i, j)]] for i, j in flows}
        for s, v, t in relays:
            uses[(s, v)].append(ridx[(s, v, t)])
            uses[(v, t)].append(ridx[(s, v, t)])
        for (i, j), vs in uses.items():
            for col in vs:
                rows.append(row)
                cols.append(col)
                vals.append(1.0)
            e = pidx[(min(i, j), max(i, j))]
            for o in range(k):
                rows.append(row)
                cols.append(xi(o, e))
                vals.append(-c)
            lo.append(-np.inf)
            hi.append(0.0)
            row += 1
        # demand of each pair
        for s, t in flows:
            rows.append(row)
            cols.append(fidx[(s, t)])
            vals.append(1.0)
            for v in range(n):
                if v not in (s, t):
                    rows.append(row)
                    cols.append(ridx[(s, v, t)])
                    vals.append(1.0)
            lo.append(-np.inf)
            hi.append(float(d[s, t]))
            row += 1
    A = coo_matrix((vals, (rows, cols)), shape=(row, nvar)).tocsr()
    objective = np.concatenate([np.zeros(nx), np.array(cost)])
    lb = np.zeros(nvar)
    ub = np.concatenate([np.ones(nx), np.array(ub_extra)])
    for o, a, b in pinned:
        a, b = min(a, b), max(a, b)
        lb[xi(o, pidx[(a, b)])] = 1.0
    integrality = np.concatenate([np.ones(nx), np.zeros(nvar - nx)])
    res = milp(objective, constraints=LinearConstraint(A, lo, hi), integrality=integrality,
               bounds=Bounds(lb, ub), options={"time_limit": time_limit_s, "mip_rel_gap": 1e-9})
    if res.x is None:
        raise RuntimeError(f"HiGHS found no solution: {res.message}")
    x = np.round(res.x[:nx]).astype(int)
    circuits = tuple((o, *pairs[e]) for o in range(k) for e in range(P) if x[xi(o, e)])
    return ExactPlan(float(-res.fun), circuits, bool(res.status == 0), time.perf_counter() - t0)
