"""The controller core: pure decision logic, in the style of faucet's ``Valve``.

A controller is given ``now``, the network view, the measurements and what the
driver reported, and returns intents. It sends nothing and reads no clock, so the
same controller runs against the simulator's clock and against real switches.

Several controllers run together as a :class:`ControllerStack` (scripted events,
the re-route policy, the hybrid circuit controller...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import NetsteerError
from .driver import Applied, Counters, NetworkChanged, NetworkView
from .intents import InstallRouting, Intent


@dataclass
class Inputs:
    """What a controller decides on at one instant.

    ``counters`` is read from the driver only if a controller asks (``poll``),
    as a real controller polls switches only when it needs to.
    """

    now: int
    view: NetworkView
    changes: list[NetworkChanged] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    read_counters: Callable[[], Counters] | None = None
    _counters: Counters | None = None

    def counters(self) -> Counters:
        if self._counters is None:
            if self.read_counters is None:
                raise RuntimeError("no counters here")
            self._counters = self.read_counters()
        return self._counters


class Controller:
    """A controller that decides nothing; subclasses override :meth:`decide`."""

    name = "controller"

    def __init__(self) -> None:
        # what it did and why, for reports: dicts with at least "at_s" and "what"
        self.history: list[dict[str, Any]] = []

    def next_wakeup(self, now: int) -> int | None:
        """The next instant (> now) this controller wants to decide at, if any."""
        return None

    def next_scheduled(self, now: int) -> int | None:
        """The next wakeup that may change the network whatever the traffic does
        (a scripted change); polling controllers return None."""
        return self.next_wakeup(now)

    def decide(self, inp: Inputs) -> list[Intent]:
        return []

    def report(self) -> dict[str, Any] | None:
        """A JSON-able summary for the run's result, or None."""
        return None

    def unplayed(self, end_ns: int) -> list[str]:
        """Notes for the scripted actions (changes, requests) the run ended before:
        a user who mistyped a time hears of it instead of a silent no-op; and for
        what else the run's notes should say (switches that stayed silent to counter
        readings: :mod:`netsteer.control.unanswered`)."""
        return []


class ControllerStack(Controller):
    """Several controllers deciding together, in order."""

    name = "stack"

    def __init__(self, controllers: list[Controller]):
        super().__init__()
        self.controllers = [c for c in controllers if c is not None]

    def next_wakeup(self, now: int) -> int | None:
        times = [t for c in self.controllers if (t := c.next_wakeup(now)) is not None]
        return min(times) if times else None

    def next_scheduled(self, now: int) -> int | None:
        times = [t for c in self.controllers if (t := c.next_scheduled(now)) is not None]
        return min(times) if times else None

    def decide(self, inp: Inputs) -> list[Intent]:
        return [i for c in self.controllers for i in c.decide(inp)]

    @property
    def all_history(self) -> list[dict[str, Any]]:
        return sorted((h for c in self.controllers for h in c.history), key=lambda h: h["at_s"])

    def report(self) -> dict[str, Any] | None:
        parts = {c.name: r for c in self.controllers if (r := c.report()) is not None}
        return parts or None

    def unplayed(self, end_ns: int) -> list[str]:
        return [n for c in self.controllers for n in c.unplayed(end_ns)]


# a routing, or a function of (down_links, circuits) that builds one
RoutingFactory = Callable[[frozenset, dict], Any]


def build_from(source, view: NetworkView):
    """A routing from a routing object or a factory, for the network in ``view``."""
    return source(view.down_links, view.circuits) if callable(source) else source


