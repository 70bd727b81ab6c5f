"""Bandwidth steering: circuit pairings that relieve the most loaded links under
minimal routing (Hung et al., "A Flexible HyperX Topology using Silicon Photonic
Switching for Bandwidth Steering").

Given switch-to-switch demand (the bytes the jobs, placed, will send), a configuration
is scored by routing the demand over it with minimal routing exactly as the ``dor``
tables route it (:class:`netsteer.routing.dor.MinimalRoutes`: among ``n`` equal next
hops, traffic to host ``h`` takes the ``h mod n``-th), or, given a :class:`RoutedLoad`,
with the routing engine the run re-routes with after the circuits move (a scenario's
own engine: ``ecmp``, ``minhop``, ...), and reading each channel's *busy
time*: its bytes at its rate, in seconds (how long the demand keeps it busy; a lower
bound on the time to carry all of it). Configurations are compared by, in order:

1. the longest busy time of any channel (the bottleneck a ring all-reduce runs at);
2. how many channels are at that time (fewer bottlenecks: the way down a plateau,
   step by step);
3. the total of all busy times (traffic times hops: shorter paths first);
4. the number of circuit ports that move (each one is dark while its switch moves).

The score rates the demand as one total: it does not see when each byte is sent
(phases, dependencies, compute between them), nor host links (only the channels
between switches, circuits included, are scored; an incast's bottleneck at the
receiving host's link is not). So a pairing with a better score can lengthen a job
whose steps load different channels in turn: the simulated job times, not the score,
say whether steering helped.

A circuit switch's configuration is a perfect matching of its cabled ports (a port
left out when the count is odd); two ports that lead to the same packet switch are
never paired (a loop back carries nothing).

Methods
-------
``exhaustive``
    Every combination of matchings, when there are at most ``max_configs`` of them
    (one 8-port switch: 105).
``local-search`` (the heuristic for large switches)
    Start from the current pairing. A *move* pairs two ports ``p, q`` of one circuit
    switch and pairs their old partners together (a 2-swap). Each round ranks the
    moves by the demand between the two packet switches ``p`` and ``q`` lead to
    (a direct circuit for far pairs, a parallel one for neighbours), evaluates the
    ``candidates`` best, and
    applies the one that improves the score most. It stops when no move improves it
    or after ``max_rounds``. Its score is never worse than the start's (the job
    time can be: see above).
``auto``
    Exhaustive when it fits, local search otherwise.

The decision core is pure: :func:`plan_steering` takes the demand and the current
pairing and returns a :class:`SteeringPlan`; :class:`SteeringController` turns plans
into ``SetCircuits`` intents at the times it is given (the default re-route policy
then rebuilds the run's routing engine over the new circuits: the engine the plan
must be scored with, so a scenario's controller scores with a :class:`RoutedLoad` of
that engine unless it is ``dor``).

Examples
--------
The source's flexible HyperX (two meshes of four, the four links between them
through one SiP switch), with two streams that both cross one mesh link:

>>> from netsteer.topology.hyperx import hyperx, CircuitSpec
>>> t = hyperx([2, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=0,
...            circuits=[CircuitSpec(dim=0, switching_time_ns=10_000)])
>>> d = switch_demand(t, [0, 2], [14, 14], [1.0, 1.0])  # x0_0 -> x1_3 (by x1_0), x1_0 -> x1_3
>>> plan = plan_steering(t, d)
>>> plan.method, plan.before["max_channel_busy_s"] > plan.after["max_channel_busy_s"]
('exhaustive', True)
>>> sorted(plan.circuits(t))
[('x0_0', 'x1_3'), ('x0_1', 'x1_1'), ('x0_2', 'x1_2'), ('x0_3', 'x1_0')]
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import NetsteerError
from ..routing.dor import MinimalRoutes
from ..topology.model import CIRCUIT, Topology
from .core import Controller, Inputs
from .intents import Intent, SetCircuits

METHODS = ("auto", "exhaustive", "local-search")


@dataclass(frozen=True)
class SteeringPlan:
    """A chosen configuration and what it changes.

    ``pairings`` maps each circuit switch node to its whole pairing (port pairs);
    ``before``/``after`` hold ``max_channel_busy_s`` (the busiest channel's bytes at
    its rate, seconds), ``channels_at_max`` and ``total_channel_busy_s`` (summed over
    the channels) of the demand under ``routing`` (the engine it was scored with);
    ``evaluated`` counts configurations scored.
    """

    pairings: dict[int, tuple[tuple[int, int], ...]]
    before: dict[str, float]
    after: dict[str, float]
    method: str
    evaluated: int
    moved_ports: int
    changed: tuple[int, ...] = field(default_factory=tuple)
    routing: str = "dor"

    def circuits(self, topo: Topology) -> list[tuple[str, str]]:
        """The packet-switch pairs the circuits join, by name."""
        names = topo.node_names
        return [tuple(sorted((names[a], names[b]))) for a, b in circuit_ends(topo, self.pairings)]

    def arrays(self, topo: Topology) -> dict[int, np.ndarray]:
        """The pairings as the simulator's port arrays (node -> partner port, -1 unpaired)."""
        return _arrays(self.pairings, topo.out_channel.shape[1])

    def as_dict(self, topo: Topology) -> dict[str, Any]:
        return {
            "method": self.method,
            "routing": self.routing,
            "evaluated": self.evaluated,
            "moved_ports": self.moved_ports,
            "before": dict(self.before),
            "after": dict(self.after),
            "circuits": [list(c) for c in sorted(self.circuits(topo))],
        }


