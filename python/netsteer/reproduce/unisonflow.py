"""The UnisonFlow source's experiments, from the model (Takahashi et al., IEEE Access 2018).

Inputs are the source's documented set-up; spine bytes, phase times, latencies and
bandwidths come out of the simulation.

1. **Phases** (Figs. 7-10): a two-level fat-tree, 2 spines and 4 leaves, 6 nodes
   per leaf (24 nodes), 1 Gbit/s node links, leaf-spine links of 4 x 1 GbE
   aggregated (4 parallel cables, a flow takes one, as a LAG hashes it). 24 ranks,
   one per node, rank 0 on the first node of leaf1. 10,000 ``MPI_Bcast`` of 1000
   bytes, then 10,000 ``MPI_Reduce`` of 1000 bytes, root 0, with MPICH's algorithms
   (binomial bcast, Rabenseifner reduce, with its folding step for 24 ranks). The
   controller pins bcast to spine1 and reduce to spine2; the baseline is ECMP (a
   hash per connection). Port counters every 2 s. t1, t2, t3: start of the bcasts,
   end of the bcasts (start of the reduces), end of the reduces.
2. **Overhead** (Figs. 11-13): OSU-like ``osu_latency`` (ping-pong) and ``osu_bw``
   (windows of 64 messages, then a 4-byte ack) between node01 and node02, with and
   without tags, with OSU's default iterations and warm-up; the first-packet delay
   falls in the warm-up, so it is reported both ways (measured, as OSU does, and
   averaged over every iteration).
3. **Acceleration** (the source's future work): all-reduce (recursive doubling,
   1 MiB) with ``allreduce-disjoint`` and bcast (binomial under ECMP, multicast
   with the module, 1 MiB), each on 16 ranks (4 nodes per leaf) against ECMP, while
   the other 8 nodes send bulk traffic to the next leaf (untagged, ECMP-routed,
   ending with the primitive); 5 calls each.

Assumptions (not in the source; inputs, stated): 1 us per cable; an MPI message
over TCP costs 25 us of host software before it moves (MPICH over GbE); the
controller's round trip is 1 ms and a rule takes 1 ms to install on a switch
(switches programmed in parallel); tables are large enough and rules do not time
out (Ryu's default); tagging and MAC rewriting cost nothing per frame (done in the
kernel and in switch hardware; the source found them negligible, and the model has
no per-frame cost to add).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..topology.pgft import pgft
from ..unisonflow.dataplane import TableModel
from ..unisonflow.fabric import Fabric
from ..unisonflow.run import Outcome, simulate
from ..unisonflow.tags import Tag
from ..unisonflow.workload import TaggedWorkload

PARAMS: dict[str, Any] = {
    "leaves": 4, "spines": 2, "nodes_per_leaf": 6, "lag": 4,
    "link_bandwidth": 1e9, "link_latency_ns": 1_000,
    "iterations": 10_000, "nbytes": 1000, "root": 0,
    "overhead_ns": 25_000, "controller_rtt_ns": 1_000_000, "rule_time_ns": 1_000_000,
    "sample_interval_ns": 2_000_000_000,
}
#: The parameters the source gives: (its value, where it says so).
SOURCE_PARAMS: dict[str, tuple[Any, str]] = {
    "leaves": (4, "leaf1..leaf4"),
    "spines": (2, "spine1 and spine2"),
    "nodes_per_leaf": (6, "six computing nodes per leaf, 24 in all"),
    "lag": (4, "leaf-spine links of four aggregated GbE links"),
    "link_bandwidth": (1e9, "1 Gbit/s Ethernet between nodes and leaves"),
    "iterations": (10_000, "REPEAT_COUNT in List 1"),
    "nbytes": (1000, "BUF_SIZE in List 1"),
    "root": (0, "rank 0 the root of MPI_Bcast and MPI_Reduce"),
    "sample_interval_ns": (2_000_000_000, "port bytes gathered every two seconds"),
}
#: The parameters the source does not give, and why these values (module text).
ASSUMPTIONS: dict[str, str] = {
    "link_latency_ns": "per cable",
    "overhead_ns": "host software per MPI message over TCP before it moves, MPICH over GbE",
    "controller_rtt_ns": "the controller's round trip for a packet-in",
    "rule_time_ns": "to install a rule on a switch, switches programmed in parallel",
}
OSU_SIZES = [2 ** k for k in range(23)]  # 1 B .. 4 MiB
STEPS = 5


def fabric_topology(p: dict = PARAMS):
    """The source's fat-tree; leaf ``i`` is ``s1_{i-1}``, spine ``j`` is ``s2_{j-1}``."""
    return pgft(2, [p["nodes_per_leaf"], p["leaves"]], [1, p["spines"]], [1, p["lag"]],
                link_bandwidth=p["link_bandwidth"], link_latency_ns=p["link_latency_ns"])


