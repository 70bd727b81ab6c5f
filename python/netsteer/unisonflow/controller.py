"""The interconnect controller: packet-in -> decode -> module -> rules.

Pure, in the style of the controller core: :meth:`InterconnectController.handle`
is a function of the tag, the jobs' modules and the network state it is given;
:meth:`InterconnectController.decide` turns the driver's :class:`PacketIn` reports
into :class:`InstallTagRules` intents. It sends nothing and reads no clock.

A module that raises, or returns rules the network cannot hold, does not take the
controller down: the tag is routed by the default module (``ecmp``) and the failure
is reported (or, with ``on_failure="fail"``, the run stops with the error).

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from .fabric import Fabric
>>> from .modules import JobView
>>> from .tags import Tag
>>> f = Fabric(pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0))
>>> c = InterconnectController(f, {0: (JobView(0, {0: [0, 1, 2, 3]}), [{"module": "pin", "primitive": "bcast", "via": "s2_1"}])})
>>> d = c.handle(Tag("bcast", 0, 0, 0, 3).value())
>>> d.module, [f.name(r.switch) for r in d.rules], d.failed
('pin', ['s1_0', 's2_1', 's1_1'], None)
>>> c.handle(Tag("reduce", 0, 0, 0, 3).value()).module  # no module: the default
'ecmp'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..control.core import Controller, Inputs
from ..control.unanswered import Unanswered
from ..errors import NetsteerError
from . import modules as _modules
from .fabric import Fabric
from .modules import JobView, NetState, PrimitiveModule
from .rules import FlowRule, RuleError, check_rules
from .tags import TagError, decode, format_mac


@dataclass(frozen=True)
class PacketIn:
    """A frame matched no rule: ``switch`` sent it to the controller at ``at_ns``.
    ``flow`` is the simulator's flow (-1 elsewhere)."""

    at_ns: int
    switch: int
    mac: int
    flow: int = -1
    cause: str = "packet-in"


@dataclass(frozen=True)
class InstallTagRules:
    """Install ``rules`` for ``tag``; they take effect after the packet-in's round
    trip and the installation (the driver's delay model). No rules: the tag's
    traffic takes the default routing (``fallback`` says why)."""

    tag: int
    rules: tuple[FlowRule, ...]
    packet_in_ns: int
    module: str
    fallback: str | None = None


@dataclass(frozen=True)
class RulesGone:
    """The switches dropped a tag's rules (idle timeout, evicted for room)."""

    at_ns: int
    tag: int
    cause: str
    channels: tuple[int, ...] = ()


@dataclass(frozen=True)
class RulesInstalled:
    """A tag's rules took effect; ``channels`` are the links they send it over."""

    at_ns: int
    tag: int
    channels: tuple[int, ...] = ()
    cause: str = "rules-installed"


class Decision(NamedTuple):
    rules: tuple
    module: str
    failed: str | None


