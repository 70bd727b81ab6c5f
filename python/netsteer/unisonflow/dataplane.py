"""The simulator as UnisonFlow's dataplane: tag tables, packet-ins, first-packet delay.

:class:`TagSimDriver` is the sim driver with OpenFlow-like tables keyed by tag.
Every flow carries its MPI context (``flow_tags``: the 48-bit tag, 0 for untagged
traffic, which the base routing forwards). A flow whose tag has rules in place when
it is released is forwarded by them at once. A flow released while its tag has no
rules is a table miss: its first frame goes to the controller (a
:class:`~.controller.PacketIn` report) and the flow waits, on a channel of capacity
0 (the *gate*), until the rules take effect:

    packet-in time + controller round trip + installation (rules per switch x rule
    time, switches in parallel or one after another), then the path's latency.

Frames of the same tag arriving meanwhile wait for the same installation.

Switch tables hold ``capacity`` tag rules each. Installing into a full table evicts
the least recently installed rule of a tag that carries no traffic then; if every
rule is in use, the table refuses and the tag takes the default routing (reported).
A tag whose flows have all been finished for ``idle_timeout`` loses its rules on
every switch (OpenFlow's idle timeout); its next flow misses again.

Exactness: the driver looks for new misses at least every ``controller_rtt``, and a
miss's rules cannot take effect sooner than that after it, so every installation
happens at its exact time; hits are decided by the tables as they are when the
flow is released.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import NetsteerError
from ..sim.delay import DelayModel
from ..sim.driver import SimDriver, _Refused, dag_paths
from .controller import InstallTagRules, PacketIn, RulesGone, RulesInstalled
from .rules import RuleError, follow
from .tags import host_mac


@dataclass(frozen=True)
class TableModel:
    """Switch flow tables and the control channel.

    Attributes
    ----------
    controller_rtt_ns : int
        Switch -> controller -> switch for a packet-in and its answer (> 0).
    rule_time_ns : int
        Installing one rule in one switch (0 or more; 0, this class's default,
        makes installation free; a scenario's ``rule_time`` defaults to 1 ms).
    push : {"parallel", "sequential"}
        Switches programmed at once or one after another.
    capacity : int or None
        Tag rules a switch holds (None: unlimited).
    idle_timeout_ns : int or None
        Rules of a tag idle this long are removed (None: never).
    """

    controller_rtt_ns: int = 1_000_000
    rule_time_ns: int = 0
    push: str = "parallel"
    capacity: int | None = None
    idle_timeout_ns: int | None = None

    def __post_init__(self):
        if self.controller_rtt_ns <= 0:
            raise NetsteerError("must be more than 0 (a packet-in takes time)", field="controller_rtt")
        if self.rule_time_ns < 0:
            raise NetsteerError("must be 0 or more (0: rules cost nothing)", field="rule_time")
        if self.capacity is not None and self.capacity < 1:
            raise NetsteerError("must be at least 1 rule", field="table_capacity")
        if self.idle_timeout_ns is not None and self.idle_timeout_ns <= 0:
            raise NetsteerError("must be more than 0", field="idle_timeout")

    def install_ns(self, rules_per_switch: list[int]) -> int:
        return DelayModel(rule_time_ns=self.rule_time_ns, push=self.push).rules_time(rules_per_switch)


class _Entry:
    __slots__ = ("rules", "channels", "switches", "installed_ns")

    def __init__(self, rules, channels, switches, installed_ns):
        self.rules, self.channels, self.switches, self.installed_ns = rules, channels, switches, installed_ns


class TagSimDriver(SimDriver):
    """The sim driver with tag tables (see the module text).

    Parameters
    ----------
    topo, routing, dag
        As for :class:`~netsteer.sim.driver.SimDriver`; ``routing`` forwards untagged
        flows and tags that fall back to the default routing.
    fabric : Fabric
    flow_tags : ndarray of int64
        Per flow, its tag (0: untagged).
    tables : TableModel
    **kw
        Passed to :class:`~netsteer.sim.driver.SimDriver`.
    """

    def __init__(self, topo, routing, dag, *, fabric, flow_tags, tables: TableModel = TableModel(),
                 tag_dests: dict | None = None, **kw):
        self.fabric, self.tables = fabric, tables
        self.tag_dests = dict(tag_dests or {})
        self.flow_tags = np.asarray(flow_tags, dtype=np.int64)
        if len(self.flow_tags) != len(dag):
            raise NetsteerError(f"{len(self.flow_tags)} tags for {len(dag)} flows", field="flow_tags")
        order = np.argsort(self.flow_tags, kind="stable")
        tags_sorted = self.flow_tags[order]
        uniq, start = np.unique(tags_sorted, return_index=True)
        bounds = list(start) + [len(order)]
        c = dag.columns()
        # tags whose frames never reach a switch (loopback) need no rules
        self.tag_flows = {int(t): fl for i, t in enumerate(uniq) if t != 0
                          for fl in [order[bounds[i]:bounds[i + 1]]] if np.any(c.src[fl] != c.dst[fl])}
        self.entries: dict[int, _Entry] = {}
        self.defaulted: set[int] = set()
        self.at_switch: dict[int, dict[int, None]] = {}  # switch -> tags, oldest first
        self.waiting: dict[int, int] = {}  # tag -> time its packet-in was sent
        self.reported: set[int] = set()  # flows whose miss was reported
        self.uncovered = set(self.tag_flows)  # tags without rules that still have flows to run
        self.stats = {"packet_ins": 0, "misses": 0, "installed_tags": 0, "rules_installed": 0,
                      "expired": 0, "evicted": 0, "table_full": 0, "refused": 0, "max_rules_per_switch": 0}
        self.refusals: list[dict] = []  # the first installs the switches refused, and why
        self.first_packet_ns: list[int] = []  # per packet-in: when its rules took effect, minus when it was sent
        self._arrays_at = -1
        self._src, self._dst, self._delay = c.src, c.dst, c.delay_ns
        super().__init__(topo, routing, dag, **kw)
        fabric.base_path = self.base_path

    def base_path(self, tag: int):
        """The engine channels the base routing (as it is now) gives ``tag``'s flows,
        or None where it gives them different paths (a per-flow hash), or the tag is a
        multicast one: what the ``ecmp`` module follows, so that a tag it routes
        takes the path it would take without a controller."""
        flows = self.tag_flows.get(int(tag))
        if flows is None or int(tag) in self.tag_dests:
            return None
        if getattr(self.routing, "ecmp_hash", None) == "flow" and len(flows) > 1:
            return None
        off, ch = dag_paths(self.topo, self.routing, self.dag, np.asarray(flows[:1], dtype=np.int64),
                            self.circuits.as_dict())
        return [int(x) for x in np.asarray(ch)[int(off[0]):int(off[1])]]

    # -- hooks ---------------------------------------------------------------------

    def _extra_channels(self, capacity, latency):
        self.gate = len(capacity)
        self._latency = np.append(latency, 0)
        return np.append(capacity, 0.0), self._latency

    def _flow_paths(self, flows, missed=None):  # (a miss stays an error here)
        flows = np.asarray(flows, dtype=np.int64)
        tags = self.flow_tags[flows]
        base_rows = flows[(tags == 0) | np.isin(tags, list(self.defaulted) or [0])]
        base = {}
        if len(base_rows):
            off, ch = dag_paths(self.topo, self.routing, self.dag, base_rows, self.circuits.as_dict())
            off, ch = np.asarray(off), np.asarray(ch)
            base = {int(f): ch[off[i]:off[i + 1]] for i, f in enumerate(base_rows.tolist())}
        offsets, chans = [0], []
        gate = np.array([self.gate], dtype=np.int64)
        for f, t in zip(flows.tolist(), tags.tolist()):
            if f in base:
                p = base[f]
            elif self._src[f] == self._dst[f]:
                p = gate[:0]
            else:
                e = self.entries.get(t)
                p = e.channels if e is not None else gate
            chans.append(p)
            offsets.append(offsets[-1] + len(p))
        return np.asarray(offsets, dtype=np.int64), (np.concatenate(chans).astype(np.int64) if chans else gate[:0])

    # -- the driver protocol ---------------------------------------------------------

    def idle(self) -> bool:
        return super().idle() and not self._new_misses()

    def advance(self, until):
        while True:
            t_eff = self.next_effect()
            target = until if t_eff is None else (t_eff if until is None else min(until, t_eff))
            if self.uncovered:  # a miss may come: look at least every round trip
                step = self.now + self.tables.controller_rtt_ns
                target = step if target is None else min(target, step)
            status = self._run(target)
            if self._report_misses():
                return "changed"
            if status in ("done", "stalled"):
                return status
            if t_eff is not None and self.now >= t_eff:
                self._apply_due_effects()
                return "changed"
            if until is not None and self.now >= until:
                return "until"

    def apply(self, intent):
        """As the sim driver's; tag installs are counted in ``stats`` rather than
        listed one by one in the run's applied intents (there are thousands)."""
        if not isinstance(intent, InstallTagRules):
            return super().apply(intent)
        from ..control.driver import Applied

        return Applied(intent, self.now, self._apply(intent, self.now))

    def _refused(self, reason: str) -> None:
        self.stats["refused"] += 1
        if len(self.refusals) < 20:
            self.refusals.append({"at_s": self.now / 1e9, "reason": reason})

    def _apply(self, intent, now):
        if not isinstance(intent, InstallTagRules):
            return super()._apply(intent, now)
        per_switch: dict[int, int] = {}
        for r in intent.rules:
            per_switch[r.switch] = per_switch.get(r.switch, 0) + 1
        done = max(now, intent.packet_in_ns + self.tables.controller_rtt_ns + self.tables.install_ns(list(per_switch.values())))
        self._schedule(done, "tagrules", intent)
        return done

    def _effect(self, what, payload):
        if what == "tagrules":
            self._install(payload)
        elif what == "ungate":
            self.reported.difference_update(payload.tolist())
            self.engine.reroute(*self._paths_of(payload))
        elif what == "tagidle":
            self._check_idle(payload)
        else:
            super()._effect(what, payload)

    # -- tables ----------------------------------------------------------------------

    def _arrays(self):
        if self._arrays_at != self.now:
            self._rel, self._done = self.engine.release_ns(), self.engine.completion_ns()
            self._arrays_at = self.now
        return self._rel, self._done

    def _new_misses(self) -> list[int]:
        on_gate = self.engine.flows_on(np.array([self.gate], dtype=np.int64))
        return [int(f) for f in on_gate if int(f) not in self.reported]

    def _report_misses(self) -> bool:
        new = self._new_misses()
        if not new:
            return False
        rel, _ = self._arrays()
        for f in sorted(new, key=lambda f: (rel[f], f)):
            self.reported.add(f)
            self.stats["misses"] += 1
            t = int(self.flow_tags[f])
            if t in self.waiting or t in self.entries or t in self.defaulted:
                continue  # its rules are coming
            sent = int(rel[f] + self._delay[f])  # the first frame leaves after the software overhead
            self.waiting[t] = sent
            self.stats["packet_ins"] += 1
            self._reports.append(PacketIn(sent, self.fabric.switch_of_host[int(self._src[f])], t, f))
        return True

    def _unfinished(self, tag: int) -> np.ndarray:
        flows = self.tag_flows[tag]
        _, done = self._arrays()
        return flows[done[flows] < 0]

    def _in_use(self, tag: int) -> bool:
        """Whether a flow of ``tag`` is sending now (released, past its software
        overhead, not done): frames keep the rules' idle timers at zero."""
        rel, done = self._arrays()
        flows = self.tag_flows.get(tag, ())
        return bool(np.any((rel[flows] >= 0) & (rel[flows] + self._delay[flows] <= self.now) & (done[flows] < 0)))

    def _install(self, intent: InstallTagRules) -> None:
        tag = intent.tag
        sent = self.waiting.pop(tag, None)
        if sent is not None:
            self.first_packet_ns.append(self.now - sent)
        flows = self.tag_flows.get(tag)
        if flows is None:
            return
        gated = [f for f in self._unfinished(tag).tolist() if f in self.reported]
        if not intent.rules or tag in self.entries:
            if not intent.rules:
                self.defaulted.add(tag)
            self._cover(tag, gated)
            return
        f0 = int(flows[0])
        dsts = self.tag_dests.get(tag) or sorted({int(self._dst[f]) for f in flows.tolist()} - {int(self._src[f0])})
        try:
            channels = follow(intent.rules, self.fabric, int(self._src[f0]), dsts, [host_mac(d) for d in dsts])
        except RuleError as exc:  # checked by the controller too; a driver reports, never forwards wrongly
            self.defaulted.add(tag)
            self._refused(exc.message())
            self._cover(tag, gated)
            return
        switches = sorted({r.switch for r in intent.rules})
        cap = self.tables.capacity
        if cap is not None:
            for s in switches:
                table = self.at_switch.get(s, {})
                if len(table) >= cap and not self._evict(s):
                    self.stats["table_full"] += 1
                    self.defaulted.add(tag)
                    self._refused(f"table full at {self.fabric.name(s)} ({cap} rules in use)")
                    self._cover(tag, gated)
                    return
        self.entries[tag] = _Entry(intent.rules, np.asarray(channels, dtype=np.int64), switches, self.now)
        for s in switches:
            self.at_switch.setdefault(s, {})[tag] = None
            self.stats["max_rules_per_switch"] = max(self.stats["max_rules_per_switch"], len(self.at_switch[s]))
        self.stats["installed_tags"] += 1
        self.stats["rules_installed"] += len(intent.rules)
        self._reports.append(RulesInstalled(self.now, tag, tuple(int(c) for c in channels)))
        self._cover(tag, gated)
        if self.tables.idle_timeout_ns is not None:
            self._schedule(self.now + self.tables.idle_timeout_ns, "tagidle", tag)

    def _cover(self, tag: int, gated: list[int]) -> None:
        """The tag has forwarding now: unreleased flows take it at once, flows that
        waited at the gate after their path's latency."""
        self.uncovered.discard(tag)
        rest = self._unfinished(tag)
        waiting = set(gated)
        later = np.array([f for f in rest.tolist() if f not in waiting], dtype=np.int64)
        if len(later):
            self.engine.reroute(*self._paths_of(later))
        if gated:
            g = np.asarray(gated, dtype=np.int64)
            _, ch = self._flow_paths(g[:1])
            lat = int(self._latency[ch].sum())
            if lat:
                self._schedule(self.now + lat, "ungate", g)
            else:
                self._effect("ungate", g)

    def _paths_of(self, flows):
        flows = np.asarray(flows, dtype=np.int64)
        off, ch = self._flow_paths(flows)
        return flows, off, ch

    def _remove(self, tag: int, cause: str) -> None:
        e = self.entries.pop(tag)
        for s in e.switches:
            self.at_switch[s].pop(tag, None)
        self.stats[cause] += 1
        self._reports.append(RulesGone(self.now, tag, cause, tuple(int(c) for c in e.channels)))
        rest = self._unfinished(tag)
        if len(rest):
            self.uncovered.add(tag)
            self.engine.reroute(*self._paths_of(rest))

    def _evict(self, switch: int) -> bool:
        for tag in list(self.at_switch[switch]):
            if not self._in_use(tag):
                self._remove(tag, "evicted")
                return True
        return False

    def _check_idle(self, tag: int) -> None:
        e = self.entries.get(tag)
        if e is None:
            return
        idle = self.tables.idle_timeout_ns
        if self._in_use(tag):
            self._schedule(self.now + idle, "tagidle", tag)
            return
        _, done = self._arrays()
        flows = self.tag_flows[tag]
        last = max(int(done[flows].max()), e.installed_ns)  # the last frame went by then
        if self.now - last >= idle:
            self._remove(tag, "expired")
        else:
            self._schedule(last + idle, "tagidle", tag)