def tables(p: dict = PARAMS) -> TableModel:
    return TableModel(controller_rtt_ns=p["controller_rtt_ns"], rule_time_ns=p["rule_time_ns"])


def _spine_nodes(topo, p):
    return [topo.node(f"s2_{j}") for j in range(p["spines"])]


def phase_channel_bytes(out: Outcome, w: TaggedWorkload, topo) -> dict[str, np.ndarray]:
    """Per phase (its operation), the bytes its flows' paths put on each channel
    (exact: each distinct source, destination and tag walked once)."""
    c = w.dag.columns()
    tags = w.tags
    per_channel = {}
    for ph in w.phases:
        lo, hi = ph.flows
        keys = np.stack([c.src[lo:hi], c.dst[lo:hi], tags[lo:hi]], axis=1)
        uniq, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        per_key = np.bincount(inv.reshape(-1), weights=c.bytes[lo:hi].astype(float), minlength=len(uniq))
        acc = np.zeros(topo.n_channels)
        for k, f in enumerate(first.tolist()):
            path = np.asarray(out.engine.flow_path(lo + f), dtype=np.int64)
            acc[path[path < topo.n_channels]] += per_key[k]
        per_channel[ph.op] = acc
    return per_channel


def phase_bytes(per_channel: dict[str, np.ndarray], topo, p) -> dict[str, dict[str, int]]:
    """Bytes entering each spine per phase, from :func:`phase_channel_bytes` (a
    minimal path enters a spine once: the bytes on the channels into it)."""
    cdst = topo.channel_dst()
    return {op: {f"spine{j + 1}_bytes": int(round(acc[cdst == s].sum())) for j, s in enumerate(_spine_nodes(topo, p))}
            for op, acc in per_channel.items()}


def phase_port_bytes(per_channel: dict[str, np.ndarray], topo, p) -> dict[str, dict[str, dict[str, int]]]:
    """Per spine port and phase, the bytes :func:`phase_channel_bytes` counts on it:
    ``{"spine1-leaf1": {"bcast": {"tx_bytes", "rx_bytes"}, ...}}``, TX spine to leaf,
    RX leaf to spine. Figs. 7-10 draw these: a counter sample straddling a phase
    boundary would mix the phases (and the next phase's first messages leave before
    the last of this one ends)."""
    csrc, cdst = topo.channel_src(), topo.channel_dst()
    ports = {}
    for j, s in enumerate(_spine_nodes(topo, p)):
        for i in range(p["leaves"]):
            leaf = topo.node(f"s1_{i}")
            tx = (csrc == s) & (cdst == leaf)
            rx = (csrc == leaf) & (cdst == s)
            ports[f"spine{j + 1}-leaf{i + 1}"] = {
                op: {"tx_bytes": int(round(acc[tx].sum())), "rx_bytes": int(round(acc[rx].sum()))}
                for op, acc in per_channel.items()}
    return ports


def phase_times(out: Outcome, w: TaggedWorkload) -> dict[str, float]:
    b, r = w.phases
    return {"t1_s": 0.0, "t2_s": int(out.completion_ns[b.flows[0]:b.flows[1]].max()) / 1e9,
            "t3_s": int(out.completion_ns[r.flows[0]:r.flows[1]].max()) / 1e9}


