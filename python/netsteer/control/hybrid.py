"""The hybrid electrical/optical controller (Christodoulopoulos et al.).

It decides which circuits the circuit switches make, and forwards each rack pair
over its circuit paths, one VLAN per rack-to-rack path, with the electrical
network for the rest. It reconfigures make-before-break in the source's three
steps (or break-before-make, as a baseline):

1. high-priority rules move the traffic of the rack pairs that change onto the
   electrical network;
2. the circuit switches move; at the same time the ToR ports are re-tagged and the
   new rules are pushed at low priority (shadowed by step 1's);
3. step 1's rules are removed: traffic takes the new circuits.

A rack pair that gets its first circuit is on the electrical network already: it
needs no step-1 detour, and its rule is pushed in step 3, once its circuit is up
(pushed in step 2, it could take effect before the circuit and send the pair's
traffic nowhere).

A step starts when every intent of the previous one has taken effect (the driver
says when). If the driver reports a failure, or a circuit step 2 makes has not lit
(its circuit-switch links are still down in the driver's view when the step ends),
the step's changes are undone and the last good configuration stays in force; the
modes then back off. What a failing
rollback could not undo (an old circuit it re-makes that has not lit counts) is
retried (backing off) until it goes through, a circuit once it is lit, and reported
meanwhile; nothing new starts until then (docs/control.md says why).

Control modes, which run together: ``schedule`` (reconfigure at given times),
``requests`` (the application API: a job's demand matrix or bandwidth request gets
the circuits it needs, pinned until it ends, and the rest is planned for the
measured demand), ``periodic`` (estimate the rack-to-rack
demand from counters, replan, reconfigure when the gain passes a threshold for
``hold`` periods in a row) and ``congestion`` (poll the ports; when an inter-rack
port stays above a utilisation for ``hold`` polls, replan and reconfigure at once).
The last two go back to a configuration they left recently only when the gain pays
for both moves within as long as it lasted last time (``HybridController._pays``):
the demand estimate depends on the configuration, and following it could flap.

Both estimate the demand from counters the way Helios does
(:mod:`netsteer.control.demand`): a rack pair whose current path (its circuits, or
the electrical uplink and downlink) runs at ``saturation`` or above is limited by the
network, so its demand is its fair share of what the racks' active servers can send
and receive, not the rate it measured. Demand above one circuit's worth is then
compressed (:func:`netsteer.control.demand.spread`), and single-hop plans count a
pair's circuits the same way (``fair`` in :func:`netsteer.control.planning.plan_circuits`):
a pair's next circuit counts less than another pair's first, so circuits are spread
across pairs before they are stacked on one.

A reading a switch did not answer (NaN) is not planned on; a switch silent for
several readings in a row is named in the report and the notes
(:mod:`netsteer.control.unanswered`), and the first whole reading after its silence
opens new windows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import NetsteerError
from .core import Controller, Inputs
from .demand import estimate_demand, spread, unspread
from .intents import PairRule, PushRules, RemoveRules, SetCircuits, TagPorts, VlanPath
from .planning import Circuit, plan_circuits, upper_bound
from .planning.singlehop import ladder
from .unanswered import Unanswered

# rule priorities: a circuit failure's electrical detour (above step 1's, so no step 3
# lifts it), step 1's electrical detour, the circuit rules
FAILED, HIGH, LOW = 3, 2, 1
MAX_VLANS = 4094
# after the n-th failed reconfiguration in a row the modes wait BACKOFF_FIRST * 2**(n-1)
# times the failed attempt's length (at least one poll or period), at most
# BACKOFF_MAX times: each try detours traffic onto the electrical network, so a
# fault that persists costs a shrinking share of the run, and one that clears is
# retried within a bounded time
BACKOFF_FIRST, BACKOFF_MAX = 4, 64
# what a failed rollback left installed is retried after the base interval, doubling
# after each failed try up to REPAIR_MAX times it: a retry moves no traffic (a smaller
# cap than the modes': nothing new starts until the repair goes through, so a fault
# that clears should be repaired soon after), but a fault that persists is not
# hammered at a fixed rate for the rest of the run
REPAIR_MAX = 8

# the modes return to a configuration one of the last RETURNS reconfigurations left only
# once the gain has paid for both moves (HybridController._pays)
RETURNS = 4


@dataclass(frozen=True)
class HybridConfig:
    """Circuits, and the forwarding state they need: rules per rack pair, and each
    ToR port's VLANs."""

    circuits: frozenset
    rules: dict  # (src, dst) -> PairRule with paths
    tags: dict  # (tor, port) -> frozenset of VLANs

    def served_gbps(self, demand: np.ndarray, capacity_gbps: float, fair: bool = False) -> float:
        """Demand served directly by the circuits (each way, up to their capacity; with
        ``fair`` a pair's circuits counted by :func:`~netsteer.control.planning.singlehop.ladder`)."""
        return float(direct_served(self.circuits, demand, capacity_gbps, fair).sum())


def direct_served(circuits, demand: np.ndarray, capacity_gbps: float, fair: bool = False) -> np.ndarray:
    """Per rack pair, what ``circuits`` serve of ``demand`` directly (each way, up to their
    capacity; with ``fair`` a pair's circuits counted by
    :func:`~netsteer.control.planning.singlehop.ladder`)."""
    n = np.zeros_like(demand)
    for c in circuits:
        n[c.a, c.b] += 1
        n[c.b, c.a] += 1
    d = demand.copy()
    np.fill_diagonal(d, 0)
    return np.minimum(d, ladder(n, capacity_gbps, fair))


@dataclass
class Reconfiguration:
    """One reconfiguration: its target, its steps' timeline and how it ended."""

    id: int
    trigger: str
    method: str
    old: HybridConfig
    new: HybridConfig
    started_ns: int
    steps: list = field(default_factory=list)  # dicts: step, what, start_s, end_s, failed
    status: str = "running"
    end_ns: int | None = None
    # internal: where we are
    step: int = 0
    step_end: int = 0
    step_applied: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    moved_pairs: tuple = ()
    rolling_back: bool = False
    step1_applied: list = field(default_factory=list)
    undoable: list = field(default_factory=list)  # what steps 2 and 3 applied (a rollback undoes it)
    retry_ns: int | None = None  # failed: the modes try again from then on (backoff)
    not_undone: list = field(default_factory=list)  # rollback intents that failed (retried)
    unlit_back: list = field(default_factory=list)  # [k, a, b] the rollback restored that did not light
    detours_left: tuple = ()  # (src, dst) whose step-1 detour is still installed (retried)
    detour_gbps: float = 0.0  # what the pairs step 1 detours were served when it started (HybridController._pays)
    request: dict | None = None  # the request it serves (unpinned if it fails)
    failure_detours: list = field(default_factory=list)  # {at_s, pairs}: detoured as their circuit failed
    failed_at_start: frozenset = frozenset()  # the failed links when it started

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "trigger": self.trigger, "method": self.method, "status": self.status,
            "start_s": self.started_ns / 1e9,
            "end_s": None if self.end_ns is None else self.end_ns / 1e9,
            "delay_s": None if self.end_ns is None else (self.end_ns - self.started_ns) / 1e9,
            "circuits_before": sorted([c.ocs, c.a, c.b] for c in self.old.circuits),
            "circuits_after": sorted([c.ocs, c.a, c.b] for c in self.new.circuits),
            "steps": self.steps,
            **({"failure_detours": self.failure_detours} if self.failure_detours else {}),
            **({} if self.retry_ns is None else {"modes_retry_from_s": self.retry_ns / 1e9}),
        }


