"""The result of a scenario run as one JSON-able dict."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..units import BULK_BYTES


def job_summaries(built, res) -> list[dict[str, Any]]:
    """Per job: completion time, flows, bytes, and time per operation label."""
    out = []
    comp = res.completion_ns
    rel = res.release_ns
    cols = built.dag.columns()
    labels = cols.label
    nbytes = cols.bytes
    mpi_ops, unfinished = _dag_mpi_ops(built, comp, rel)
    streamed = _streamed_jobs(built, res)
    for j, name in enumerate(built.job_names):
        mask = built.job_of_flow == j
        fg = mask & ~built.background
        if j in streamed:
            job = streamed[j]
            if mask.any():
                # its own flows and bulk flows ran in the DAG beside its program: counted
                # as a DAG job counts them (its endless bulk flows end with the others:
                # neither its completion nor its bytes)
                if job["completion_s"] is not None and fg.any():
                    job["completion_s"] = (max(job["completion_s"], float(comp[fg].max()) * 1e-9)
                                           if (comp[fg] >= 0).all() else None)
                job["flows"] += int(mask.sum())
                job["bytes"] += _job_bytes(nbytes, fg, res)
            out.append(job)
            continue
        sel = fg if fg.any() else mask
        done = comp[sel] >= 0
        if sel.any():
            completion = float(comp[sel].max()) * 1e-9 if done.all() else None
        else:  # its ranks exchange nothing (one rank, empty reduces): done at its start
            completion = _job_start_ns(built, j) * 1e-9
        job: dict[str, Any] = {
            "name": name,
            "completion_s": completion,
            "flows": int(mask.sum()),
            "bytes": _job_bytes(nbytes, mask & ~built.background, res),
        }
        mpi = mpi_ops.get(name)
        if mpi is not None or name in unfinished:
            # a program left unfinished has no operations report, as a streamed one
            job["operations"] = _ops_in_seconds(mpi["ops"]) if mpi is not None else {}
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


def _dag_mpi_ops(built, comp: np.ndarray, rel: np.ndarray) -> tuple[dict, set[str]]:
    """The operations report (:func:`netsteer.traffic.mpi.op_report`) of every MPI job
    expanded into the DAG whose program finished, by job name, and the names of those
    whose program did not. Per job: one job stalled leaves the others' reports whole."""
    by_job: dict[str, list] = {}
    for s in built.spans:
        by_job.setdefault(s.job, []).append(s)
    if not by_job:
        return {}, set()
    from ..traffic.mpi import op_report

    done, unfinished = [], set()
    for name, spans in by_job.items():
        if all((comp[s.first:s.end] >= 0).all() for s in spans):
            done += spans
        else:
            unfinished.add(name)
    return (op_report(done, built.dag, comp, release_ns=rel) if done else {}), unfinished


def _ops_in_seconds(ops: dict) -> dict[str, dict[str, Any]]:
    """An MPI operations report (:func:`netsteer.traffic.program.aggregate_ops`) with
    ``time_ns`` as ``time_s``, in place: every key in the order docs/cli.md gives
    (``count, time_s, bytes, algbw_Bps, busbw_Bps``), DAG and streamed jobs alike.

    >>> out = _ops_in_seconds({"bcast": {"count": 1, "time_ns": 2000, "bytes": 8}})["bcast"]
    >>> list(out), round(out["time_s"], 15)
    (['count', 'time_s', 'bytes'], 2e-06)
    """
    return {op: {("time_s" if k == "time_ns" else k): (v * 1e-9 if k == "time_ns" else v) for k, v in o.items()}
            for op, o in ops.items()}


def _job_start_ns(built, j: int) -> int:
    """Job ``j``'s start (0 for jobs without one). A DAG job that starts later holds
    one delay flow per rank, so only a job starting at 0 can have no flow at all."""
    try:
        return int(getattr(built.scenario.model.jobs[j], "start", 0) or 0)
    except (AttributeError, IndexError):
        return 0