def port_series(out: Outcome, topo, p) -> dict[str, Any]:
    """Per spine and leaf: TX (spine to leaf) and RX (leaf to spine) Mbit/s per sample."""
    times, flat = out.samples
    times = np.asarray(times)
    cum = np.asarray(flat).reshape(len(times), -1) if len(times) else np.zeros((0, topo.n_channels))
    if not len(times) or times[0] > 0:  # counters read 0 when the run starts
        times = np.concatenate([[0], times])
        cum = np.vstack([np.zeros((1, cum.shape[1])), cum])
    if len(times) < 2:
        return {"time_s": [], "ports": {}}
    dt = np.diff(times) / 1e9
    csrc, cdst = topo.channel_src(), topo.channel_dst()
    ports = {}
    for j, s in enumerate(_spine_nodes(topo, p)):
        for i in range(p["leaves"]):
            leaf = topo.node(f"s1_{i}")
            tx = np.flatnonzero((csrc == s) & (cdst == leaf))
            rx = np.flatnonzero((csrc == leaf) & (cdst == s))
            ports[f"spine{j + 1}-leaf{i + 1}"] = {
                "tx_mbps": (np.diff(cum[:, tx].sum(axis=1)) * 8 / dt / 1e6).round(3).tolist(),
                "rx_mbps": (np.diff(cum[:, rx].sum(axis=1)) * 8 / dt / 1e6).round(3).tolist()}
    # time_s: the sample instants; the rates hold between consecutive ones
    return {"time_s": (times / 1e9).tolist(), "ports": ports}


def phases(p: dict = PARAMS) -> dict[str, Any]:
    """Experiment 1: bytes per spine per phase under the controller and under ECMP."""
    topo = fabric_topology(p)
    n = p["nodes_per_leaf"] * p["leaves"]
    w = TaggedWorkload()
    w.collective("bcast", "binomial", hosts=range(n), nbytes=p["nbytes"], repeat=p["iterations"],
                 root=p["root"], overhead_ns=p["overhead_ns"])
    w.collective("reduce", "rabenseifner", hosts=range(n), nbytes=p["nbytes"], repeat=p["iterations"],
                 root=p["root"], overhead_ns=p["overhead_ns"])
    mods = {0: [{"module": "pin", "primitive": "bcast", "via": "s2_0"},
                {"module": "pin", "primitive": "reduce", "via": "s2_1"}]}
    out = {}
    for mode, m in (("controller", mods), ("ecmp", None)):
        r = simulate(topo, w, m, tables=tables(p), sample_interval_ns=p["sample_interval_ns"])
        per_channel = phase_channel_bytes(r, w, topo)
        out[mode] = {**phase_bytes(per_channel, topo, p), **phase_times(r, w), "series": port_series(r, topo, p),
                     "phase_ports": phase_port_bytes(per_channel, topo, p),
                     "packet_ins": (r.driver or {}).get("packet_ins", 0), "status": r.status}
    return out


def _pingpong(topo, size, iters, skip, tagged, p, fabric):
    w = TaggedWorkload()
    t01, t10 = Tag("send", 0, 0, 0, 1).value(), Tag("send", 0, 0, 1, 0).value()
    prev, marks = None, []
    for _ in range(iters + skip):
        a = w.message(0, 1, size, t01, deps=[prev] if prev is not None else None, delay_ns=p["overhead_ns"])
        prev = w.message(1, 0, size, t10, deps=[a], delay_ns=p["overhead_ns"])
        marks.append(prev)
    r = simulate(topo, w, {0: []} if tagged else None, comms={0: {0: [0, 1]}}, tables=tables(p), fabric=fabric)
    done = r.completion_ns[marks]
    steady = (done[-1] - done[skip - 1]) / (2 * iters) if skip else done[-1] / (2 * iters)
    return steady / 1e3, done[-1] / (2 * (iters + skip)) / 1e3


def _bandwidth(topo, size, iters, skip, window, tagged, p, fabric):
    w = TaggedWorkload()
    t01, t10 = Tag("send", 0, 0, 0, 1).value(), Tag("send", 0, 0, 1, 0).value()
    ack, acks = None, []
    for _ in range(iters + skip):
        sends = [w.message(0, 1, size, t01, deps=[ack] if ack is not None else None, delay_ns=p["overhead_ns"])
                 for _ in range(window)]
        ack = w.message(1, 0, 4, t10, deps=sends, delay_ns=p["overhead_ns"])
        acks.append(ack)
    r = simulate(topo, w, {0: []} if tagged else None, comms={0: {0: [0, 1]}}, tables=tables(p), fabric=fabric)
    done = r.completion_ns[acks]
    steady = size * window * iters / ((done[-1] - done[skip - 1]) / 1e9) / 1e6
    whole = size * window * (iters + skip) / (done[-1] / 1e9) / 1e6
    return steady, whole


