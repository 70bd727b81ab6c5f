"""Circuit planning (topology engineering) for hybrid electrical/optical rack networks.

From a rack-to-rack demand matrix, decide which circuits each circuit switch (OCS) makes,
how the demand is carried over them, and the VLAN of every circuit path.

Model
-----
- ``n`` racks, ``k`` circuit switches; every ToR has one optical uplink on each switch, so a
  rack is in at most ``k`` circuits, at most one per switch, and each switch's circuits are a
  matching (a crossbar pairs ports). Several circuits (on different switches) may join one pair.
- A circuit is **full duplex**: ``capacity_gbps`` each way. A pair ``(a, b)`` with ``m``
  circuits serves ``min(d_ab, m c) + min(d_ba, m c)`` directly.
- ``hops=2`` also serves pairs over ``s -> v -> t`` through an intermediate ToR, split over
  several paths, within each circuit's capacity in each direction.
- Forwarding as in the source document: every circuit path gets its own VLAN ID (1..4094).
  A path here is a sequence of *circuits* (not only racks): two parallel circuits in one
  VLAN would be an L2 loop, so a pair joined by two circuits has two direct paths, two
  VLANs. Each VLAN overlay is one simple path, hence acyclic. Both directions of a path
  share its VLAN. More than 4094 VLANs is an error (:class:`VlanError`); with ``hops=2``
  the relayed paths are admitted largest first while VLAN IDs remain.

See ``docs/planning.md`` for the algorithm, the bound and the measured quality.

Examples
--------
>>> import numpy as np
>>> d = np.array([[0, 30, 0, 2],
...               [5, 0, 0, 0],
...               [0, 0, 0, 8],
...               [0, 0, 9, 0]], dtype=float)
>>> plan = plan_circuits(d, k=2, capacity_gbps=10)
>>> [(c.ocs, c.a, c.b) for c in plan.circuits]
[(0, 0, 1), (1, 0, 1), (1, 2, 3)]
>>> plan.served_gbps, plan.bound_gbps
(42.0, 43.0)
>>> [(p.src, p.dst, p.gbps, p.vlan) for p in plan.paths]
[(0, 1, 10.0, 1), (1, 0, 5.0, 1), (0, 1, 10.0, 2), (2, 3, 8.0, 3), (3, 2, 9.0, 3)]
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..demand import spread
from .matrix import PlanningError, check_demand, read_demand_csv
from .multihop import default_two_hop_kicks, fill_spare_ports, improve_two_hop, route_two_hop
from .singlehop import State, _step, default_kicks, pair_gain, plan_single_hop

__all__ = [
    "Circuit", "CircuitPath", "CircuitPlan", "PlanningError", "VlanError", "MAX_VLANS", "MAX_SWITCHES",
    "plan_circuits", "upper_bound", "check_demand", "read_demand_csv",
]

MAX_VLANS = 4094
"""VLAN IDs usable for circuit paths (802.1Q: 1..4094)."""
MAX_SWITCHES = 256
"""Most circuit switches (optical uplinks per ToR) accepted."""


class VlanError(PlanningError):
    """The plan needs more circuit paths than there are VLAN IDs."""


@dataclass(frozen=True)
class Circuit:
    """A circuit between racks ``a < b`` through circuit switch ``ocs`` (all count from 0)."""

    ocs: int
    a: int
    b: int


@dataclass(frozen=True)
class CircuitPath:
    """Demand from ``src`` to ``dst`` carried over ``racks`` (``src`` .. ``dst``; 2 racks = direct).

    ``circuits`` are the circuits it crosses, one per hop; ``vlan`` is its VLAN ID, shared by
    the reverse direction over the same circuits.
    """

    src: int
    dst: int
    racks: tuple[int, ...]
    gbps: float
    vlan: int
    circuits: tuple[Circuit, ...] = ()


@dataclass(frozen=True)
class CircuitPlan:
    """Circuits to make, how demand rides them, the demand served and an upper bound on it.

    ``served_gbps`` is the sum of the paths' Gbit/s; ``bound_gbps`` an upper bound on what any
    plan could serve (see :func:`upper_bound`); ``wall_s`` the planning time alone.
    """

    circuits: tuple[Circuit, ...]
    paths: tuple[CircuitPath, ...]
    served_gbps: float
    bound_gbps: float
    wall_s: float
    hops: int = 1
    k: int = 0
    capacity_gbps: float = 0.0
    demand_gbps: float = 0.0
    vlans: int = 0
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        """A JSON-ready dict (racks and circuit switches count from 0).

        >>> plan_circuits([[0, 4], [3, 0]], k=1, capacity_gbps=10).to_json()["circuits"]
        [{'ocs': 0, 'a': 0, 'b': 1}]
        """
        return {
            "ocs": self.k,
            "hops": self.hops,
            "capacity_gbps": self.capacity_gbps,
            "circuits": [{"ocs": c.ocs, "a": c.a, "b": c.b} for c in self.circuits],
            "paths": [{"src": p.src, "dst": p.dst, "racks": list(p.racks), "gbps": p.gbps, "vlan": p.vlan,
                       "circuits": [[c.ocs, c.a, c.b] for c in p.circuits]} for p in self.paths],
            "vlans": self.vlans,
            "served_gbps": self.served_gbps,
            "bound_gbps": self.bound_gbps,
            "demand_gbps": self.demand_gbps,
            "wall_s": self.wall_s,
            "notes": list(self.notes),
        }


def upper_bound(demand, k: int, capacity_gbps: float, *, hops: int = 1, fair: bool = False) -> float:
    """An upper bound on the demand any plan can serve, computed in O(n^2).

    ``hops=1``: a rack's ``k`` ports carry at most its ``k`` largest *marginal* gains
    (the ``m``-th circuit of pair ``(r, j)`` serves ``g_rj(m)``, falling in ``m``); every circuit
    counts at both its racks, so ``served <= 1/2 * sum_r top_k(g_r)``. This relaxes the
    switch matchings to a degree bound and lets each rack pick alone; it is an upper bound,
    not the optimum.

    ``fair``: the same for circuits counted by :func:`~.singlehop.ladder` (``demand``
    already :func:`~netsteer.control.demand.spread`), without the matching bound.
    ``hops=2``: the least of the total demand, ``sum_s min(row_s, k c)`` (a rack sends over
    its ``k`` circuits), the same over columns, and ``(n k c + B1) / 2`` (relayed Gbit/s use
    two circuit directions out of at most ``n k c`` in all; direct ones at most ``B1``, the
    single-hop bound).

    >>> d = np.full((4, 4), 6.0)
    >>> upper_bound(d, 1, 10.0), upper_bound(d, 1, 10.0, hops=2)
    (24.0, 32.0)
    """
    d = check_demand(demand)
    n, c = d.shape[0], float(capacity_gbps)
    g1 = np.minimum(d, c) + np.minimum(d.T, c)
    np.fill_diagonal(g1, -1.0)
    kk = min(k, n - 1)
    # a rack's top-k items come from its top-k pairs by first-circuit gain
    idx = np.argpartition(-g1, kk - 1, axis=1)[:, :kk]
    rows = np.arange(n)[:, None]
    up, dn = d[rows, idx], d.T[rows, idx]
    lo, width = _step(np.arange(1, k + 1)[None, None, :], c, fair)
    items = (np.clip(up[..., None] - lo, 0, width) + np.clip(dn[..., None] - lo, 0, width)).reshape(n, -1)
    top = -np.partition(-items, k - 1, axis=1)[:, :k] if items.shape[1] > k else items
    b1 = float(0.5 * top.sum())
    if not fair:
        # each switch is a matching: at most floor(n/2) circuits each, K floor(n/2) in all
        b1 = min(b1, _top_gains(d, k, c, k * (n // 2)))
    if hops == 1:
        return b1
    rows_b = float(np.minimum(d.sum(axis=1), k * c).sum())
    cols_b = float(np.minimum(d.sum(axis=0), k * c).sum())
    return min(float(d.sum()), rows_b, cols_b, 0.5 * (n * k * c + b1))


def _top_gains(d: np.ndarray, k: int, c: float, count: int) -> float:
    """The sum of the ``count`` largest marginal gains ``g_ab(m)``, over all pairs
    ``a < b`` and ``m = 1..k``, in O(n^2 log n).

    A pair's gains take at most four values in runs (``u >= v`` its two demands in
    units of ``c``): ``2c`` while both directions fill the circuit (``m <= floor(v)``),
    one partial, ``c`` while one direction does (up to ``floor(u)``), one partial.

    >>> d = np.array([[0., 25., 0.], [4., 0., 0.], [0., 0., 0.]])
    >>> _top_gains(d, 4, 10.0, 2), _top_gains(d, 4, 10.0, 9)
    (24.0, 29.0)
    """
    n = d.shape[0]
    a, b = np.triu_indices(n, 1)
    u = np.maximum(d[a, b], d[b, a]) / c
    v = np.minimum(d[a, b], d[b, a]) / c
    fu, fv = np.floor(u), np.floor(v)
    # runs [start, end] of m, clipped to 1..k; a run's value is its first gain
    starts = np.stack([np.ones_like(fv), fv + 1, fv + 2, fu + 1])
    ends = np.stack([fv, fv + 1, fu, np.where(fu > fv, fu + 1, 0)])
    ends = np.minimum(ends, k)
    counts = np.maximum(ends - starts + 1, 0)
    keep = counts > 0
    m = starts[keep]
    vals = pair_gain(d, c, np.broadcast_to(a, starts.shape)[keep], np.broadcast_to(b, starts.shape)[keep], m)
    cnt = counts[keep]
    order = np.argsort(-vals, kind="stable")
    vals, cnt = vals[order], cnt[order]
    before = np.cumsum(cnt) - cnt  # items ahead of each run
    take = np.clip(count - before, 0, cnt)
    return float((vals * take).sum())


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_args(d, k, capacity_gbps, hops, ports_per_ocs, effort=None):
    n = d.shape[0]
    if not _is_int(k) or not 1 <= k <= MAX_SWITCHES:
        raise PlanningError(f"K (circuit switches, one uplink per rack on each) must be an integer "
                            f"from 1 to {MAX_SWITCHES}, got {k!r}", field="ocs")
    try:
        c = float(capacity_gbps)
    except (TypeError, ValueError):
        raise PlanningError(f"circuit capacity must be a number of Gbit/s, got {capacity_gbps!r}",
                            field="capacity") from None
    if not math.isfinite(c) or c <= 0:
        raise PlanningError(f"circuit capacity must be > 0 Gbit/s, got {capacity_gbps!r}", field="capacity")
    if hops not in (1, 2):
        raise PlanningError(f"hops must be 1 or 2, got {hops!r}", field="hops")
    if ports_per_ocs is not None and not _is_int(ports_per_ocs):
        raise PlanningError(f"ports of a circuit switch must be an integer, got {ports_per_ocs!r}",
                            field="ports_per_ocs")
    if effort is not None and (not _is_int(effort) or effort < 0):
        raise PlanningError(f"effort (local-search kicks) must be an integer >= 0, got {effort!r}", field="effort")
    if ports_per_ocs is not None and ports_per_ocs < n:
        raise PlanningError(
            f"a circuit switch has {ports_per_ocs} ports but there are {n} racks: every rack needs one "
            f"port on each of the K={k} switches", field="ports_per_ocs")
    return c


def _pin(st: State, pinned) -> list[Circuit]:
    n, k = st.n, st.k
    out, seen = [], {}
    for i, p in enumerate(pinned):
        try:
            o, a, b = (p.ocs, p.a, p.b) if isinstance(p, Circuit) else p
        except (TypeError, ValueError):
            raise PlanningError(f"a pinned circuit is (ocs, a, b), got {p!r}", field=f"pinned.{i}") from None
        if not all(_is_int(x) for x in (o, a, b)):  # int() would make rack 1.7 rack 1
            raise PlanningError(f"a pinned circuit is (ocs, a, b) of integers, got {p!r}", field=f"pinned.{i}")
        o, a, b = int(o), int(a), int(b)
        if not 0 <= o < k:
            raise PlanningError(f"circuit switch {o} does not exist (K={k}: 0..{k - 1})", field=f"pinned.{i}")
        for r in (a, b):
            if not 0 <= r < n:
                raise PlanningError(f"rack {r} does not exist ({n} racks: 0..{n - 1})", field=f"pinned.{i}")
        if a == b:
            raise PlanningError(f"a circuit joins two different racks, got rack {a} twice", field=f"pinned.{i}")
        a, b = min(a, b), max(a, b)
        for r in (a, b):
            if (o, r) in seen:
                j, other = seen[(o, r)]
                raise PlanningError(
                    f"circuit switch {o} asked to pair the port of rack {r} twice: pinned circuits "
                    f"{j} (ocs={other.ocs}, {other.a}-{other.b}) and {i} (ocs={o}, {a}-{b})", field=f"pinned.{i}")
        c = Circuit(o, a, b)
        seen[(o, a)] = seen[(o, b)] = (i, c)
        st.add(o, a, b, pinned=True)
        out.append(c)
    return out


class _Paths:
    """Decomposes rack-level flows onto circuits, one VLAN per circuit path (both directions)."""

    def __init__(self, st: State, c: float, direct: np.ndarray, *, relaying: bool):
        """Place the direct flows (vectorised): a pair's circuits are filled in switch order,
        each direction on its own; every circuit that carries something is one VLAN."""
        self.c = c
        n = st.n
        o, a, b = st.circuits()
        order = np.lexsort((o, b, a))
        o, a, b = o[order], a[order], b[order]
        pid = a * n + b
        start = np.r_[True, pid[1:] != pid[:-1]] if len(pid) else np.zeros(0, dtype=bool)
        first = np.maximum.accumulate(np.where(start, np.arange(len(pid)), 0)) if len(pid) else pid
        rank = np.arange(len(pid)) - first
        up = np.clip(direct[a, b] - rank * c, 0.0, c)
        dn = np.clip(direct[b, a] - rank * c, 0.0, c)
        used = (up > 0) | (dn > 0)
        nv = int(used.sum())
        if nv > MAX_VLANS:
            raise VlanError(f"the plan needs {nv} VLANs for its direct circuit paths (one per circuit that "
                            f"carries demand), more than the {MAX_VLANS} VLAN IDs; plan fewer racks or "
                            f"circuit switches per plan")
        self.direct_paths: list[CircuitPath] = []
        vlan = 0
        for oo, aa, bb, u, w in zip(o[used].tolist(), a[used].tolist(), b[used].tolist(), up[used].tolist(),
                                    dn[used].tolist()):
            vlan += 1
            circ = (Circuit(oo, aa, bb),)
            if u > 0:
                self.direct_paths.append(CircuitPath(aa, bb, (aa, bb), u, vlan, circ))
            if w > 0:
                self.direct_paths.append(CircuitPath(bb, aa, (bb, aa), w, vlan, circ))
        self.n_direct = nv
        self.vlan_of: dict[tuple, int] = {}  # relayed: (canonical racks, circuit switches) -> vlan
        self.keys_by_racks: dict[tuple[int, ...], list[tuple]] = {}
        self.flow: dict[tuple[tuple, int, int], float] = {}  # (key, src, dst) -> gbps
        self.by_pair: dict[tuple[int, int], list[int]] = {}
        self.rem: dict[tuple[int, int, int], float] = {}  # (ocs, from, to) -> Gbit/s left
        if relaying:
            for oo, aa, bb, u, w in zip(o.tolist(), a.tolist(), b.tolist(), up.tolist(), dn.tolist()):
                self.by_pair.setdefault((aa, bb), []).append(oo)
                self.rem[(oo, aa, bb)] = c - u
                self.rem[(oo, bb, aa)] = c - w

    @property
    def vlans(self) -> int:
        return self.n_direct + len(self.vlan_of)

    @staticmethod
    def _canon(racks):
        return racks if racks[0] < racks[-1] else racks[::-1]

    def carry(self, racks: tuple[int, ...], amount: float, *, new_vlans: bool) -> float:
        """Place up to ``amount`` of ``racks[0] -> racks[-1]`` on circuits; return what was placed."""
        tol = 1e-9 * max(1.0, self.c)
        canon = self._canon(racks)
        hops = list(zip(racks[:-1], racks[1:]))
        placed = 0.0
        while amount - placed > tol:
            key = None
            for kk in self.keys_by_racks.get(canon, ()):
                if self._avail(kk, canon, racks) > tol:
                    key = kk
                    break
            if key is None:
                if not new_vlans or self.vlans >= MAX_VLANS:
                    break
                choice = []
                for x, y in hops:
                    os_ = self.by_pair.get((min(x, y), max(x, y)), [])
                    best = max(os_, key=lambda o: self.rem[(o, x, y)], default=None)
                    if best is None or self.rem[(best, x, y)] <= tol:
                        choice = None
                        break
                    choice.append(best)
                if choice is None:
                    break
                # key: circuits in canonical rack order
                key = tuple(choice) if canon == racks else tuple(reversed(choice))
                if (canon, key) in self.vlan_of:  # same circuits, exhausted this way
                    break
                key = (canon, key)
                self.vlan_of[key] = self.vlans + 1
                self.keys_by_racks.setdefault(canon, []).append(key)
            x = min(amount - placed, self._avail(key, canon, racks))
            self._use(key, canon, racks, x)
            placed += x
            f = (key, racks[0], racks[-1])
            self.flow[f] = self.flow.get(f, 0.0) + x
        return placed

    def _hops(self, key, canon, racks):
        ocs = key[1] if canon == racks else tuple(reversed(key[1]))
        return [(o, x, y) for o, (x, y) in zip(ocs, zip(racks[:-1], racks[1:]))]

    def _avail(self, key, canon, racks) -> float:
        return min(self.rem[h] for h in self._hops(key, canon, racks))

    def _use(self, key, canon, racks, x) -> None:
        for h in self._hops(key, canon, racks):
            self.rem[h] -= x

    def paths(self) -> list[CircuitPath]:
        out = []
        for (key, s, t), g in self.flow.items():
            if g <= 0:
                continue
            canon, ocs = key
            racks = canon if canon[0] == s else canon[::-1]
            circ = tuple(Circuit(o, min(x, y), max(x, y)) for o, x, y in
                         zip(ocs, canon[:-1], canon[1:]))
            if racks != canon:
                circ = circ[::-1]
            out.append(CircuitPath(s, t, racks, float(g), self.vlan_of[key], circ))
        out.sort(key=lambda p: (p.vlan, p.src))
        return out


def plan_circuits(demand, k: int, capacity_gbps: float, *, hops: int = 1, pinned: Iterable[Circuit] = (),
                  ports_per_ocs: int | None = None, effort: int | None = None, seed: int = 0,
                  fair: bool = False) -> CircuitPlan:
    """Plan the circuits of ``k`` circuit switches for a rack-to-rack demand matrix.

    Parameters
    ----------
    demand : array_like
        ``n x n`` Gbit/s; row = source rack, column = destination; the diagonal is ignored.
    k : int
        Circuit switches; each rack has one optical uplink on each (so at most ``k`` circuits).
        ``k > n - 1`` is allowed: the extra circuits run in parallel between the same racks.
    capacity_gbps : float
        Capacity of one circuit in each direction (circuits are full duplex).
    hops : {1, 2}
        ``1``: demand is served only over direct circuits. ``2``: also over one intermediate
        rack, split over several paths; spare ports are joined for relaying. Either way
        the plan keeps only the circuits some path uses (and the pinned ones).
    pinned : iterable of Circuit or (ocs, a, b)
        Circuits that must be kept (an application asked for them); the rest is planned
        around them and they are never moved to another switch.
    ports_per_ocs : int, optional
        Ports of each circuit switch; must be at least ``n`` (every rack has one port on
        every switch). ``None``: as many as racks.
    effort : int, optional
        Kicks of the iterated local search (default: many on small instances, none near 320
        racks). Results depend only on the inputs, ``effort`` and ``seed``.
    seed : int
        Seed of the local search's random choices.
    fair : bool
        Choose circuits for the demand spread (:func:`~netsteer.control.demand.spread`)
        and a pair's circuits counted by :func:`~.singlehop.ladder` (``c sqrt(m)``): each
        further circuit of a pair counts less than the one before, so another pair's
        first circuit is preferred to a second one serving as much (single hop only).
        The paths, ``served_gbps`` and ``bound_gbps`` stay in Gbit/s of ``demand``.

    Returns
    -------
    CircuitPlan

    Raises
    ------
    PlanningError
        Bad demand (shape, NaN, negative: names row and column), ``k`` out of range, too few
        ports or a port count or ``effort`` that is not an integer (``effort`` below 0),
        pinned circuits that are not integers, name missing switches or racks or pair a
        port twice.
    VlanError
        The direct circuit paths alone need more than 4094 VLANs.

    Examples
    --------
    Four racks, each sending 8 Gbit/s to every other, one circuit switch: two circuits,
    each carrying 8 Gbit/s both ways.

    >>> d = np.full((4, 4), 8.0)
    >>> p = plan_circuits(d, 1, 10.0)
    >>> len(p.circuits), p.served_gbps, p.bound_gbps
    (2, 32.0, 32.0)

    Two hops serve more over the same ports by relaying through the spare 2 Gbit/s:

    >>> p2 = plan_circuits(d, 2, 10.0, hops=2)
    >>> p2.served_gbps > plan_circuits(d, 2, 10.0).served_gbps
    True
    """
    t0 = time.perf_counter()
    d = check_demand(demand)
    c = _check_args(d, k, capacity_gbps, hops, ports_per_ocs, effort)
    if fair and hops != 1:
        raise PlanningError("fair counting of a pair's circuits is for single-hop plans (hops=1)", field="fair")
    k = int(k)
    n = d.shape[0]
    st = State(spread(d, c), k, c, fair=True) if fair else State(d, k, c)
    _pin(st, pinned)
    bound = upper_bound(d, k, c, hops=hops)
    target = upper_bound(st.d, k, c, fair=True) if fair else bound if hops == 1 else np.inf
    plan_single_hop(st, kicks=default_kicks(n, k) if effort is None else int(effort), seed=seed,
                    target=target)
    notes: list[str] = []
    if hops == 1:
        direct = np.minimum(d, c * st.mult[:n, :n])
        relayed: dict = {}
    else:
        improve_two_hop(st, default_two_hop_kicks(n, k) if effort is None else int(effort), seed=seed)
        fill_spare_ports(st, d - np.minimum(d, c * st.mult[:n, :n]))
        direct, relayed = route_two_hop(d, st.mult, c)
    paths = _Paths(st, c, direct, relaying=bool(relayed))
    if relayed:
        order = sorted(relayed.items(), key=lambda kv: (-kv[1], kv[0]))
        dropped = 0.0
        for (s, v, t), g in order:
            dropped += g - paths.carry((s, v, t), g, new_vlans=True)
        if dropped > 1e-9:
            notes.append(f"{paths.vlans} VLANs: {dropped:.6g} Gbit/s of relayed demand left out "
                         f"for want of VLAN IDs")
            # the freed capacity serves more over the relayed paths that have a VLAN
            served_now = direct.copy()
            for (key, s, t), g in paths.flow.items():
                served_now[s, t] += g
            for key in list(paths.vlan_of):
                canon = key[0]
                if len(canon) != 3:
                    continue
                for racks in (canon, canon[::-1]):
                    left = d[racks[0], racks[-1]] - served_now[racks[0], racks[-1]]
                    if left > 1e-9:
                        served_now[racks[0], racks[-1]] += paths.carry(racks, left, new_vlans=False)
    out_paths = tuple(paths.direct_paths + paths.paths())
    o, a, b = st.circuits()
    # circuits no path uses serve nothing (with two hops, spare ports joined for relaying
    # that routing did not need): an OCS would be reconfigured for them in vain
    used = {c for p in out_paths for c in p.circuits}
    circuits = tuple(Circuit(int(x), int(y), int(z)) for x, y, z in sorted(zip(o.tolist(), a.tolist(), b.tolist()))
                     if Circuit(int(x), int(y), int(z)) in used or st.pinned[x, y])
    served = math.fsum(p.gbps for p in out_paths)
    # served sums the paths' Gbit/s, the bound the pairs' gains, in other orders: where a
    # plan reaches the bound they differ in the last bits only (269.55383000000006 over
    # 269.55383). A bound is not to be exceeded, so served is clamped to it there; a real
    # excess (a planning fault) is more than rounding and stays to be seen
    if bound < served <= bound + 1e-9 * max(1.0, bound):
        served = bound
    return CircuitPlan(circuits, out_paths, served, bound, time.perf_counter() - t0, hops=hops, k=k,
                       capacity_gbps=c, demand_gbps=float(d.sum()), vlans=paths.vlans, notes=tuple(notes))
