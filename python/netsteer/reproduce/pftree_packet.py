"""``netsteer reproduce pftree --fidelity packet``: the victim-and-aggressor
experiment of the pFTree evaluation, packet by packet.

The source's victims (gather, scatter, bisect) suffer from the aggressor's all-to-all
under partition-oblivious ftree, and pFTree removes that. Under max-min sharing the
gather and scatter victims barely notice the aggressor (their bottleneck is their own
root's link, which the aggressor does not cross), so the flow-level reproduction
cannot show it. At packet level the aggressor's traffic fills the input buffers of
the switch ports it shares with the victim; a victim packet waits behind aggressor
packets at the head of those buffers (head-of-line blocking, the congestion tree),
and on the links ftree makes the two partitions share it gets what arbitration
leaves it.

Each case: the victim partition sends ``message`` bytes per flow of its pattern
(one phase, a fixed random placement per seed), while the aggressor partition (every
other host) runs all-to-all without end (iperf-like bulk flows, ending when the
victim is done). Reported: the victims' mean flow throughput (bytes over time,
release to last byte, as a fraction of a host link's payload rate), alone and beside
the aggressor under ftree, pftree (physical isolation only, one VL) and pftree+vl
(the partitions pFTree could not separate on links get their own VLs, equal VL
arbitration weights). Same trees, placements and partitions as the flow-level
reproduction (:mod:`netsteer.reproduce.pftree`).
"""

from __future__ import annotations

import time

import numpy as np

from ..routing.evaluate import pattern_flows
from ..routing.pftree import shared_channels
from ..sim.driver import SimDriver
from ..sim.packet import PacketParams
from ..sim.simulate import legacy_controller, run_driver
from ..units import BULK_BYTES
from ..traffic import FlowDag
from .pftree import BANDWIDTH, TOPOLOGIES, VICTIM_PATTERNS, _placement, _tree

ENGINES = ("ftree", "pftree", "pftree+vl")
MESSAGE = 256 * 1024
HEADER = 26
MTU = 2048


def _case(topo, routing, sl_of, victim, aggressor, pattern, seed, message, vls) -> float:
    """Mean victim flow throughput fraction, packet level; no aggressor if empty."""
    rng = np.random.default_rng(seed)
    vs, vd = pattern_flows(pattern, victim, rng)
    dag = FlowDag()
    dag.add_block(vs, vd, np.full(len(vs), message))
    n_v = len(vs)
    if len(aggressor):
        a_s, a_d = pattern_flows("all-to-all", aggressor, rng)
        dag.add_block(a_s, a_d, np.full(len(a_s), BULK_BYTES))
    bg = np.zeros(len(dag), dtype=bool)
    bg[n_v:] = True
    sl = np.zeros(len(dag), dtype=np.int64)
    sl[:n_v], sl[n_v:] = sl_of[0], sl_of[1]
    params = PacketParams(mtu=MTU, header=HEADER, vls=vls)
    ctl, _ = legacy_controller([])
    drv = SimDriver(topo, routing, dag, background=bg, packet=params.engine_dict(), sls=sl)
    res = run_driver(drv, ctl)
    t = (res.completion_ns[:n_v] - res.release_ns[:n_v]) * 1e-9
    link = BANDWIDTH / 8 * MTU / (MTU + HEADER)
    return float(np.mean(message / t / link))


def run(seeds: int = 4, quick: bool = False, only=None, message: int = MESSAGE, progress=None) -> dict:
    """The victim-and-aggressor experiment at packet level (see the module text); ``seeds``
    placements, 4 as ``netsteer reproduce pftree`` (docs/pftree.md gives its table)."""
    t0 = time.perf_counter()
    names = [n for n in TOPOLOGIES if (only is None or n in only) and n not in ("EF" if not quick else "CDEF")]
    victims: dict = {}
    info: dict = {}
    for name in names:
        levels, down, up, sub, nv = TOPOLOGIES[name]
        topo = _tree(levels, down, up)
        H = topo.n_hosts
        acc = {p: {e: [] for e in (*ENGINES, "alone")} for p in VICTIM_PATTERNS}
        shared = {"ftree": [], "pftree": []}
        vl_used = []
        for s in range(seeds):
            victim, aggressor, parts, rts = _placement(topo, nv, s)
            shared["ftree"].append(shared_channels(rts["ftree"][0], parts))
            shared["pftree"].append(shared_channels(rts["pftree"][0], parts))
            pf = rts["pftree"][0]
            psl = getattr(pf, "partition_sl", {}) or {}
            vl_pair = (int(psl.get(0x10, 0)), int(psl.get(0x11, 0)))
            vl_used.append(int(vl_pair[0] != vl_pair[1]))
            for pat in VICTIM_PATTERNS:
                for e in ENGINES:
                    r = rts[e][0]
                    sl = vl_pair if e == "pftree+vl" else (0, 0)
                    acc[pat][e].append(_case(topo, r, sl, victim, aggressor, pat, s, message, max(sl) + 1))
                acc[pat]["alone"].append(_case(topo, rts["ftree"][0], (0, 0), victim, np.zeros(0, np.int64),
                                               pat, s, message, 1))
            if progress:
                progress(1)
        victims[name] = {p: {e: float(np.mean(v)) for e, v in acc[p].items()} for p in VICTIM_PATTERNS}
        info[name] = {"hosts": H, "subscription": sub, "victims": nv, "tree": f"pgft({levels}, {down}, {up})",
                      "shared_channels": {e: float(np.mean(v)) for e, v in shared.items()},
                      "placements_with_own_vl": int(sum(vl_used))}
    return {"fidelity": "packet", "seeds": seeds, "message_bytes": message, "mtu": MTU, "topologies": info,
            "victims": victims, "wall_s": round(time.perf_counter() - t0, 3)}


def print_report(rep: dict, console) -> None:
    from rich.table import Table

    from .pftree import _gain

    t = Table(title=f"Victim throughput beside an all-to-all aggressor, packet level "
                    f"({rep['message_bytes'] // 1024} KiB messages, {rep['mtu']} B MTU; fraction of a host link)")
    # the gain columns are the flow-level table's (reproduce/pftree.py): each names what it compares
    for c in ("topo", "hosts", "sub", "victims", "pattern", "alone", "ftree", "pftree", "pftree+VL",
              "pftree vs ftree", "pftree+VL vs ftree", "shared ch. ftree/pftree"):
        t.add_column(c, justify="right")
    for name, pats in rep["victims"].items():
        i = rep["topologies"][name]
        sh = i["shared_channels"]
        for pat, v in pats.items():
            t.add_row(name, str(i["hosts"]), i["subscription"], str(i["victims"]), pat, f"{v['alone']:.3f}",
                      f"{v['ftree']:.3f}", f"{v['pftree']:.3f}", f"{v['pftree+vl']:.3f}",
                      _gain(v["ftree"], v["pftree"]), _gain(v["ftree"], v["pftree+vl"]),
                      f"{sh['ftree']:.1f}/{sh['pftree']:.1f}")
    console.print(t)
    console.print(f"{rep['seeds']} placements per case, {rep['wall_s']:.1f} s")
