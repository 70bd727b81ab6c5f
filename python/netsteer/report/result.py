"""The result of a scenario run as one JSON-able dict."""

from __future__ import annotations

from typing import Any

import numpy as np


def job_summaries(built, res) -> list[dict[str, Any]]:
    """Per job: completion time, flows, bytes, and time per operation label."""
    out = []
    comp = res.completion_ns
    rel = res.release_ns
    cols = built.dag.columns()
    labels = cols.label
    nbytes = cols.bytes.astype(np.float64)
    mpi_ops = {}
    if built.spans and (comp >= 0).all():
        from ..traffic.mpi import op_report

        mpi_ops = op_report(built.spans, built.dag, comp, release_ns=rel)
    for j, name in enumerate(built.job_names):
        mask = built.job_of_flow == j
        fg = mask & ~built.background
        sel = fg if fg.any() else mask
        done = comp[sel] >= 0
        job: dict[str, Any] = {
            "name": name,
            "completion_s": float(comp[sel].max()) * 1e-9 if done.all() and sel.any() else None,
            "flows": int(mask.sum()),
            "bytes": _job_bytes(nbytes, mask & ~built.background, res),
        }
        mpi = mpi_ops.get(name)
        if mpi is not None:
            job["operations"] = {
                op: {k: (v * 1e-9 if k == "time_ns" else v) for k, v in o.items()}
                for op, o in mpi["ops"].items()
            }
            for o in job["operations"].values():
                o["time_s"] = o.pop("time_ns")
            out.append(job)
            continue
        ops = {}
        for lab in np.unique(labels[mask]):
            m = mask & (labels == lab)
            name_l = built.dag.labels[lab]
            if m.any() and (comp[m] >= 0).all() and (rel[m] >= 0).all():
                span = float(comp[m].max() - rel[m].min()) * 1e-9
                ops[name_l] = {"flows": int(m.sum()), "span_s": span}
        job["operations"] = ops
        out.append(job)
    return out


def _job_bytes(nbytes: np.ndarray, sel: np.ndarray, res) -> float:
    """Bytes a job's flows carry: the sizes of sized flows, plus what its timed bulk
    flows (sent until stopped, sized as "unlimited") actually sent, when the run
    reports per-flow sent bytes; never the bulk flows' nominal size."""
    bulk = nbytes >= 1e18
    total = float(nbytes[sel & ~bulk].sum())
    sent = getattr(res, "sent_bytes", None)
    if sent is not None and (sel & bulk).any():
        total += float(np.asarray(sent, dtype=np.float64)[sel & bulk].sum())
    return total


def stalled_summary(built, res) -> dict[str, Any] | None:
    """The flows a stalled run left unfinished, by job, or None if none were left.

    A run stalls when flows remain and no event could finish them: links that
    stayed down, or flows starved by higher-priority traffic that never ends.
    """
    left = (res.completion_ns < 0) & ~built.background
    if not left.any():
        return None
    jobs = [built.job_names[j] for j in np.unique(built.job_of_flow[left])]
    return {"flows": int(left.sum()), "jobs": jobs, "first_flows": np.flatnonzero(left)[:10].tolist()}


def result_dict(built, res) -> dict[str, Any]:
    """``{"scenario", "makespan_s", "jobs": [{"name", "completion_s"}...], "wall_s", ...}``."""
    out = {
        "scenario": built.name,
        "status": res.status,
        "makespan_s": res.makespan_ns * 1e-9,
        "jobs": job_summaries(built, res),
        "wall_s": res.wall_s,
        "topology": built.topology.summary(),
        "routing": built.scenario.model.routing.engine,
        "sharing": built.sharing,
        "flows": len(built.dag),
        "events": res.applied_events,
        "engine": res.stats,
        "sample_interval_s": built.sample_interval_ns * 1e-9,
    }
    if getattr(res, "controller", None):
        out["controller"] = res.controller  # reconfigurations, with their timelines
    stalled = stalled_summary(built, res)
    if stalled is not None:
        out["status"] = "stalled"  # never "done" with work left
        out["stalled"] = stalled
    return out
