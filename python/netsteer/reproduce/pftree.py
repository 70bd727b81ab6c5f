"""``netsteer reproduce pftree``: the pFTree evaluation, from the model.

Two experiments, each under ftree and pftree (and pftree with its virtual lanes
modelled, ``vl_model="split"`` of :mod:`netsteer.routing.evaluate`):

1. **Victim and aggressor** on the source's six topologies A-F (16, 64 and 256
   hosts; 1:1 and 2:1 subscription; 4, 16 and 64 victims). The victim partition
   runs ``bisect``, ``gather`` or ``scatter``; the aggressor partition (every other
   host) runs ``all-to-all`` at the same time. Reported: the victims' mean flow
   throughput (fraction of a host link under max-min sharing), and the same
   pattern with the victims alone.
2. **Random ring and effective bisection bandwidth** on a non-oversubscribed, an
   oversubscribed and a limited-resource tree (fewer up links per leaf than
   partitions), four equal partitions: one runs the randomly ordered ring (or the
   random bisections of the EBB) while the other three run ``all-to-all``.

Partition placement is random (one placement per seed), as on a shared cluster
where jobs get whatever nodes are free; every number is a mean over seeds.

Examples
--------
>>> rep = run(seeds=1, quick=True, only=["A"])
>>> sorted(rep["victims"]["A"]) == ["bisect", "gather", "scatter"]
True
"""

from __future__ import annotations

import time

import numpy as np

from ..topology.partitions import Partition
from ..routing import build_routing
from ..routing.evaluate import pattern_flows, solve
from ..routing.pftree import shared_channels
from ..topology.pgft import pgft

BANDWIDTH = 32e9  # QDR 4x data rate; only ratios are reported

# name: (levels, down, up, subscription, victims)
TOPOLOGIES = {
    "A": (2, [4, 4], [1, 4], "1:1", 4),
    "B": (2, [4, 4], [1, 2], "2:1", 4),
    "C": (2, [8, 8], [1, 8], "1:1", 16),
    "D": (2, [8, 8], [1, 4], "2:1", 16),
    "E": (3, [8, 8, 4], [1, 8, 8], "1:1", 64),
    "F": (3, [8, 8, 4], [1, 4, 8], "2:1", 64),
}
# name: (levels, down, up, what, partitions)
RING_TREES = {
    "non-oversubscribed": (2, [8, 8], [1, 8], "64 hosts, 8 spines (1:1)", 4),
    "oversubscribed": (2, [8, 8], [1, 4], "64 hosts, 4 spines (2:1)", 4),
    "limited-resource": (2, [8, 8], [1, 2], "64 hosts, 2 spines (4:1): fewer up links than partitions", 4),
}
VICTIM_PATTERNS = ("bisect", "gather", "scatter")
ENGINES = ("ftree", "pftree", "pftree+vl")


def _tree(levels, down, up):
    return pgft(levels, down, up, link_bandwidth=BANDWIDTH, link_latency_ns=100)


def _partitions(topo, groups) -> list[Partition]:
    return [Partition(f"p{i}", 0x10 + i, {topo.host_node(int(h)): "full" for h in g}) for i, g in enumerate(groups)]


def _routings(topo, parts):
    ft = build_routing(topo, "ftree", partitions=parts)
    pf = build_routing(topo, "pftree", partitions=parts)
    return {"ftree": (ft, "shared"), "pftree": (pf, "shared"), "pftree+vl": (pf, "split")}


def _victim_throughput(routing, vl_model, victim, others, pattern, other_pattern, rng_seed):
    """Mean throughput fraction of the victim's flows with the others busy (others may be empty)."""
    rng = np.random.default_rng(rng_seed)
    vs, vd = pattern_flows(pattern, victim, rng)
    src, dst, vl = [vs], [vd], [np.full(len(vs), _vl(routing, 0))]
    for i, g in enumerate(others, 1):
        s, d = pattern_flows(other_pattern, g, rng)
        src.append(s)
        dst.append(d)
        vl.append(np.full(len(s), _vl(routing, i)))
    frac, _ = solve(routing, np.concatenate(src), np.concatenate(dst), vl=np.concatenate(vl), vl_model=vl_model)
    return float(frac[: len(vs)].mean())


def _vl(routing, i: int) -> int:
    return int(getattr(routing, "partition_vl", {}).get(0x10 + i, 0))


def _placement(topo, nv: int, seed: int):
    """Seed ``seed``'s random victim (``nv`` hosts) and aggressor (the rest), their
    partitions and the routings of every engine: one case of the experiment."""
    perm = np.random.default_rng(1000 + seed).permutation(topo.n_hosts)
    victim, aggressor = np.sort(perm[:nv]), np.sort(perm[nv:])
    parts = _partitions(topo, [victim, aggressor])
    return victim, aggressor, parts, _routings(topo, parts)