class ReplayController(Controller):
    """Scripted changes: ``steps`` are ``(time_ns, intent)``, or ``(time_ns, routing
    or routing factory)`` for a routing built from the network as it is then.

    A step may carry a third item, where it comes from (``"events.3"``): the run's
    notes name the steps it ended before by it (:meth:`unplayed`).

    ``policy``, when given, is the :class:`ReroutePolicy` that handles the link and
    circuit changes after a played routing factory: it adopts the factory, so the
    engine a scripted routing change put in force also re-routes later changes.

    A link change that changes nothing (a ``link_down`` of a link the steps already took
    down, a ``link_up`` of one they did not) is dropped, with a note and a history entry
    (``ignored``): it would have logged a change and re-routed every flow for nothing.
    ``topo`` (the topology) names links and switches in those notes. A circuit change
    due to take effect after the run ended is noted too.

    >>> from netsteer.control.intents import SetLinks
    >>> r = ReplayController([(10, SetLinks((1,), up=False)), (50, SetLinks((1,), up=True), "events.1")])
    >>> r.next_wakeup(0), r.decide(Inputs(10, NetworkView(10, frozenset())))
    (10, [SetLinks(links=(1,), up=False)])
    >>> r.next_wakeup(10)
    50
    >>> print(r.unplayed(40)[0])  # doctest: +NORMALIZE_WHITESPACE
    events.1: the link_up at 50 ns was not played: the run ended before, at 40 ns
    (is the time in the right unit?)
    >>> r = ReplayController([(0, SetLinks((1, 2), up=False)), (5, SetLinks((2, 3), up=False), "events.1")])
    >>> r.decide(Inputs(0, NetworkView(0, frozenset()))), r.decide(Inputs(5, NetworkView(5, frozenset())))
    ([SetLinks(links=(1, 2), up=False)], [SetLinks(links=(3,), up=False)])
    >>> print(r.unplayed(9)[0])  # doctest: +NORMALIZE_WHITESPACE
    events.1: the link_down at 5 ns left link 2 as it was (already down): that part changed nothing
    and re-routed nothing
    """

    name = "replay"

    def __init__(self, steps: list[tuple], policy: ReroutePolicy | None = None, topo=None):
        super().__init__()
        # (time, what, where from); sorted stably: steps at one instant play in the given order
        self.steps = sorted(((s[0], s[1], s[2] if len(s) > 2 else None) for s in steps), key=lambda s: s[0])
        self._next = 0
        self.policy = policy
        self.topo = topo
        self._down: set[int] = set()  # links the steps took down and none brought back
        self._notes: list[str] = []  # link changes that changed nothing
        self._circuits: list[tuple] = []  # (intent, where) of the circuit changes sent
        self._lit: list[tuple] = []  # (where, Applied) of those: when each takes effect

    def next_wakeup(self, now: int) -> int | None:
        return self.steps[self._next][0] if self._next < len(self.steps) else None

    def decide(self, inp: Inputs) -> list[Intent]:
        from .intents import SetCircuits, SetLinks

        for a in inp.applied:  # the driver says when a circuit change it was sent takes effect
            self._lit += [(where, a) for intent, where in self._circuits if a.intent is intent]
        out = []
        while self._next < len(self.steps) and self.steps[self._next][0] <= inp.now:
            t, what, where = self.steps[self._next]
            self._next += 1
            if isinstance(what, SetLinks):
                what = self._links(what, inp.now, where)
                if what is not None:
                    out.append(what)
                continue
            if isinstance(what, Intent.__args__):
                if isinstance(what, SetCircuits):
                    self._circuits.append((what, where))
                out.append(what)
                continue
            try:
                out.append(InstallRouting(build_from(what, inp.view), reason="scripted"))
            except NetsteerError as exc:
                self.history.append(
                    {"at_s": inp.now / 1e9, "what": "routing", "failed": f"reconfiguration failed, last good routing kept: {exc.message()}"}
                )
                continue
            if self.policy is not None and callable(what):
                self.policy.adopt(what)  # the engine in force handles the next link change
        return out

    def _links(self, what, now: int, where: str | None):
        """``what`` without the links already in the state it asks for (None: nothing
        left); the links dropped are noted."""
        from ..units import format_seconds
        from .intents import SetLinks

        links = tuple(dict.fromkeys(int(x) for x in what.links))
        same = [x for x in links if (x in self._down) != what.up]  # already down / never taken down
        (self._down.difference_update if what.up else self._down.update)(links)
        if same:
            names = ", ".join(self.topo.link_name(x) if self.topo is not None else str(x) for x in same)
            state = "already down" if not what.up else "up: no event took it down"
            note = (f"{where or 'a scripted change'}: the {_step_kind(what)} at {format_seconds(now / 1e9)} left "
                    f"{'link' if len(same) == 1 else 'links'} {names} as {'it was' if len(same) == 1 else 'they were'}"
                    f" ({state}): {'it' if len(same) == len(links) else 'that part'} changed nothing and re-routed "
                    "nothing")
            self._notes.append(note)
            self.history.append({"at_s": now / 1e9, "what": "links", "ignored": note})
        rest = tuple(x for x in links if x not in same)
        return SetLinks(rest, what.up) if rest else None

    def unplayed(self, end_ns: int) -> list[str]:
        """Notes for the steps the run ended before, the link changes that changed
        nothing, and the circuit changes due to take effect after the end. The run ends
        when its last flow does: a step due at that very instant is not played either
        (it would change nothing)."""
        from ..units import format_seconds

        end = format_seconds(end_ns / 1e9)
        out = list(self._notes)
        sw = (lambda n: self.topo.node_names[n]) if self.topo is not None else str
        out += [f"{where or 'a scripted change'}: the circuit change of {sw(a.intent.switch)} at "
                f"{format_seconds(a.at_ns / 1e9)} would have taken effect at {format_seconds(a.done_ns / 1e9)} "
                f"(the switching time), after the run ended at {end}: its circuits never carried traffic"
                for where, a in self._lit if a.failed is None and a.done_ns > end_ns]
        out += [f"{where or 'a scripted change'}: the {_step_kind(what)} at {format_seconds(t / 1e9)} was not "
                "played: " + ("the run ended at that instant (its last flow finished), when a change affects "
                              "nothing" if t <= end_ns else f"the run ended before, at {end} (is the time in the "
                              "right unit?)") for t, what, where in self.steps[self._next:]]
        return out