class HybridController(Controller):
    """Circuits and VLAN forwarding for a hybrid topology (see the module text).

    Parameters
    ----------
    topo : Topology
        A hybrid topology (:func:`netsteer.topology.hybrid`).
    method : {"make-before-break", "break-before-make"}
    hops : {1, 2}
        Plan single-hop circuits, or let pairs use paths through one other rack.
    initial : iterable of Circuit
        The configuration in force at time 0.
    schedule : list of (time_ns, circuits)
    requests : list of dict
        ``{"at": ns, "until": ns or None, "demand": ndarray racks x racks (Gbps)}``.
    periodic : dict, optional
        ``{"period": ns, "threshold": relative gain, "hold": periods}``: every
        ``period`` (the first at ``period``), plan for the bytes since the last one.
    congestion : dict, optional
        ``{"poll": ns, "utilization": fraction, "hold": polls}``.
    extra_rules : int
        Rules pushed besides the real ones in step 2 (a larger fabric's count).
    saturation : float
        Utilisation from which a port counts as saturated for demand estimation.
    memory : int
        Half-life (ns) of the demand memory: a pair's estimated demand decays by half
        over this time once it stops, so a job between bursts (a compute phase) keeps
        its circuits. 0: only the last window counts.
    """

    name = "hybrid"

    def __init__(self, topo, *, method="make-before-break", hops=1, initial=(), schedule=(), requests=(),
                 periodic=None, congestion=None, extra_rules=0, saturation=0.9,
                 memory=2_000_000_000):
        super().__init__()
        m = topo.meta
        if m.get("kind") != "hybrid":
            raise NetsteerError("the hybrid controller needs a hybrid topology", field="controller.hybrid")
        self.topo, self.method, self.hops, self.extra_rules = topo, method, hops, extra_rules
        self.racks = int(m["racks"])
        self.tors = np.asarray(m["tors"])
        self.tor_port_of = np.asarray(m["tor_port_of"])
        self.circuit_port_of = np.asarray(m["circuit_port_of"])
        self.planes = self.tor_port_of.shape[1]
        ocs = np.asarray(m["circuit_switches"])
        self.capacity_gbps = float(topo.channel_bandwidth()[int(topo.out_channel[self.tors[0], self.tor_port_of[0, 0]])]) / 1e9 if self.planes else 0.0
        self.ocs_nodes = [int(x) for x in ocs]
        self.config = self.configure(initial)
        self.schedule = sorted(((int(t), tuple(c)) for t, c in schedule), key=lambda s: s[0])
        self.requests = sorted(requests, key=lambda r: r["at"])
        self.periodic, self.congestion = periodic, congestion
        self.reconfigurations: list[Reconfiguration] = []
        self.current: Reconfiguration | None = None
        # waiting for the current reconfiguration (or a rollback's repair):
        # (trigger, circuits, paths, queued at ns, the request it serves or None)
        self._queue: list[tuple] = []
        self._unserved: list[dict] = []  # requests whose circuits were never installed: at_s, why
        self._sched_i = self._req_i = 0
        self._active_requests: list[dict] = []
        self._next_period = periodic["period"] if periodic else None
        self._next_poll = congestion["poll"] if congestion else None
        self._last_counters = None  # (time, pair bytes) of the last periodic estimate
        self._started = False  # decide() has run once: the first period's window is open
        self._last_ports = None  # (time, port bytes) of the last congestion poll
        self._gain_streak = 0
        self._hot_streak = 0
        self._last_poll = None  # the congestion mode's last pair-counter snapshot
        self._awaiting = False
        self._finished_at = None  # when the last reconfiguration ended
        self._failures = 0  # failed reconfigurations in a row (backoff)
        # what a failed rollback left installed, retried until it goes through:
        # {"r": Reconfiguration, "base": ns, "tries": n, "next_ns": t, "pending": [intents],
        #  "answered": [Applied]}
        self._repair: dict | None = None
        self._retry_at = None  # the modes plan no reconfiguration before then (backoff)
        self.decisions: list[dict] = []
        links = [(int(self.topo.out_channel[self.tors[r], self.tor_port_of[r, k]]), r) for r in range(self.racks)
                 for k in range(self.planes)]
        ocs_ch = [int(self.topo.out_channel[o, p]) for r in range(self.racks) for k in range(self.planes)
                  for o, p in [self.circuit_port_of[r, k]]]
        self._watched = np.array([c for c, _ in links] + ocs_ch + self._electrical_uplinks(), dtype=np.int64)
        self.saturation, self.memory = saturation, int(memory)
        self._recent: tuple[int, np.ndarray] | None = None  # (time, remembered demand)
        self._last_plan = None  # ((circuits in force, pinned), demand, plan, served): _evaluate's last
        # returns (_pays): how long the last reconfiguration took (the driver's answer),
        # since when the configuration in force is, and the configurations recent
        # reconfigurations left: circuits -> (Gbit that move cost, ns they had lasted)
        self._reconfig_ns: int | None = None
        self._in_force_since = 0
        self._left: dict[frozenset, tuple[float, int]] = {}
        self._base = None  # pair counters when the configuration in force took over (request planning)
        self._unanswered = Unanswered(topo, self.tors)  # switches that did not answer the counter readings
        self._failed: frozenset = frozenset()  # failed links, as the view gave them last
        # rack pairs a circuit failure detoured onto the electrical network while a
        # reconfiguration was running (FAILED rules; _detour_dead), and those pushes' intents
        self._detoured: frozenset = frozenset()
        self._detour_sent: list = []
        self._failed_since: dict[int, int] = {}  # failed link -> when the controller first saw it failed
        # circuits rescues took out (not a request's), made again once their cables are back
        # when no mode plans from the traffic (_restore)
        self._dropped: set = set()
        self._index_channels()

    # -- configurations --------------------------------------------------------------

    def _electrical_uplinks(self) -> list[int]:
        out = []
        cores = set(int(x) for x in self.topo.meta["cores"])
        dst = self.topo.channel_dst()
        for tor in self.tors:
            for port in np.flatnonzero(self.topo.out_channel[tor] >= 0):
                c = int(self.topo.out_channel[tor, port])
                if int(dst[c]) in cores:
                    out.append(c)
        return out

    def _index_channels(self) -> None:
        """Channels per rack for demand estimation: servers' NICs both ways, the
        electrical uplinks and downlinks, and each plane's optical up and down."""
        t = self.topo
        src, dst = t.channel_src(), t.channel_dst()
        rack_of = {int(tor): r for r, tor in enumerate(self.tors)}
        cores = set(int(x) for x in t.meta.get("cores", ()))
        self._nic_up: list[list[int]] = [[] for _ in range(self.racks)]
        self._nic_down: list[list[int]] = [[] for _ in range(self.racks)]
        self._elec_up: list[list[int]] = [[] for _ in range(self.racks)]
        self._elec_down: list[list[int]] = [[] for _ in range(self.racks)]
        for c in range(len(src)):
            a, b = int(src[c]), int(dst[c])
            if a < t.n_hosts and b in rack_of:
                self._nic_up[rack_of[b]].append(c)
            elif b < t.n_hosts and a in rack_of:
                self._nic_down[rack_of[a]].append(c)
            elif a in rack_of and b in cores:
                self._elec_up[rack_of[a]].append(c)
            elif b in rack_of and a in cores:
                self._elec_down[rack_of[b]].append(c)
        self._opt_up = np.array([[int(t.out_channel[self.tors[r], self.tor_port_of[r, k]]) for k in range(self.planes)]
                                 for r in range(self.racks)], dtype=np.int64).reshape(self.racks, self.planes)
        self._opt_down = np.array([[int(t.out_channel[o, p]) for o, p in self.circuit_port_of[r]]
                                   for r in range(self.racks)], dtype=np.int64).reshape(self.racks, self.planes)
        self._bw_gbps = t.channel_bandwidth() / 1e9

    def check_circuits(self, circuits) -> list[Circuit]:
        """``circuits`` as :class:`Circuit`, refused (``NetsteerError``) unless each is a
        plane and two racks of this network and no plane pairs a rack's port twice."""
        circuits = [Circuit(int(c[0]), int(c[1]), int(c[2])) if not isinstance(c, Circuit) else c
                    for c in circuits]
        seen: dict[tuple[int, int], int] = {}
        for c in circuits:
            if not (0 <= c.ocs < self.planes and 0 <= c.a < self.racks and 0 <= c.b < self.racks):
                raise NetsteerError(f"circuit {[c.ocs, c.a, c.b]} is not plane, rack, other rack of this network",
                                    field="controller.hybrid")
            if c.a == c.b:  # a port paired with itself: say so, not "not plane, rack, other rack"
                raise NetsteerError(f"circuit {[c.ocs, c.a, c.b]} joins rack {c.a} to itself; a circuit joins two racks",
                                    field="controller.hybrid")
            for r in (c.a, c.b):
                if (c.ocs, r) in seen:
                    raise NetsteerError(f"circuit switch plane {c.ocs} is asked to pair rack {r}'s port twice",
                                        field="controller.hybrid")
                seen[(c.ocs, r)] = 1
        return circuits

    def configure(self, circuits, paths=None) -> HybridConfig:
        """The forwarding state for ``circuits``: one VLAN per directed rack-to-rack
        path (``paths``: the planner's multi-hop paths; default one direct path per
        circuit, each way)."""
        circuits = frozenset(self.check_circuits(circuits))
        routes: dict[tuple[int, int], list[tuple[tuple[int, ...], tuple[int, ...], float]]] = {}
        if paths:
            for p in paths:
                planes = tuple(self._plane_between(circuits, a, b) for a, b in zip(p.racks, p.racks[1:]))
                routes.setdefault((p.src, p.dst), []).append((tuple(p.racks), planes, max(p.gbps, 1e-9)))
        else:
            for c in sorted(circuits, key=lambda c: (c.ocs, c.a, c.b)):
                routes.setdefault((c.a, c.b), []).append(((c.a, c.b), (c.ocs,), 1.0))
                routes.setdefault((c.b, c.a), []).append(((c.b, c.a), (c.ocs,), 1.0))
            if self.hops > 1:
                # pairs without a circuit go through one rack joined to both, if any
                nbr: dict[int, dict[int, int]] = {}
                for c in sorted(circuits, key=lambda c: c.ocs):
                    nbr.setdefault(c.a, {}).setdefault(c.b, c.ocs)
                    nbr.setdefault(c.b, {}).setdefault(c.a, c.ocs)
                for a in sorted(nbr):
                    for m in sorted(nbr[a]):
                        for b in sorted(nbr.get(m, {})):
                            if b != a and b not in nbr[a] and (a, b) not in routes:
                                routes[(a, b)] = [((a, m, b), (nbr[a][m], nbr[m][b]), 1.0)]
        n_paths = sum(len(v) for v in routes.values())
        if n_paths > MAX_VLANS:
            raise NetsteerError(f"{n_paths} rack-to-rack paths need {n_paths} VLANs; at most {MAX_VLANS} exist",
                                field="controller.hybrid")
        # a path kept from the configuration in force keeps its VLAN, so its pair's
        # rules do not change and its traffic does not move during a reconfiguration
        prev = getattr(self, "config", None)
        kept = {} if prev is None else {(vp.racks, vp.planes): vp.vlan for r in prev.rules.values() for vp in r.paths}
        wanted = {(racks, planes) for plist in routes.values() for racks, planes, _ in plist}
        kept = {key: v for key, v in kept.items() if key in wanted}
        reserved = set(kept.values())
        fresh = (v for v in range(1, MAX_VLANS + 1) if v not in reserved)
        rules, tags = {}, {}
        for (a, b), plist in sorted(routes.items()):
            vps = []
            for racks, planes, w in plist:
                vlan = kept.pop((racks, planes), None)  # pop: two equal paths get two VLANs
                if vlan is None:
                    vlan = next(fresh)
                vps.append(VlanPath(vlan, racks, planes, w))
                for x, y, k in zip(racks, racks[1:], planes):
                    for r in (x, y):
                        key = (int(self.tors[r]), int(self.tor_port_of[r, k]))
                        tags[key] = tags.get(key, frozenset()) | {vlan}
            rules[(a, b)] = PairRule(a, b, tuple(vps))
        return HybridConfig(circuits, rules, tags)

    def _plane_between(self, circuits, a, b) -> int:
        for c in sorted(circuits, key=lambda c: c.ocs):
            if {c.a, c.b} == {a, b}:
                return c.ocs
        raise NetsteerError(f"a planned path crosses racks {a} and {b}, which no circuit joins")

    def pairings(self, config: HybridConfig) -> dict[int, tuple[tuple[int, int], ...]]:
        """Each circuit switch's whole port pairing for ``config``: each pair (low port,
        high port), in port order, so a circuit written the other way round (``[k, b, a]``
        for ``[k, a, b]``) is the same pairing and sends the switch no command."""
        out: dict[int, list] = {o: [] for o in self.ocs_nodes}
        for c in config.circuits:
            (oa, pa), (ob, pb) = self.circuit_port_of[c.a, c.ocs], self.circuit_port_of[c.b, c.ocs]
            out[int(oa)].append((min(int(pa), int(pb)), max(int(pa), int(pb))))
        return {o: tuple(sorted(p)) for o, p in out.items()}

    def initial_state(self):
        """(circuit pairings, rules, tags) the network starts with."""
        return self.pairings(self.config), tuple(self.config.rules.values()), self.config.tags

    # -- the control loop ----------------------------------------------------------------

    def next_wakeup(self, now: int) -> int | None:
        times = [self.next_scheduled(now)]
        if self._next_period is not None:
            times.append(self._next_period)
        if self._next_poll is not None:
            times.append(self._next_poll)
        if self._repair is not None and not self._repair["pending"]:
            # polling, not scripted: a run whose traffic has ended does not wait for it
            times.append(max(self._repair["next_ns"], now + 1))
        times = [t for t in times if t is not None and t > now]
        return min(times) if times else None

    def next_scheduled(self, now: int) -> int | None:
        times = []
        if self._sched_i < len(self.schedule):
            times.append(self.schedule[self._sched_i][0])
        if self._req_i < len(self.requests):
            times.append(self.requests[self._req_i]["at"])
        times += [r["until"] for r in self._active_requests if r.get("until") is not None]
        if self.current is not None:
            times.append(self.current.step_end)
        times = [max(t, now + 1) for t in times]
        return min(times) if times else None

    def decide(self, inp: Inputs) -> list:
        now = inp.now
        out: list = []
        if not self._started:
            self._started = True
            # the first window measures from the start (counters at 0), so the first
            # decision comes at t=period (t=poll), not one interval later
            self._rebase(inp, restart_clocks=False)
        self._failed = self._failed_links(inp.view)
        self._failed_since = {k: self._failed_since.get(k, now) for k in self._failed}
        out += self._detour_dead(inp)
        if self.current is not None:
            mine = [a for a in inp.applied if any(a.intent is i for i in self.current.pending)]
            self.current.step_applied += mine
            if now >= self.current.step_end or mine:
                out += self._advance(now, inp.view.down_links)
        # triggers
        while self._sched_i < len(self.schedule) and self.schedule[self._sched_i][0] <= now:
            _, circuits = self.schedule[self._sched_i]
            self._sched_i += 1
            self._queue.append(("schedule", frozenset(Circuit(*c) for c in circuits), None, now, None))
        for r in self._active_requests:
            if "lost" in r and r.get("until") is not None and r["until"] <= now:
                self._unserved.append({"at_s": r["at"] / 1e9, "why": self._lost_why(r)
                                       + f" before its end at {r['until'] / 1e9:g} s"})
        self._active_requests = [r for r in self._active_requests if r.get("until") is None or r["until"] > now]
        while self._req_i < len(self.requests) and self.requests[self._req_i]["at"] <= now:
            req = self.requests[self._req_i]
            self._req_i += 1
            self._active_requests.append(req)
            self._request(inp, req)
        if self._next_period is not None and now >= self._next_period:
            self._next_period = now + self.periodic["period"]
            self._periodic(inp)
        if self._next_poll is not None and now >= self._next_poll:
            self._next_poll = now + self.congestion["poll"]
            self._congestion(inp)
        if self._repair is not None and self.current is None:
            out += self._repair_step(inp)
        if self.current is None and self._repair is None:
            self._rescue(now)
        # nothing new starts on a network whose rollback is not finished (docs/control.md):
        # its state is not the configuration in force, so step 2 would diff from the
        # wrong one, and step 3 would lift the leftover detours onto circuits or tags
        # that are not there; the repair's backoff bounds the wait once the fault clears
        if self.current is None and self._repair is None and self._detoured:
            # failure detours are lifted by a step 3; one left by a rollback repaired late
            # (or a link_up meanwhile) is lifted here, once its pair's rules are clear
            lift = tuple(sorted(self._detoured - self._dead_pairs(self.config)))
            if lift:
                self._detoured -= set(lift)
                out.append(RemoveRules(FAILED, lift))
        if self.current is None and not self._queue and not out and self._repair is None:
            self._serve_lost(inp)
            self._restore(now)
        if self.current is None and self._queue and not out and self._repair is None:
            trigger, circuits, paths, _, req = self._queue.pop(0)
            out += self._start(now, trigger, circuits, paths, req)
        if self._finished_at == now:
            # measure the new configuration only: the windows start once it is in
            # force, and each is a whole period (poll) long
            self._rebase(inp, restart_clocks=True)
        return out

    def _rebase(self, inp: Inputs, restart_clocks: bool) -> None:
        """Open the measurement windows at ``inp.now``: the counters read now are the
        baseline of the next periodic estimate, the next congestion poll and the
        demand a request is planned with."""
        now = inp.now
        if self._unanswered.see(inp.counters()) == "missing":
            # a switch did not answer: the next complete reading opens the windows
            self._base = self._last_counters = self._last_ports = self._last_poll = None
            if restart_clocks:
                self._next_period = now + self.periodic["period"] if self.periodic else None
                self._next_poll = now + self.congestion["poll"] if self.congestion else None
            return
        self._base = self._pair_snapshot(inp)
        if self.periodic:
            self._last_counters = self._pair_snapshot(inp)
            if restart_clocks:
                self._next_period = now + self.periodic["period"]
        if self.congestion:
            c = inp.counters()
            self._last_ports = (c.time_ns, c.port_bytes.copy())
            self._last_poll = self._pair_snapshot(inp)
            if restart_clocks:
                self._next_poll = now + self.congestion["poll"]

    # -- modes ---------------------------------------------------------------------------

    def _pinned(self, exclude=None) -> list:
        return [c for r in self._active_requests if r is not exclude for c in r.get("circuits", ())]

    def _plan(self, demand: np.ndarray, pinned=(), hops=None):
        """Plan for ``demand`` (spread, as the modes estimate it): single-hop plans count
        a pair's circuits fairly, as :meth:`_served` does."""
        hops = hops or self.hops
        if hops == 1:
            return plan_circuits(unspread(demand, self.capacity_gbps), self.planes, self.capacity_gbps,
                                 pinned=pinned, fair=True)
        return plan_circuits(demand, self.planes, self.capacity_gbps, hops=hops, pinned=pinned)

    def _served(self, config: HybridConfig, demand: np.ndarray) -> float:
        """What ``config``'s circuits serve of ``demand`` (spread), each further circuit of
        a pair counting less: as the single-hop planner counts it (``ladder``); with
        two hops, each pair's Gbit/s spread again, as :meth:`_plan_served` counts a plan."""
        if self.hops == 1:
            return config.served_gbps(demand, self.capacity_gbps, fair=True)
        return float(spread(direct_served(config.circuits, demand, self.capacity_gbps), self.capacity_gbps).sum())

    def _plan_served(self, plan, demand: np.ndarray) -> float:
        """What ``plan`` serves of ``demand`` (spread), counted as :meth:`_served` counts
        the circuits in force: a two-hop plan's Gbit/s per rack pair (direct and relayed)
        spread again, so a pair's second circuit's worth counts less than another's first."""
        if self.hops == 1:
            return self._served(self.configure(plan.circuits), demand)
        per = np.zeros_like(demand)
        for p in plan.paths:
            per[p.src, p.dst] += p.gbps
        return float(spread(per, self.capacity_gbps).sum())

    def _request(self, inp: Inputs, req: dict, again: bool = False) -> bool:
        """Serve an application's request alongside the measured traffic: the request
        gets the circuits it needs (direct ones, around the other requests' pinned
        circuits), pinned; the rest is planned for the demand measured since the last
        reconfiguration (and the memory), so the circuits other traffic uses stay.

        With ``again`` (a request whose circuits failed, :meth:`_serve_lost`) nothing is
        queued, and False returned, while its circuits could only land on failed ports;
        the other circuits of the plan that would are left out (they could not light)."""
        others = self._pinned(exclude=req)
        asked = sum(r["demand"] for r in self._active_requests)  # the others' too: theirs are pinned
        need = self._plan(spread(asked, self.capacity_gbps), pinned=others, hops=1)
        taken = set(others)
        mine = [c for c in need.circuits if c not in taken]
        # a reading a switch did not answer measures nothing: the request alone
        measured = self._estimate(self._base, self._pair_snapshot(inp)) if self._answered(inp) else None
        demand = np.maximum(spread(asked, self.capacity_gbps), 0 if measured is None else measured)
        if self.memory > 0 and self._recent is not None and inp.now >= self._recent[0]:
            demand = np.maximum(demand, self._recent[1] * 0.5 ** ((inp.now - self._recent[0]) / self.memory))
        plan, to = self._align(self._plan(demand, pinned=others + mine), fixed={c.ocs for c in others})
        # the request's circuits moved with their switch's whole matching
        # (pinned from now, so requests queued behind it plan around them; unpinned if
        # its reconfiguration fails: _unserve)
        req["circuits"] = frozenset(Circuit(to[c.ocs], c.a, c.b) for c in mine)
        if again:
            if self._dead(req["circuits"]):
                req.pop("circuits")
                return False
            dead = set(self._dead(plan.circuits))
            if dead:
                plan = replace(plan, circuits=tuple(c for c in plan.circuits if c not in dead),
                               paths=tuple(p for p in plan.paths if not dead & set(p.circuits)))
        self._queue.append(("request", frozenset(plan.circuits), plan.paths if self.hops > 1 else None,
                            inp.now, req))
        return True

    def _serve_lost(self, inp: Inputs) -> None:
        """Plan again, one at a time, the active requests whose circuits a link failure
        took (:meth:`_rescue`): on other ports if the failed ones can be avoided, else
        once a ``link_up`` frees them. One still waiting when it ends (or the run does)
        is reported unserved (:meth:`_lost_why`)."""
        for req in self._active_requests:
            if "lost" in req and self._request(inp, req, again=True):
                self.history.append({"at_s": inp.now / 1e9, "what": "request planned again",
                                     "at": req["at"] / 1e9,
                                     "circuits": sorted([c.ocs, c.a, c.b] for c in req["circuits"])})
                del req["lost"]
                return

    def _restore(self, now: int) -> None:
        """With no ``periodic`` or ``congestion`` mode to plan them again, queue the
        circuits rescues took out once their cables are back (trigger ``link repaired``),
        those whose ports are still free: the configuration the schedule (or the
        ``initial`` list) asked for. A later reconfiguration other than a rescue
        supersedes them (:meth:`_finish`)."""
        if self.periodic or self.congestion or not self._dropped:
            return
        used = {(c.ocs, x) for c in self.config.circuits for x in (c.a, c.b)}
        self._dropped = {c for c in self._dropped if not {(c.ocs, c.a), (c.ocs, c.b)} & used}
        back = {c for c in self._dropped if not self._dead([c])}
        if back:
            self._dropped -= back
            self._queue.append(("link repaired", self.config.circuits | back, None, now, None))

    def _lost_why(self, req: dict) -> str:
        """Why a request whose circuits failed is not served."""
        at, dead = req["lost"]
        return (f"its circuit{'s' if len(dead) > 1 else ''} {', '.join(str(c) for c in dead)} failed at "
                f"{at / 1e9:g} s, and every circuit it could be given again needed a failed port")

    def _unserve(self, req: dict, why: str) -> None:
        """``req``'s circuits were never installed: no later plan keeps them, and the
        report says the request went unserved."""
        req.pop("circuits", None)
        self._unserved.append({"at_s": req["at"] / 1e9, "why": why})

    def _align(self, plan, fixed=frozenset()):
        """The plan with its circuit switches relabelled to keep as many circuits of the
        configuration in force where they are: each switch's matching is a whole, so
        any permutation of switches is the same plan, and circuits that stay put move
        no traffic during a reconfiguration. The switches in ``fixed`` (those holding
        pinned circuits) keep their label, and a matching goes where it puts fewest
        circuits on failed ports. Returns (plan, old label -> new label)."""
        from scipy.optimize import linear_sum_assignment

        k = self.planes
        old = {(c.ocs, min(c.a, c.b), max(c.a, c.b)) for c in self.config.circuits}
        overlap = np.zeros((k, k))
        dead = self._failed_ports()
        for c in plan.circuits:
            a, b = min(c.a, c.b), max(c.a, c.b)
            for j in range(k):
                overlap[c.ocs, j] += (j, a, b) in old
                if (a, j) in dead or (b, j) in dead:
                    overlap[c.ocs, j] -= len(plan.circuits) + 1  # it could not light there
        for i in fixed:  # a pinned circuit is never moved to another switch
            overlap[i, :] = overlap[:, i] = -2.0 * (len(plan.circuits) + 1)
            overlap[i, i] = 0.0
        rows, cols = linear_sum_assignment(-overlap)
        to = dict(zip(rows.tolist(), cols.tolist()))
        if all(i == j for i, j in to.items()):
            return plan, to
        move = lambda c: Circuit(to[c.ocs], c.a, c.b)  # noqa: E731
        paths = plan.paths
        if self.hops > 1:  # single-hop paths are derived from the circuits again
            paths = tuple(replace(p, circuits=tuple(move(c) for c in p.circuits)) for p in plan.paths)
        return replace(plan, circuits=tuple(sorted((move(c) for c in plan.circuits), key=lambda c: (c.ocs, c.a, c.b))),
                       paths=paths), to

    def _pair_snapshot(self, inp: Inputs):
        c = inp.counters()
        return None if c.pair_bytes is None else (c.time_ns, c.pair_bytes.copy(), c.port_bytes.copy())

    @staticmethod
    def _rate(old, new) -> np.ndarray | None:
        """Rack-to-rack Gbit/s between two pair-counter snapshots."""
        if old is None or new is None or new[0] <= old[0]:
            return None
        d = (new[1] - old[1]) * 8 / ((new[0] - old[0]) * 1e-9) / 1e9
        np.fill_diagonal(d, 0.0)
        return np.maximum(d, 0.0)

    def _demand(self, old, new) -> np.ndarray | None:
        """Natural rack-to-rack demand (Gbit/s) between two snapshots (module text),
        fed into and taken with the memory."""
        est = self._estimate(old, new)
        if est is None:
            return None
        if self.memory > 0 and self._recent is not None and new[0] > self._recent[0]:
            decay = 0.5 ** ((new[0] - self._recent[0]) / self.memory)
            est = np.maximum(est, self._recent[1] * decay)
        self._recent = (new[0], est)
        return est

    def _estimate(self, old, new) -> np.ndarray | None:
        """Natural rack-to-rack demand (Gbit/s) between two snapshots, alone."""
        m = self._rate(old, new)
        if m is None:
            return None
        util = (new[2] - old[2]) * 8 / ((new[0] - old[0]) * 1e-9) / 1e9 / np.maximum(self._bw_gbps, 1e-12)
        hot = util >= self.saturation
        busy = util > 0
        out_cap = np.array([self._bw_gbps[[c for c in chs if busy[c]]].sum() for chs in self._nic_up])
        in_cap = np.array([self._bw_gbps[[c for c in chs if busy[c]]].sum() for chs in self._nic_down])
        limited = np.zeros_like(m, dtype=bool)
        # a pair whose step-1 detour a failed rollback left installed is on the electrical network
        detoured = set() if self._repair is None else set(self._repair["r"].detours_left)
        for a, b in zip(*np.nonzero(m > 0)):
            a, b = int(a), int(b)
            rule = self.config.rules.get((a, b))
            if rule is not None and rule.paths and (a, b) not in detoured:
                chans = [ch for vp in rule.paths for x, y, k in zip(vp.racks, vp.racks[1:], vp.planes)
                         for ch in (self._opt_up[x, k], self._opt_down[y, k])]
            else:
                chans = self._elec_up[a] + self._elec_down[b]
            limited[a, b] = bool(chans) and bool(hot[chans].any())
        return spread(estimate_demand(m, limited, out_cap, in_cap), self.capacity_gbps)

    def _evaluate(self, now: int, demand: np.ndarray, trigger: str, threshold: float):
        """Plan for ``demand``; returns (plan, served now, served by the plan), with
        plan and served None when no plan could serve ``threshold`` more.

        Planning is skipped when its answer is known: the upper bound on what any plan
        serves is within ``threshold`` of what the circuits in force serve (a bulk flow
        filling its own circuit, polled hot forever: the decision says ``skipped:
        bound``, no plan), or the demand, the circuits in force and the pinned circuits
        are those of the last plan (the planner depends on nothing else: the last plan
        is weighed again, and the decision says ``plan: cached``)."""
        cur = self._served(self.config, demand)
        rec = {"at_s": now / 1e9, "trigger": trigger, "served_now_gbps": round(cur, 6)}
        self.decisions.append(rec)
        bound = upper_bound(demand, self.planes, self.capacity_gbps, hops=self.hops,
                            fair=self.hops == 1) if self.planes else 0.0
        if bound <= cur * (1 + threshold) + 1e-9:
            rec.update(served_planned_gbps=None, bound_gbps=round(bound, 6), skipped="bound")
            return None, cur, None
        key = (self.config.circuits, frozenset(self._pinned()))
        last = self._last_plan
        if last is not None and last[0] == key and np.allclose(last[1], demand, rtol=1e-9, atol=1e-9):
            plan, new = last[2], last[3]
            # the planning is skipped, not the decision: the cached plan is still weighed
            # (less its circuits on failed ports) and may be taken
            rec.update(served_planned_gbps=round(new, 6), plan="cached")
        else:
            plan = self._plan(demand, pinned=self._pinned())
            new = self._plan_served(plan, demand)
            self._last_plan = (key, demand.copy(), plan, new)
            rec["served_planned_gbps"] = round(new, 6)
        if self._failed:
            plan, new = self._without_failed(plan, new, demand, rec)
        return plan, cur, new

    def _without_failed(self, plan, new: float, demand: np.ndarray, rec: dict):
        """``plan``, aligned to the switches, less its circuits on failed ports and the
        paths over them (they could not light), and what it serves then: the modes
        weigh that against the circuits in force."""
        aligned, _ = self._align(plan, fixed={c.ocs for c in self._pinned()})
        dead = self._dead(aligned.circuits)
        if not dead:
            return plan, new
        paths = tuple(p for p in aligned.paths if not set(dead) & set(p.circuits))
        plan = replace(aligned, circuits=tuple(c for c in aligned.circuits if c not in set(dead)), paths=paths)
        new = self._plan_served(plan, demand)
        rec.update(served_planned_gbps=round(new, 6), left_out_failed=[[c.ocs, c.a, c.b] for c in dead])
        return plan, new

    # -- link failures -------------------------------------------------------------------

    def _failed_links(self, view) -> frozenset:
        """The links that failed, as the driver's view tells; a driver that cannot tell
        failed from dark gives the links down while no reconfiguration moves a switch."""
        failed = getattr(view, "failed_links", None)
        if failed is not None:
            return failed
        return frozenset(view.down_links) if self.current is None and self._repair is None else frozenset()

    def _failed_ports(self) -> set[tuple[int, int]]:
        """(rack, plane) of the optical uplinks whose cable failed."""
        if not self._failed:
            return set()
        return {(r, k) for r in range(self.racks) for k in range(self.planes)
                if int(self._opt_down[r, k]) // 2 in self._failed}

    def _dead(self, circuits) -> list[Circuit]:
        """Those of ``circuits`` with a failed circuit-switch link (the cable of either
        rack's optical uplink)."""
        if not self._failed:
            return []
        return [c for c in sorted(circuits, key=lambda c: (c.ocs, c.a, c.b))
                if any(int(self._opt_down[x, c.ocs]) // 2 in self._failed for x in (c.a, c.b))]

    def _dead_pairs(self, config: HybridConfig, failed=None) -> frozenset:
        """The rack pairs whose rules in ``config`` send them over a failed cable (of
        ``failed``, default every failed link)."""
        failed = self._failed if failed is None else failed
        if not failed:
            return frozenset()
        out = set()
        for k, rule in config.rules.items():
            for vp in rule.paths:
                if any(int(self._opt_down[x, p]) // 2 in failed
                       for a, b, p in zip(vp.racks, vp.racks[1:], vp.planes) for x in (a, b)):
                    out.add(k)
        return frozenset(out)

    def _cut_racks(self) -> dict[int, list[int]]:
        """The racks whose electrical uplinks all failed (each cable carries both ways:
        cut off the electrical network), with those links."""
        out = {}
        for r in range(self.racks):
            links = sorted({c // 2 for c in self._elec_up[r]})
            if links and all(x in self._failed for x in links):
                out[r] = links
        return out

    def _cut_notes(self, end: str) -> list[str]:
        """Notes for the racks cut off the electrical network when the run ended: the
        modes cannot see the traffic that has no path."""
        from ..units import format_seconds

        modes = [m for m, on in (("periodic", self.periodic), ("congestion", self.congestion)) if on]
        why = (f"the {' and '.join(modes)} mode{'s estimate' if len(modes) > 1 else ' estimates'} a rack pair's "
               "demand from "
               "the bytes it sends, and a pair with no path sends none, so no circuit was planned for it"
               if modes else "no mode plans circuits from the traffic (only a schedule entry or a request gives "
                             "such a pair a circuit)")
        out = []
        for r, links in self._cut_racks().items():
            at = format_seconds(min(self._failed_since.get(x, 0) for x in links) / 1e9)
            names = ", ".join(self.topo.link_name(x) for x in links)
            out.append(f"controller.hybrid: rack {r}'s electrical uplink{'s' if len(links) > 1 else ''} ({names}) "
                       f"failed at {at} and {'were' if len(links) > 1 else 'was'} not brought back when the run "
                       f"ended at {end}: its rack pairs without a circuit had no path, and {why}")
        return out

    def _detour_dead(self, inp: Inputs) -> list:
        """While a reconfiguration runs, the rescue waits for it (it diffs from the
        configuration in force): meanwhile the rack pairs whose rules, before or after
        it, lead over a failed cable are detoured onto the electrical network at once,
        with rules above step 1's (``FAILED``), which no step 3 lifts: a step 3 lifts them
        once the configuration it leads to no longer sends them over a failed cable
        (:meth:`_step_intents`), the rescue's at the latest."""
        for a in inp.applied:
            if any(a.intent is i for i in self._detour_sent):
                self._detour_sent = [i for i in self._detour_sent if i is not a.intent]
                if not a.ok:  # not installed: nothing to lift later
                    self._detoured -= {(x.src, x.dst) for x in a.intent.rules}
        r = self.current
        if r is None or not self._failed:
            return []
        # the configurations whose rules may carry traffic before it ends: a rollback
        # leads back to the old one, step 3 to the new one. Before step 3, a
        # make-before-break reconfiguration's new rules are shadowed by step 1 or wait
        # for step 3, and a new circuit that failed fails step 2 (not lit), so only the
        # old rules count, less the pairs step 1 detoured; break-before-make's step 2
        # puts the new rules in force at once
        if r.rolling_back:
            ahead, safe = [r.old], set()
        elif r.step == 3:
            ahead, safe = [r.new], set()
        elif r.method == "break-before-make":
            ahead, safe = [r.old, r.new], set()
        else:
            sent = r.pending if r.step == 1 else [a.intent for a in r.step1_applied if a.ok]
            ahead, safe = [r.old], {(x.src, x.dst) for i in sent if isinstance(i, PushRules) for x in i.rules}
        # the links failed when it started are its own business (a rescue's, or a
        # rescue's to come), the later ones are not
        later = self._failed - r.failed_at_start
        new = frozenset().union(*(self._dead_pairs(c, later) for c in ahead)) - self._detoured - safe
        if not new:
            return []
        self._detoured |= new
        pairs = sorted(new)
        r.failure_detours.append({"at_s": inp.now / 1e9, "pairs": [list(k) for k in pairs]})
        self.history.append({"at_s": inp.now / 1e9, "what": "link failure detour", "id": r.id,
                             "pairs": [list(k) for k in pairs]})
        intent = PushRules(FAILED, tuple(PairRule(a, b) for a, b in pairs))
        self._detour_sent.append(intent)
        return [intent]

    def _rescue(self, now: int) -> None:
        """A circuit in force whose link failed carries nothing, and the rules keep its
        rack pairs on it: reconfigure, first of all, to the circuits in force less the
        dead ones. Step 1 moves those pairs onto the electrical network at once
        (make-before-break), step 3 leaves them there. Not repeated while a failed rescue
        backs off."""
        dead = self._dead(self.config.circuits)
        if not dead:
            return
        last = self.reconfigurations[-1] if self.reconfigurations else None
        if (last is not None and last.trigger == "link failure" and last.status != "done"
                and self._retry_at is not None and now < self._retry_at):
            return
        alive = frozenset(c for c in self.config.circuits if c not in set(dead))
        for req in self._active_requests:
            lost = sorted([c.ocs, c.a, c.b] for c in req.get("circuits", ()) if c in set(dead))
            if lost:  # unpinned: planned again once the rescue is through (_serve_lost)
                req.pop("circuits")
                req["lost"] = (now, lost)
        if self._queue and self._queue[0][0] == "link failure":
            if self._queue[0][1] == alive:
                return  # queued already (decide runs several rounds an instant)
            self._queue.pop(0)
        self._queue.insert(0, ("link failure", alive, None, now, None))
        self.history.append({"at_s": now / 1e9, "what": "link failure",
                             "circuits": [[c.ocs, c.a, c.b] for c in dead]})

    def _detour_gbps(self, demand: np.ndarray, new: HybridConfig) -> float:
        """What the rack pairs a reconfiguration to ``new`` detours in step 1 (those with
        traffic whose forwarding changes) are served now: their estimated demand, up to
        their paths' capacity. They lose it for the reconfiguration's length (less what
        the electrical network gives them, not counted)."""
        return float(sum(min(float(demand[a, b]), len(rule.paths) * self.capacity_gbps)
                         for (a, b), rule in self.config.rules.items()
                         if demand[a, b] > 0 and new.rules.get((a, b)) != rule))

    def _pays(self, demand: np.ndarray, plan, cur: float, new: float):
        """Whether the modes may reconfigure to ``plan``; returns (the plan aligned to the
        configuration in force, yes or no), and says why in the decision.

        A plan back to a configuration that one of the last ``RETURNS`` reconfigurations
        left (A -> B -> A) contradicts the estimate that left it: the demand estimate
        changes with the configuration (each one makes the rack pairs it leaves off the
        circuits look network-limited), and following it flaps. The controller has seen
        how long A lasted before its estimate turned against it, and expects a return
        to last as long: the return must pay for both moves within that time, i.e. what
        the plan serves more than the circuits in force, times how long A lasted, must
        reach the cost of leaving A (recorded when it was left) plus the cost of coming
        back. A move costs its length (the last one's, as the driver reported it) times
        what the rack pairs it detours in step 1 are served now (:meth:`_detour_gbps`).
        A configuration that held for long pays back quickly (a workload that returns
        to an old pattern); one that held for less than a reconfiguration's worth of
        gain does not. A move to a configuration not left recently is taken at once."""
        plan, _ = self._align(plan, fixed={c.ocs for c in self._pinned()})  # pinned circuits keep their switches
        target = frozenset(plan.circuits)
        if target not in self._left or self._reconfig_ns is None:
            return plan, True
        try:
            after = self.configure(target, plan.paths if self.hops > 1 else None)
        except NetsteerError:
            return plan, True  # _start reports it
        paid, lasted_ns = self._left[target]
        cost = paid + self._reconfig_ns * 1e-9 * self._detour_gbps(demand, after)
        gain = (new - cur) * lasted_ns * 1e-9
        rec = self.decisions[-1]
        rec.update(returned_to_lasted_s=lasted_ns / 1e9, gain_gbit=round(gain, 6),
                   cost_gbit=round(cost, 6))
        if gain + 1e-9 >= cost:
            return plan, True
        rec["skipped"] = "return" if "skipped" not in rec else f"{rec['skipped']}, return"
        return plan, False

    def _queue_plan(self, trigger: str, plan) -> None:
        """Queue a mode's ``plan``, already aligned to the configuration in force
        (:meth:`_pays` aligns it to know what it returns to)."""
        self._queue.append((trigger, frozenset(plan.circuits), plan.paths if self.hops > 1 else None, None, None))

    def _backing_off(self, now: int) -> bool:
        """The modes wait after a failed reconfiguration (``BACKOFF_FIRST``), and while
        a failed rollback is being repaired."""
        return self._repair is not None or (self._retry_at is not None and now < self._retry_at)

    def _repair_step(self, inp: Inputs) -> list:
        """Retry what a failed rollback left installed: first the undo intents that
        failed, then the removal of step 1's detours (kept until the rest is undone,
        so no traffic follows rules onto circuits that are not there). A circuit
        switch moved back counts as undone once the old circuits it re-makes are lit
        (their links up in the driver's view when its answer said they would be), not
        when it takes the command."""
        rp, now = self._repair, inp.now
        r = rp["r"]
        rp.setdefault("lighting", [])  # SetCircuits taken back, waiting to light
        rp.setdefault("counted", False)  # the try in progress already counted as failed
        if rp["pending"]:
            mine = [a for a in inp.applied if any(a.intent is i for i in rp["pending"])]
            # a driver may answer the intents one by one: only once all are answered is
            # the try over (sending one still in flight again would double it)
            rp["answered"] += mine
            rp["pending"] = [i for i in rp["pending"] if not any(a.intent is i for a in mine)]
            if rp["pending"] or not mine:
                return []
            mine, rp["answered"] = rp["answered"], []
            for a in mine:
                if not a.ok:
                    continue
                if isinstance(a.intent, RemoveRules) and a.intent.priority == HIGH:
                    gone = set(a.intent.pairs)
                    r.detours_left = tuple(k for k in r.detours_left if k not in gone)
                elif isinstance(a.intent, SetCircuits) and self._restores(r, a.intent.switch):
                    rp["lighting"].append(a.intent)  # undone once lit (below)
                else:
                    r.not_undone = [i for i in r.not_undone if i is not a.intent]
            rp["next_ns"] = max([now] + [a.done_ns for a in mine])
            rp["counted"] = any(not a.ok for a in mine)
            if rp["counted"]:
                rp["tries"] += 1
                rp["next_ns"] = max(now, rp["next_ns"]) + rp["base"] * min(2 ** (rp["tries"] - 1), REPAIR_MAX)
            elif not r.not_undone and not r.detours_left:
                return self._repaired(r, rp["next_ns"], now)
            else:
                self._set_repair_status(r)
            if not rp["lighting"] or now < rp["next_ns"]:
                return []
        if now < rp["next_ns"]:
            return []
        if rp["lighting"]:
            # the switches took the command back: are the circuits they re-make lit?
            down = getattr(inp.view, "down_links", frozenset())
            lighting, rp["lighting"] = rp["lighting"], []
            r.unlit_back = self._unlit_back(r, {i.switch for i in lighting}, down)
            dark_sw = {self._switch_of(c) for c in r.unlit_back}
            lit = [i for i in lighting if i.switch not in dark_sw]
            r.not_undone = [i for i in r.not_undone if not any(i is x for x in lit)]
            if r.unlit_back and not rp["counted"]:
                # a failed try: back off before sending the command again
                rp["tries"] += 1
                rp["next_ns"] = now + rp["base"] * min(2 ** (rp["tries"] - 1), REPAIR_MAX)
                self._set_repair_status(r)
                return []
            if not r.not_undone and not r.detours_left:
                return self._repaired(r, now, now)
            self._set_repair_status(r)
            if now < rp["next_ns"]:
                return []
        if r.not_undone:
            rp["pending"] = list(r.not_undone)
        else:
            rp["pending"] = [RemoveRules(HIGH, r.detours_left)]
        return list(rp["pending"])

    def _repaired(self, r: Reconfiguration, at_ns: int, now: int) -> list:
        """The failed rollback went through at ``at_ns``: the last good configuration is
        in force again."""
        tries = self._repair["tries"]
        self._repair = None
        r.unlit_back = []
        r.status = (f"failed, rolled back late: the rollback went through at {at_ns / 1e9:g} s "
                    f"after {tries + 1} tries; last good configuration kept")
        self.history.append({"at_s": at_ns / 1e9, "what": "rollback repaired", "id": r.id})
        self._finished_at = now  # the windows measure the repaired network only
        return []

    def _set_repair_status(self, r: Reconfiguration) -> None:
        what = []
        for i in r.not_undone:
            dark = [c for c in r.unlit_back if self._switch_of(c) == i.switch]
            if isinstance(i, SetCircuits) and dark:
                what.append(f"circuit switch {self.topo.node_names[i.switch]} moved back but circuit"
                            f"{'s' if len(dark) > 1 else ''} {', '.join(str(c) for c in dark)} not lit")
            elif isinstance(i, SetCircuits):
                what.append(f"circuit switch {self.topo.node_names[i.switch]} not moved back")
            elif isinstance(i, TagPorts):
                what.append(f"{len(i.ports)} ToR ports not re-tagged")
            else:
                what.append("circuit rules not restored")
        if r.detours_left:
            what.append(f"step-1 detour still installed for rack pairs {[list(k) for k in r.detours_left]} "
                        "(on the electrical network)")
        r.status = (f"failed during rollback: {'; '.join(what)}; retried, backing off, until it goes through; "
                    "no reconfiguration starts meanwhile")

    def _answered(self, inp: Inputs) -> bool:
        """Whether every switch answered the counters read now (``Unanswered`` counts
        who did not). The first whole reading after a switch's silence opens new
        windows (and restarts the hold): no mode plans on an average over the silence,
        nor on a streak it began before."""
        seen = self._unanswered.see(inp.counters())
        if seen == "back":
            self._hot_streak = self._gain_streak = 0
            self._rebase(inp, restart_clocks=False)
        return seen != "missing"

    def _periodic(self, inp: Inputs) -> None:
        if not self._answered(inp):
            return  # a missing sample: the window runs on to the next complete one
        snap = self._pair_snapshot(inp)
        demand = self._demand(self._last_counters, snap)
        self._last_counters = snap
        if demand is None or self.current is not None or self._queue or self._backing_off(inp.now):
            return
        p = self.periodic
        plan, cur, new = self._evaluate(inp.now, demand, "periodic", p["threshold"])
        better = (plan is not None and frozenset(plan.circuits) != self.config.circuits
                  and new > cur * (1 + p["threshold"]) + 1e-9)
        # hysteresis: the gain must hold for `hold` periods in a row (and a return to a
        # configuration left recently must pay for both moves: _pays)
        self._gain_streak = self._gain_streak + 1 if better else 0
        if not better:
            return
        plan, pays = self._pays(demand, plan, cur, new)
        if self._gain_streak >= p["hold"] and pays:
            self._gain_streak = 0
            self._queue_plan("periodic", plan)

    def _congestion(self, inp: Inputs) -> None:
        c = inp.counters()
        if not self._answered(inp):
            return  # a missing sample: the window runs on to the next complete one
        last, self._last_ports = self._last_ports, (c.time_ns, c.port_bytes.copy())
        # the demand of every poll interval feeds the memory: a burst that saturates
        # its path for one poll is seen at its peak, not averaged with its quiet time
        snap = self._pair_snapshot(inp)
        demand = self._demand(self._last_poll, snap)
        self._last_poll = snap
        if last is None or c.time_ns <= last[0] or self.current is not None or self._queue or self._backing_off(inp.now):
            self._hot_streak = 0
            return
        dt = (c.time_ns - last[0]) * 1e-9
        w = self._watched
        util = (c.port_bytes[w] - last[1][w]) * 8 / dt / self.topo.channel_bandwidth()[w]
        hot = bool(len(util)) and float(util.max()) >= self.congestion["utilization"]
        self._hot_streak = self._hot_streak + 1 if hot else 0
        if self._hot_streak >= self.congestion["hold"]:
            self._hot_streak = 0
            # the demand over the congested window, from the per-pair counters
            if demand is None:
                return
            thr = self.congestion["threshold"]
            plan, cur, new = self._evaluate(inp.now, demand, "congestion", thr)
            # only a plan that relieves enough: a bulk flow filling its own circuit
            # is congestion that no configuration cures
            if plan is None or frozenset(plan.circuits) == self.config.circuits or new <= cur * (1 + thr) + 1e-9:
                return
            plan, pays = self._pays(demand, plan, cur, new)
            if pays:
                self._queue_plan("congestion", plan)

    # -- make-before-break ---------------------------------------------------------------

    def _start(self, now: int, trigger: str, circuits: frozenset, paths, req: dict | None = None) -> list:
        try:
            new = self.configure(circuits, paths)
        except NetsteerError as exc:
            self.history.append({"at_s": now / 1e9, "what": "reconfiguration", "failed": exc.message()})
            if req is not None:
                self._unserve(req, f"its circuits could not be configured: {exc.message()}")
            return []
        if new.circuits == self.config.circuits:
            return []
        old = self.config
        moved = tuple(sorted(k for k in set(old.rules) | set(new.rules) if old.rules.get(k) != new.rules.get(k)))
        # a rescue is make-before-break under either method: its pairs' rules lead into
        # a dead cable, and step 1 takes them off it within a rule push
        method = "make-before-break" if trigger == "link failure" else self.method
        r = Reconfiguration(len(self.reconfigurations), trigger, method, old, new, now, moved_pairs=moved,
                            request=req, failed_at_start=self._failed)
        if self._recent is not None:
            r.detour_gbps = self._detour_gbps(self._recent[1], new)
        self.reconfigurations.append(r)
        self.current = r
        if r.method == "break-before-make":
            return self._enter(r, 2, now)
        return self._enter(r, 1, now)

    def _step_intents(self, r: Reconfiguration, step: int) -> list:
        old, new = r.old, r.new
        if step == 1:
            # only pairs that carry traffic need a detour: an idle pair's rules change in
            # step 2 with nothing in flight (with no estimate yet, every moved pair). A pair
            # getting its first circuit is on the electrical network already
            busy = None if self._recent is None else self._recent[1]
            # nor a pair whose electrical path failed: its detour would lead nowhere, and
            # on its circuits it keeps sending until step 2 moves them
            cut = self._cut_racks()
            detour = tuple(PairRule(a, b) for a, b in r.moved_pairs
                           if (a, b) in old.rules and (busy is None or busy[a, b] > 0)
                           and (a, b) not in self._detoured and a not in cut and b not in cut)
            return [PushRules(HIGH, detour)] if detour else []
        if step == 2 and r.rolling_back:
            return self._undo(r)
        if step == 2:
            out = []
            old_p, new_p = self.pairings(old), self.pairings(new)
            out += [SetCircuits(o, new_p[o]) for o in self.ocs_nodes if new_p[o] != old_p[o]]
            ports = set(old.tags) | set(new.tags)
            retag = tuple((t, p, new.tags.get((t, p), frozenset())) for t, p in sorted(ports)
                          if old.tags.get((t, p)) != new.tags.get((t, p)))
            if retag:
                out.append(TagPorts(retag))
            # make-before-break pushes a first circuit's rule in step 3 (module text)
            bbm = r.method == "break-before-make"
            push = tuple(new.rules[k] for k in r.moved_pairs if k in new.rules and (bbm or k in old.rules))
            drop = tuple(k for k in r.moved_pairs if k not in new.rules and k in old.rules)
            if push or self.extra_rules:
                out.append(PushRules(LOW, push, extra=self.extra_rules))
            if drop:
                out.append(RemoveRules(LOW, drop))
            return out
        # a failure detour (_detour_dead) is lifted once the configuration step 3 leads
        # to no longer sends its pair over a failed cable
        dead = self._dead_pairs(old if r.rolling_back else new)
        lift = tuple(sorted(self._detoured - dead))
        self._detoured &= dead
        out = [RemoveRules(FAILED, lift)] if lift else []
        if r.method == "break-before-make":
            return out
        pushed = [a for a in r.step1_applied if a.ok]
        out += [RemoveRules(HIGH, tuple((x.src, x.dst) for x in a.intent.rules)) for a in pushed]
        first = tuple(new.rules[k] for k in r.moved_pairs if k in new.rules and k not in old.rules)
        if first and not r.rolling_back:
            out.append(PushRules(LOW, first))
        return out

    def _undo(self, r: Reconfiguration) -> list:
        """Intents that undo what steps 2 and 3 changed before one failed."""
        old, out = r.old, []
        old_p = self.pairings(old)
        for a in r.undoable:
            if not a.ok:
                continue
            i = a.intent
            if isinstance(i, SetCircuits):
                out.append(SetCircuits(i.switch, old_p[i.switch]))
            elif isinstance(i, TagPorts):
                out.append(TagPorts(tuple((t, p, old.tags.get((t, p), frozenset())) for t, p, _ in i.ports)))
            elif isinstance(i, (PushRules, RemoveRules)):
                pairs = [(x.src, x.dst) for x in i.rules] if isinstance(i, PushRules) else list(i.pairs)
                back = tuple(old.rules[k] for k in pairs if k in old.rules)
                gone = tuple(k for k in pairs if k not in old.rules)
                if back:
                    out.append(PushRules(LOW, back))
                if gone:
                    out.append(RemoveRules(LOW, gone))
        return out

    def _enter(self, r: Reconfiguration, step: int, now: int) -> list:
        while step <= 3:
            intents = self._step_intents(r, step)
            if intents or step == 3:
                break
            step += 1
        r.step, r.step_applied = step, []
        r.pending = intents
        what = _STEP_NAMES[step] + (" (rollback)" if r.rolling_back and step == 2 else "")
        if step == 3 and any(isinstance(i, PushRules) for i in intents):
            what += ", first circuits' rules pushed"
        r.steps.append({"step": step, "what": what,
                        "start_s": now / 1e9, "end_s": None, "intents": len(intents)})
        if not intents:
            return self._finish(r, now)
        r.step_end = now  # set from the driver's answers in decide()
        self._awaiting = True
        return intents

    def _advance(self, now: int, down_links=frozenset()) -> list:
        r = self.current
        if r.step_applied and self._awaiting:
            # the driver just answered this step's intents: when does it end?
            self._awaiting = False
            r.step_end = max(a.done_ns for a in r.step_applied)
            if r.step == 1:
                r.step1_applied = list(r.step_applied)
            elif not r.rolling_back:
                r.undoable += r.step_applied
            failed = [a.failed for a in r.step_applied if not a.ok]
            if failed:
                r.steps[-1]["failed"] = failed
            if r.step_end > now and not failed:
                return []
        if now < r.step_end:
            return []
        failed = r.steps[-1].get("failed")
        if r.step == 2 and not r.rolling_back and not failed:
            # the circuit switches took the command, but a circuit may not have lit
            # (the openflow driver keeps it dark when its switch refuses the lit table):
            # it is not in force, so step 3 must not send traffic onto it
            dark = self._unlit(r, down_links)
            if dark:
                failed = r.steps[-1]["failed"] = [
                    f"circuit {c} not lit: its links were still down when step 2 ended" for c in dark]
        dark_back = []
        if r.step == 2 and r.rolling_back:
            # the undo's circuit switches took the command back, but the old circuits they
            # restore may not have lit: the old configuration is not in force then, so
            # this is a failed undo (the detours stay and the repair retries it)
            back = [a.intent for a in r.step_applied if a.ok and isinstance(a.intent, SetCircuits)]
            r.unlit_back = self._unlit_back(r, {i.switch for i in back}, down_links)
            if r.unlit_back:
                dark_sw = {self._switch_of(c) for c in r.unlit_back}
                dark_back = [i for i in back if i.switch in dark_sw]
                failed = r.steps[-1]["failed"] = (failed or []) + [
                    f"circuit {c} not lit: its links were still down when the rollback's step 2 ended"
                    for c in r.unlit_back]
        r.steps[-1]["end_s"] = now / 1e9
        if failed and not r.rolling_back:
            r.rolling_back = True
            r.status = "failed, rolled back: last good configuration kept"
            return self._enter(r, 3 if r.step == 1 else 2, now)
        if failed:
            # what did not go back stays installed: say so, and retry it (_repair_step)
            bad = [a.intent for a in r.step_applied if not a.ok] + dark_back
            if r.step == 2:
                # the undo failed: keep step 1's detours (no traffic onto circuits or
                # tags that are not what the rules say) and remove them once undone
                r.not_undone = bad
                r.detours_left = tuple(k for a in r.step1_applied if a.ok for k in
                                       ((x.src, x.dst) for x in a.intent.rules))
                return self._finish(r, now)
            r.detours_left = tuple(k for i in bad if isinstance(i, RemoveRules) and i.priority == HIGH
                                   for k in i.pairs)
            # a failure detour not lifted stays, and is lifted by a later step 3
            self._detoured |= {k for i in bad if isinstance(i, RemoveRules) and i.priority == FAILED
                               for k in i.pairs}
        return self._enter(r, r.step + 1, now) if r.step < 3 else self._finish(r, now)

    def _unlit(self, r: Reconfiguration, down_links) -> list[list[int]]:
        """The circuits ``r`` makes (not in force before it) whose circuit-switch links
        are down: the switch moved, but the circuit did not light."""
        if not down_links:
            return []
        old = {(c.ocs, min(c.a, c.b), max(c.a, c.b)) for c in r.old.circuits}
        return [[c.ocs, c.a, c.b] for c in sorted(r.new.circuits, key=lambda c: (c.ocs, c.a, c.b))
                if (c.ocs, min(c.a, c.b), max(c.a, c.b)) not in old
                and any(int(self._opt_down[x, c.ocs]) // 2 in down_links for x in (c.a, c.b))]

    def _switch_of(self, c: list[int]) -> int:
        """The circuit switch node of circuit ``[k, a, b]``."""
        return int(self.circuit_port_of[c[1], c[0]][0])

    def _unlit_back(self, r: Reconfiguration, switches, down_links) -> list[list[int]]:
        """The circuits of ``r.old`` that its rollback re-makes on ``switches`` (not in
        ``r.new``: the undo moves them back) whose circuit-switch links are down. One
        whose cable failed is not among them: its switch moved back, nothing lights it
        before a ``link_up`` (sending the command again would not), and once the
        rollback is through the rescue takes it out (:meth:`_rescue`)."""
        if not down_links or not switches:
            return []
        new = {(c.ocs, min(c.a, c.b), max(c.a, c.b)) for c in r.new.circuits}
        dead = set(self._dead(r.old.circuits))
        return [[c.ocs, c.a, c.b] for c in sorted(r.old.circuits, key=lambda c: (c.ocs, c.a, c.b))
                if (c.ocs, min(c.a, c.b), max(c.a, c.b)) not in new and c not in dead
                and self._switch_of([c.ocs, c.a, c.b]) in switches
                and any(int(self._opt_down[x, c.ocs]) // 2 in down_links for x in (c.a, c.b))]

    def _restores(self, r: Reconfiguration, switch: int) -> bool:
        """Whether moving ``switch`` back re-makes a circuit of ``r.old`` (one that must
        light before the old configuration is in force)."""
        new = {(c.ocs, min(c.a, c.b), max(c.a, c.b)) for c in r.new.circuits}
        return any(self._switch_of([c.ocs, c.a, c.b]) == switch for c in r.old.circuits
                   if (c.ocs, min(c.a, c.b), max(c.a, c.b)) not in new)

    def _finish(self, r: Reconfiguration, now: int) -> list:
        r.steps[-1]["end_s"] = now / 1e9
        r.end_ns = now
        if not r.rolling_back:
            r.status = "done"
            self.config = r.new
            self._failures, self._retry_at = 0, None
            # what the next one is expected to take, what leaving r.old cost and how
            # long r.old had lasted (_pays)
            self._reconfig_ns = now - r.started_ns
            self._left.pop(r.new.circuits, None)
            self._left.pop(r.old.circuits, None)  # the newest goes last (the oldest is forgotten first)
            if r.trigger == "link failure":
                pinned = set(self._pinned())
                self._dropped |= {c for c in r.old.circuits - r.new.circuits if c not in pinned}
            else:
                self._dropped = set()
            if r.trigger != "link failure":
                # a rescue is forced by a cable, not chosen from the estimate: coming
                # back once the cable is repaired is no flap, and must not have to pay
                self._left[r.old.circuits] = (self._reconfig_ns * 1e-9 * r.detour_gbps,
                                              r.started_ns - self._in_force_since)
            self._in_force_since = now
            while len(self._left) > RETURNS:
                self._left.pop(next(iter(self._left)))
        else:
            # back off: retrying at once would detour traffic again and again for a
            # fault that persists (worse than no controller)
            self._failures += 1
            every = [m[k] for m, k in ((self.periodic, "period"), (self.congestion, "poll")) if m]
            base = max([now - r.started_ns, 1] + ([min(every)] if every else []))
            self._retry_at = now + base * min(BACKOFF_FIRST * 2 ** (self._failures - 1), BACKOFF_MAX)
            if every:  # no periodic or congestion mode: no one to back off to report
                r.retry_ns = self._retry_at
            if r.request is not None:
                self._unserve(r.request, f"reconfiguration {r.id}, which was to install its circuits, failed "
                                         "and was rolled back")
            if r.not_undone or r.detours_left:
                self._repair = {"r": r, "base": base, "tries": 0, "next_ns": now + base, "pending": [],
                                "answered": [], "lighting": [], "counted": False}
                self._set_repair_status(r)
        self.current = None
        # measure the new configuration only (decide() opens the windows at its end)
        self._finished_at = now
        self._hot_streak = self._gain_streak = 0
        self.history.append({"at_s": r.started_ns / 1e9, "what": "reconfiguration", "id": r.id, "status": r.status})
        return []

    def unplayed(self, end_ns: int) -> list[str]:
        """Notes for the scheduled reconfigurations and requests the run ended before,
        and the reconfigurations still queued behind one in progress."""
        from ..units import format_seconds

        end = format_seconds(end_ns / 1e9)
        out = [f"controller.hybrid.schedule: the reconfiguration at {format_seconds(t / 1e9)} to circuits "
               f"{sorted(list(c) for c in circuits)} never happened: the run ended at {end}"
               for t, circuits in self.schedule[self._sched_i:]]
        out += [f"controller.hybrid.requests: the request at {format_seconds(r['at'] / 1e9)} was never served: "
                f"the run ended at {end}" for r in self.requests[self._req_i:]]
        out += [f"controller.hybrid: a {trigger} reconfiguration{'' if at is None else ' at ' + format_seconds(at / 1e9)}"
                f" to circuits {sorted([c.ocs, c.a, c.b] for c in circuits)} never started: {self._blocked_by()}"
                f" when the run ended at {end}" for trigger, circuits, _, at, req in self._queue if req is None]
        out += [f"controller.hybrid.requests: the request at {format_seconds(u['at_s'])} was not served: {u['why']}"
                + (f" when the run ended at {end}" if u.get("queued") else "") for u in self._unserved_all()]
        out += self._unanswered.notes("controller.hybrid", end_ns, self._meanwhile)
        out += self._cut_notes(end)
        if self._repair is not None:
            r = self._repair["r"]
            out.append(f"controller.hybrid: the rollback of reconfiguration {r.id} was still being repaired when the "
                       f"run ended at {end}, after {self._repair['tries']} tries: {r.status}")
        dead = self._dead(self.config.circuits)
        if dead:
            out.append(f"controller.hybrid: circuit{'s' if len(dead) > 1 else ''} "
                       f"{', '.join(str([c.ocs, c.a, c.b]) for c in dead)} of the configuration in force "
                       f"{'were' if len(dead) > 1 else 'was'} on a failed cable when the run ended at {end} "
                       f"(controller.hybrid.circuits_failed): {self._blocked_by().replace('it was', 'the rescue was')}")
        return out

    def _meanwhile(self, spans) -> str:
        """What the controller did while a switch was silent (``spans``: from, to ns)."""
        modes = [m for m, on in (("periodic", self.periodic), ("congestion", self.congestion)) if on]
        ran = [r for r in self.reconfigurations
               if any(r.started_ns < b and (r.end_ns is None or r.end_ns >= a) for a, b in spans)]
        out = [f"the {' and '.join(modes)} mode{'s' if len(modes) > 1 else ''} planned nothing on those readings"
               ] if modes else []
        out.append("the circuits in force were kept" if not ran else
                   "the only reconfigurations in progress were " + ", ".join(
                       f"{r.id} ({r.trigger}, {r.status})" for r in ran))
        return ", ".join(out)

    def _unserved_all(self) -> list[dict]:
        """The requests whose circuits were never installed, with why: those whose
        reconfiguration failed, and those still queued."""
        lost = [{"at_s": r["at"] / 1e9, "queued": True, "why": self._lost_why(r)} for r in self._active_requests
                if "lost" in r]
        return self._unserved + lost + [{"at_s": req["at"] / 1e9, "queued": True,
                                  "why": f"its reconfiguration to circuits {sorted([c.ocs, c.a, c.b] for c in circuits)} "
                                         f"never started: {self._blocked_by()}"}
                                 for _, circuits, _, _, req in self._queue if req is not None]

    def _blocked_by(self) -> str:
        """What the queued reconfigurations wait for."""
        if self._repair is not None:
            r = self._repair["r"]
            return (f"it was waiting for the repair of reconfiguration {r.id}'s failed rollback "
                    f"({self._repair['tries']} tries so far; nothing new starts until it goes through)")
        if self.current is not None:
            return f"it was waiting for reconfiguration {self.current.id}, still in progress"
        return "it was still queued"

    def report(self) -> dict[str, Any]:
        unserved = self._unserved_all()
        dead = self._dead(self.config.circuits)
        return {
            "method": self.method,
            # a circuit in force whose cable failed carries nothing (its rescue is to come)
            "circuits": sorted([c.ocs, c.a, c.b] for c in self.config.circuits if c not in set(dead)),
            **({"circuits_failed": [[c.ocs, c.a, c.b] for c in dead]} if dead else {}),
            "reconfigurations": [r.as_dict() for r in self.reconfigurations],
            "decisions": self.decisions,
            **({"failed_in_a_row": self._failures, "modes_retry_from_s": self._retry_at / 1e9}
               if self._failures and (self.periodic or self.congestion) else {}),
            # the configuration in force is not what is installed: what differs
            **({"rollback_pending": {"reconfiguration": self._repair["r"].id, "status": self._repair["r"].status,
                                     "tries": self._repair["tries"],
                                     "next_try_s": self._repair["next_ns"] / 1e9,
                                     "blocks": [f"{t} reconfiguration" + ("" if at is None else f" at {at / 1e9:g} s")
                                                for t, _, _, at, _ in self._queue]}}
               if self._repair is not None else {}),
            **({"unserved_requests": [{k: v for k, v in u.items() if k != "queued"} for u in unserved]}
               if unserved else {}),
            **({"unanswered": u} if (u := self._unanswered.report()) is not None else {}),
        }


_STEP_NAMES = {1: "traffic to the electrical network", 2: "circuits, VLAN tags and new rules",
               3: "step-1 rules removed"}
