"""Rack-to-rack demand from counters: what racks *would* send, not what they got.

A counter measures throughput, and throughput is capped by the configuration in
force: a rack pair squeezed onto one circuit (or onto the oversubscribed electrical
network) measures at that cap, so planning on measured rates can never find that it
deserves more. As Helios does for hosts, a pair whose current path is saturated is
taken to be *network-limited*, and its demand is re-estimated as its max-min fair
share of what the racks' servers can send and receive (each rack's NIC capacity,
shared between its destinations); pairs that are not limited keep their measured
rate, which is their demand.

Examples
--------
Rack 0 sends to racks 1 and 2 over saturated 10 Gbit/s paths; its 4 servers could
send 40 Gbit/s, so each pair's natural demand is 20 Gbit/s. Rack 2 -> 0 is not
limited: it keeps its measured 3 Gbit/s.

>>> import numpy as np
>>> m = np.array([[0, 10, 10], [0, 0, 0], [3, 0, 0]], dtype=float)
>>> limited = m >= 10
>>> estimate_demand(m, limited, out_cap=np.full(3, 40.0), in_cap=np.full(3, 40.0)).tolist()
[[0.0, 20.0, 20.0], [0.0, 0.0, 0.0], [3.0, 0.0, 0.0]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["estimate_demand", "spread", "unspread"]


def spread(demand: np.ndarray, capacity_gbps: float) -> np.ndarray:
    """Demand as the planner should weigh it: a pair's first circuit's worth counts in
    full, the rest with diminishing returns (``c * sqrt(d / c)`` above one circuit).

    Maximising served demand alone is blind to who gets it: a second circuit for one
    pair and a first for another serve the same Gbit/s, but the pair left without one
    falls back to the oversubscribed electrical network. Compressing large demands
    makes a pair's next circuit worth less than another pair's first, so circuits are
    spread before they are stacked (proportional fairness, approximately).

    >>> spread(np.array([[0, 5.0], [40.0, 0]]), 10).tolist()
    [[0.0, 5.0], [20.0, 0.0]]
    """
    d = np.maximum(np.asarray(demand, dtype=float), 0.0)
    if capacity_gbps <= 0:
        return d
    return np.where(d > capacity_gbps, np.sqrt(d * capacity_gbps), d)


def unspread(spread_demand: np.ndarray, capacity_gbps: float) -> np.ndarray:
    """The demand that :func:`spread` maps to ``spread_demand`` (its inverse).

    >>> unspread(spread(np.array([[0, 5.0], [40.0, 0]]), 10), 10).tolist()
    [[0.0, 5.0], [40.0, 0.0]]
    """
    d = np.maximum(np.asarray(spread_demand, dtype=float), 0.0)
    if capacity_gbps <= 0:
        return d
    return np.where(d > capacity_gbps, d * d / capacity_gbps, d)


def estimate_demand(measured: np.ndarray, limited: np.ndarray, out_cap: np.ndarray, in_cap: np.ndarray,
                    *, tol: float = 1e-9) -> np.ndarray:
    """Natural rack-to-rack demand (Gbit/s) from measured rates.

    Parameters
    ----------
    measured : ndarray, shape (n, n)
        Measured Gbit/s from rack ``a`` (row) to rack ``b`` (column); diagonal ignored.
    limited : ndarray of bool, shape (n, n)
        Pairs whose path is saturated: their measured rate is a floor, not the demand.
    out_cap, in_cap : ndarray, shape (n,)
        What each rack's servers can send and receive in total (Gbit/s).

    Returns
    -------
    ndarray, shape (n, n)
        Unlimited pairs: their measured rate. Limited pairs: the max-min fair share of
        the senders' and receivers' capacity left by the unlimited pairs, progressive
        filling over the two constraints of each pair, and never below their measured
        rate.

    Examples
    --------
    Two racks send to one receiver that can take 30 Gbit/s: 15 each.

    >>> m = np.array([[0, 0, 5], [0, 0, 5], [0, 0, 0]], dtype=float)
    >>> estimate_demand(m, m > 0, np.full(3, 40.0), np.full(3, 30.0))[:, 2].tolist()
    [15.0, 15.0, 0.0]
    """
    m = np.array(measured, dtype=float)
    n = m.shape[0]
    np.fill_diagonal(m, 0.0)
    m = np.maximum(m, 0.0)
    lim = np.array(limited, dtype=bool) & ~np.eye(n, dtype=bool)
    out = m.copy()
    src, dst = np.nonzero(lim)
    if len(src) == 0:
        return out
    # capacity left once the unlimited pairs have what they measured
    free = ~lim
    send = np.maximum(np.asarray(out_cap, dtype=float) - np.where(free, m, 0).sum(axis=1), 0.0)
    recv = np.maximum(np.asarray(in_cap, dtype=float) - np.where(free, m, 0).sum(axis=0), 0.0)
    rate = np.zeros(len(src))
    active = np.ones(len(src), dtype=bool)
    # progressive filling: raise every active pair's rate equally until a rack's
    # sending or receiving capacity is used up; its pairs freeze
    while active.any():
        ns = np.bincount(src[active], minlength=n)
        nr = np.bincount(dst[active], minlength=n)
        with np.errstate(divide="ignore", invalid="ignore"):
            step_s = np.where(ns > 0, send / ns, np.inf)
            step_r = np.where(nr > 0, recv / nr, np.inf)
        inc = float(min(step_s.min(), step_r.min()))
        rate[active] += inc
        np.subtract.at(send, src[active], inc)
        np.subtract.at(recv, dst[active], inc)
        full_s = send <= tol * np.maximum(np.asarray(out_cap, dtype=float), 1.0)
        full_r = recv <= tol * np.maximum(np.asarray(in_cap, dtype=float), 1.0)
        active &= ~(full_s[src] | full_r[dst])
    out[src, dst] = np.maximum(rate, m[src, dst])
    return out
