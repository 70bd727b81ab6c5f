"""Run a flow DAG over a topology and a routing: the simulator driver with a
controller in the loop.

:func:`simulate` is the short way for a workload and a list of scripted changes;
:func:`run_driver` runs any controller against a :class:`SimDriver` and collects the
result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..control.core import Controller, ControllerStack, ReplayController, ReroutePolicy
from ..control.intents import InstallRouting, SetCircuits, SetLinks
from ..control.loop import run_loop
from ..topology.model import Topology
from ..traffic.dag import FlowDag
from .driver import SimDriver, dag_paths
from .events import CircuitChange, LinkChange, RoutingChange, StopFlows
from .network import CircuitState


@dataclass
class SimResult:
    """What a run produced.

    Attributes
    ----------
    completion_ns, release_ns : ndarray of int64, per flow (-1 if it never got there)
    makespan_ns : int, last completion
    status : str, ``"done"`` or ``"stalled"`` (flows left that nothing could finish)
    wall_s : float, wall time of the simulation itself
    stats : dict, the engine's work counters
    sample_times_ns : ndarray, counter sample times
    channel_bytes : ndarray [samples, channels], cumulative bytes per channel
    final_channel_bytes : ndarray [channels]
    applied_events : list of dict, every intent applied (what, when, done, failed)
        and every controller decision that failed, in time order
    controller : dict, the controllers' own reports (reconfigurations, ...)
    sent_bytes : ndarray [flows], bytes each flow sent (bulk flows: until stopped)
    past_clock : ndarray [k], flows left sending at a positive rate when the run
        stalled: they would finish past the clock's range (about 146 years), so the
        engine scheduled no finish for them
    past_clock_jobs : list of int
        The same for streamed MPI jobs (whose messages are no flows of the DAG): the
        positions, in the driver's ``streamed``, of the jobs that had a message left
        sending at a positive rate when the run stalled
    mpi : dict, optional
        Streamed MPI jobs (:mod:`netsteer.sim.stream`): ``jobs`` (completion ns, -1 if
        not done, and ranks left, per job), ``progress`` (messages done, peak in
        flight, ...), ``report`` (time per operation, per job name), ``steps`` (flows
        and bytes per job name, as the DAG would hold them: a job with ranks left
        counts the steps it never ran too) and, when ranks are left, ``left`` (the
        messages and compute steps not done, ``flows``, and ``bytes_sent`` by those in
        flight). The per-flow arrays above cover the DAG only.
    packet : dict, the packet fidelity's measurements (``Engine.packet_report``), or None
    end_ns : int
        The engine's clock when the run ended: for a stalled run, when the last
        thing moved (-1 when not known).
    notes : list of str
        What the controllers were told to do and never did because the run ended
        first (a scheduled change after the last job), and the notes of the routings
        built during the run (:func:`routing_notes`), for the result's ``notes``.
    credit_loop : str, optional
        A stalled packet run whose unfinished flows' routes hold a cycle of channel
        dependencies on one VL (a credit loop: the deadlock credit-based flow control
        allows): the VL and the cycle, ``"VL 0: x0_0[3]->x0_1 -> ..."``
        (:func:`netsteer.sim.packet.credit_loop`).
    links_down : list of int
        A stalled run: the links scripted changes took down and none brought back.
    blocked_by : dict of int to list of int
        A stalled run: unfinished flows (among the first 1,000) whose routes cross links
        down or dark when it stalled, and those links.
    blocked_jobs : dict of int to list of int
        The same for streamed MPI jobs (their messages are no flows of the DAG): per job
        (its position in the driver's ``streamed``) with ranks left, the links down or
        dark on the routes of its messages in flight when it stalled.
    """

    completion_ns: np.ndarray
    release_ns: np.ndarray
    makespan_ns: int
    status: str
    wall_s: float
    stats: dict
    sample_times_ns: np.ndarray
    channel_bytes: np.ndarray
    final_channel_bytes: np.ndarray
    applied_events: list[dict] = field(default_factory=list)
    controller: dict | None = None
    sent_bytes: np.ndarray | None = None
    past_clock: np.ndarray | None = None
    past_clock_jobs: list[int] = field(default_factory=list)
    mpi: dict | None = None
    packet: dict | None = None
    end_ns: int = -1
    sample_interval_ns: int | None = None  # the interval the samples ended at (auto may double it)
    notes: list[str] = field(default_factory=list)
    credit_loop: str | None = None
    links_down: list[int] = field(default_factory=list)
    blocked_by: dict[int, list[int]] = field(default_factory=dict)
    blocked_jobs: dict[int, list[int]] = field(default_factory=dict)


def run_driver(driver: SimDriver, controller: Controller) -> SimResult:
    """Run ``driver`` to the end with ``controller`` in the loop."""
    initial = driver.routing  # its notes are the scenario's (build_scenario); later tables' are the run's
    status = run_loop(driver, controller)
    eng, n_ch = driver.engine, driver.n_channels
    n = len(driver.dag)  # streamed messages take the slots past the DAG's flows
    completion, sent = eng.completion_ns()[:n], eng.sent_bytes()[:n]
    mpi = _streamed(eng, driver.streamed, n) if driver.streamed else None
    makespan = int(completion.max()) if len(completion) else 0
    if mpi is not None:
        makespan = max([makespan] + [c for c, _ in mpi["jobs"]])
    times, samples = driver.samples()
    names = driver.topo.node_names
    events = [a.as_dict(names, driver.topo.link_name) for a in driver.applied]
    history = controller.all_history if isinstance(controller, ControllerStack) else controller.history
    events += [dict(h, intent=h.get("what", "")) for h in history if "failed" in h or "kept" in h or "ignored" in h]
    events.sort(key=lambda e: e["at_s"])
    return SimResult(
        completion_ns=completion,
        release_ns=eng.release_ns()[:n],
        makespan_ns=makespan,
        status=status,
        wall_s=driver.wall_s(),
        stats=dict(eng.stats()),
        sample_times_ns=times,
        channel_bytes=samples[:, :n_ch] if samples.ndim == 2 else samples,
        final_channel_bytes=eng.channel_bytes()[:n_ch],
        applied_events=events,
        controller=controller.report(),
        sent_bytes=sent,
        past_clock=_past_clock(eng, n) if status == "stalled" else None,
        links_down=_links_left_down(driver) if status == "stalled" else [],
        blocked_by=_blocked_by(eng, n, driver) if status == "stalled" else {},
        blocked_jobs=_blocked_jobs(eng, n, driver) if status == "stalled" else {},
        past_clock_jobs=_past_clock_jobs(eng, n, driver.topo, driver.streamed) if status == "stalled" else [],
        mpi=mpi,
        packet=eng.packet_report(),
        end_ns=int(eng.now),
        notes=(controller.unplayed(int(driver.now)) + _still_running(controller.report(), int(driver.now))
               + routing_notes(driver.applied, initial)),
    )


#: How a routing installed during the run came to be built, by its intent's ``reason``.
_BUILT_BY = {"scripted": "a scripted routing change", "links changed": "a re-route after links changed",
             "circuits changed": "a re-route after circuits changed"}


def routing_notes(applied, initial=None) -> list[str]:
    """The notes of the routings installed during the run (``InstallRouting`` applied,
    not failed; pftree's common partitions left out, its ``sl=`` replaced), as the
    initial routing's reach the scenario's notes: each note once, with every time its
    tables went in, why they were built and the engine. ``initial`` (the routing the run
    started with, whose notes the scenario says already) is left out when installed again.

    >>> from types import SimpleNamespace as NS
    >>> from netsteer.control.driver import Applied
    >>> r = NS(engine="pftree", notes=["pftree: partition 'storage' (0x0001) shares hosts ..."])
    >>> a = [Applied(InstallRouting(r, reason="scripted"), 2_000_000, 2_000_000),
    ...      Applied(InstallRouting(r, reason="links changed"), 5_000_000, 5_000_000),
    ...      Applied(InstallRouting(r, reason="scripted"), 7_000_000, 7_000_000, failed="no")]
    >>> print(routing_notes(a)[0])  # doctest: +NORMALIZE_WHITESPACE
    routing built during the run at 2 ms (a scripted routing change, pftree) and 5 ms (a re-route after
    links changed, pftree): pftree: partition 'storage' (0x0001) shares hosts ...
    """
    from ..units import format_seconds

    by_note: dict[str, list[str]] = {}
    for a in applied:
        if not isinstance(a.intent, InstallRouting) or a.failed is not None or a.intent.routing is initial:
            continue
        notes = getattr(a.intent.routing, "notes", None) or []
        engine = getattr(a.intent.routing, "engine", None)
        why = _BUILT_BY.get(a.intent.reason, a.intent.reason or "a routing change")
        when = f"{format_seconds(a.at_ns / 1e9)} ({why}" + (f", {engine})" if isinstance(engine, str) else ")")
        for n in dict.fromkeys(str(x) for x in notes):
            if when not in by_note.setdefault(n, []):
                by_note[n].append(when)
    return [f"routing built during the run at {_and(w)}: {n}" for n, w in by_note.items()]


def _and(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _still_running(report: dict | None, end_ns: int) -> list[str]:
    """Notes for the hybrid reconfigurations still running when the run ended: their
    circuits and rules never all took effect.

    >>> _still_running({"hybrid": {"reconfigurations": [{"id": 0, "trigger": "schedule", "status": "running",
    ...     "start_s": 0.2, "circuits_after": [[0, 0, 1]], "steps": [{"step": 2}]}]}}, 400_000_000)[0][:72]
    'controller.hybrid: reconfiguration 0 (schedule, started at 200 ms, to ci'
    """
    from ..units import format_seconds

    recs = ((report or {}).get("hybrid") or {}).get("reconfigurations") or []
    return [f"controller.hybrid: reconfiguration {r['id']} ({r['trigger']}, started at "
            f"{format_seconds(r['start_s'])}, to circuits {r['circuits_after']}) was still running, in step "
            f"{r['steps'][-1]['step'] if r.get('steps') else 1}, when the run ended at {format_seconds(end_ns / 1e9)}: "
            "its circuits and rules never all took effect" for r in recs if r.get("status") == "running"]


def _streamed(eng, streamed, n_dag: int = 0) -> dict:
    """What the engine kept of streamed MPI jobs (see :attr:`SimResult.mpi`); ``n_dag``:
    the DAG's flows (the streamed messages' slots come after them)."""
    from .stream import program_totals, stream_report

    cols = eng.mpi_spans()
    jobs = [(int(c), int(left)) for c, left in eng.mpi_jobs()]
    progress = dict(eng.mpi_progress())
    steps = {}
    never_posted = 0
    for sj in streamed:
        sel = cols["job"] == sj.index
        # the DAG holds a job's start as one delay flow per rank: counted as it would be
        starts = sj.job.ranks if sj.job.start else 0
        flows = int(cols["flows"][sel].sum()) + starts  # posted: done or in flight
        # whole messages, summed exactly (Python ints: past 2^53 and int64 too)
        nbytes = int(sum(b for b, s in zip(cols["bytes"], sel.tolist()) if s))
        if jobs[sj.index][1]:
            # ranks left (a stall): its steps never run count too, as the DAG holds them
            total, nbytes = program_totals(sj)
            never_posted += total - flows
            flows = total
        steps[sj.job.name] = {"flows": flows, "bytes": nbytes}
    out = {"jobs": jobs, "progress": progress, "report": stream_report(eng, streamed), "steps": steps,
           "messages": eng.mpi_message_times()}
    if any(left for _, left in jobs):
        # what the stalled jobs left undone, as stalled_summary counts a DAG's flows: the
        # messages and compute steps in flight or never posted, and what those in
        # flight had sent (only the ranks of unfinished jobs have any in flight)
        in_flight = np.asarray(eng.unfinished_flows(), dtype=np.int64)
        in_flight = in_flight[in_flight >= n_dag]
        sent = float(np.asarray(eng.sent_bytes(), dtype=np.float64)[in_flight].sum())
        out["left"] = {"flows": never_posted + int(progress["in_flight"]), "bytes_sent": round(sent)}
    return out


def _links_left_down(driver) -> list[int]:
    """The links scripted ``SetLinks`` took down and none brought back, in index order
    (circuit ports dark because unpaired or switching are not failures)."""
    from ..control.intents import SetLinks

    down: set[int] = set()
    for a in driver.applied:
        if isinstance(a.intent, SetLinks) and a.failed is None:
            (down.difference_update if a.intent.up else down.update)(int(x) for x in a.intent.links)
    return sorted(down)


#: The unfinished flows :func:`_blocked_by` looks at (a stall report names the first 10).
BLOCKED_LOOKED_AT = 1000


def _blocked_by(eng, n: int, driver) -> dict[int, list[int]]:
    """For the first unfinished DAG flows (ids below ``n``), the links down or dark on
    their routes when the run stalled: what they wait on. Flows not yet started (waiting
    for others) and flows whose route is whole are left out."""
    down = driver.view().down_links
    left = np.asarray(eng.unfinished_flows(), dtype=np.int64)
    out = {}
    for f in np.sort(left[left < n])[:BLOCKED_LOOKED_AT].tolist():
        # channels 2l and 2l+1 are link l's two directions
        links = sorted({int(c) // 2 for c in eng.flow_path(f)} & down)
        if links:
            out[f] = links
    return out


def _blocked_jobs(eng, n: int, driver) -> dict[int, list[int]]:
    """:func:`_blocked_by` for the streamed MPI jobs: per job with ranks left (its
    position in ``driver.streamed``), the links down or dark on the routes of its
    messages in flight (the first 1,000 slots past the DAG's ``n`` flows). A message's
    slot does not name its job: its route's ends name the sending and receiving hosts,
    and so the unfinished jobs with ranks on both (several, where placements share hosts)."""
    if not driver.streamed:
        return {}
    down = driver.view().down_links
    left = np.asarray(eng.unfinished_flows(), dtype=np.int64)
    left = np.sort(left[left >= n])[:BLOCKED_LOOKED_AT]
    open_jobs = [k for k, (_, ranks_left) in enumerate(eng.mpi_jobs()) if ranks_left]
    if not down or not len(left) or not open_jobs:
        return {}
    topo = driver.topo
    src, dst = topo.channel_src(), topo.channel_dst()
    hosts = {k: set(driver.streamed[k].hosts) for k in open_jobs}
    out: dict[int, set[int]] = {}
    for f in left.tolist():
        path = eng.flow_path(f)
        links = {int(c) // 2 for c in path} & down  # channels 2l and 2l+1 are link l's two directions
        if not links:
            continue
        a, b = int(topo.host_index[src[int(path[0])]]), int(topo.host_index[dst[int(path[-1])]])
        for k in open_jobs:
            if a in hosts[k] and b in hosts[k]:
                out.setdefault(k, set()).update(links)
    return {k: sorted(v) for k, v in sorted(out.items())}


def _moving_unfinished(eng) -> np.ndarray:
    """Flow slots unfinished that still had a rate when the run stalled. The engine
    schedules a finish for every flow with a rate unless it falls past the clock's range,
    so these are not starved: they would end after about 146 years of simulated time."""
    left = np.asarray(eng.unfinished_flows(), dtype=np.int64)
    if not len(left):
        return left
    return left[np.asarray(eng.rates())[left] > 0]


def _past_clock(eng, n: int) -> np.ndarray:
    """The DAG's flows (ids below ``n``) that would end past the clock's range
    (:func:`_moving_unfinished`)."""
    left = _moving_unfinished(eng)
    return left[left < n]


def _past_clock_jobs(eng, n: int, topo, streamed) -> list[int]:
    """The streamed MPI jobs (positions in ``streamed``) with a message that still had a
    rate when the run stalled, as :func:`_past_clock` finds the DAG's flows: it would end
    past the clock's range. A message's slot (past the DAG's ``n`` flows) does not name
    its job; its first channel names the host that sends it, and so the unfinished jobs
    with a rank there (all of them where no message is placed)."""
    if not streamed:
        return []
    left = _moving_unfinished(eng)
    left = left[left >= n]  # messages' slots, past the DAG's flows
    if not len(left):
        return []
    open_jobs = [k for k, (_, ranks_left) in enumerate(eng.mpi_jobs()) if ranks_left]
    src = topo.channel_src()
    senders = set()
    for f in left:
        path = eng.flow_path(int(f))
        if len(path):
            senders.add(int(topo.host_index[src[int(path[0])]]))
    placed = [k for k in open_jobs if senders & set(streamed[k].hosts)]
    return placed or open_jobs


def legacy_controller(events, policy: ReroutePolicy | None = None, topo=None) -> tuple[Controller, list]:
    """Scripted events (:mod:`netsteer.sim.events`) as a replay controller and the
    re-route policy they ask for; returns ``(controller, stops)``.

    ``policy``, when given, is the re-route policy instead (the events then carry no
    ``reroute``); it follows the scripted routing changes (:class:`ReplayController`).
    ``topo`` names links and switches in the replay's notes."""
    steps, stops = [], []
    factories: dict[str, set] = {"links": set(), "circuits": set()}
    for ev in events:
        if isinstance(ev, StopFlows):
            stops.append((ev.at_ns, ev.flows))
        elif isinstance(ev, LinkChange):
            steps.append((ev.at_ns, SetLinks(tuple(ev.links), ev.up), ev.source))
            if ev.reroute is not None:
                factories["links"].add(ev.reroute)
        elif isinstance(ev, RoutingChange):
            steps.append((ev.at_ns, ev.routing, ev.source))
        elif isinstance(ev, CircuitChange):
            steps.append((ev.at_ns, SetCircuits(ev.switch, tuple(tuple(p) for p in ev.pairs)), ev.source))
            if ev.reroute is not None:
                factories["circuits"].add(ev.reroute)
        else:
            raise TypeError(f"unknown event {ev!r}")
    for kind, fs in factories.items():
        if len(fs) > 1:
            raise ValueError(f"{kind} events carry different re-route functions: use one ReroutePolicy per run")
    if policy is not None:
        if any(factories.values()):
            raise ValueError("events carry re-route functions and a policy is given: use one of them")
        return ControllerStack([ReplayController(steps, policy=policy, topo=topo), policy]), stops
    pick = {k: (_as_factory(next(iter(fs))) if fs else None) for k, fs in factories.items()}
    return ControllerStack([ReplayController(steps, topo=topo), ReroutePolicy(pick["links"], pick["circuits"])]), stops


def _as_factory(source):
    return source if callable(source) else (lambda down, circuits: source)


def simulate(
    topo: Topology,
    routing: Any,
    dag: FlowDag,
    *,
    sharing: str = "maxmin",
    tcp_gamma: float | None = None,
    sample_interval_ns: int = 0,
    events: list = (),
    circuits: CircuitState | None = None,
    background: np.ndarray | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    merge_window_ns: int | None = None,
    ticks_per_ns: int | None = None,
) -> SimResult:
    """Simulate ``dag`` on ``topo`` routed by ``routing``.

    Parameters
    ----------
    topo : Topology
    routing : Routing
        Anything with ``paths(src, dst, classes=, flow_ids=, circuits=)``.
    dag : FlowDag
    sharing : {"maxmin", "cm02"}
    sample_interval_ns : int
        Port-counter sampling interval; 0 samples nothing.
    events : list of LinkChange, RoutingChange, CircuitChange, StopFlows
        Scripted changes, played by a replay controller; their ``reroute`` becomes
        the re-route policy.
    circuits : CircuitState, optional
        Initial circuit pairing (default: everything unpaired).
    background : ndarray of bool, optional
        Flows that end when every other flow is done (iperf-like bulk traffic).
    progress : callable(done, total, now_ns), optional
    merge_window_ns : int, optional
        Events that fall due less than this after an event happen with it, as
        SimGrid's timing precision (1 ns) makes them; 0 is exact. Reproducing SimGrid
        run for run on contended workloads needs it on a clock finer than the window
        (``docs/simgrid-validation.md``). Default: 1 for ``cm02`` (SimGrid's model),
        0 for ``maxmin``.
    ticks_per_ns : int, optional
        The engine's clock runs in 1/``ticks_per_ns`` ns (1 to 1000); times given and
        returned stay in ns, rounded up. Default: 10 for ``cm02`` (with the 1 ns
        window, SimGrid's timing), 1 (the ns clock) for ``maxmin``.

    Returns
    -------
    SimResult

    Examples
    --------
    >>> from netsteer.topology import pgft
    >>> from netsteer.routing import build_routing
    >>> t = pgft(1, [2], [1], link_bandwidth=8e9, link_latency_ns=0)
    >>> d = FlowDag(); _ = d.add(0, 1, 10**9)
    >>> r = simulate(t, build_routing(t, "dmodk"), d)
    >>> r.makespan_ns  # 1 GB at 1 GB/s
    1000000000
    """
    controller, stops = legacy_controller(events)
    driver = SimDriver(
        topo, routing, dag, sharing=sharing, tcp_gamma=tcp_gamma, sample_interval_ns=sample_interval_ns,
        circuits=circuits, background=background, stops=stops, progress=progress,
        merge_window_ns=merge_window_ns, ticks_per_ns=ticks_per_ns,
    )
    return run_driver(driver, controller)


__all__ = ["SimResult", "dag_paths", "legacy_controller", "routing_notes", "run_driver", "simulate"]
