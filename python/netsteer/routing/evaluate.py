"""Evaluate a table set: traffic patterns, link loads, max-min throughput, ORCS-style EBB.

A *pattern* is a set of flows sent at once (a *phase*); random patterns get one
phase per seed. With partitions, a pattern runs inside every partition at once
(hosts of different partitions may not talk), over the partition's members.

- ``all-to-all``: every member to every other member;
- ``shift``: member ``i`` to member ``i + k`` (``k`` random in ``1..n-1`` per seed);
- ``bisect``: the members split at random into two halves, paired, each pair
  exchanging in both directions (an odd member out stays idle);
- ``random-ring``: a random ring, each member sending to the next (HPCC's
  randomly ordered ring);
- ``gather`` / ``scatter``: every member to / from one random root;
- ``partition-local``: ``all-to-all`` inside each partition (all of a partition's
  own traffic); without partitions, plain ``all-to-all``.

Metrics, per phase and then averaged over phases (maxima: the largest):

- link load: flows per switch-to-switch channel (a link in one direction):
  maximum, mean and standard deviation, all three over those channels only -- the
  host channels carry the same load under any routing, so they say nothing about
  it (a single switch has none: its loads are 0);
- throughput: the rate weighted max-min sharing gives each flow
  (:func:`netsteer._core.maxmin`), as a fraction of its source's link;
- effective bisection bandwidth (ORCS): the mean, over ``seeds`` random
  bisections, of the mean ``bisect`` throughput fraction;
- per partition: its flows' mean throughput fraction, and the links (either
  direction) that carry its own traffic and another partition's
  (:func:`netsteer.routing.deadlock.partition_channels`).

``vl_model="split"`` models virtual lanes: a channel carrying flows of ``n``
lanes gives each lane ``1/n`` of its bandwidth (VL arbitration with equal
weights, every lane busy), so lanes isolate partitions as links do; by default
(``"shared"``) lanes make no difference, which is what plain max-min says.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.routing import build_routing
>>> t = pgft(2, [4, 4], [1, 4], link_bandwidth=8e9, link_latency_ns=0)
>>> rep = evaluate(build_routing(t, "ftree"), "shift", seeds=3)
>>> rep["max_link_load"], round(rep["effective_bisection_bandwidth"], 3)
(1, 0.854)
>>> rep2 = evaluate(build_routing(t, "ftree"), "gather", seeds=2)
>>> rep2["max_link_load"], round(rep2["throughput"], 4)  # 12 from other leaves share one down link
(12, 0.0667)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._core import maxmin
from ..errors import NetsteerError
from ..topology.model import HOST
from ..topology.partitions import pkey_text
from .deadlock import partition_channels

PATTERNS = ("all-to-all", "shift", "bisect", "random-ring", "gather", "scatter", "partition-local")
DEFAULT_PKEY = 0x7FFF


def pattern_flows(pattern: str, hosts: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One phase of ``pattern`` among ``hosts`` (host indices): ``(src, dst)``.

    >>> s, d = pattern_flows("random-ring", np.arange(4), np.random.default_rng(0))
    >>> sorted(s.tolist()) == [0, 1, 2, 3] and sorted(d.tolist()) == [0, 1, 2, 3]
    True
    """
    hosts = np.asarray(hosts, dtype=np.int64)
    n = len(hosts)
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if pattern in ("all-to-all", "partition-local"):
        s, d = np.meshgrid(hosts, hosts, indexing="ij")
        off = s != d
        return s[off], d[off]
    if pattern == "shift":
        k = int(rng.integers(1, n))
        return hosts, np.roll(hosts, -k)
    if pattern == "bisect":
        p = rng.permutation(hosts)
        a, b = p[: n // 2], p[n // 2 : 2 * (n // 2)]
        return np.concatenate([a, b]), np.concatenate([b, a])
    if pattern == "random-ring":
        p = rng.permutation(hosts)
        return p, np.roll(p, -1)
    if pattern in ("gather", "scatter"):
        root = hosts[int(rng.integers(n))]
        others = hosts[hosts != root]
        one = np.full(len(others), root)
        return (others, one) if pattern == "gather" else (one, others)
    raise NetsteerError(f"unknown pattern {pattern!r}; use one of {', '.join(PATTERNS)}", field="pattern")


def partition_groups(topo, partitions: Sequence | None) -> list[tuple[str, np.ndarray]]:
    """``(name, host indices)`` a pattern runs over: each partition (the default
    0x7fff left out), or the whole machine."""
    real = [p for p in partitions or [] if p.pkey != DEFAULT_PKEY]
    if not real:
        return [("all", np.arange(topo.n_hosts))]
    out = []
    for p in real:
        hs = sorted(int(topo.host_index[n]) for n in p.members if topo.host_index[n] >= 0)
        out.append((p.name or hex(p.pkey), np.asarray(hs, dtype=np.int64)))
    return out


def solve(routing, src, dst, *, vl=None, vl_model: str = "shared"):
    """Max-min rates (fraction of the source's link) and channel loads of one phase.

    Returns
    -------
    frac : ndarray of float, per flow
    load : ndarray of int64, flows per channel
    """
    topo = routing.topo
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    off, ch = routing.paths(src, dst)
    load = np.bincount(ch, minlength=topo.n_channels)
    if len(src) == 0:
        return np.zeros(0), load
    cap = topo.channel_bandwidth() / 8.0
    flow_of = np.repeat(np.arange(len(src)), np.diff(off))
    chans, capacity = ch.astype(np.int64), cap
    if vl_model == "split" and vl is not None:
        vl = np.asarray(vl, np.int64)
        V = int(vl.max()) + 1
        virt = ch.astype(np.int64) * V + vl[flow_of]
        lanes = np.zeros(topo.n_channels * V, dtype=bool)
        lanes[virt] = True
        n_lanes = lanes.reshape(-1, V).sum(axis=1)
        capacity = np.repeat(cap / np.maximum(n_lanes, 1), V)
        chans = virt
    rates = maxmin(capacity, off.astype(np.int64), chans, np.ones(len(src)))
    host_cap = cap[ch[off[:-1]]]  # a flow's first channel is its source's link
    return rates / host_cap, load


def _switch_channels(topo) -> np.ndarray:
    src, dst = topo.channel_src(), topo.channel_dst()
    return (topo.node_kind[src] != HOST) & (topo.node_kind[dst] != HOST)


def evaluate(
    routing,
    pattern: str,
    *,
    partitions: Sequence | None = None,
    seeds: int = 10,
    seed: int = 0,
    vl_model: str = "shared",
    progress: Callable[[int], None] | None = None,
) -> dict:
    """Run ``pattern`` on ``routing`` and report loads, throughput and EBB.

    Parameters
    ----------
    routing : Routing
    pattern : str, one of :data:`PATTERNS`
    partitions : list of Partition, optional
        Default: ``routing.partitions`` when the engine kept them.
    seeds : int
        Phases of random patterns, and random bisections for the EBB.
    vl_model : {"shared", "split"}
        See the module docstring; lanes come from ``routing.partition_vl``.

    Returns
    -------
    dict
        ``pattern``, ``phases``, ``flows``, ``max_link_load``, ``mean_link_load``,
        ``std_link_load`` (flows per switch-to-switch channel: the largest over the
        phases, the mean and the standard deviation averaged over them),
        ``throughput``, ``effective_bisection_bandwidth``,
        ``partitions`` (name -> ``hosts``, ``flows``, ``throughput``,
        ``shared_links``, ``vl``).
    """
    if pattern not in PATTERNS:
        raise NetsteerError(f"unknown pattern {pattern!r}; use one of {', '.join(PATTERNS)}", field="pattern")
    if vl_model not in ("shared", "split"):
        raise NetsteerError(f"vl_model must be shared or split, got {vl_model!r}")
    if seeds < 1:
        raise NetsteerError(f"seeds must be at least 1, got {seeds}", field="seeds")
    topo = routing.topo
    parts = list(partitions) if partitions is not None else list(getattr(routing, "partitions", []) or [])
    groups = partition_groups(topo, parts)
    vl_of = getattr(routing, "partition_vl", {}) or {}
    real = [p for p in parts if p.pkey != DEFAULT_PKEY]
    group_vl = [int(vl_of.get(p.pkey, 0)) for p in real] or [0]
    sw_ch = _switch_channels(topo)
    deterministic = pattern in ("all-to-all", "partition-local")
    phases = 1 if deterministic else seeds

    # two limited members of a partition may not talk (OpenSM's rule): a pattern
    # inside a partition keeps the pairs with a full member
    full = []
    for p in real:
        f = np.zeros(topo.n_hosts, dtype=bool)
        for node, m in p.members.items():
            if topo.host_index[node] >= 0 and m != "limited":
                f[topo.host_index[node]] = True
        full.append(f)

    def run(pat: str, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ss, dd, gg = [], [], []
        for gi, (_, hs) in enumerate(groups):
            s, d = pattern_flows(pat, hs, rng)
            if real:
                keep = full[gi][s] | full[gi][d]
                s, d = s[keep], d[keep]
            ss.append(s)
            dd.append(d)
            gg.append(np.full(len(s), gi))
        s, d, g = (np.concatenate(x) for x in (ss, dd, gg))
        frac, load = solve(routing, s, d, vl=np.asarray(group_vl)[g], vl_model=vl_model)
        return frac, load, g

    rng = np.random.default_rng(seed)
    maxl, means, stds, thr, n_flows = 0, [], [], [], 0
    per_thr = [[] for _ in groups]
    per_flows = [0] * len(groups)
    for _ in range(phases):
        frac, load, g = run(pattern, rng)
        n_flows += len(frac)
        sw_load = load[sw_ch]
        maxl = max(maxl, int(sw_load.max(initial=0)))
        means.append(float(sw_load.mean()) if sw_load.size else 0.0)
        stds.append(float(sw_load.std()) if sw_load.size else 0.0)
        if len(frac):
            thr.append(float(frac.mean()))
        for gi in range(len(groups)):
            m = g == gi
            per_flows[gi] += int(m.sum())
            if m.any():
                per_thr[gi].append(float(frac[m].mean()))
        if progress:
            progress(1)
    ebb = []
    brng = np.random.default_rng(seed + 1)
    for _ in range(seeds):
        frac, _, _ = run("bisect", brng)
        if len(frac):
            ebb.append(float(frac.mean()))
        if progress:
            progress(1)
    part_report = {}
    if real:
        mask = partition_channels(routing, real)
        users = mask.sum(axis=0)  # partitions per channel
        links = np.arange(topo.n_channels) // 2
        for i, (p, (name, hs)) in enumerate(zip(real, groups)):
            mine = mask[i]
            others = users > mine
            mine_l = np.zeros(topo.n_links, bool)
            oth_l = np.zeros(topo.n_links, bool)
            np.logical_or.at(mine_l, links, mine)
            np.logical_or.at(oth_l, links, others)
            part_report[name] = {
                "pkey": pkey_text(p.pkey),
                "hosts": int(len(hs)),
                "flows": per_flows[i],
                "throughput": float(np.mean(per_thr[i])) if per_thr[i] else None,
                "links": int(mine_l.sum()),
                "shared_links": int((mine_l & oth_l).sum()),
                "vl": int(vl_of.get(p.pkey, 0)),
            }
    return {
        "pattern": pattern,
        "engine": routing.engine,
        "phases": phases,
        "flows": n_flows,
        "max_link_load": maxl,
        "mean_link_load": float(np.mean(means)) if means else 0.0,
        "std_link_load": float(np.mean(stds)) if stds else 0.0,
        "throughput": float(np.mean(thr)) if thr else None,
        "effective_bisection_bandwidth": float(np.mean(ebb)) if ebb else None,
        "vl_model": vl_model,
        "partitions": part_report,
    }


def link_load_stats(routing, src, dst) -> dict:
    """Max, mean and standard deviation of flows per switch-to-switch channel.

    >>> from netsteer.topology.pgft import pgft
    >>> from netsteer.routing import build_routing
    >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> s, d = pattern_flows("all-to-all", np.arange(4), np.random.default_rng(0))
    >>> link_load_stats(build_routing(t, "ftree"), s, d)
    {'max': 2, 'mean': 2.0, 'std': 0.0}
    """
    load = routing.channel_load(src, dst)
    sw = _switch_channels(routing.topo)
    x = load[sw]
    return {"max": int(x.max(initial=0)), "mean": float(x.mean()) if x.size else 0.0,
            "std": float(x.std()) if x.size else 0.0}