def switch_demand(topo: Topology, src_hosts, dst_hosts, nbytes) -> np.ndarray:
    """Host-to-host transfers as the ``[switches, hosts]`` matrix :func:`plan_steering`
    takes: what the hosts of each packet switch (node order) send to each host.

    >>> from netsteer.topology.hyperx import hyperx
    >>> t = hyperx([2], 1, 2, link_bandwidth=1e9, link_latency_ns=0)
    >>> switch_demand(t, [0, 1, 2], [2, 2, 0], [5, 1, 2]).tolist()
    [[0.0, 0.0, 6.0, 0.0], [2.0, 0.0, 0.0, 0.0]]

    Raises
    ------
    NetsteerError
        Host lists that are not integers in ``0 .. n_hosts - 1``, byte counts that are
        negative or not finite, or the three of different lengths (naming the argument).
    """
    from ..routing.dor import _host_switch

    src = _hosts(topo, src_hosts, "src_hosts")
    dst = _hosts(topo, dst_hosts, "dst_hosts")
    b = _amounts(nbytes, "nbytes", ndim=1)
    if not len(src) == len(dst) == len(b):
        raise NetsteerError(f"src_hosts, dst_hosts and nbytes must have one entry per transfer; got "
                            f"{len(src)}, {len(dst)} and {len(b)}", field="nbytes")
    idx = _switch_index(topo)
    hs = idx[_host_switch(topo)]
    out = np.zeros((int((idx >= 0).sum()), topo.n_hosts))
    np.add.at(out, (hs[src], dst), b)
    return out


def _hosts(topo: Topology, hosts, field: str) -> np.ndarray:
    """``hosts`` as host indices, or a NetsteerError naming ``field``."""
    try:
        raw = np.asarray(hosts)
        h = raw.astype(np.int64)
    except (TypeError, ValueError):
        raise NetsteerError("must be a list of host indices", field=field) from None
    if raw.ndim != 1 or (raw.size and (raw.dtype.kind not in "iuf" or (h != raw).any())):
        raise NetsteerError("must be a list of host indices (integers)", field=field)
    bad = np.flatnonzero((h < 0) | (h >= topo.n_hosts))
    if len(bad):
        raise NetsteerError(f"host {int(h[bad[0]])} (entry {int(bad[0])}) does not exist: {topo.name} has hosts "
                            f"0..{topo.n_hosts - 1}", field=field)
    return h


def _amounts(values, field: str, *, ndim: int, shape: tuple | None = None) -> np.ndarray:
    """``values`` as finite, non-negative float64 (of ``shape``, switches by hosts,
    when given), or a NetsteerError naming ``field`` and the first bad entry."""
    try:
        a = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise NetsteerError("must hold numbers (bytes)", field=field) from None
    if a.ndim != ndim or (shape is not None and a.shape != shape):
        want = f"(switches, hosts) = {shape}" if shape is not None else f"{ndim} dimension"
        raise NetsteerError(f"has shape {a.shape}, expected {want}", field=field)
    bad = ~np.isfinite(a) | (a < 0)
    if bad.any():
        at = tuple(int(x) for x in np.argwhere(bad)[0])
        raise NetsteerError(f"entry {at if len(at) > 1 else at[0]} is {a[at]}: bytes must be finite and >= 0",
                            field=field)
    return a


