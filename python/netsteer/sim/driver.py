"""The simulator as a southbound driver that the controller core steps.

:class:`SimDriver` holds the network state (links down, circuit pairings, the base
routing, the VLAN overlay) and the Rust engine, and implements the driver protocol
of :mod:`netsteer.control.driver`: ``now``, ``advance(until)``, ``counters()``,
``apply(intent) -> Applied`` and ``reports()``. Intents take effect after the time
the delay model gives them; the engine runs on meanwhile, so traffic really moves
while a reconfiguration is under way.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..control.driver import Applied, Counters, NetworkChanged, NetworkView, superseded
from ..control.intents import InstallRouting, PushRules, RemoveRules, SetCircuits, SetLinks, SetQos, TagPorts
from ..errors import NetsteerError
from ..topology.model import Topology
from ..units import format_ns
from ..traffic.dag import FlowDag
from .delay import DelayModel
from .forwarding import VlanOverlay
from .network import CircuitState
from .timing import engine_for, set_merge_window, timing_for

# events handled per engine call, so progress can be shown on long runs
_CHUNK = 50_000


@dataclass(frozen=True)
class Fault:
    """Make intents of ``kind`` (``"circuits"``, ``"rules"``, ``"tags"``) aimed at
    ``switch`` (any switch if None) fail between ``start_ns`` and ``end_ns``: how
    tests and scenarios exercise a reconfiguration that fails part-way."""

    kind: str
    switch: int | None = None
    start_ns: int = 0
    end_ns: int = 2**62


def dag_paths(topo: Topology, routing: Any, dag: FlowDag, flows: np.ndarray, circuits=None, missed=None):
    """CSR paths (offsets, channels) of ``flows`` of ``dag`` under ``routing``;
    ``missed``: see :meth:`netsteer.routing.Routing.paths`."""
    c = dag.columns()
    kw = {} if missed is None else {"missed": missed}
    return routing.paths(c.src[flows], c.dst[flows], classes=c.traffic_class[flows], flow_ids=flows,
                         circuits=circuits, **kw)


class SimDriver:
    """Drive the flow-level engine through intents.

    Parameters
    ----------
    topo, routing, dag
        The network, its initial base routing, and the workload.
    sharing, tcp_gamma
        The engine's sharing model.
    sample_interval_ns : int
        Port-counter sampling for reports (0: none).
    circuits : CircuitState, optional
        Initial circuit pairing (default: the topology's standing pairing, if it has
        one, else everything unpaired).
    background : ndarray of bool, optional
        Flows that end when every other flow is done (iperf-like bulk traffic).
    stops : list of (time_ns, flows)
        Flows that end at a time (iperf-like flows with a duration).
    delay : DelayModel
    faults : list of Fault
    forwarding : (rules, tags), optional
        The VLAN forwarding in force at time 0 (hybrid topologies).
    progress : callable(done, total, now_ns), optional
        ``total`` is None when MPI jobs stream (their messages are not known up
        front): ``done`` then counts flows done, the streamed jobs' messages and
        compute steps included, as the result's ``flows`` counts them.
    mpi_jobs : list of MpiJob
        Jobs streamed through the engine (:mod:`netsteer.sim.stream`), started after
        ``dag``'s flows are added (which keep ids ``0 .. len(dag) - 1``).
    stream_router : Routing or ``"dmodk"``, optional
        What routes their messages (default: ``routing``); see
        :func:`netsteer.sim.stream.set_router`.
    mpi_sls : list of int, optional
        The service level each of ``mpi_jobs`` sends its messages on (packet
        fidelity; default 0).

    Examples
    --------
    >>> from netsteer.topology import pgft
    >>> from netsteer.routing import build_routing
    >>> t = pgft(2, [2, 2], [1, 1], link_bandwidth=8e9, link_latency_ns=0)
    >>> d = FlowDag(); _ = d.add(0, 3, 10**9)
    >>> drv = SimDriver(t, build_routing(t, "dmodk"), d)
    >>> drv.advance(500_000_000), drv.now
    ('until', 500000000)
    >>> int(drv.counters().port_bytes.max())  # 0.5 s at 1 GB/s
    500000000
    >>> a = drv.apply(SetLinks((4,), up=False))  # the spine link towards host 3's leaf
    >>> a.ok, drv.advance(None)
    (True, 'stalled')
    """

    def __init__(
        self,
        topo: Topology,
        routing: Any,
        dag: FlowDag,
        *,
        sharing: str = "maxmin",
        tcp_gamma: float | None = None,
        sample_interval_ns: int = 0,
        circuits: CircuitState | None = None,
        background: np.ndarray | None = None,
        stops: list = (),
        delay: DelayModel = DelayModel(),
        faults: list = (),
        forwarding: tuple | None = None,
        progress: Callable[[int, int | None, int], None] | None = None,
        mpi_jobs: list = (),
        stream_router: Any = None,
        mpi_sls: Sequence[int] | None = None,
        packet: dict | None = None,
        sls: np.ndarray | None = None,
        merge_window_ns: int | None = None,
        ticks_per_ns: int | None = None,
        sample_cap: int | None = None,
    ):
        self.topo, self.routing, self.dag = topo, routing, dag
        self.circuits = circuits.copy() if circuits is not None else CircuitState.initial(topo)
        self.delay, self.faults, self.progress = delay, list(faults), progress
        self.n_channels = topo.n_channels
        capacity = topo.channel_bandwidth() / 8.0
        latency = topo.channel_latency_ns().astype(np.int64)
        self.overlay = None
        if topo.meta.get("kind") == "hybrid":
            # one more channel, of capacity 0, for paths that lead nowhere
            capacity, latency = np.append(capacity, 0.0), np.append(latency, 0)
            self.overlay = VlanOverlay(topo, blackhole=self.n_channels)
        capacity, latency = self._extra_channels(capacity, latency)
        if forwarding is not None:
            # the forwarding state the network starts with: (rules at low priority, tags)
            if self.overlay is None:
                raise NetsteerError("forwarding rules and VLANs need a hybrid topology", field="controller")
            rules, tags = forwarding
            self.overlay.push(1, rules)
            self.overlay.tag((t, p, v) for (t, p), v in tags.items())
        # packet: the packet fidelity's parameters (netsteer.sim.packet); None: flow level
        window, ticks = timing_for(sharing, merge_window_ns, ticks_per_ns, packet=packet)
        self.engine = engine_for(capacity, latency, sharing, tcp_gamma, packet=packet, ticks_per_ns=ticks)
        set_merge_window(self.engine, window)
        # streamed jobs drain the engine between steps, and the engine samples again at
        # each restart (thousands of extra rows): with them, samples are taken here
        self._sample_every = int(sample_interval_ns) if mpi_jobs else 0
        # sample_cap (sample_interval: auto): past it, every other sample is dropped and
        # the interval doubles, rather than filling the memory; None: the interval is kept
        self._sample_cap = sample_cap
        self._interval_ns = int(sample_interval_ns)
        self._sample_times: list[int] = []
        self._sample_rows: list[np.ndarray] = []
        self._next_sample = 0
        if sample_interval_ns > 0 and not mpi_jobs:
            self.engine.set_sample_interval(int(sample_interval_ns))
            if sample_cap is not None:
                # the engine thins its own samples as _halve_resolution does these
                self.engine.set_sample_cap(int(sample_cap))
        # two facts per link, kept apart: failed (a SetLinks took it down; a user's
        # link_down, until a SetLinks brings it up) and dark (a circuit switch is moving its
        # port; until the last command that moved it lights it). It carries traffic only if
        # neither holds: a re-pairing does not repair a dead cable, nor a link_up end a switching
        self.failed: set[int] = set()
        self._dark: dict[int, int] = {}  # link -> index in applied of the circuit command it waits for
        self._superseded: dict[int, dict] = {}  # that index -> {"at": ns, "links": set}: ports re-moved
        self.applied: list[Applied] = []
        self._reports: list[NetworkChanged] = []
        self._pending: list = []  # (time, seq, what, payload)
        self._seq = 0
        self._t0 = time.perf_counter()
        self._n = len(dag)
        if progress is not None:
            progress(0, self._n, 0)
        self._add_dag()
        if sls is not None and self._n:
            self.engine.set_sl(np.arange(self._n, dtype=np.int64), np.asarray(sls, dtype=np.int64))
        for at, flows in stops:
            self._schedule(int(at), "stop", tuple(flows))
        if background is not None and np.any(background):
            self.engine.set_background(np.flatnonzero(background).astype(np.int64))
        self.streamed: list = []
        if mpi_jobs:
            from .stream import attach_jobs

            router = routing if stream_router is None else stream_router
            self.streamed = attach_jobs(self.engine, topo, router, mpi_jobs, sls=mpi_sls)

    # -- the driver protocol ----------------------------------------------------

    @property
    def now(self) -> int:
        return int(self.engine.now)

    @property
    def down(self) -> set[int]:
        """Links that carry no traffic now: failed, or dark while their circuit switches."""
        return self.failed | self._dark.keys()

    def view(self) -> NetworkView:
        return NetworkView(self.now, frozenset(self.down), {n: p.copy() for n, p in self.circuits.pairing.items()},
                           failed_links=frozenset(self.failed))

    def reports(self) -> list[NetworkChanged]:
        out, self._reports = self._reports, []
        return out

    def counters(self) -> Counters:
        ports = self.engine.channel_bytes()[: self.n_channels]
        pairs = None
        if self.overlay is not None and self._n:
            c = self.dag.columns()
            r = self.overlay.rack_of_host
            pairs = np.zeros((self.overlay.racks, self.overlay.racks))
            np.add.at(pairs, (r[c.src], r[c.dst]), self.engine.sent_bytes()[: self._n])
        return Counters(self.now, ports, pairs)

    def next_effect(self) -> int | None:
        """When the next intent in progress takes effect, if any."""
        return self._pending[0][0] if self._pending else None

    def idle(self) -> bool:
        """Nothing can happen any more without a new intent (flows may remain)."""
        return not self._pending and self.engine.run(None, 0) != "budget"

    def advance(self, until: int | None) -> str:
        """Run until ``until`` (None: as long as there is work) or until an intent in
        progress takes effect. Returns ``"done"``, ``"stalled"``, ``"until"`` or
        ``"changed"`` (an effect was applied now: the controller may react)."""
        while True:
            t_eff = self.next_effect()
            target = until if t_eff is None else (t_eff if until is None else min(until, t_eff))
            status = self._run(target)
            if status in ("done", "stalled"):
                return status
            if t_eff is not None and self.now >= t_eff:
                self._apply_due_effects()
                return "changed"
            return "until"

    def _apply_due_effects(self) -> None:
        """Carry out every intent effect due by now, in order."""
        while self._pending and self._pending[0][0] <= self.now:
            _, _, what, payload = heapq.heappop(self._pending)
            self._effect(what, payload)

    def apply(self, intent) -> Applied:
        """Carry ``intent`` out; see the module text."""
        now = self.now
        try:
            done = self._apply(intent, now)
            a = Applied(intent, now, done)
        except _Refused as exc:
            a = Applied(intent, now, now, failed=str(exc))
        self.applied.append(a)
        return a

    # -- intents ------------------------------------------------------------------

    def _apply(self, intent, now: int) -> int:
        if isinstance(intent, SetLinks):
            links = np.asarray(intent.links, dtype=np.int64)
            bad = links[(links < 0) | (links >= self.topo.n_links)]
            if len(bad):
                raise _Refused(f"link {bad[0]} does not exist")
            ids = [int(x) for x in links]
            if intent.up:
                self.failed.difference_update(ids)
                # a port whose circuit switch is still moving stays dark until it lights
                links = np.array([x for x in ids if x not in self._dark], dtype=np.int64)
            else:
                self.failed.update(ids)
            if len(links):
                self.engine.set_channels_up(np.concatenate([2 * links, 2 * links + 1]), intent.up)
            self._reports.append(NetworkChanged(now, "links", tuple(intent.links), intent.up))
            return now
        if isinstance(intent, InstallRouting):
            try:
                intent.routing.check(circuits=self.circuits.as_dict())
            except NetsteerError as exc:
                raise _Refused(f"reconfiguration failed, last good routing kept: {exc.message()}") from None
            self.routing = intent.routing
            self._repath()
            return now
        if isinstance(intent, SetCircuits):
            return self._set_circuits(intent, now)
        if isinstance(intent, (PushRules, RemoveRules, TagPorts)):
            if self.overlay is None:
                raise _Refused("forwarding rules and VLANs need a hybrid topology")
            if isinstance(intent, TagPorts):
                per_tor: dict[int, int] = {}
                for tor, _, _ in intent.ports:
                    self._fault("tags", int(tor), now)
                    per_tor[int(tor)] = per_tor.get(int(tor), 0) + 1
                done = now + self.delay.tag_time(list(per_tor.values()))
            else:
                done = now + self.delay.rules_time(self._rules_per_switch(intent, now))
            self._schedule(done, "overlay", intent)
            return done
        if isinstance(intent, SetQos) and self.engine.fidelity == "packet":
            # packets: the flows' next packets take the new SL's VL, in place
            if intent.config is not None or intent.sl is None or not 0 <= int(intent.sl) <= 15:
                raise _Refused("at packet level a QoS intent moves flows to an SL 0..15; the VL arbitration "
                               "tables are fixed for the run")
            flows = np.asarray(intent.flows, dtype=np.int64)
            flows = flows[(flows >= 0) & (flows < self._n)]
            self.engine.set_sl(flows, np.full(len(flows), int(intent.sl), dtype=np.int64))
            return now
        if isinstance(intent, SetQos):
            from ..qos.simapply import QosRefused, apply_qos

            try:
                return apply_qos(self, intent, now)
            except QosRefused as exc:
                raise _Refused(str(exc)) from None
        raise _Refused(f"the simulator cannot apply {type(intent).__name__}")

    def _set_circuits(self, intent: SetCircuits, now: int) -> int:
        sw = int(intent.switch)
        if sw not in self.circuits.pairing:
            raise _Refused(f"node {sw} is not a circuit switch")
        self._fault("circuits", sw, now)
        for p, q in intent.pairs:
            for port in (p, q):
                if not 0 < port < self.topo.out_channel.shape[1] or self.topo.out_channel[sw, port] < 0:
                    raise _Refused(f"{self.topo.node_names[sw]} has no cabled port {port}")
        try:
            moved = self.circuits.pair(sw, [tuple(p) for p in intent.pairs])
        except ValueError as exc:
            raise _Refused(f"{self.topo.node_names[sw]}: {exc}") from None
        dark = _port_links(self.topo, sw, moved)
        lit_at = now + self.delay.circuit_command_ns + int(self.topo.switching_time_ns.get(sw, 0))
        me = len(self.applied)  # apply() records this command at that index
        if len(dark):
            self.engine.set_channels_up(np.concatenate([2 * dark, 2 * dark + 1]), False)
            for x in (int(x) for x in dark):
                before = self._dark.get(x)
                if before is not None:
                    # an earlier command's ports move again before they lit: its timer
                    # must not light them; its record says so (_lit)
                    self._superseded.setdefault(before, {"at": now, "links": set()})["links"].add(x)
                self._dark[x] = me
        self._reports.append(NetworkChanged(now, "circuits", tuple(int(x) for x in dark), False))
        if len(dark) and lit_at <= now:
            # no switching time: lit at once, so a controller deciding at this instant
            # sees the circuit up (scheduled, it would wait for the next advance)
            self._lit(me, tuple(int(x) for x in dark))
        elif len(dark):
            self._schedule(lit_at, "lit", (me, tuple(int(x) for x in dark)))
        if self._overlay_active():
            self._repath(overlay_only=True)
        return lit_at if len(dark) else now

    def _rules_per_switch(self, intent, now: int) -> list[int]:
        """Rules each server switch gets: those of its rack, plus ``extra`` spread
        over the switches programmed."""
        ov = self.overlay
        per_rack: dict[int, int] = {}
        pairs = [(r.src, r.dst) for r in intent.rules] if isinstance(intent, PushRules) else list(intent.pairs)
        for src, dst in pairs:
            for x in (src, dst):
                if not 0 <= x < ov.racks:
                    raise _Refused(f"rack {x} does not exist: the network has racks 0..{ov.racks - 1}")
            per_rack[src] = per_rack.get(src, 0) + 1
        spr = int(self.topo.meta["servers_per_rack"])
        for rack in per_rack:
            self._fault("rules", int(ov.tors[rack]), now)
        counts = [n for n in per_rack.values() for _ in range(spr)]
        extra = getattr(intent, "extra", 0)
        if extra:
            k = max(len(counts), 1)
            counts = counts or [0]
            counts = [c + -(-extra // k) for c in counts]
        return counts

    def _fault(self, kind: str, switch: int, now: int) -> None:
        for f in self.faults:
            if f.kind == kind and (f.switch is None or f.switch == switch) and f.start_ns <= now < f.end_ns:
                raise _Refused(f"{self.topo.node_names[switch]} refused the change (injected {kind} fault)")

    # -- effects ------------------------------------------------------------------

    def _schedule(self, at: int, what: str, payload) -> None:
        heapq.heappush(self._pending, (at, self._seq, what, payload))
        self._seq += 1

    def _effect(self, what: str, payload) -> None:
        if what == "stop":
            self.engine.stop_flows(np.asarray(payload, dtype=np.int64))
        elif what == "lit":
            self._lit(*payload)
            if self._overlay_active():
                self._repath(overlay_only=True)
        elif what == "overlay":
            ov = self.overlay
            if isinstance(payload, PushRules):
                ov.push(payload.priority, payload.rules)
            elif isinstance(payload, RemoveRules):
                ov.remove(payload.priority, payload.pairs)
            else:
                ov.tag(payload.ports)
            self._repath(overlay_only=True)

    def _lit(self, cmd: int, links: tuple[int, ...]) -> None:
        """The circuit command recorded at ``applied[cmd]`` has switched: light those of
        ``links`` still waiting for it (not moved again by a later command), except the
        failed ones, which stay down until a link_up."""
        mine = [x for x in links if self._dark.get(x) == cmd]
        for x in mine:
            del self._dark[x]
        up = np.array([x for x in mine if x not in self.failed], dtype=np.int64)
        if len(up):
            self.engine.set_channels_up(np.concatenate([2 * up, 2 * up + 1]), True)
            self._reports.append(NetworkChanged(self.now, "circuits", tuple(int(x) for x in up), True))
        gone = self._superseded.pop(cmd, None)
        if gone is not None and cmd < len(self.applied):
            self.applied[cmd] = superseded(self.applied[cmd], gone["at"], gone["links"], format_ns(gone["at"]),
                                           bool(mine))

    # -- hooks for dataplanes built on this driver (netsteer.unisonflow) ----------

    def _extra_channels(self, capacity: np.ndarray, latency: np.ndarray):
        """Channels the engine gets beyond the topology's (none here)."""
        return capacity, latency

    def _flow_paths(self, flows: np.ndarray, missed: list | None = None):
        """CSR paths of ``flows`` as the network forwards them now; ``missed``: see
        :meth:`netsteer.routing.Routing.paths`."""
        offsets, channels = dag_paths(self.topo, self.routing, self.dag, flows, self.circuits.as_dict(), missed)
        if self._overlay_active():
            c = self.dag.columns()
            offsets, channels = self.overlay.override(
                c.src[flows], c.dst[flows], flows, offsets, channels, self.circuits.as_dict()
            )
        return offsets, channels

    def _keep_paths(self, flows, offsets, channels, missed):
        """``offsets, channels`` with the flows at positions ``missed`` (empty paths)
        given their current paths in the engine."""
        keep = {i: np.asarray(self.engine.flow_path(int(flows[i])), dtype=np.int64) for i in missed}
        offsets = np.asarray(offsets, dtype=np.int64)
        parts = [keep[i] if i in keep else channels[offsets[i]:offsets[i + 1]] for i in range(len(flows))]
        lengths = np.array([len(p) for p in parts], dtype=np.int64)
        new_off = np.zeros(len(flows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=new_off[1:])
        chans = np.concatenate(parts).astype(np.int32) if parts else np.zeros(0, dtype=np.int32)
        return new_off, chans

    def _overlay_active(self) -> bool:
        return self.overlay is not None and any(self.overlay.rules.values())

    def _repath(self, overlay_only: bool = False) -> None:
        """Give unfinished flows the paths the network has now. ``overlay_only``: only
        rules, tags or circuits changed, so only flows of rack pairs whose circuit paths
        changed move (at 320 racks, re-pathing every flow dominated a reconfiguration)."""
        flows = self.engine.unfinished_flows().astype(np.int64)
        # streamed messages keep the path the engine's router gave them
        flows = flows[flows < self._n]
        if self.overlay is not None:
            now_choices = self.overlay.choices(self.circuits.as_dict())
            before, self._choices = getattr(self, "_choices", None), now_choices
            if overlay_only and before is not None:
                changed = {k for k in before.keys() | now_choices.keys() if before.get(k) != now_choices.get(k)}
                if not changed:
                    return
                c = self.dag.columns()
                r = self.overlay.rack_of_host
                pairs = r[c.src[flows]] * (int(r.max()) + 1) + r[c.dst[flows]]
                flows = flows[np.isin(pairs, [a * (int(r.max()) + 1) + b for a, b in changed])]
        if not len(flows):
            return
        # a flow whose destination the routing leaves out (cut off by links that are
        # down: no switch has an entry for it) keeps the path it had, across the dead
        # link, and waits there as a flow on a down link does under a static routing,
        # until a re-route after the link comes back gives it a way
        missed: list[int] = []
        offsets, channels = self._flow_paths(flows, missed=missed)
        if missed:
            offsets, channels = self._keep_paths(flows, offsets, channels, missed)
        self.engine.reroute(flows, np.asarray(offsets, dtype=np.int64), np.asarray(channels, dtype=np.int64))

    # -- the engine ---------------------------------------------------------------

    def _add_dag(self) -> None:
        n = self._n
        if n == 0:
            return
        topo, c = self.topo, self.dag.columns()
        for name, col in (("src", c.src), ("dst", c.dst)):
            bad = col[(col < 0) | (col >= topo.n_hosts)]
            if len(bad):
                raise NetsteerError(f"host {bad[0]} does not exist: {topo.name} has {topo.n_hosts} hosts", field=name)
        offsets, channels = self._flow_paths(np.arange(n))
        try:
            self.engine.add_flows(
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

    @property
    def sample_interval_ns(self) -> int:
        """The counter interval the samples are at (``sample_interval: auto`` may have
        doubled it, here for a streamed run, in the engine for the others)."""
        if self._sample_every or not self._interval_ns:
            return self._interval_ns
        return int(self.engine.sample_interval_ns) or self._interval_ns

    def samples(self) -> tuple[np.ndarray, np.ndarray]:
        """Counter sample times and rows [samples, channels] (the engine's, or taken here)."""
        if not self._sample_every:
            return self.engine.samples()
        n = len(self._sample_rows[0]) if self._sample_rows else 0
        rows = np.array(self._sample_rows) if self._sample_rows else np.zeros((0, n))
        return np.asarray(self._sample_times, dtype=np.int64), rows

    def _sample(self) -> None:
        if self._sample_times and self._sample_times[-1] == self.now:
            return
        from ..errors import LimitError
        from ..limits import current

        row = self.engine.channel_bytes()
        limit = current().max_sample_values
        fit = limit // max(len(row), 1)  # samples the memory limit holds
        cap = fit if self._sample_cap is None else min(fit, self._sample_cap)
        if len(self._sample_rows) + 1 > cap:
            if self._sample_cap is None or cap < 3:
                raise LimitError(
                    f"the port counters reached the limit of {limit:,} values ({len(self._sample_rows):,} samples "
                    f"of {len(row):,} channels, every {self._sample_every:,} ns) before the run ended; use a "
                    f"longer sample_interval{self._or_auto()}, or raise --max-memory or NETSTEER_MAX_MEMORY",
                    field="sample_interval")
            self._halve_resolution(row)
            return
        self._sample_times.append(self.now)
        self._sample_rows.append(row)

    def _or_auto(self) -> str:
        """Advice for an interval too short: ``auto`` only where it is not in use
        (under ``auto`` the memory limit is too small for even 3 samples)."""
        return " (or auto)" if self._sample_cap is None else ""

    def _halve_resolution(self, row: np.ndarray) -> None:
        """``sample_interval: auto`` sampled more than it aims at (a run longer than
        expected): keep every other sample, the first (the counters' start) and the one
        due now (the latest counts; at the end, the totals), and double the interval.
        The samples kept were every interval apart, so they are every two now (the
        first gap may be one); rates divide by the time between samples."""
        n = len(self._sample_times)  # the index of the sample due now
        keep = [0] + list(range(n % 2 or 2, n, 2))
        self._sample_times = [self._sample_times[i] for i in keep] + [self.now]
        self._sample_rows = [self._sample_rows[i] for i in keep] + [row]
        self._sample_every *= 2
        self._interval_ns = self._sample_every

    def _run_sampled(self, until: int | None) -> str:
        """:meth:`_run` stopping at every sample time; a stall ends the sampling (nothing
        moves), so a run cut off for good ends instead of sampling on."""
        while True:
            target = self._next_sample if until is None else min(until, self._next_sample)
            status = self._run_chunks(target)
            if status in ("done", "stalled"):
                self._sample()  # the last one: the counters hold every byte
                return status
            if self.now >= self._next_sample:
                self._sample()
                self._next_sample = self.now + self._sample_every
                idle = self.engine.run(None, 0)
                if idle != "budget":
                    if until is None:
                        return idle
                    self._next_sample = max(self._next_sample, until)  # flat until the caller acts
            if until is not None and self.now >= until:
                return "until"

    def _run(self, until: int | None) -> str:
        if self._sample_every:
            return self._run_sampled(until)
        return self._run_chunks(until)

    def _run_chunks(self, until: int | None) -> str:
        while True:
            try:
                status = self.engine.run(until, _CHUNK)
            except MemoryError as exc:
                if "port counters" not in str(exc):
                    raise
                # the engine's own sampling (no streamed job) reached the limit
                from ..errors import LimitError

                raise LimitError(f"{exc}".replace("use a longer sample_interval", "use a longer sample_interval"
                                 + self._or_auto()), field="sample_interval") from None
            if self.progress is not None:
                if self.streamed:
                    # unfinished counts the streamed slots in flight too; totals are unknown
                    done = self._n - int((self.engine.unfinished_flows() < self._n).sum())
                    # what the result's "flows" counts: the DAG's flows, and the streamed
                    # jobs' messages and compute steps
                    mp = self.engine.mpi_progress()
                    self.progress(done + mp["messages_done"] + mp["computes_done"], None, self.engine.now)
                else:
                    self.progress(self._n - self.engine.unfinished, self._n, self.engine.now)
            if status != "budget":
                return status

    def wall_s(self) -> float:
        return time.perf_counter() - self._t0


class _Refused(Exception):
    """An intent the driver could not carry out; reported in ``Applied.failed``."""


def _port_links(topo: Topology, node: int, ports) -> np.ndarray:
    ch = [int(topo.out_channel[node, p]) for p in sorted(ports) if p < topo.out_channel.shape[1]]
    return np.array(sorted({c // 2 for c in ch if c >= 0}), dtype=np.int64)