def _step_kind(what) -> str:
    """A scripted step as the scenario's ``events:`` name it."""
    from .intents import SetCircuits, SetLinks

    if isinstance(what, SetLinks):
        return "link_up" if what.up else "link_down"
    if isinstance(what, SetCircuits):
        return "circuit"
    return "routing" if callable(what) or not isinstance(what, Intent.__args__) else type(what).__name__


class ReroutePolicy(Controller):
    """Re-route every flow when links change (the default controller's policy).

    A factory with a ``static_engine`` attribute (the engine's name: it builds the same
    tables whatever links are down) is not called on link changes; the history says
    the tables are kept.

    Parameters
    ----------
    on_links : callable(down_links, circuits) -> Routing, optional
        Builds the routing after links go down or up (None: do not react).
    on_circuits : callable, optional
        The same after circuit switches move (dark ports) and light their ports.
    """

    name = "reroute"

    def __init__(self, on_links: RoutingFactory | None = None, on_circuits: RoutingFactory | None = None):
        super().__init__()
        self.factories = {"links": on_links, "circuits": on_circuits}

    def adopt(self, factory: RoutingFactory) -> None:
        """Re-route with ``factory`` from now on (a scripted routing change put its engine
        in force); a cause this policy does not react to stays off.

        >>> p = ReroutePolicy(on_links=lambda down, circuits: "minhop")
        >>> p.adopt(lambda down, circuits: "dmodk")
        >>> p.factories["links"](frozenset(), {}), p.factories["circuits"]
        ('dmodk', None)
        """
        for cause, current in self.factories.items():
            if current is not None:
                self.factories[cause] = factory

    def decide(self, inp: Inputs) -> list[Intent]:
        wanted = [c for c in inp.changes if self.factories.get(c.cause) is not None]
        if not wanted:
            return []
        cause = wanted[-1].cause
        static = getattr(self.factories[cause], "static_engine", None)
        if static and cause == "links":
            # the engine ignores links that are down: a re-route would install the same tables
            self.history.append({"at_s": inp.now / 1e9, "what": "routing", "kept": (
                f"links changed; the {static} tables are static in netsteer and kept as they are (flows "
                "on a down link wait for it to come back); an SM such as OpenSM would compute them again "
                "without the link at the heavy sweep the change triggers")})
            return []
        try:
            routing = self.factories[cause](inp.view.down_links, inp.view.circuits)
        except NetsteerError as exc:
            self.history.append(
                {"at_s": inp.now / 1e9, "what": "routing", "failed": f"reconfiguration failed, last good routing kept: {exc.message()}"}
            )
            return []
        return [InstallRouting(routing, reason=f"{cause} changed")]
