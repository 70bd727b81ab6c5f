"""Run a flow DAG over a topology and a routing on the Rust engine.

The driver only translates: routing into channel paths, events into engine calls.
It decides nothing about how the network should look.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .._core import Engine
from ..errors import NetsteerError
from ..topology.model import Topology
from ..traffic.dag import FlowDag
from .events import CircuitChange, LinkChange, RoutingChange, StopFlows
from .network import CircuitState

# events handled per engine call, so progress can be shown on long runs
_CHUNK = 50_000


@dataclass
class SimResult:
    """What a run produced.

    Attributes
    ----------
    completion_ns, release_ns : ndarray of int64, per flow (-1 if it never got there)
    makespan_ns : int, last completion
    status : str, ``"done"`` or ``"stalled"`` (flows left on dead links)
    wall_s : float, wall time of the simulation itself
    stats : dict, the engine's work counters
    sample_times_ns : ndarray, counter sample times
    channel_bytes : ndarray [samples, channels], cumulative bytes per channel
    final_channel_bytes : ndarray [channels]
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
    applied_events: list[str] = field(default_factory=list)


def dag_paths(topo: Topology, routing: Any, dag: FlowDag, flows: np.ndarray, circuits=None):
    """CSR paths (offsets, channels) of ``flows`` of ``dag`` under ``routing``."""
    c = dag.columns()
    return routing.paths(c.src[flows], c.dst[flows], classes=c.traffic_class[flows], flow_ids=flows, circuits=circuits)


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
    circuits : CircuitState, optional
        Initial circuit pairing (default: everything unpaired).
    background : ndarray of bool, optional
        Flows that end when every other flow is done (iperf-like bulk traffic).
    progress : callable(done, total, now_ns), optional

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
    n = len(dag)
    circuits = circuits.copy() if circuits is not None else CircuitState.empty(topo)
    capacity = topo.channel_bandwidth() / 8.0
    engine = Engine(capacity, topo.channel_latency_ns().astype(np.int64), sharing, tcp_gamma)
    if sample_interval_ns > 0:
        engine.set_sample_interval(int(sample_interval_ns))

    t0 = time.perf_counter()
    if progress is not None:
        progress(0, n, 0)
    _add_dag(engine, topo, routing, dag, circuits)
    down: set[int] = set()
    applied: list[str] = []
    # (time, order, event); circuit ports coming back after their dark period are
    # follow-up events pushed while running
    pending = [(e.at_ns, i, e) for i, e in enumerate(events)]
    heapq.heapify(pending)
    seq = len(pending)
    if background is not None and np.any(background):
        engine.set_background(np.flatnonzero(background).astype(np.int64))

    def step(until: int | None) -> str:
        while True:
            status = engine.run(until, _CHUNK)
            if progress is not None:
                progress(n - engine.unfinished, n, engine.now)
            if status != "budget":
                return status

    status = "done"
    while pending:
        at, _, ev = heapq.heappop(pending)
        status = step(at)
        if status == "done":
            continue  # nothing left to affect
        if isinstance(ev, StopFlows):
            engine.stop_flows(np.asarray(ev.flows, dtype=np.int64))
            applied.append(f"{at}: stop {len(ev.flows)} flows")
        elif isinstance(ev, LinkChange):
            links = np.asarray(ev.links, dtype=np.int64)
            engine.set_channels_up(np.concatenate([2 * links, 2 * links + 1]), ev.up)
            (down.difference_update if ev.up else down.update)(int(x) for x in links)
            applied.append(f"{at}: links {list(ev.links)} {'up' if ev.up else 'down'}")
            routing = _reroute(engine, topo, routing, ev.reroute, dag, down, circuits, applied, at)
        elif isinstance(ev, RoutingChange):
            applied.append(f"{at}: routing replaced")
            routing = _reroute(engine, topo, routing, ev.routing, dag, down, circuits, applied, at)
        elif isinstance(ev, CircuitChange):
            moved = circuits.pair(ev.switch, list(ev.pairs))
            dark = _port_links(topo, ev.switch, moved)
            if len(dark):
                engine.set_channels_up(np.concatenate([2 * dark, 2 * dark + 1]), False)
                up_at = at + topo.switching_time_ns.get(ev.switch, 0)
                # routes avoid the dark ports meanwhile, and take the circuits when lit
                lit = LinkChange(up_at, tuple(int(x) for x in dark), True, reroute=ev.reroute)
                heapq.heappush(pending, (up_at, seq, lit))
                seq += 1
                down.update(int(x) for x in dark)
            applied.append(f"{at}: {topo.node_names[ev.switch]} re-paired {len(moved)} ports")
            routing = _reroute(engine, topo, routing, ev.reroute, dag, down, circuits, applied, at)
        else:
            raise TypeError(f"unknown event {ev!r}")
    status = step(None)
    wall = time.perf_counter() - t0

    completion = engine.completion_ns()
    times, samples = engine.samples()
    return SimResult(
        completion_ns=completion,
        release_ns=engine.release_ns(),
        makespan_ns=int(completion.max()) if n else 0,
        status=status,
        wall_s=wall,
        stats=dict(engine.stats()),
        sample_times_ns=times,
        channel_bytes=samples,
        final_channel_bytes=engine.channel_bytes(),
        applied_events=applied,
    )


def _add_dag(engine: Engine, topo: Topology, routing, dag: FlowDag, circuits: CircuitState) -> None:
    n = len(dag)
    if n == 0:
        return
    c = dag.columns()
    for name, col in (("src", c.src), ("dst", c.dst)):
        bad = col[(col < 0) | (col >= topo.n_hosts)]
        if len(bad):
            raise NetsteerError(f"host {bad[0]} does not exist: {topo.name} has {topo.n_hosts} hosts", field=name)
    offsets, channels = dag_paths(topo, routing, dag, np.arange(n), circuits.as_dict())
    try:
        engine.add_flows(
            c.bytes.astype(np.float64),
            np.asarray(offsets, dtype=np.int64),
            np.asarray(channels, dtype=np.int64),
            c.start_ns,
            c.delay_ns,
            c.weight,
            c.priority,
            c.dep_offsets,
            c.deps,
        )
    except ValueError as exc:
        raise NetsteerError(str(exc), field="flows") from None


def _reroute(engine, topo, routing, source, dag, down, circuits, applied, at):
    """Install the routing ``source`` describes and move every unfinished flow.

    A routing that cannot be built, or that fails its completeness and loop check,
    is not installed: the flows keep their last good routes (and may stall on a
    dead link until it comes back), and the failure is reported among the events.
    """
    if source is None:
        return routing
    try:
        new = source(frozenset(down), circuits.as_dict()) if callable(source) else source
        new.check(circuits=circuits.as_dict())
    except NetsteerError as exc:
        applied.append(f"{at}: reconfiguration failed, last good routing kept: {exc.message()}")
        return routing
    flows = engine.unfinished_flows().astype(np.int64)
    if len(flows):
        offsets, channels = dag_paths(topo, new, dag, flows, circuits.as_dict())
        engine.reroute(flows, np.asarray(offsets, dtype=np.int64), np.asarray(channels, dtype=np.int64))
    return new


def _port_links(topo: Topology, node: int, ports) -> np.ndarray:
    ch = [int(topo.out_channel[node, p]) for p in sorted(ports) if p < topo.out_channel.shape[1]]
    return np.array(sorted({c // 2 for c in ch if c >= 0}), dtype=np.int64)