def _streamed_jobs(built, res) -> dict[int, dict[str, Any]]:
    """Summaries of the jobs that ran streamed (:attr:`SimResult.mpi`), by job index,
    in the DAG jobs' shape: ``flows`` counts their messages and compute steps."""
    mpi = getattr(res, "mpi", None)
    if not mpi:
        return {}
    out = {}
    for (j, job), (completion, left) in zip(getattr(built, "streamed", []), mpi["jobs"]):
        steps = mpi["steps"][job.name]
        entry: dict[str, Any] = {
            "name": job.name,
            "completion_s": completion * 1e-9 if completion >= 0 and not left else None,
            "flows": steps["flows"],
            "bytes": steps["bytes"],
            "streamed": True,
        }
        ops = mpi["report"].get(job.name, {}).get("ops", {}) if not left else {}
        entry["operations"] = _ops_in_seconds(ops)
        out[j] = entry
    return out


def byte_total(values) -> int:
    """Byte counts summed as a whole number of bytes: sizes (integers) exactly, also
    beyond int64; bytes a flow sent at flow level (floats: a fluid's share of a
    byte) rounded to the nearest byte.

    >>> byte_total(np.array([2**60] * 16, dtype=np.int64)), byte_total(np.array([0.25, 1048575.5]))
    (18446744073709551616, 1048576)
    """
    a = np.asarray(values)
    if a.dtype.kind == "f":
        return round(float(a.sum()))
    # numpy's sum while it cannot overflow int64 (2**60 bytes a flow at most), else Python's
    return int(a.sum()) if a.size == 0 or int(a.max()) <= (2**63 - 1) // a.size else sum(a.tolist())


def _job_bytes(nbytes: np.ndarray, sel: np.ndarray, res) -> int:
    """Bytes a job's flows carry: the sizes of sized flows, plus what its timed bulk
    flows (sent until stopped, sized as "unlimited") actually sent, when the run
    reports per-flow sent bytes; never the bulk flows' nominal size."""
    # bulk flows are added with exactly BULK_BYTES; a sized flow past it (flows and
    # messages go up to MAX_BYTES, 2**60) counts its size, exactly
    bulk = nbytes == BULK_BYTES
    total = byte_total(nbytes[sel & ~bulk])
    sent = getattr(res, "sent_bytes", None)
    if sent is not None and (sel & bulk).any():
        total += byte_total(np.asarray(sent, dtype=np.float64)[sel & bulk])
    return total


def stalled_summary(built, res) -> dict[str, Any] | None:
    """The flows a stalled run left unfinished, by job, or None if none were left.

    A run stalls when flows remain and no event could finish them: paths that carry
    nothing (links that stayed down, circuits not made, hybrid paths whose rules or
    tags never came), or flows starved by higher-priority traffic that never ends; at
    packet level also a credit loop (a deadlock of credit-based flow control on routes
    with cyclic channel dependencies), named under ``credit_loop``.
    """
    left = (res.completion_ns < 0) & ~built.background
    mpi = getattr(res, "mpi", None) or {"jobs": []}
    ranks_left = {j: n for (j, _), (_, n) in zip(getattr(built, "streamed", []), mpi["jobs"]) if n}
    if not left.any() and not ranks_left:
        return None
    stuck = set(np.unique(built.job_of_flow[left]).tolist()) | set(ranks_left)
    # streamed jobs' messages and compute steps not done count as the DAG's flows would
    streamed_left = mpi.get("left") or {"flows": 0, "bytes_sent": 0}
    first = np.flatnonzero(left)[:10].tolist()  # DAG flows (streamed messages have none)
    names = flow_names(built, first)
    out = {"flows": int(left.sum()) + streamed_left["flows"], "jobs": [built.job_names[j] for j in sorted(stuck)],
           "first_flows": names, "first_flow_indices": first}
    topo = built.topology
    if getattr(res, "links_down", None):
        out["links_down"] = [topo.link_name(x) for x in res.links_down]  # failed by events, never brought up
    blocked = getattr(res, "blocked_by", None) or {}
    waiting = {name: [topo.link_name(x) for x in blocked[f]] for f, name in zip(first, names) if f in blocked}
    # streamed jobs' messages have no flow ids: the links on their routes, by job name
    streamed = getattr(built, "streamed", None) or []
    for k, links in (getattr(res, "blocked_jobs", None) or {}).items():
        waiting[built.job_names[streamed[k][0]]] = [topo.link_name(x) for x in links]
    if waiting:
        out["blocked_by"] = waiting  # the links down or dark on their routes
    if getattr(res, "end_ns", -1) >= 0:
        out["at_s"] = res.end_ns * 1e-9  # when the last thing moved
    if getattr(res, "sent_bytes", None) is not None:
        out["bytes_sent"] = (byte_total(np.asarray(res.sent_bytes, dtype=np.float64)[left])  # before they stuck
                             + streamed_left["bytes_sent"])
    if getattr(res, "credit_loop", None):
        # packet level: the unfinished flows' routes close a cycle of credits on one VL
        out["credit_loop"] = res.credit_loop
    if ranks_left:
        # streamed jobs have no flow ids: the ranks that never finished their program
        out["ranks_left"] = {built.job_names[j]: n for j, n in ranks_left.items()}
    return out