def overhead(p: dict = PARAMS, sizes=OSU_SIZES, scale: float = 1.0) -> dict[str, Any]:
    """Experiment 2: OSU-like latency (us) and bandwidth (MB/s), with and without tags.
    ``scale`` shrinks OSU's iteration counts (tests)."""
    topo = fabric_topology(p)
    fabric = Fabric(topo)
    rows = []
    for s in sizes:
        large = s > 8192
        li, ls = (1000, 10) if large else (10000, 100)
        bi, bs = (20, 2) if large else (100, 10)
        li, ls, bi, bs = (max(1, int(x * scale)) for x in (li, ls, bi, bs))
        row = {"bytes": s}
        for mode, tagged in (("plain", False), ("tagged", True)):
            lat, lat_all = _pingpong(topo, s, li, ls, tagged, p, fabric)
            bw, bw_all = _bandwidth(topo, s, bi, bs, 64, tagged, p, fabric)
            row[mode] = {"latency_us": round(lat, 4), "latency_all_us": round(lat_all, 4),
                         "bandwidth_mbs": round(bw, 4), "bandwidth_all_mbs": round(bw_all, 4)}
        row["latency_overhead_us"] = round(row["tagged"]["latency_us"] - row["plain"]["latency_us"], 4)
        row["latency_overhead_all_us"] = round(row["tagged"]["latency_all_us"] - row["plain"]["latency_all_us"], 4)
        rows.append(row)
    return {"sizes": rows}


def acceleration(p: dict = PARAMS, nbytes: int = 1 << 20, repeat: int = 5) -> dict[str, Any]:
    """Experiment 3: completion per call of all-reduce and bcast, module against ECMP,
    under background traffic."""
    topo = fabric_topology(p)
    fabric = Fabric(topo)
    npl, leaves = p["nodes_per_leaf"], p["leaves"]
    out = {}
    cases = {
        "allreduce": dict(hosts=[leaf * npl + k for leaf in range(leaves) for k in range(4)],
                          op="allreduce", algo="recursive_doubling", multicast=False,
                          module={"module": "allreduce-disjoint", "algorithm": "recursive_doubling"}),
        "bcast": dict(hosts=[leaf * npl + k for leaf in range(leaves) for k in range(4)],
                      op="bcast", algo="binomial", multicast=True,
                      module={"module": "bcast-multicast"}),
    }
    for name, cse in cases.items():
        res = {}
        for mode in ("ecmp", "module"):
            w = TaggedWorkload()
            w.collective(cse["op"], cse["algo"], hosts=cse["hosts"], nbytes=nbytes, repeat=repeat,
                         overhead_ns=p["overhead_ns"], multicast=cse["multicast"] and mode == "module")
            n_fg = len(w.dag)
            # background: the nodes outside the primitive send bulk to the next leaf
            used = set(cse["hosts"])
            others = [h for h in range(npl * leaves) if h not in used]
            for h in others:
                w.untagged(h, (h + npl) % (npl * leaves), 10 ** 12)
            bg = np.zeros(len(w.dag), dtype=bool)
            bg[n_fg:] = True
            r = simulate(topo, w, {0: [cse["module"]]} if mode == "module" else None,
                         tables=tables(p), background=bg, fabric=fabric)
            done = r.completion_ns[:n_fg]
            res[mode] = {"per_call_ms": round(int(done.max()) / repeat / 1e6, 4),
                         "steady_per_call_ms": round(_steady(w, r, n_fg, repeat) / 1e6, 4)}
        res["speedup"] = round(res["ecmp"]["per_call_ms"] / res["module"]["per_call_ms"], 3)
        res["steady_speedup"] = round(res["ecmp"]["steady_per_call_ms"] / res["module"]["steady_per_call_ms"], 3)
        out[name] = {"ranks": len(cse["hosts"]), "bytes": nbytes, "calls": repeat, "background_flows": len(
            [h for h in range(npl * leaves) if h not in set(cse["hosts"])]), **res}
    return out