def run(seeds: int = 4, quick: bool = False, only=None, progress=None) -> dict:
    """Run both experiments; returns the report (see the module docstring)."""
    t0 = time.perf_counter()
    names = [n for n in TOPOLOGIES if (only is None or n in only) and not (quick and n in "EF")]
    victims: dict = {}
    topo_info: dict = {}
    for name in names:
        levels, down, up, sub, nv = TOPOLOGIES[name]
        topo = _tree(levels, down, up)
        H = topo.n_hosts
        acc = {p: {e: [] for e in (*ENGINES, "alone")} for p in VICTIM_PATTERNS}
        shared = {"ftree": [], "pftree": []}
        for s in range(seeds):
            victim, aggressor, parts, rts = _placement(topo, nv, s)
            shared["ftree"].append(shared_channels(rts["ftree"][0], parts))
            shared["pftree"].append(shared_channels(rts["pftree"][0], parts))
            for pat in VICTIM_PATTERNS:
                for e, (r, vm) in rts.items():
                    acc[pat][e].append(_victim_throughput(r, vm, victim, [aggressor], pat, "all-to-all", s))
                acc[pat]["alone"].append(_victim_throughput(rts["ftree"][0], "shared", victim, [], pat, "", s))
            if progress:
                progress(1)
        victims[name] = {p: {e: float(np.mean(v)) for e, v in acc[p].items()} for p in VICTIM_PATTERNS}
        topo_info[name] = {"hosts": H, "subscription": sub, "victims": nv, "tree": f"pgft({levels}, {down}, {up})",
                           "shared_channels": {e: float(np.mean(v)) for e, v in shared.items()}}
    rings: dict = {}
    for name, (levels, down, up, what, k) in RING_TREES.items():
        topo = _tree(levels, down, up)
        H = topo.n_hosts
        acc = {m: {e: [] for e in ENGINES} for m in ("random-ring", "ebb")}
        shared = {"ftree": [], "pftree": []}
        for s in range(seeds):
            perm = np.random.default_rng(2000 + s).permutation(H)
            groups = [np.sort(g) for g in np.array_split(perm, k)]
            parts = _partitions(topo, groups)
            rts = _routings(topo, parts)
            shared["ftree"].append(shared_channels(rts["ftree"][0], parts))
            shared["pftree"].append(shared_channels(rts["pftree"][0], parts))
            for e, (r, vm) in rts.items():
                acc["random-ring"][e].append(
                    _victim_throughput(r, vm, groups[0], groups[1:], "random-ring", "all-to-all", s))
                acc["ebb"][e].append(
                    _victim_throughput(r, vm, groups[0], groups[1:], "bisect", "all-to-all", s))
            if progress:
                progress(1)
        rings[name] = {
            "tree": f"pgft({levels}, {down}, {up})", "what": what, "partitions": k,
            "random_ring": {e: float(np.mean(v)) for e, v in acc["random-ring"].items()},
            "effective_bisection_bandwidth": {e: float(np.mean(v)) for e, v in acc["ebb"].items()},
            "shared_channels": {e: float(np.mean(v)) for e, v in shared.items()},
        }
    return {"seeds": seeds, "topologies": topo_info, "victims": victims, "ring_ebb": rings,
            "wall_s": round(time.perf_counter() - t0, 3)}


def _gain(a, b) -> str:
    return f"{(b / a - 1) * 100:+.0f}%" if a else "-"


def print_report(rep: dict, console) -> None:
    """Rich tables of :func:`run`'s report."""
    from rich.table import Table

    t = Table(title="Victim throughput with an all-to-all aggressor (fraction of a host link, max-min)")
    for c in ("topo", "hosts", "sub", "victims", "pattern", "alone", "ftree", "pftree", "pftree+VL", "pftree vs ftree",
              "pftree+VL vs ftree", "shared ch. ftree/pftree"):
        t.add_column(c, justify="right")
    for name, pats in rep["victims"].items():
        info = rep["topologies"][name]
        sh = info["shared_channels"]
        for pat, v in pats.items():
            t.add_row(name, str(info["hosts"]), info["subscription"], str(info["victims"]), pat,
                      f"{v['alone']:.3f}", f"{v['ftree']:.3f}", f"{v['pftree']:.3f}", f"{v['pftree+vl']:.3f}",
                      _gain(v["ftree"], v["pftree"]), _gain(v["ftree"], v["pftree+vl"]),
                      f"{sh['ftree']:.1f}/{sh['pftree']:.1f}")
    console.print(t)
    t = Table(title="Random ring and EBB of one partition while three others run all-to-all")
    for c in ("tree", "metric", "ftree", "pftree", "pftree+VL", "pftree vs ftree", "pftree+VL vs ftree",
              "shared ch. ftree/pftree"):
        t.add_column(c, justify="right")
    for name, r in rep["ring_ebb"].items():
        sh = r["shared_channels"]
        for label, key in (("random ring", "random_ring"), ("EBB", "effective_bisection_bandwidth")):
            v = r[key]
            t.add_row(name, label, f"{v['ftree']:.3f}", f"{v['pftree']:.3f}", f"{v['pftree+vl']:.3f}",
                      _gain(v["ftree"], v["pftree"]), _gain(v["ftree"], v["pftree+vl"]),
                      f"{sh['ftree']:.1f}/{sh['pftree']:.1f}")
    console.print(t)
    console.print(f"{rep['seeds']} placements per case, {rep['wall_s']:.1f} s")