def stuck_flows(st: dict) -> str:
    """The stall's flows and links in the scenario's terms, as the result's ``stalled``
    gives them (``first_flows``, ``blocked_by``, ``links_down``).

    >>> stuck_flows({"flows": 3, "first_flows": ["a:x", "a:y"], "blocked_by": {"a:x": ["s:5 <-> t:1"]},
    ...              "links_down": ["s:5 <-> t:1"]})
    '; flows a:x (route crosses s:5 <-> t:1), a:y, and 1 more; links left down: s:5 <-> t:1'
    """
    names = st.get("first_flows") or []
    if not names:
        return ""
    blocked = st.get("blocked_by") or {}
    shown = [f"{n} (route crosses {', '.join(blocked[n])})" if n in blocked else n for n in names]
    more = st["flows"] - len(names)
    out = "; flows " + ", ".join(shown) + (f", and {more} more" if more > 0 else "")
    if st.get("links_down"):
        out += "; links left down: " + ", ".join(st["links_down"])
    return out


def stall_warning(result: dict) -> str | None:
    """What ``netsteer run`` warns of a stalled run (after ``warning:``), the one text the
    command line, the API's ``Result.notes`` and a sweep point's ``error`` give; None
    for a run that finished.

    >>> stall_warning({"status": "done"}) is None
    True
    >>> stall_warning({"status": "stalled", "stalled": {"flows": 1, "jobs": ["x"]}})[:60]
    '1 flows never finished (jobs: x): their paths carry nothing '
    """
    if result.get("status") != "stalled":
        return None
    st = result["stalled"]
    # a streamed job's messages and compute steps count as the DAG's flows would
    ranks = "; ranks left: " + ", ".join(f"{j} {n}" for j, n in st["ranks_left"].items()) if st.get("ranks_left") else ""
    head = f"{st['flows']} flows never finished (jobs: {', '.join(st['jobs'])}{ranks}{stuck_flows(st)}): "
    if st.get("credit_loop"):
        return (head + f"deadlock: their routes close a credit loop on {st['credit_loop']}; packets wait for credits "
                "around the cycle for good (credit-based flow control: a routing with cyclic channel dependencies "
                "on one VL can deadlock; dor on a HyperX and ftree on a fat-tree cannot); the run exits 0: a "
                "stalled network is a result")
    return (head + "their paths carry nothing (a link that stayed down, a circuit not made, a hybrid path whose rules "
            "or tags were never in place), or higher-priority traffic that never ended starved them, or MPI "
            "ranks wait on each other; the run exits 0: a stalled network is a result")


