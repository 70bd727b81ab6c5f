"""VL arbitration weights for a bound on MPI slowdown (the source's future work).

The source closes on "identify balanced thresholds to reduce both MPI and I/O
contention". :func:`tune` searches the weights of two classes' VLs, both in the low
table: the MPI class's slowdown (its jobs' completion against MPI served strictly
first) and the I/O class's throughput come out of the model for each candidate; the
answer is the candidate with the most I/O throughput whose slowdown stays within
the bound, and the whole trade-off curve.

The weights go into every table OpenSM applies: the base ``qos_*`` keys and the
``qos_<type>_*`` keys of each port type the scenario overrides (``ports``), each
keeping its other VLs' entries, in the low table and in the high one (with the
scenario's ``high_limit`` when other VLs stay there); the answer gives the lines of each.

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


def _measure(built, mpi: str, io: str, what: str = "") -> tuple[float, float]:
    from ..sim import run_scenario

    plan = built.qos
    m, i = plan.flows_of(mpi), plan.flows_of(io)
    for opt, name, flows in (("--mpi", mpi, m), ("--io", io, i)):
        if not len(flows):
            # nothing to time or to measure: every candidate would look the same
            raise NetsteerError(f"class {name!r} carries no flows in this scenario (no flow matches its "
                                "selectors): give the class of a traffic the scenario has",
                                file=built.scenario.file, field=opt)
    if np.asarray(built.background)[m].all():
        # an endless flow has no completion to time (and served first it starves the rest: a stall)
        raise NetsteerError(f"class {mpi!r} has only endless bulk flows (no duration): there is no completion "
                            "to time; give --mpi the class whose completion matters (its MPI job's), --io the "
                            "bulk one", file=built.scenario.file, field="--mpi")
    res = run_scenario(built, sample=False)
    if res.status != "done":
        raise NetsteerError(f"the run {what} ended {res.status}: a class got no bandwidth it could use",
                            file=built.scenario.file)
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
    # the tables tuned: the base keys and every port type with arbitration keys of its own
    # (OpenSM applies qos_<type>_* over qos_* on those ports, so tuning the base alone
    # would not reach them); each keeps its other VLs' entries, low and high
    kinds: list[str | None] = [None] + [k for k, o in q.ports.items()
                                        if any(getattr(o, key) is not None for key in _ARB_KEYS)]
    keep = {}
    for kind in kinds:
        p = q.port(kind)
        if (p.sl2vl[names[mpi].sl], p.sl2vl[names[io].sl]) != (vm, vi):
            raise NetsteerError(f"on {kind} ports SL2VL puts classes {mpi!r} and {io!r} on VLs "
                                f"{p.sl2vl[names[mpi].sl]} and {p.sl2vl[names[io].sl]}, not {vm} and {vi} as on "
                                "switch ports: tune weighs one pair of VLs on every port", file=file,
                                field=f"qos.ports.{kind}.sl2vl" if q.ports[kind].sl2vl is not None else
                                f"qos.ports.{kind}.max_vls")
        keep[kind] = ([(v, w) for v, w in p.vlarb_high if v not in (vm, vi)],
                      [(v, w) for v, w in p.vlarb_low if v not in (vm, vi)], p.high_limit)

    def tables(kind, mpi_high: bool, wm: int = 255, wi: int = 255):
        """(high, low, limit) of port type ``kind``: MPI strictly first, or both in the low table."""
        high, low, limit = keep[kind]
        if mpi_high:
            return [(vm, 255)] + high, [(vi, 255)] + low, 255
        # no other VL in the high table: limit 0 (the low table alone); else the scenario's limit
        return high, [(vm, wm), (vi, wi)] + low, limit if _weighted(high) else 0

    def run_with(mpi_high: bool, wm: int = 255, wi: int = 255):
        def entries(t):
            return [list(e) for e in t]
        high, low, limit = tables(None, mpi_high, wm, wi)
        data = {**model.qos, "vlarb_high": entries(high), "vlarb_low": entries(low), "high_limit": limit}
        ports = {k: dict(v) for k, v in (model.qos.get("ports") or {}).items()}
        for kind in kinds[1:]:
            high, low, limit = tables(kind, mpi_high, wm, wi)
            ports[kind] = {**ports[kind], "vlarb_high": entries(high), "vlarb_low": entries(low),
                           "high_limit": limit}
        if ports:
            data["ports"] = ports
        data.pop("changes", None)  # static weights: a scripted change would blur them
        b = build_scenario(Scenario(model.model_copy(update={"qos": data}), file))
        progress()
        what = ("with MPI's VL strictly first" if mpi_high else f"with weights MPI {wm} : I/O {wi}")
        return _measure(b, mpi, io, what)

    base_t, base_io = run_with(True)
    curve = []
    ws = packet_weights()
    for wm, wi in [(255, w) for w in ws] + [(w, 255) for w in ws[:-1]]:
        t, thr = run_with(False, wm, wi)
        curve.append({"mpi_weight": wm, "io_weight": wi, "mpi_s": t, "slowdown": t / base_t, "io_Bps": thr})
    curve.sort(key=lambda p: p["io_weight"] / p["mpi_weight"])
    ok = [p for p in curve if p["slowdown"] <= max_slowdown + 1e-12]
    best = max(ok, key=lambda p: (p["io_Bps"], -p["slowdown"])) if ok else None
    opensm = None
    if best is not None:
        opensm = {}
        for kind in kinds:
            high, low, limit = tables(kind, False, best["mpi_weight"], best["io_weight"])
            pre = "qos_" if kind is None else f"qos_{kind}_"
            opensm.update({f"{pre}vlarb_high": ",".join(f"{v}:{w}" for v, w in high) or "0:0",
                           f"{pre}high_limit": limit,
                           f"{pre}vlarb_low": ",".join(f"{v}:{w}" for v, w in low)})
    how = "MPI's VL in the high table, no limit" + (" (beside the other VLs' high entries)"
                                                     if any(_weighted(keep[k][0]) for k in kinds) else "")
    return {"mpi_class": mpi, "io_class": io, "max_slowdown": max_slowdown, "vls": {"mpi": vm, "io": vi},
            "baseline": {"mpi_s": base_t, "io_Bps": base_io, "how": how},
            "best": best, "curve": curve, "opensm": opensm}


def _weighted(table) -> bool:
    return any(w > 0 for _, w in table)


_ARB_KEYS = ("vlarb_high", "vlarb_low", "high_limit", "max_vls", "sl2vl")


def runs(n_classes_other: int = 0) -> int:
    """Model runs :func:`tune` makes (for progress bars)."""
    return 1 + 2 * len(packet_weights()) - 1


__all__ = ["packet_weights", "runs", "tune"]