class InterconnectController(Controller):
    """Per job, one module per primitive; ``default`` serves the rest and failures.

    Parameters
    ----------
    fabric : Fabric
    jobs : dict
        ``job -> (JobView, [module specs])`` (specs: ``{module, primitive?, ...}``).
    default : str
        The module for primitives without one, and for failures.
    on_failure : {"fallback", "fail"}
    """

    name = "unisonflow"

    def __init__(self, fabric: Fabric, jobs: dict, default: str = "ecmp", on_failure: str = "fallback"):
        super().__init__()
        self.fabric, self.on_failure = fabric, on_failure
        self.state = NetState(fabric)
        self.jobs: dict[int, JobView] = {}
        self.modules: dict[int, dict[str, PrimitiveModule]] = {}
        self.defaults: dict[int, PrimitiveModule] = {}
        cls = _modules.REGISTRY.get(default)
        if cls is None:
            raise NetsteerError(f"unknown default module {default!r}", field="default")
        for j, (view, specs) in jobs.items():
            self.jobs[j] = view
            try:
                self.modules[j] = _modules.build(specs, fabric, view)
            except NetsteerError as exc:
                raise exc.located(prefix=f"jobs.{j}") from None
            try:
                self.defaults[j] = cls(fabric, view, "send")
            except NetsteerError as exc:  # the default module takes no options: name the key
                raise NetsteerError(f"default module {default}: {exc.reason}", field="default") from None
        self.packet_ins = 0
        self.rules_made = 0
        self.by_module: dict[str, int] = {}
        self.failures: list[dict[str, Any]] = []
        self.n_failures = 0
        self._capacity = None
        self._unanswered = Unanswered(fabric.topo, tors=())  # switches that did not answer the port counters
        self.dataplane = None  # a driver with tag tables: its counts join the report
        # how a run-time error is named to the user (a scenario names its file and its
        # fields as written there); by default the Python API's ``jobs.J.modules.I``
        self.locate = lambda exc: exc
        self.settings: dict | None = None  # the table model the run used (a scenario's)
        self.notes: list[str] = []  # said in the run's notes (a default taken)

    def handle(self, mac: int, now: int = 0) -> Decision:
        """Decide the rules for one packet-in's tag. Raises :class:`TagError` for a
        frame whose tag is not valid (unknown primitive, job, communicator, rank
        outside the communicator)."""
        self.packet_ins += 1
        self.state.now = now
        job = (mac >> 34) & 0x3F
        view = self.jobs.get(job)
        if view is None:
            raise TagError(f"{format_mac(mac)} names job {job}, which the controller does not run", field="job")
        comm = (mac >> 30) & 0xF
        hosts = view.comms.get(comm)
        if hosts is None:
            raise TagError(f"{format_mac(mac)} names communicator {comm}, which job {job} does not have", field="comm")
        tag = decode(mac, len(hosts))
        module = self.modules[job].get(tag.primitive)
        failed = None
        if module is not None:
            try:
                rules = module.rules(tag, self.state)
                if rules or not module.base_routing:  # no rules: the base routing forwards it
                    check_rules(rules, self.fabric, mac, module.name)
                rules = tuple(rules)
            except Exception as exc:  # a module's bug must not stop the controller
                reason = exc.message() if isinstance(exc, NetsteerError) else f"{type(exc).__name__}: {exc}"
                failed = f"module {module.name} failed for {format_mac(mac)} ({tag.primitive}): {reason}"
                if self.on_failure == "fail":
                    i = getattr(module, "spec_index", None)
                    field = f"jobs.{job}.modules" + ("" if i is None else f".{i}")
                    raise self.locate(RuleError(failed, field=field)) from None
                module = None
        if module is None:
            module = self.defaults[job]
            rules = tuple(module.rules(tag, self.state))
        self.rules_made += len(rules)
        self.by_module[module.name] = self.by_module.get(module.name, 0) + 1
        return Decision(tuple(rules), module.name, failed)

    def decide(self, inp: Inputs) -> list:
        out = []
        if inp.read_counters is not None and any(isinstance(ev, PacketIn) for ev in inp.changes):
            self._measure(inp)
        for ev in inp.changes:
            if isinstance(ev, RulesGone):
                for ch in ev.channels:
                    self.state.load[ch] = self.state.load.get(ch, 0) - 1
                continue
            if isinstance(ev, RulesInstalled):
                self.installed(ev.channels)
                continue
            if not isinstance(ev, PacketIn):
                continue
            try:
                d = self.handle(ev.mac, inp.now)
            except TagError as exc:
                if self.on_failure == "fail":
                    raise self.locate(TagError(f"undecodable tag: {exc.message()}", field="on_failure")) from None
                self._failed(ev, exc.message())
                out.append(InstallTagRules(ev.mac, (), ev.at_ns, "default", fallback=exc.message()))
                continue
            if d.failed:
                self._failed(ev, d.failed)
            out.append(InstallTagRules(ev.mac, d.rules, ev.at_ns, d.module, fallback=d.failed))
        return out

    def _measure(self, inp: Inputs) -> None:
        """Link utilization since the last reading, from the port counters (what
        a controller polls with port-stats requests before it places paths).

        A switch that did not answer (its readings NaN, missing) leaves its links'
        utilization as last measured, and they are measured over a longer window once
        it answers; the other links are measured as usual. ``Unanswered`` keeps count
        for the report and the notes."""
        c = inp.counters()
        if self._capacity is None:
            self._capacity = self.fabric.topo.channel_bandwidth() / 8.0
            self._last = (np.zeros(len(c.port_bytes), dtype=np.int64), np.zeros_like(c.port_bytes))
        self._unanswered.see(c)
        t0, b0 = self._last
        got = ~np.isnan(c.port_bytes) & (c.time_ns > t0)
        if not got.any():
            return
        util = np.zeros(len(b0)) if self.state.util is None else self.state.util.copy()
        util[got] = (c.port_bytes[got] - b0[got]) / ((c.time_ns - t0[got]) / 1e9) / self._capacity[got]
        self.state.util = util
        t0, b0 = t0.copy(), b0.copy()
        t0[got], b0[got] = c.time_ns, c.port_bytes[got]
        self._last = (t0, b0)

    def unplayed(self, end_ns: int) -> list[str]:
        """Notes for the switches that did not answer the port counters for a while."""
        return self.notes + self._unanswered.notes(
            "controller.unisonflow", end_ns,
            lambda spans: "the links without a reading kept the utilization last measured (idle if never "
                          "measured), the others were measured as usual")

    def installed(self, channels) -> None:
        """The driver reports the channels a tag's installed rules send it over."""
        for ch in channels:
            self.state.load[ch] = self.state.load.get(ch, 0) + 1

    def _failed(self, ev: PacketIn, reason: str) -> None:
        self.n_failures += 1
        if len(self.failures) < 20:  # the first ones say why; the count says how many
            self.failures.append({"at_s": ev.at_ns / 1e9, "tag": format_mac(ev.mac), "reason": reason})

    def report(self) -> dict[str, Any]:
        out = {"packet_ins": self.packet_ins, "rules": self.rules_made, "by_module": dict(self.by_module),
               "failures": self.n_failures, "failed": list(self.failures)}
        if self.settings is not None:
            out["settings"] = dict(self.settings)
        unanswered = self._unanswered.report()
        if unanswered is not None:
            out["unanswered"] = unanswered
        stats = getattr(self.dataplane, "stats", None)
        if stats is not None:
            out["tables"] = dict(stats)
            out["refusals"] = list(getattr(self.dataplane, "refusals", []))
        return out
