"""The UnisonFlow source's overhead experiment (its Figs. 11-13) with real MPICH
traffic: OSU-like point-to-point bandwidth and latency between two nodes of the
emulated fat-tree, without and with UnisonFlow's tagging.

``plain``: untagged frames, ECMP on the true MACs (:func:`.fabric_routes.ecmp_tables`).
``tagged``: the PMPI library sets the primitive, the eBPF writer rewrites every
frame's destination MAC at the host's egress, and the last switch writes the true
MAC back (:func:`.fabric_routes.tag_tables`): the two costs the source names (its
tagging kernel module and the MAC restore at the switch). Both runs use the same
testbed, the same two hosts and the same program (``programs/osu_like.c``, after
``osu_latency`` and ``osu_bw``); the PMPI library is preloaded in both (the
testbed's finalize work-around), so the difference is the tagging alone.

Each size's emulated figures are compared with the simulator's
(:func:`netsteer.reproduce.unisonflow.overhead` on the same fabric, rates scaled as
the testbed scales them).
"""

from __future__ import annotations

import tempfile
from typing import Any

from ..errors import NetsteerError
from ..drivers.openflow.switch import OfctlSwitch
from .fabric_routes import RANK_MASK, ecmp_tables, tag_tables
from .mpi import MpiHosts, check_management_net, compile_program
from .testbed import Testbed
from .unisonflow_real import source_fabric

MODES = ("plain", "tagged")


def parse(stdout: str) -> dict[int, dict[str, float]]:
    """The program's ``lat SIZE US`` / ``bw SIZE MBS`` lines as ``{size: {"latency_us", "bandwidth_mbs"}}``.

    >>> parse("lat 1 61.5\\nbw 1 0.02\\nlat 2 60.0\\n")
    {1: {'latency_us': 61.5, 'bandwidth_mbs': 0.02}, 2: {'latency_us': 60.0}}
    """
    out: dict[int, dict[str, float]] = {}
    for line in stdout.splitlines():
        x = line.split()
        if len(x) == 3 and x[0] in ("lat", "bw"):
            out.setdefault(int(x[1]), {})["latency_us" if x[0] == "lat" else "bandwidth_mbs"] = float(x[2])
    return out