def _steady(w, r, n_fg, repeat):
    """Time per call after the first (the first pays the packet-ins)."""
    lo, hi = w.phases[0].flows
    per = (hi - lo) // repeat
    first_end = int(r.completion_ns[lo:lo + per].max())
    return (int(r.completion_ns[:n_fg].max()) - first_end) / max(repeat - 1, 1)


def run(p: dict = PARAMS, progress: Callable[[int], None] = lambda n=1: None, osu_scale: float = 1.0) -> dict[str, Any]:
    from ._params import provenance

    # every input with where it comes from: the source's set-up, or an assumption
    rep: dict[str, Any] = {"parameters": provenance(dict(p), SOURCE_PARAMS, ASSUMPTIONS)}
    ph = phases(p)
    progress(2)
    rep["controller"], rep["ecmp"] = ph["controller"], ph["ecmp"]
    rep["overhead"] = overhead(p, scale=osu_scale)
    progress(2)
    rep["acceleration"] = acceleration(p)
    progress(1)
    return rep


def plot(rep: dict, outdir) -> list:
    """Figs. 7-10 (spine port throughput, phase boundaries marked) and 11-13."""
    from pathlib import Path

    from ..report.figures import legend_outside
    from ..report.plots import plt

    outdir = Path(outdir)
    files = []
    figs = [("ecmp", 1, "fig7_ecmp_spine1.png"), ("ecmp", 2, "fig8_ecmp_spine2.png"),
            ("controller", 1, "fig9_unisonflow_spine1.png"), ("controller", 2, "fig10_unisonflow_spine2.png")]
    for mode, spine, fname in figs:
        run_ = rep[mode]
        # each phase's mean rate, from the bytes its flows put on the port (the table's
        # bytes): a 2 s counter bin straddling t2 would show the reduce on spine2 during
        # the bcast, which the table (and the source) say never uses it
        edges = [run_["t1_s"], run_["t2_s"], run_["t3_s"]]
        span = [max(edges[1] - edges[0], 1e-12), max(edges[2] - edges[1], 1e-12)]
        fig, axes = plt.subplots(1, 4, figsize=(13, 3.2), sharey=True)
        for i, ax in enumerate(axes):
            port = run_["phase_ports"].get(f"spine{spine}-leaf{i + 1}")
            if port:
                for key, label, color in (("tx_bytes", "TX", "tab:blue"), ("rx_bytes", "RX", "tab:red")):
                    rates = [port[op][key] * 8 / dt / 1e6 for op, dt in zip(("bcast", "reduce"), span)]
                    ax.stairs(rates, edges, label=f"{label}, mean per phase", color=color, lw=1.5,
                              ls="-" if label == "TX" else "--")
            for t in ("t1_s", "t2_s", "t3_s"):
                ax.axvline(run_[t], color="black", lw=1)
            ax.set_title(f"spine{spine} -> leaf{i + 1}", fontsize=9)
            ax.set_xlabel("time (s)")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("throughput (Mbit/s)\nmean over each phase")
        legend_outside(axes[-1], fontsize=8)  # right of the last panel: clear of all four
        fig.suptitle(f"spine{spine}, {'ECMP' if mode == 'ecmp' else 'UnisonFlow'}: bcast t1-t2, reduce t2-t3 "
                     "(each phase's bytes on the port over its duration)", fontsize=10)
        fig.tight_layout()
        fig.savefig(outdir / fname, dpi=100)
        plt.close(fig)
        files.append(fname)
    from ..report.plots import plot_size_sweep

    rows = rep["overhead"]["sizes"]
    x = [r["bytes"] for r in rows]
    for fname, key, ylabel in (("fig11_bandwidth.png", "bandwidth_mbs", "bandwidth (MB/s)"),
                               ("fig12_latency.png", "latency_us", "latency (us)")):
        plot_size_sweep(outdir / fname, x, [("without tags", [r["plain"][key] for r in rows], "o-"),
                                            ("with tags", [r["tagged"][key] for r in rows], "s--")],
                        ylabel, logy=key == "latency_us")
        files.append(fname)
    plot_size_sweep(outdir / "fig13_latency_overhead.png", x,
                    [("after warm-up (as OSU measures)", [r["latency_overhead_us"] for r in rows], "o-"),
                     ("every iteration (first packet included)", [r["latency_overhead_all_us"] for r in rows], "s--")],
                    "latency overhead (us)")
    files.append("fig13_latency_overhead.png")
    return files