class RoutedLoad:
    """The bytes each channel carries when a routing engine routes given transfers,
    for any circuit pairing: what :func:`plan_steering` scores with when the run
    routes with another engine than ``dor``.

    Parameters
    ----------
    topo : Topology
    make : callable(down_links, circuits) -> Routing
        Builds the routing for a pairing, as the run's re-route policy does after the
        circuits move (a scenario's routing factory).
    src_hosts, dst_hosts, nbytes : array_like
        The transfers, one entry each.
    classes, flow_ids : array_like, optional
        Per transfer, as the run routes its flows (override tables; ECMP's ``flow`` hash).
    engine : str
        The engine's name, for the plan's report.
    per_flow : bool
        Route every transfer on its own (an ECMP hash on flow ids); otherwise transfers
        of one source, destination and class are routed once with their bytes summed.

    Only channels between switches (circuits included) count, as under ``dor``'s
    score; a pairing the engine cannot route gives None (scored infinite).

    Examples
    --------
    >>> from netsteer.topology.hyperx import hyperx, CircuitSpec
    >>> from netsteer.routing import build_routing
    >>> t = hyperx([2, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=0,
    ...            circuits=[CircuitSpec(dim=0, switching_time_ns=10_000)])
    >>> make = lambda down, circuits: build_routing(t, "ecmp", circuits=circuits)
    >>> load = RoutedLoad(t, make, [0, 1], [2, 3], [1.0, 1.0], engine="ecmp")  # x0_0 -> x1_0
    >>> float(load(t.meta["initial_circuits"]).max())  # both cross the one circuit between them
    2.0
    """

    def __init__(self, topo: Topology, make, src_hosts, dst_hosts, nbytes, classes=None, flow_ids=None, *,
                 engine: str, per_flow: bool = False):
        self.topo, self.make, self.engine = topo, make, engine
        src = _hosts(topo, src_hosts, "src_hosts")
        dst = _hosts(topo, dst_hosts, "dst_hosts")
        b = _amounts(nbytes, "nbytes", ndim=1)
        cls = np.zeros(len(src), dtype=np.int64) if classes is None else np.asarray(classes, dtype=np.int64)
        fid = np.arange(len(src), dtype=np.int64) if flow_ids is None else np.asarray(flow_ids, dtype=np.int64)
        if not len(src) == len(dst) == len(b) == len(cls) == len(fid):
            raise NetsteerError("src_hosts, dst_hosts, nbytes, classes and flow_ids must have one entry per "
                                "transfer", field="nbytes")
        keep = (src != dst) & (b > 0)
        src, dst, b, cls, fid = src[keep], dst[keep], b[keep], cls[keep], fid[keep]
        if not per_flow and len(src):
            keys, inv = np.unique(np.stack([src, dst, cls], axis=1), axis=0, return_inverse=True)
            b = np.bincount(inv.ravel(), weights=b, minlength=len(keys))
            src, dst, cls = keys[:, 0], keys[:, 1], keys[:, 2]
            fid = np.zeros(len(src), dtype=np.int64)
        self.src, self.dst, self.bytes, self.classes, self.flow_ids = src, dst, b, cls, fid
        kind = topo.node_kind
        from ..topology.model import HOST

        self._host_channel = (kind[topo.channel_src()] == HOST) | (kind[topo.channel_dst()] == HOST)

    def __call__(self, circuits: dict | None, down_links=()) -> np.ndarray | None:
        try:
            routing = self.make(frozenset(int(x) for x in down_links), circuits)
            off, ch = routing.paths(self.src, self.dst, classes=self.classes, flow_ids=self.flow_ids,
                                    circuits=circuits)
        except NetsteerError:
            return None
        load = np.bincount(ch, weights=np.repeat(self.bytes, np.diff(off)), minlength=self.topo.n_channels)
        load[self._host_channel] = 0.0
        return load


