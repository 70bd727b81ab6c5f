"""The ``openflow`` driver: the controller core on real OpenFlow switches.

It implements the driver protocol of :mod:`netsteer.control.driver` on the wall
clock (``now`` is nanoseconds since the driver started). An intent becomes the
wanted table of each switch it touches (:mod:`.flows`); the difference to the
table in force goes out as one bundle per switch, to all switches at once (a
thread each). If any switch refuses its bundle or does not answer, the switches
that committed get the reverse difference (rollback to the last good tables) and
the intent is reported failed with the switch's words. Any exception counts as a
failed switch, not only a refusal. A switch that failed is marked stale and
re-synchronised with its whole table when it answers again (every ``advance``);
a change that reaches it before then also gives it its whole table, never a
diff against a table it may not hold.

A circuit switch that re-pairs ports loses the moved ports' flows at once (dark)
and gets the new ones after its switching time: the crossbar's dark period. If
the switch does not take them then, the links stay down (nothing is reported up
that does not forward), the failure is recorded (``applied``,
``failed_effects``), and its re-synchronisation lights them and reports them up.

A committed bundle is in the switch's tables, not yet in its data plane: Open
vSwitch keeps forwarding by its cached datapath flows until its revalidators,
which run apart from the OpenFlow channel, catch up. A change counts as done only
after ``settle`` (the testbed's :meth:`~netsteer.emulate.testbed.Testbed.settle`)
put it in force, so make-before-break's step 2 never breaks a circuit that cached
flows still send into.

Counters a switch did not give (a failed statistics request) are NaN, missing,
never 0; the controllers skip what is missing and report which switch did not
answer (:mod:`netsteer.control.unanswered`).

Link failures come from the switches themselves: every ``link_poll_s`` (and at
start) the driver reads each switch's port descriptions (``port_state``: a port is
down when OpenFlow says ``OFPPS_LINK_DOWN`` or ``OFPPC_PORT_DOWN``). A link with a
switch end whose port is down has **failed**; it is repaired when every switch end
that answered says up again. A switch that does not answer tells nothing: its
ports keep their last known state (a silent switch is not a failure of its links).
Failed and **dark** (a circuit switch moving the port) are two facts kept apart, as
the simulator's driver keeps them: a failure or a repair is reported as
``NetworkChanged(now, "links", links, up)``, ``view().failed_links`` holds the
failed ones, and a circuit that lights never brings a failed cable up (it stays
down until its port is up again), nor does a repair end a switching.
"""

from __future__ import annotations

import heapq
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from ...control.driver import Applied, Counters, NetworkChanged, NetworkView, superseded
from ...control.intents import PushRules, RemoveRules, SetCircuits, TagPorts
from ...sim.network import CircuitState
from .flows import COUNT, HybridLayout, HybridState, Table, diff, ocs_table, switch_table, tor_table
from .switch import SwitchError, run_per_switch