def flow_names(built, flows: list[int]) -> list[str]:
    """DAG flows by the names the scenario gave them: ``job:id`` for a flow with an
    ``id:``, ``job:flows.k`` or ``job:bulk.k`` (its place in the job) otherwise, and
    the step's label (``job:allreduce``) for a flow of an MPI program.

    >>> from types import SimpleNamespace as NS
    >>> job = NS(flows=[NS(id="x"), NS(id=None)], bulk=[NS()])
    >>> b = NS(job_of_flow=np.array([0, 0, 0, 0]), job_names=["a"], scenario=NS(model=NS(jobs=[job])),
    ...        dag=NS(labels=["a:bcast"], columns=lambda: NS(label=np.array([0, 0, 0, 0]))))
    >>> flow_names(b, [0, 1, 2, 3])
    ['a:bcast', 'a:x', 'a:flows.1', 'a:bulk.0']
    """
    if not flows:
        return []
    job_of = np.asarray(built.job_of_flow)
    jobs = getattr(getattr(getattr(built, "scenario", None), "model", None), "jobs", None)
    labels = built.dag.columns().label
    out = []
    for f in flows:
        j = int(job_of[f])
        name = built.job_names[j]
        job = jobs[j] if jobs is not None else None
        # a job's DAG flows: its program's steps, then its flows, then its bulk flows
        end = int(np.searchsorted(job_of, j, side="right")) if job is not None else 0
        k = f - (end - len(job.bulk) - len(job.flows)) if job is not None else -1
        if 0 <= k < len(job.flows):
            out.append(f"{name}:{job.flows[k].id if job.flows[k].id is not None else f'flows.{k}'}")
        elif job is not None and 0 <= k - len(job.flows) < len(job.bulk):
            out.append(f"{name}:bulk.{k - len(job.flows)}")
        else:
            out.append(str(built.dag.labels[labels[f]]))
    return out


def _timing(built) -> dict[str, int] | None:
    """The flow engine's timing as run: SimGrid's merge window and the clock's ticks
    per ns (None at the packet fidelity, which keeps its own clock)."""
    if getattr(built, "packet", None) is not None:
        return None
    from ..sim.timing import timing_for

    window, ticks = timing_for(built.sharing, built.merge_window_ns, built.ticks_per_ns)
    return {"merge_window_ns": window, "ticks_per_ns": ticks}


def result_dict(built, res) -> dict[str, Any]:
    """``{"scenario", "makespan_s", "jobs": [{"name", "completion_s"}...], "wall_s", ...}``."""
    out = {
        "scenario": built.name,
        "status": res.status,
        "makespan_s": max(res.makespan_ns, 0) * 1e-9,  # None below when a stalled run finished nothing
        "jobs": job_summaries(built, res),
        "wall_s": res.wall_s,
        "topology": built.topology.summary(),
        "routing": built.scenario.model.routing.engine,
        "sharing": built.sharing,
        "timing": _timing(built),
        # streamed jobs count their messages and compute steps, as the DAG would hold them
        "flows": len(built.dag) + sum(x["flows"] for x in ((getattr(res, "mpi", None) or {}).get("steps") or {}).values()),
        "events": res.applied_events,
        "engine": res.stats,
        "sample_interval_s": (getattr(res, "sample_interval_ns", None) or built.sample_interval_ns) * 1e-9,
    }
    if getattr(res, "controller", None):
        out["controller"] = res.controller  # reconfigurations, with their timelines
    if getattr(res, "mpi", None):
        p = res.mpi["progress"]
        # streamed MPI jobs: their messages were flows one at a time, in bounded slots
        out["streamed"] = {k: p[k] for k in ("messages_done", "computes_done", "peak_in_flight",
                                             "flow_slots", "ranks", "ranks_done") if k in p}
    if getattr(res, "packet", None) is not None:
        from ..sim.packet import packet_summary

        out["sharing"] = "packet"  # credits and VL arbitration, not a sharing model
        out["fidelity"] = "packet"  # a flow run's result has no such key (as before)
        out["packet"] = packet_summary(built, res)
    qos = getattr(built, "qos", None)
    if qos is not None:
        # the QoS in force: tables, each SL's and class's VL and weights, changes, QoS notes
        out["qos"] = qos.in_force(unplayed=getattr(res, "notes", None) or [])
    # what the run left out of the file (--fidelity), and why; then what the
    # controllers were scheduled to do after the run had ended
    notes = list(getattr(built, "notes", None) or []) + list(getattr(res, "notes", None) or [])
    if notes:
        out["notes"] = notes
    stalled = stalled_summary(built, res)
    if stalled is not None:
        out["status"] = "stalled"  # never "done" with work left
        out["stalled"] = stalled
        mpi = getattr(res, "mpi", None) or {"jobs": []}
        if not (res.completion_ns >= 0).any() and not any(c >= 0 for c, _ in mpi["jobs"]):
            out["makespan_s"] = None  # nothing finished: there is no last completion
    return out