def score(topo: Topology, demand: np.ndarray, circuits: dict | None, down_links=(),
          load: RoutedLoad | None = None) -> tuple[float, float, float]:
    """``(busiest channel's busy time, channels at it, total busy time)`` of
    ``demand`` (bytes) under minimal routing over ``circuits`` (or of the transfers of
    ``load`` under its engine): a channel's busy time is its bytes at its rate, in
    seconds. Infinite when some demand cannot be routed at all."""
    if load is not None:
        if circuits is None:
            circuits = topo.meta.get("initial_circuits") or None
        load = load(circuits, down_links)
        if load is None:
            return float("inf"), float("inf"), float("inf")
    else:
        routes = MinimalRoutes(topo, circuits, down_links)
        if ((np.asarray(demand) > 0) & (routes.dist[:, routes.host_switch] < 0)).any():
            return float("inf"), float("inf"), float("inf")
        load = routes.channel_load(demand)
    busy = load * 8 / topo.channel_bandwidth()
    mx = float(busy.max(initial=0.0))
    return mx, float((busy >= mx * (1 - 1e-9)).sum()) if mx > 0 else 0.0, float(busy.sum())


def plan_steering(
    topo: Topology,
    demand: np.ndarray,
    current: dict | None = None,
    *,
    method: str = "auto",
    max_configs: int = 20_000,
    candidates: int = 24,
    max_rounds: int = 200,
    down_links=(),
    load: RoutedLoad | None = None,
) -> SteeringPlan:
    """Choose circuit pairings for ``demand`` (see the module text).

    Parameters
    ----------
    topo : Topology
        A network with circuit switches (a flexible HyperX).
    demand : ndarray ``[switches, hosts]``
        What each packet switch's hosts send to each host, e.g. :func:`switch_demand`.
    current : dict of int to ndarray, optional
        The pairing in force (default: the topology's standing pairing).
    method : {"auto", "exhaustive", "local-search"}
    max_configs : int
        Largest number of configurations searched exhaustively.
    candidates : int
        Moves scored per local-search round.
    max_rounds : int
        Local-search rounds at most.
    down_links : iterable of int
        Links that are down (routing avoids them).
    load : RoutedLoad, optional
        Score with this routing engine and these transfers (the run's own routing after
        the circuits move) instead of ``dor`` on ``demand``; ``demand`` still guides
        the local search's moves.

    Raises
    ------
    NetsteerError
        No circuit switch, a demand of the wrong shape or with a negative, NaN or
        infinite entry (field ``demand``), an unknown method, or ``exhaustive`` over
        more than ``max_configs`` configurations.
    """
    if method not in METHODS:
        raise NetsteerError(f"unknown steering method {method!r}; use one of {', '.join(METHODS)}",
                            field="method")
    nodes = [int(n) for n in np.flatnonzero(topo.node_kind == CIRCUIT)]
    if not nodes:
        raise NetsteerError(f"{topo.name} has no circuit switch to steer", field="topology")
    ends = _port_ends(topo)
    if current is None:
        current = topo.meta.get("initial_circuits") or {}
    width = topo.out_channel.shape[1]
    cur = {n: pairs_of(np.asarray(current.get(n, np.full(width, -1)))) for n in nodes}
    # [switches, hosts], as switch_demand builds it
    demand = _amounts(demand, "demand", ndim=2, shape=(int((_switch_index(topo) >= 0).sum()), topo.n_hosts))
    down = tuple(down_links)

    def evaluate(conf: dict[int, tuple]) -> tuple[float, float, float, int]:
        return (*score(topo, demand, _arrays(conf, width), down, load), _moved(cur, conf))

    base = evaluate(cur)
    total = configuration_count(topo, ends)
    if method == "exhaustive" and total > max_configs:
        raise NetsteerError(f"{total:,} configurations are more than max_configs={max_configs:,}; "
                            "use method local-search", field="method")
    if method == "exhaustive" or (method == "auto" and total <= max_configs):
        # the start is one of the matchings listed (unless it pairs fewer ports): it is
        # scored once, and counted once, so `evaluated` is configuration_count's figure
        start = {n: frozenset(cur[n]) for n in nodes}
        best, best_s, n_eval = cur, base, 1
        for combo in itertools.product(*[list(_matchings(ends[n])) for n in nodes]):
            conf = dict(zip(nodes, combo))
            if all(frozenset(conf[n]) == start[n] for n in nodes):
                continue
            s = evaluate(conf)
            n_eval += 1
            if _better(s, best_s):
                best, best_s = conf, s
        used = "exhaustive"
    else:
        best, best_s, n_eval = _local_search(topo, demand, cur, base, ends, evaluate, candidates, max_rounds, down)
        used = "local-search"
    changed = tuple(n for n in nodes if set(best[n]) != set(cur[n]))
    return SteeringPlan(
        pairings={n: tuple(sorted(best[n])) for n in nodes},
        before=_summary(base),
        after=_summary(best_s),
        method=used, evaluated=n_eval, moved_ports=best_s[3], changed=changed,
        routing="dor" if load is None else load.engine,
    )