class OpenFlowDriver:
    """Drive OpenFlow switches through intents, on the wall clock.

    Parameters
    ----------
    topo : Topology
        A hybrid topology; its switch nodes are the switches.
    layout : HybridLayout
        Ports and the electrical base routing (:meth:`HybridLayout.of`).
    switches : dict
        Switch node -> an object with ``bundle(lines)``, ``replace(flows, groups)``,
        ``port_bytes()`` and ``flow_bytes(table)`` (:class:`.switch.OfctlSwitch`).
    initial : (pairings, rules, tags)
        The forwarding in force at start (``HybridController.initial_state()``).
    end_s : float
        When the run ends (``advance`` returns ``"done"``).
    clock : callable, optional
        Monotonic nanoseconds (tests pass a fake one).
    byte_scale : float
        Counters are multiplied by it: an emulated network whose rates are the
        topology's times ``s`` reports bytes times ``1 / s``, so that a controller
        comparing them with the topology's bandwidths sees the utilisation the
        links really have.
    settle : callable, optional
        Called after bundles committed: returns once the switches forward by their
        new tables (module text). Default: nothing to wait for.
    link_poll_s : float
        How often ``advance`` reads the switches' port states (module text): a
        failure is seen at most this long after the port went down (plus the read).
        A switch object without ``port_state`` tells no link state.
    """

    def __init__(self, topo, layout: HybridLayout, switches: dict, initial=None, *, end_s: float,
                 clock: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], None] = time.sleep,
                 byte_scale: float = 1.0, settle: Callable[[], None] = lambda: None, link_poll_s: float = 0.1):
        self.topo, self.layout, self.switches = topo, layout, dict(switches)
        self.settle = settle
        self.byte_scale = byte_scale
        self.clock, self.sleep = clock, sleep
        self.end_ns = int(end_s * 1e9)
        self.state = HybridState()
        self.circuits = CircuitState.empty(topo)
        if initial is not None:
            pairings, rules, tags = initial
            self.state.rules[1] = {(r.src, r.dst): r for r in rules}
            self.state.tags = {k: frozenset(v) for k, v in tags.items()}
            for sw, pairs in pairings.items():
                self.state.pairing[int(sw)] = tuple(pairs)
                self.circuits.pair(int(sw), [tuple(p) for p in pairs])
        self.tables: dict[int, Table] = {}
        self.stale: set[int] = set()
        # two facts per link, kept apart (module text): failed (a switch end's port is
        # down) and dark (its circuit switch is moving it; until the move lights it)
        self.failed: set[int] = set()
        # dark link -> the seq of the pending light that lights it: the last circuit
        # command that moved it (an earlier one's timer must not light it)
        self._dark: dict[int, int] = {}
        self.link_changes: list[dict] = []  # every failure and repair seen: at_s, links, up
        if not link_poll_s > 0:
            raise ValueError(f"link_poll_s must be above 0, got {link_poll_s!r}")
        self.link_poll_ns = int(link_poll_s * 1e9)
        # switch -> {port: link} of the links with an end on it; (switch, port) -> up
        self._port_link: dict[int, dict[int, int]] = {}
        for link in range(topo.n_links):
            for node, port in ((topo.link_a[link], topo.link_a_port[link]), (topo.link_b[link], topo.link_b_port[link])):
                if int(node) in self.switches:
                    self._port_link.setdefault(int(node), {})[int(port)] = link
        self._port_up: dict[tuple[int, int], bool] = {}
        self.applied: list[Applied] = []
        self.failed_effects: list[Applied] = []  # effects after apply() answered (a circuit not lit)
        self.pushes: list[dict] = []  # per apply: what went to how many switches, how long it took
        self._reports: list[NetworkChanged] = []
        self._pending: list = []  # (time_ns, seq, switch, pairs, dark links, intent)
        # circuit switch -> (pairs, dark links, intent) of circuits whose light failed:
        # dark and reported down until a resync gives the switch its lit table
        self._unlit: dict[int, tuple] = {}
        self._superseded: dict[int, dict] = {}  # seq -> {"at": ns, "links": set}: links moved again
        # circuit switch -> the pairs last commanded (lit or not): a light puts those
        # of them in force that no later move holds dark
        self._commanded: dict[int, tuple] = {sw: tuple(p) for sw, p in self.state.pairing.items()}
        self._lights = 0  # circuit changes that came up (advance says "changed")
        self._seq = 0
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(16, len(self.switches))))
        self._base_port: dict[int, dict[int, tuple[int, int]]] = {}
        self._pair_base = None
        self._t0 = clock()
        self.install_all()
        self.poll_links()
        self._next_poll = clock() + self.link_poll_ns  # on the clock, not ``now`` (its origin may move)

    # -- tables -------------------------------------------------------------------

    def wanted(self, node: int, state: HybridState | None = None) -> Table:
        state = state or self.state
        if node in self.layout.tors:
            return tor_table(self.layout, state, node)
        if node in self.layout.ocs:
            return ocs_table(state.pairing.get(node, ()))
        return switch_table(self.layout, node)

    def install_all(self) -> None:
        """Give every switch its whole table (start-up)."""
        nodes = sorted(self.switches)
        tables = {n: self.wanted(n) for n in nodes}
        errors = self._parallel({n: (lambda n=n: self.switches[n].replace(tables[n].flow_lines(), tables[n].group_lines()))
                                 for n in nodes})
        if errors:
            raise SwitchError("; ".join(errors.values()))
        self.settle()
        self.tables = tables

    def _parallel(self, jobs: dict[int, Callable[[], None]]) -> dict[int, str]:
        """Run one job per switch at once; returns {switch: error} of those that failed
        (:func:`.switch.run_per_switch`)."""
        return run_per_switch(self._pool, jobs)

    def _push(self, new_state: HybridState, nodes: list[int]) -> str | None:
        """Move ``nodes`` to their tables under ``new_state``, all or none.

        A switch known to be stale gets its whole table (``replace``), not a diff
        against a table it may not hold: a diff's ``group add`` of a group a late
        commit already made is refused (``OFPGMFC_GROUP_EXISTS``)."""
        new = {n: self.wanted(n, new_state) for n in nodes}
        diffs = {n: diff(self.tables[n], new[n]) for n in nodes}
        diffs = {n: d for n, d in diffs.items() if d}
        whole = {n for n in diffs if n in self.stale}
        t0 = self.clock()
        errors = self._parallel({n: self._job(n, new[n], None if n in whole else diffs[n]) for n in diffs})
        if diffs:
            self.settle()  # in force, not only committed: what a rollback leaves in force too
        push_ns = self.clock() - t0
        self.pushes.append({"at_s": (t0 - self._t0) / 1e9, "switches": len(diffs),
                            "flow_mods": sum(len(d) for d in diffs.values()), "push_s": push_ns / 1e9,
                            "failed": sorted(errors)})
        if not errors:
            self.tables.update({n: new[n] for n in diffs})
            self.stale.difference_update(whole)
            return None
        # roll the switches that committed back to their last good tables (whole
        # tables where they had them whole)
        done = [n for n in diffs if n not in errors]
        back = self._parallel({n: self._job(n, self.tables[n], None if n in whole else diff(new[n], self.tables[n]))
                               for n in done})
        if done:
            self.settle()
        self.stale.difference_update(n for n in whole if n not in errors and n not in back)
        self.stale.update(errors)
        self.stale.update(back)
        names = self.topo.node_names
        msg = "; ".join(f"{names[n]}: {e}" for n, e in sorted(errors.items()))
        if back:
            msg += "; rollback failed on " + ", ".join(names[n] for n in sorted(back))
        return msg + " (rolled back: last good configuration kept)"

    def _job(self, node: int, table: Table, lines: list[str] | None) -> Callable[[], None]:
        """What gives ``node`` ``table``: the bundle ``lines``, or (None) the whole table."""
        sw = self.switches[node]
        if lines is None:
            return lambda: sw.replace(table.flow_lines(), table.group_lines())
        return lambda: sw.bundle(lines)

    def resync(self) -> list[int]:
        """Give stale switches their whole table again; returns those that took it.

        A circuit switch whose circuits failed to light gets the lit table (the
        circuits the controller asked for), and its links are reported up once it
        took it: the dark table would put a circuit that may have lit dark again."""
        if not self.stale:
            return []
        nodes = sorted(self.stale)
        want = {n: self.wanted(n, self._lit_state(n)) if n in self._unlit else self.tables[n] for n in nodes}
        errors = self._parallel({n: self._job(n, want[n], None) for n in nodes})
        ok = [n for n in nodes if n not in errors]
        if ok:
            self.settle()
        self.stale.difference_update(ok)
        for n in ok:
            self.tables[n] = want[n]
            if n in self._unlit:
                pairs, dark, _ = self._unlit.pop(n)
                self.state.pairing[n] = pairs
                self._lit(dark)
        return ok

    # -- the driver protocol ----------------------------------------------------------

    @property
    def now(self) -> int:
        return self.clock() - self._t0

    @property
    def down(self) -> set[int]:
        """Links that carry no traffic now: failed, or dark while their circuit switches."""
        return self.failed | set(self._dark)

    def view(self) -> NetworkView:
        return NetworkView(self.now, frozenset(self.down), {n: p.copy() for n, p in self.circuits.pairing.items()},
                           failed_links=frozenset(self.failed))

    def poll_links(self) -> bool:
        """Read every switch's port states; report the links that failed or came back.
        Returns whether any did (module text)."""
        jobs, got = {}, {}
        for n in sorted(self._port_link):
            read = getattr(self.switches[n], "port_state", None)
            if read is not None:
                jobs[n] = (lambda n=n, read=read: got.__setitem__(n, read()))
        if not jobs:
            return False
        silent = self._parallel(jobs)
        for n, ports in got.items():
            if n in silent:
                continue  # a half-read switch tells nothing
            for port in self._port_link[n]:
                # a port the switch no longer has carries nothing
                self._port_up[(n, port)] = bool(ports.get(port, False))
        failed = {self._port_link[n][port] for (n, port), up in self._port_up.items() if not up}
        now = self.now
        gone, back = sorted(failed - self.failed), sorted(self.failed - failed)
        self.failed = failed
        for links, up in ((gone, False), (back, True)):
            if links:
                self.link_changes.append({"at_s": now / 1e9, "links": links, "up": up})
                with self._lock:
                    self._reports.append(NetworkChanged(now, "links", tuple(links), up))
        return bool(gone or back)

    def reports(self) -> list[NetworkChanged]:
        # the controller reads reports before it decides: what took effect while it
        # pushed (a circuit that lit) must be in force before it moves on
        self._due()
        with self._lock:
            out, self._reports = self._reports, []
        return out

    def idle(self) -> bool:
        return False  # real traffic runs until the end whatever the controller does

    def next_effect(self) -> int | None:
        return self._pending[0][0] if self._pending else None

    def advance(self, until: int | None) -> str:
        """Sleep until ``until``, the next circuit lighting up, a link failing or
        coming back (the port states are read every ``link_poll_s`` meanwhile), or the end."""
        target = self.end_ns if until is None else min(until, self.end_ns)
        if self._pending:
            target = min(target, self._pending[0][0])
        links = False
        while True:
            wake = min(target, self._next_poll - self._t0)
            delay = wake - self.now
            if delay > 0:
                self.sleep(delay / 1e9)
            if self.clock() >= self._next_poll:
                links = self.poll_links()
                self._next_poll = self.clock() + self.link_poll_ns
            if links or self.now >= target:
                break
        lit = self._lights
        self.resync()
        self._due()
        if self._lights != lit or links:  # circuits came up (a circuit that failed to light did not), links changed
            return "changed"
        return "done" if self.now >= self.end_ns else "until"

    def _due(self) -> None:
        """Bring in the effects whose time has come (circuits lighting up)."""
        while self._pending and self._pending[0][0] <= self.now:
            _, seq, sw, _pairs, dark, intent = heapq.heappop(self._pending)
            self._light(sw, seq, dark, intent)

    def apply(self, intent) -> Applied:
        now = self.now
        failed = None
        done = now
        try:
            if isinstance(intent, SetCircuits):
                failed, done = self._set_circuits(intent, now)
            elif isinstance(intent, (PushRules, RemoveRules, TagPorts)):
                new, nodes = self._next_state(intent)
                failed = self._push(new, nodes)
                if failed is None:
                    self.state = new
                done = self.now
            else:
                failed = f"the openflow driver cannot apply {type(intent).__name__}"
        except ValueError as exc:
            failed = str(exc)
        a = Applied(intent, now, max(done, now), failed)
        self.applied.append(a)
        return a

    def counters(self) -> Counters:
        """Port tx bytes per channel and rack-pair bytes from the ToRs' counter flows.

        A switch that does not answer leaves its readings NaN (missing), not 0: a
        cumulative counter read as 0 would make a negative rate now and a spike at
        the next poll (the controllers skip a sample with missing readings)."""
        nodes = sorted(self.switches)
        ports: dict[int, dict] = {}
        flows: dict[int, dict] = {}

        def read(n):
            ports[n] = self.switches[n].port_bytes()
            if n in self.layout.tors:
                flows[n] = self.switches[n].flow_bytes(COUNT)

        failed = self._parallel({n: (lambda n=n: read(n)) for n in nodes})
        for n in failed:  # a half-read switch counts as unread
            ports.pop(n, None)
            flows.pop(n, None)
        t = self.topo
        out = np.zeros(t.n_channels)
        src, sport, dst, dport = t.channel_src(), t.channel_src_port(), t.channel_dst(), t.channel_dst_port()
        for c in range(t.n_channels):
            s, d = int(src[c]), int(dst[c])
            if s in failed or (s not in self.switches and d in failed):
                out[c] = np.nan
            elif s in ports and int(sport[c]) in ports[s]:
                out[c] = ports[s][int(sport[c])][1]  # tx of the sending switch port
            elif d in ports and int(dport[c]) in ports[d]:
                out[c] = ports[d][int(dport[c])][0]  # a host's NIC: rx at the switch
        lay = self.layout
        pairs = np.zeros((lay.racks, lay.racks))
        for tor in failed:
            if tor in lay.tors:
                pairs[lay.rack_of_tor(tor)] = np.nan
        for tor, fl in flows.items():
            a = lay.rack_of_tor(tor)
            for match, n in fl.items():
                for b in range(lay.racks):
                    if f"nw_dst={_net(b)}" in match and f"nw_src={_net(a)}" in match:
                        pairs[a, b] += n
        return Counters(self.now, out * self.byte_scale, pairs * self.byte_scale)

    # -- intents ------------------------------------------------------------------------

    def _next_state(self, intent):
        lay = self.layout
        new = self.state.copy()
        if isinstance(intent, TagPorts):
            nodes = set()
            for tor, port, vlans in intent.ports:
                if int(tor) not in lay.tors:
                    raise ValueError(f"{self.topo.node_names[int(tor)]} is not a ToR")
                new.tags[(int(tor), int(port))] = frozenset(vlans)
                nodes.add(int(tor))
            return new, sorted(nodes)
        pairs = [(r.src, r.dst) for r in intent.rules] if isinstance(intent, PushRules) else list(intent.pairs)
        for a, b in pairs:
            for x in (a, b):
                if not 0 <= x < lay.racks:
                    raise ValueError(f"rack {x} does not exist: the network has racks 0..{lay.racks - 1}")
        table = new.rules.setdefault(intent.priority, {})
        if isinstance(intent, PushRules):
            for r in intent.rules:
                table[(r.src, r.dst)] = r
        else:
            for p in pairs:
                table.pop(tuple(p), None)
        nodes = sorted({lay.tors[a] for a, _ in pairs})
        extra = getattr(intent, "extra", 0)
        if extra:
            targets = nodes or [lay.tors[0]]
            each = -(-extra // len(targets))
            for tor in targets:
                gen = new.extra.get(tor, (0, 0))[1] + 1
                new.extra[tor] = (each, gen)
            nodes = sorted(set(nodes) | set(targets))
        return new, nodes

    def _set_circuits(self, intent: SetCircuits, now: int):
        sw = int(intent.switch)
        if sw not in self.circuits.pairing or sw not in self.switches:
            return f"node {sw} is not a circuit switch", now
        trial = self.circuits.copy()
        try:
            moved = trial.pair(sw, [tuple(p) for p in intent.pairs])
        except ValueError as exc:
            return f"{self.topo.node_names[sw]}: {exc}", now
        # dark: the moved ports lose their flows; the pairs that stay keep theirs,
        # unless an earlier command's switching still holds them dark
        dark = set(_port_links(self.topo, sw, moved))
        if sw in self._unlit:
            # this change replaces circuits that never lit: their links come up with its own
            dark |= set(self._unlit[sw][1])
        new = self.state.copy()
        new.pairing[sw] = self._active_pairs(sw, intent.pairs, dark | set(self._dark))
        failed = self._push(new, [sw])
        if failed is not None:
            return failed, now
        self._unlit.pop(sw, None)
        self.state, self.circuits = new, trial
        self._commanded[sw] = tuple(tuple(p) for p in intent.pairs)
        dark = tuple(sorted(dark))
        lit_at = now + int(self.topo.switching_time_ns.get(sw, 0))
        me = self._seq
        for x in dark:
            before = self._dark.get(x)
            if before is not None:
                # an earlier command's ports move again before they lit: its timer
                # must not light them; its record says so (_supersede)
                self._supersede(before, x, now)
            self._dark[x] = me
        with self._lock:
            self._reports.append(NetworkChanged(now, "circuits", dark, False))
        heapq.heappush(self._pending, (lit_at, me, sw, tuple(tuple(p) for p in intent.pairs), dark, intent))
        self._seq += 1
        return None, lit_at

    def _active_pairs(self, sw: int, pairs, dark) -> tuple:
        """The pairs of ``pairs`` that forward: those with no link in ``dark``."""
        return tuple(tuple(p) for p in pairs if not set(_port_links(self.topo, sw, p)) & set(dark))

    def _supersede(self, seq: int, link: int, now: int) -> None:
        """Link ``link`` of pending light ``seq`` moved again before it lit: that
        command's record says so (partly, or never in effect once none of its links
        is left to light)."""
        gone = self._superseded.setdefault(seq, {"at": now, "links": set()})
        gone["links"].add(link)

    def _light(self, sw: int, seq: int, dark, intent) -> None:
        """The switching time is over: the new circuits get their flows and come up,
        but for links a later command moved again (they wait for its light).

        If the switch does not take them, they stay dark and down (nothing is
        reported up that does not forward), the failure is recorded as the intent's
        (``applied``), and the switch's re-synchronisation lights them (:meth:`resync`).
        """
        mine = tuple(x for x in dark if self._dark.get(x) == seq)
        self._mark_superseded(seq, intent, bool(mine))
        if not mine:
            return  # every link moved again: the later command lights them
        still = {x for x, s in self._dark.items() if s != seq}
        pairs = self._active_pairs(sw, self._commanded[sw], still)
        dark = mine
        new = self.state.copy()
        new.pairing[sw] = pairs
        failed = self._push(new, [sw])
        if failed is not None:
            self._unlit[sw] = (pairs, dark, intent)
            self.stale.add(sw)  # also when the rollback worked: the resync lights it
            now = self.now
            a = Applied(intent, now, now, f"circuits not lit: {failed}")
            self.applied.append(a)
            self.failed_effects.append(a)
            return
        self.state = new
        self._lit(dark)

    def _mark_superseded(self, seq: int, intent, lit_some: bool) -> None:
        """The record of circuit command ``seq`` (``intent``), if a later command moved
        some of its links again before they lit (as the simulator's driver says it)."""
        gone = self._superseded.pop(seq, None)
        if gone is None:
            return
        for i, a in enumerate(self.applied):
            if a.intent is intent:
                self.applied[i] = superseded(a, gone["at"], gone["links"], f"{gone['at'] / 1e9:.3f} s", lit_some)
                break

    def _lit_state(self, sw: int) -> HybridState:
        """The state with ``sw``'s unlit circuits in force (what its resync installs)."""
        new = self.state.copy()
        new.pairing[sw] = self._unlit[sw][0]
        return new

    def _lit(self, dark) -> None:
        """The circuits came up: their links are no longer dark, and those whose cable
        has not failed are reported up (a failed one stays down until its port is up)."""
        self._lights += 1
        for x in dark:
            self._dark.pop(x, None)
        up = tuple(x for x in dark if x not in self.failed)
        if up:
            with self._lock:
                self._reports.append(NetworkChanged(self.now, "circuits", up, True))

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _net(rack: int) -> str:
    from .flows import rack_net
    return rack_net(rack)


def _port_links(topo, node: int, ports) -> list[int]:
    ch = [int(topo.out_channel[node, p]) for p in sorted(ports) if p < topo.out_channel.shape[1]]
    return sorted({c // 2 for c in ch if c >= 0})
