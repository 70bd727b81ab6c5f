"""VL arbitration weights for a bound on MPI slowdown (the source's future work).

The source closes on "identify balanced thresholds to reduce both MPI and I/O
contention". :func:`tune` searches the weights of two classes' VLs, both in the low
table: the MPI class's slowdown (its jobs' completion against MPI served strictly
first) and the I/O class's throughput come out of the model for each candidate; the
answer is the candidate with the most I/O throughput whose slowdown stays within
the bound, and the whole trade-off curve.

Weights count 64-byte units but the arbiter sends whole packets, so only the number
of packets an entry sends per turn matters (:func:`netsteer.qos.flowshare.entry_bytes`):
the candidates are one weight per packet count, 1 to 255's. A packet counts its length
in 64-byte units rounded up (2112 bytes for the default 2074), at flow and at packet
level alike, so these are the boundaries at both fidelities.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import NetsteerError
from .flowshare import DEFAULT_PACKET


def packet_weights(packet: int = DEFAULT_PACKET) -> list[int]:
    """The smallest weight for each number of packets per turn, 1 .. 255's.

    >>> packet_weights()
    [1, 34, 67, 100, 133, 166, 199, 232]
    """
    out, k = [], 1
    while True:
        w = max(1, -(-((k - 1) * packet + 1) // 64))
        if w > 255:
            return out
        out.append(w)
        k += 1


def _measure(built, mpi: str, io: str) -> tuple[float, float]:
    from ..sim import run_scenario

    res = run_scenario(built, sample=False)
    if res.status != "done":
        raise NetsteerError(f"the run ended {res.status}", file=built.scenario.file)
    plan = built.qos
    m, i = plan.flows_of(mpi), plan.flows_of(io)
    for opt, name, flows in (("--mpi", mpi, m), ("--io", io, i)):
        if not len(flows):
            # nothing to time or to measure: every candidate would look the same
            raise NetsteerError(f"class {name!r} carries no flows in this scenario (no flow matches its "
                                "selectors): give the class of a traffic the scenario has",
                                file=built.scenario.file, field=opt)
    t_mpi = float(res.completion_ns[m].max()) / 1e9
    io_bytes = float(np.asarray(res.sent_bytes)[i].sum())
    return t_mpi, io_bytes / max(res.makespan_ns / 1e9, 1e-12)


def tune(scenario, mpi: str, io: str, max_slowdown: float, progress=lambda n=1: None) -> dict:
    """Search weights for classes ``mpi`` and ``io`` of ``scenario`` (a parsed
    :class:`netsteer.scenario.Scenario` with a ``qos`` section); see the module text."""
    from ..scenario import Scenario, build_scenario
    from .config import parse_qos

    model, file = scenario.model, scenario.file
    if model.qos is None:
        raise NetsteerError("qos tune needs a qos section with the two classes", file=file, field="qos")
    q = parse_qos(model.qos, file=file)
    names = {c.name: c for c in q.classes}
    for opt, name in (("--mpi", mpi), ("--io", io)):
        if name not in names:
            raise NetsteerError(f"no class named {name!r} in qos.classes ({', '.join(names) or 'none'})",
                                file=file, field=opt)
    if mpi == io:
        raise NetsteerError(f"names class {io!r}, as --mpi does: tune weighs two different classes against "
                            "each other", file=file, field="--io")
    if not math.isfinite(max_slowdown):
        # inf would also reach the JSON report as Infinity, which is not JSON
        raise NetsteerError(f"must be a finite number, got {max_slowdown}; to leave MPI unbounded give a "
                            "large bound (e.g. 100)", field="--max-slowdown")
    if max_slowdown < 1.0:
        raise NetsteerError(f"{max_slowdown} is below 1: the slowdown is MPI's time over its time served first",
                            field="--max-slowdown")
    port = q.port("swe")
    vm, vi = port.sl2vl[names[mpi].sl], port.sl2vl[names[io].sl]
    if vm == vi or 15 in (vm, vi):
        raise NetsteerError(f"classes {mpi!r} and {io!r} need VLs of their own (SL2VL gives VL {vm} and VL {vi})",
                            file=file, field="qos.sl2vl")
    others = [(v, w) for v, w in port.vlarb_low if v not in (vm, vi)]

    def run_with(high, low, limit):
        data = {**model.qos, "vlarb_high": [list(e) for e in high], "vlarb_low": [list(e) for e in low],
                "high_limit": limit}
        data.pop("ports", None)  # one table for every port: what is tuned
        data.pop("changes", None)  # static weights: a scripted change would blur them
        b = build_scenario(Scenario(model.model_copy(update={"qos": data}), file))
        progress()
        return _measure(b, mpi, io)

    base_t, base_io = run_with([(vm, 255)], [(vi, 255)] + others, 255)
    curve = []
    ws = packet_weights()
    for wm, wi in [(255, w) for w in ws] + [(w, 255) for w in ws[:-1]]:
        t, thr = run_with([], [(vm, wm), (vi, wi)] + others, 0)
        curve.append({"mpi_weight": wm, "io_weight": wi, "mpi_s": t, "slowdown": t / base_t, "io_Bps": thr})
    curve.sort(key=lambda p: p["io_weight"] / p["mpi_weight"])
    ok = [p for p in curve if p["slowdown"] <= max_slowdown + 1e-12]
    best = max(ok, key=lambda p: (p["io_Bps"], -p["slowdown"])) if ok else None
    return {"mpi_class": mpi, "io_class": io, "max_slowdown": max_slowdown, "vls": {"mpi": vm, "io": vi},
            "baseline": {"mpi_s": base_t, "io_Bps": base_io, "how": "MPI's VL alone in the high table, no limit"},
            "best": best, "curve": curve,
            "opensm": None if best is None else {
                "qos_vlarb_high": "0:0", "qos_high_limit": 0,
                "qos_vlarb_low": ",".join(f"{v}:{w}" for v, w in
                                          [(vm, best["mpi_weight"]), (vi, best["io_weight"])] + others)}}


def runs(n_classes_other: int = 0) -> int:
    """Model runs :func:`tune` makes (for progress bars)."""
    return 1 + 2 * len(packet_weights()) - 1


__all__ = ["packet_weights", "runs", "tune"]