def _summary(s: tuple) -> dict[str, float]:
    """A :func:`score` as the plan reports it."""
    return {"max_channel_busy_s": s[0], "channels_at_max": s[1], "total_channel_busy_s": s[2]}


def _local_search(topo, demand, cur, base, ends, evaluate, k, max_rounds, down):
    """2-swap local search guided by demand between far-apart switches."""
    conf = {n: tuple(p) for n, p in cur.items()}
    s_conf, n_eval = base, 1
    sw_index = _switch_index(topo)
    hs = MinimalRoutes(topo, None, down).host_switch
    sw_sw = np.zeros((len(demand), len(demand)))
    np.add.at(sw_sw.T, hs, demand.T)  # switch-to-switch totals
    sym = sw_sw + sw_sw.T
    for _ in range(max_rounds):
        dist = MinimalRoutes(topo, _arrays(conf, topo.out_channel.shape[1]), down).dist
        moves = []
        for n, pairs in conf.items():
            partner = {p: q for a, b in pairs for p, q in ((a, b), (b, a))}
            ports = sorted(ends[n])
            for i, p in enumerate(ports):
                for q in ports[i + 1:]:
                    if partner.get(p) == q:
                        continue
                    a, b = sw_index[ends[n][p]], sw_index[ends[n][q]]
                    if a == b:
                        continue
                    gain = sym[a, b]
                    if gain > 0:
                        moves.append((-gain, n, p, q))
        moves.sort()
        best, best_s = None, s_conf
        for _, n, p, q in moves[:k]:
            new = _swap(conf[n], p, q, ends[n])
            if new is None:
                continue
            trial = dict(conf)
            trial[n] = new
            s = evaluate(trial)
            n_eval += 1
            if _better(s, best_s):
                best, best_s = trial, s
        if best is None:
            break
        conf, s_conf = best, best_s
    return conf, s_conf, n_eval


def _swap(pairs, p, q, ends_of):
    """Pair ``p`` with ``q`` and their old partners together (None: a loop back)."""
    partner = {x: y for a, b in pairs for x, y in ((a, b), (b, a))}
    rest = [pr for pr in pairs if p not in pr and q not in pr]
    new = [(min(p, q), max(p, q))]
    p2, q2 = partner.get(p), partner.get(q)
    if p2 is not None and q2 is not None:
        if ends_of[p2] == ends_of[q2]:
            return None
        new.append((min(p2, q2), max(p2, q2)))
    return tuple(sorted(rest + new))


def _better(a, b) -> bool:
    """Lexicographic with a tolerance, so float noise does not count as a gain."""
    for x, y in zip(a, b):
        tol = 1e-9 * abs(y) if np.isfinite(y) else 0.0
        if x < y - tol:
            return True
        if x > y + tol:
            return False
    return False


def circuit_ends(topo: Topology, pairings: dict) -> list[tuple[int, int]]:
    """The nodes each circuit joins, for ``pairings`` (circuit switch -> port pairs,
    :func:`pairs_of` of a port array), in the order given.

    >>> from netsteer.topology.hyperx import hyperx, CircuitSpec
    >>> t = hyperx([2, 2], 1, 1, link_bandwidth=1e9, link_latency_ns=0,
    ...            circuits=[CircuitSpec(dim=0, switching_time_ns=0)])
    >>> sip = t.node("sip0")
    >>> [(t.node_names[a], t.node_names[b]) for a, b in circuit_ends(t, {sip: pairs_of(t.meta["initial_circuits"][sip])})]
    [('x0_0', 'x1_0'), ('x0_1', 'x1_1')]
    """
    ends = _port_ends(topo)
    return [(ends[sw][p], ends[sw][q]) for sw, pairs in pairings.items() for p, q in pairs]