def _median(vals: list[float]) -> float:
    v = sorted(vals)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def run(max_bytes: int = 1 << 18, lat_iters: int = 200, bw_iters: int = 20, window: int = 16,
        pair: tuple[int, int] = (0, 1), repeat: int = 3, tagger: str = "ebpf", progress=lambda m: None) -> dict[str, Any]:
    """Both modes on one testbed, alternated ``repeat`` times (the machine is
    shared: the median of each size's runs); per size the latency (us) and
    bandwidth (MB/s) of each, the tagged run's overhead, and the simulator's figures.

    Parameters
    ----------
    max_bytes : int
        Largest message (sizes are the powers of two up to it).
    lat_iters, bw_iters, window : int
        Timed ping-pongs, timed windows and messages per window (sizes over 8 KiB
        use a tenth of the iterations, as OSU does).
    pair : (int, int)
        The two hosts (the source: node01 and node02, one leaf).
    repeat : int
        Runs of each mode, alternated.
    tagger : {"ebpf", "ovs", "auto"}
        The tag writer (:class:`.mpi.MpiHosts`); with ``ovs`` and ``auto`` every host
        has its own bridge in both modes, so the difference is still the tagging.
    """
    topo = source_fabric()
    if max_bytes < 1 or max_bytes > 1 << 22 or min(lat_iters, bw_iters, window) < 1:
        raise NetsteerError("max_bytes must be 1..4 MiB and the iterations and window at least 1", field="osu")
    if repeat < 1:
        raise NetsteerError("repeat must be at least 1", field="repeat")
    if len(set(pair)) != 2 or not all(0 <= h < topo.n_hosts for h in pair):
        raise NetsteerError(f"pair must be two different hosts of 0..{topo.n_hosts - 1}", field="pair")
    args = [str(max_bytes), str(lat_iters), str(bw_iters), str(window)]
    runs: dict[str, list[dict]] = {m: [] for m in MODES}
    # bytes the last switch wrote the true MAC back for (tag rules), per mode: the
    # proof that the tagged runs' frames carried tags and the plain ones did not
    restored = {m: 0 for m in MODES}
    with tempfile.TemporaryDirectory(prefix="netsteer-osu-") as d:
        exe = compile_program("osu_like", d)
        check_management_net()  # before the testbed: a busy or stale management net refuses the run
        with Testbed(topo, progress=progress, host_bridges=tagger != "ebpf") as tb:
            tables = {"plain": ecmp_tables(topo), "tagged": tag_tables(topo, list(pair))}
            for k in range(repeat):
                for mode in MODES:
                    sw = {s: OfctlSwitch(tb.bridges[s]) for s in tables[mode]}
                    for s, tab in tables[mode].items():
                        sw[s].replace(tab.flow_lines(), tab.group_lines())
                    progress(f"osu-like, {mode}, run {k + 1} of {repeat}")
                    with MpiHosts(tb, tags=mode == "tagged", tagger=tagger) as m:
                        runs[mode].append(parse(m.run(str(exe), args, list(pair), timeout=300).stdout))
                        if mode == "tagged":
                            used = m.tagger_report()
                    restored[mode] += sum(b for s in sw.values() for match, b in s.flow_bytes(0).items()
                                          if match.endswith(f"/{RANK_MASK}"))
            scale, prefix = tb.scale, tb.prefix
    res = {m: {size: {k: _median([r[size][k] for r in runs[m] if k in r.get(size, {})])
                      for k in ("latency_us", "bandwidth_mbs") if any(k in r.get(size, {}) for r in runs[m])}
               for size in runs[m][0]} for m in MODES}
    sim = predict(sorted(res["plain"]), scale, lat_iters / 10_000)
    rows = []
    for size in sorted(res["plain"]):
        p, t, s = res["plain"][size], res["tagged"].get(size, {}), sim.get(size, {})
        row = {"bytes": size, "plain": p, "tagged": t, "simulated": s}
        if "latency_us" in p and "latency_us" in t:
            row["latency_overhead_us"] = round(t["latency_us"] - p["latency_us"], 3)
        if p.get("bandwidth_mbs") and "bandwidth_mbs" in t:
            row["bandwidth_ratio"] = round(t["bandwidth_mbs"] / p["bandwidth_mbs"], 4)
        if s and p.get("latency_us"):
            row["latency_vs_simulated"] = round(p["latency_us"] / s["plain"]["latency_us"], 3)
        if s and p.get("bandwidth_mbs"):
            row["bandwidth_vs_simulated"] = round(p["bandwidth_mbs"] / s["plain"]["bandwidth_mbs"], 3)
        rows.append(row)
    return {"pair": list(pair), "scale": scale, "window": window, "lat_iters": lat_iters, "bw_iters": bw_iters,
            "repeat": repeat, "link_mbs": float(topo.link_bandwidth.min()) * scale / 8e6, "restored_bytes": restored,
            "tagger": used, "sizes": rows, "testbed": prefix}


def predict(sizes: list[int], scale: float, iter_scale: float) -> dict[int, dict]:
    """The simulator's OSU-like figures on the same fabric, every link's rate times
    ``scale`` (the testbed's): ``{size: {"plain": {...}, "tagged": {...}}}``."""
    from ..reproduce.unisonflow import PARAMS, overhead

    p = {**PARAMS, "link_bandwidth": PARAMS["link_bandwidth"] * scale}
    return {r["bytes"]: {m: {"latency_us": float(r[m]["latency_us"]), "bandwidth_mbs": float(r[m]["bandwidth_mbs"])}
                         for m in MODES if m in r}
            for r in overhead(p, sizes, scale=max(iter_scale, 0.001))["sizes"]}


__all__ = ["parse", "predict", "run"]