def _port_ends(topo: Topology) -> dict[int, dict[int, int]]:
    """Per circuit switch: cabled port -> the packet switch (or host) behind it."""
    out = {}
    dst = topo.channel_dst()
    for n in np.flatnonzero(topo.node_kind == CIRCUIT):
        row = topo.out_channel[n]
        out[int(n)] = {int(p): int(dst[row[p]]) for p in np.flatnonzero(row >= 0)}
    return out


def _switch_index(topo: Topology) -> np.ndarray:
    from ..topology.model import SWITCH

    idx = np.full(topo.n_nodes, -1, dtype=np.int64)
    sw = np.flatnonzero(topo.node_kind == SWITCH)
    idx[sw] = np.arange(len(sw))
    return idx


def pairs_of(arr) -> tuple[tuple[int, int], ...]:
    """A circuit switch's port array (partner port, -1 unpaired) as its port pairs.

    >>> pairs_of([-1, 2, 1, -1])
    ((1, 2),)
    """
    return tuple(sorted((int(p), int(q)) for p, q in enumerate(arr) if q > p))


def _arrays(conf: dict, width: int) -> dict[int, np.ndarray]:
    out = {}
    for n, pairs in conf.items():
        a = np.full(width, -1, dtype=np.int64)
        for p, q in pairs:
            a[p], a[q] = q, p
        out[n] = a
    return out


def _moved(cur: dict, conf: dict) -> int:
    moved = 0
    for n, pairs in conf.items():
        old = {x: y for a, b in cur[n] for x, y in ((a, b), (b, a))}
        new = {x: y for a, b in pairs for x, y in ((a, b), (b, a))}
        moved += sum(1 for p in set(old) | set(new) if old.get(p) != new.get(p))
    return moved


def _matchings(ends_of: dict[int, int]):
    """Perfect matchings (one port out when odd) avoiding loop backs."""
    ports = sorted(ends_of)

    def rec(rest):
        if len(rest) < 2:
            yield ()
            return
        if len(rest) % 2:  # odd: some port stays unpaired
            for i in range(len(rest)):
                yield from rec(rest[:i] + rest[i + 1:]) if i == 0 else ()
            return
        p = rest[0]
        for i in range(1, len(rest)):
            q = rest[i]
            if ends_of[p] == ends_of[q]:
                continue
            for m in rec(rest[1:i] + rest[i + 1:]):
                yield ((p, q),) + m

    return rec(ports)


def configuration_count(topo: Topology, ends: dict | None = None) -> int:
    """How many configurations ``exhaustive`` scores: the product, over the circuit
    switches, of their matchings without loop backs (exact, as :func:`_matchings` lists
    them). The start is one of them when it pairs every port it can (the plan's
    ``evaluated`` is then this figure; one more when the start pairs fewer).

    >>> from netsteer.topology.hyperx import hyperx, CircuitSpec
    >>> t = hyperx([2], 2, 1, link_bandwidth=1e9, link_latency_ns=0, circuits=[CircuitSpec(dim=0)])
    >>> configuration_count(t)  # 4 ports, two to each switch: 2 matchings (3 with loop backs)
    2
    """
    ends = _port_ends(topo) if ends is None else ends
    return math.prod(_n_matchings(e) for e in ends.values())


def _n_matchings(ends_of: dict[int, int]) -> int:
    """The matchings :func:`_matchings` lists: perfect matchings (the lowest port out
    when the count is odd) pairing no two ports that lead to the same switch.

    >>> _n_matchings({1: 10, 2: 11, 3: 12, 4: 13}), _n_matchings({1: 10, 2: 10, 3: 11, 4: 11})
    (3, 2)
    """
    ports = sorted(ends_of)
    if len(ports) % 2:
        ports = ports[1:]
    sizes = tuple(sorted(Counter(ends_of[p] for p in ports).values(), reverse=True))
    return _complete_multipartite_matchings(sizes)


@functools.lru_cache(maxsize=4096)
def _complete_multipartite_matchings(sizes: tuple[int, ...]) -> int:
    """Perfect matchings between groups of ports of these sizes (largest first), no
    two ports of one group paired: a port of the first group takes one of another's."""
    if not sizes:
        return 1
    first, rest = sizes[0], sizes[1:]
    total = 0
    for j, g in enumerate(rest):
        if j and g == rest[j - 1]:
            continue  # groups of one size lead to the same count: counted below
        same = rest.count(g)
        left = list(rest)
        left[j] = g - 1
        nxt = tuple(sorted((x for x in (first - 1, *left) if x), reverse=True))
        total += same * g * _complete_multipartite_matchings(nxt)
    return total


class SteeringController(Controller):
    """Steer the circuits for the demand given, at the times given.

    Parameters
    ----------
    topo : Topology
    steps : list of (time_ns, demand)
        At ``time_ns``, plan for ``demand`` (``[switches, hosts]``) from the
        pairing in force and re-pair the circuit switches that change.
    method, max_configs, candidates : see :func:`plan_steering`.
    load : RoutedLoad, optional
        Score the plans with the run's routing engine (see :func:`plan_steering`):
        needed when the run does not route with ``dor``.

    Examples
    --------
    >>> from netsteer.topology.hyperx import hyperx, CircuitSpec
    >>> from netsteer.control.driver import NetworkView
    >>> t = hyperx([2, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=0,
    ...            circuits=[CircuitSpec(dim=0, switching_time_ns=10_000)])
    >>> d = switch_demand(t, [0, 2], [14, 14], [1.0, 1.0])
    >>> c = SteeringController(t, [(0, d)])
    >>> view = NetworkView(0, frozenset(), dict(t.meta["initial_circuits"]))
    >>> [type(i).__name__ for i in c.decide(Inputs(0, view))]
    ['SetCircuits']
    >>> c.next_wakeup(0) is None
    True
    """

    name = "steering"

    def __init__(self, topo: Topology, steps: list, *, method: str = "auto", max_configs: int = 20_000,
                 candidates: int = 24, load: RoutedLoad | None = None):
        super().__init__()
        self.topo = topo
        self.steps = sorted(steps, key=lambda s: s[0])
        self.kw = dict(method=method, max_configs=max_configs, candidates=candidates, load=load)
        self._next = 0
        self.plans: list[dict[str, Any]] = []

    def next_wakeup(self, now: int) -> int | None:
        if self._next < len(self.steps):
            return max(int(self.steps[self._next][0]), now + 1) if self.steps[self._next][0] > now else now + 1
        return None

    def decide(self, inp: Inputs) -> list[Intent]:
        out: dict[int, tuple] = {}
        current = dict(inp.view.circuits or {}) or None
        start = dict(current or self.topo.meta.get("initial_circuits") or {})
        while self._next < len(self.steps) and self.steps[self._next][0] <= inp.now:
            _, demand = self.steps[self._next]
            self._next += 1
            # steps due at one instant: each plans from the pairing the one before chose
            plan = plan_steering(self.topo, demand, current, down_links=inp.view.down_links, **self.kw)
            rec = dict(plan.as_dict(self.topo), at_s=inp.now / 1e9, what="steering")
            self.plans.append(rec)
            self.history.append(rec)
            arrays = plan.arrays(self.topo)
            current = {**(current or self.topo.meta.get("initial_circuits") or {}), **arrays}
            for sw in plan.changed:
                out[sw] = plan.pairings[sw]  # the last plan's pairing per switch
        width = self.topo.out_channel.shape[1]
        return [SetCircuits(sw, pairs) for sw, pairs in out.items()
                if set(pairs) != set(pairs_of(start.get(sw, np.full(width, -1))))]

    def report(self) -> dict[str, Any] | None:
        out: dict[str, Any] = {"plans": self.plans} if self.plans else {}
        # a time after the run ended (every job done) never comes: say so, not nothing
        late = [t / 1e9 for t, _ in self.steps[self._next:]]
        if late:
            out["not_reached_s"] = late
        return out or None
