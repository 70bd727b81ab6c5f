"""UnisonFlow's reactive path on real switches: packet-in -> decode -> module -> rules.

The switches start with the default routing (:func:`.fabric_routes.notify_tables`):
true host MACs by ECMP and, for any other IPv4 frame (a tag), one rule that sends
its headers to the controller *and* forwards the frame by ECMP on the tag's
destination rank, writing the true MAC back at the last switch. A host's tag
writer gives every MPI frame a tag as its destination MAC, so the first frames of
each (primitive, communicator, source, destination) tell the controller. The
os-ken application forwards those packet-ins; :class:`ReactiveTags` decodes the
tag, asks the interconnect controller
(:class:`netsteer.unisonflow.controller.InterconnectController`, the same object
the simulator drives) for the module's rules and installs them on every switch of
the path in one bundle per switch (all switches at once), above the default. No
frame waits for the controller or is lost meanwhile; a tag moves onto its
module's path when its rules land. A switch that keeps telling about a tag the
module gave it no rule for gets a quiet rule (the default routing, no copy).

Packet-ins from other rules (a miss rule that only sends to the controller,
``cookie`` other than :data:`.fabric_routes.NOTIFY_COOKIE`) are sent back through
the first switch's tables (packet-out to ``OFPP_TABLE``) when they carried the
whole frame; a truncated one is dropped and TCP sends it again.

A module that fails is the controller's business: it answers with the default
module's rules and the reason, which is counted in the report; the traffic goes
on. Rules the controller accepted are followed before they go out (where they
lead: every receiver once, its true MAC restored), as the simulator's data plane
does; rules that loop or lose a receiver are not installed, the tag goes on by the
default routing and the reason is counted as a failure. A tag the controller cannot decode goes on by the default routing (table
``default_table`` of :func:`.fabric_routes.notify_tables`, which knows each rank's
host), quietly; without a default table, its destination rank's host from
``rank_host`` gets its true MAC back and the frame goes on by the true-MAC rules,
and a rank no host is known for is reported.
"""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..drivers.openflow.switch import SwitchError
from ..unisonflow.controller import PacketIn
from ..unisonflow.rules import RuleError, follow
from ..unisonflow.tags import TagError, decode
from ..unisonflow.tags import host_mac as true_mac
from .fabric_routes import NOTIFY_COOKIE, REACTIVE_GROUPS, _mac
from .testbed import host_mac

#: tag rules sit above the default routing (ECMP on true MACs, priority 40)
TAG_PRIORITY = 50
#: a tag decided elsewhere, at a switch its module gave no rule: the default, quietly
QUIET_PRIORITY = 45
#: a miss that only tells the controller (no default forwarding), its headers only:
#: the frame is sent on after the rules are in when it came whole
MISS = "table=0,priority=1,ip actions=CONTROLLER:128"


def rule_lines(rules, group_base: dict[int, int]) -> dict[int, list[str]]:
    """Flow rules (:class:`netsteer.unisonflow.rules.FlowRule`) as bundle lines per
    switch: one flow on the tag, and a group of type ``all`` where a rule outputs on
    several ports (switch multicast). ``group_base``: the next free group id per
    switch (updated).

    >>> from netsteer.unisonflow.rules import FlowRule
    >>> rule_lines([FlowRule(7, 0x0a0400000005, ((3, 0x020000000005),))], {})
    {7: ['flow add table=0,priority=50,dl_dst=0a:04:00:00:00:05 actions=set_field:02:00:00:00:00:05->eth_dst,output:3']}
    """
    out: dict[int, list[str]] = {}
    for r in rules:
        acts = [("" if m is None else f"set_field:{_mac(m)}->eth_dst,") + f"output:{p}" for p, m in r.outputs]
        lines = out.setdefault(int(r.switch), [])
        match = f"table=0,priority={TAG_PRIORITY},dl_dst={_mac(r.match)}"
        if len(acts) == 1:
            lines.append(f"flow add {match} actions={acts[0]}")
            continue
        gid = group_base.get(int(r.switch), REACTIVE_GROUPS)  # above the default tables' groups
        group_base[int(r.switch)] = gid + 1
        lines.append(f"group add group_id={gid},type=all," + ",".join(f"bucket=actions={a}" for a in acts))
        lines.append(f"flow add {match} actions=group:{gid}")
    return out


class ReactiveTags:
    """Serve the packet-ins of an :class:`netsteer.drivers.openflow.osken.OskenController`
    with an interconnect controller; use as a context manager (a thread runs meanwhile).

    Parameters
    ----------
    osken : OskenController
    switches : dict
        Switch node -> :class:`netsteer.drivers.openflow.osken.OskenSwitch`.
    controller : InterconnectController
    default_table : int or None
        The default routing's table for tags (1 with :func:`.fabric_routes.notify_tables`);
        ``None`` when the switches hold only the true-MAC rules and a miss rule.
    rank_host : list of int, optional
        Host of each world rank (without a default table: where undecodable tags go).
    """

    def __init__(self, osken, switches: dict, controller, *, default_table: int | None = 1,
                 rank_host: list[int] | None = None):
        self.osken, self.switches, self.controller = osken, switches, controller
        self.default_table, self.rank_host = default_table, rank_host
        self.by_dpid = {s.dpid: n for n, s in switches.items()}
        self.installed: dict[int, dict[str, Any]] = {}
        self.errors: list[str] = []
        self.packet_ins = 0
        self.resent = 0
        self.dropped = 0
        self.quieted = 0  # quiet rules: switches told about a tag their module left alone
        self.bundles: list[dict] = []  # one per batch of new tags
        self._groups: dict[int, int] = {}
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(8, len(switches))))
        self._t0 = time.monotonic_ns()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "ReactiveTags":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.osken.events.put(None)
        self._thread.join(timeout=30)
        self._pool.shutdown(wait=True)

    def _serve(self) -> None:
        while True:
            batch = [self.osken.events.get()]
            # what queued up meanwhile goes in the same bundles: a job's wire-up
            # misses hundreds of tags at once, and a bundle costs a round trip
            while batch[-1] is not None:
                try:
                    batch.append(self.osken.events.get_nowait())
                except queue.Empty:
                    break
            stop = batch[-1] is None
            try:
                self._handle([ev for ev in batch if ev is not None])
            except Exception as exc:  # a bad frame must not stop the loop
                if len(self.errors) < 20:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            if stop:
                return

    def _handle(self, events: list[dict]) -> None:
        self.packet_ins += len(events)
        events = [ev for ev in events if ev["dpid"] in self.by_dpid]
        lines: dict[int, list[str]] = {}
        new = {}
        for ev in events:
            tag, node = int(ev["eth_dst"]), self.by_dpid[ev["dpid"]]
            if tag not in self.installed and tag not in new:
                new[tag] = self._decide(tag, node, lines)
            entry = new.get(tag) or self.installed[tag]
            if ev.get("cookie") == NOTIFY_COOKIE and node not in entry["at"] and self.default_table is not None:
                # this switch forwards the tag by default and tells about every frame
                entry["at"].add(node)
                lines.setdefault(node, []).append(f"flow add table=0,priority={QUIET_PRIORITY},dl_dst={_mac(tag)} "
                                                  f"actions=resubmit(,{self.default_table})")
                self.quieted += 1
        if lines:
            t0 = time.perf_counter()
            futures = {n: self._pool.submit(self.switches[n].bundle, ls) for n, ls in lines.items()}
            failed = []
            for fut in futures.values():
                try:
                    fut.result()
                except SwitchError as exc:
                    failed.append(str(exc))
            took = time.perf_counter() - t0
            for entry in new.values():
                entry["install_s"] = took
                if failed:
                    entry["install_failed"] = failed
            self.errors.extend(failed[: max(0, 20 - len(self.errors))])
            self.bundles.append({"tags": len(new), "switches": len(lines), "rules": sum(map(len, lines.values())),
                                 "install_s": took})
        self.installed.update(new)  # decided, with rules or not: not asked again
        for ev in events:
            if ev.get("cookie") != NOTIFY_COOKIE:  # the default rule forwarded the others
                self._resend(self.by_dpid[ev["dpid"]], ev)

    def _decide(self, tag: int, node: int, lines: dict[int, list[str]]) -> dict[str, Any]:
        """The controller's rules for ``tag`` (first seen at ``node``), added to ``lines``."""
        now = time.monotonic_ns() - self._t0
        entry: dict[str, Any] = {"at_s": now / 1e9, "switch": self.controller.fabric.name(node)}
        try:
            d = self.controller.handle(tag, now)
            rules, entry["module"], entry["failed"] = d.rules, d.module, d.failed
            entry["module_asked"] = d.module
        except TagError as exc:
            # not a tag the controller knows: the true MAC back where the tag names
            # a host, and the default routing from there
            rules, entry["module"], entry["failed"] = (), "default", exc.message()
        if rules:
            try:
                self._check(tag, rules)
            except RuleError as exc:  # as the simulator's data plane: the default routing instead
                rules, entry["module"] = (), "default"
                entry["failed"] = f"module {entry['module_asked']} rules refused: {exc.message()}"
        if entry["failed"]:
            self.controller._failed(PacketIn(now, node, tag), entry["failed"])
        mine = rule_lines(rules, self._groups) or self._fallback(tag, node, entry)
        for n, ls in mine.items():
            lines.setdefault(n, []).extend(ls)
        entry["rules"] = sum(map(len, mine.values()))
        entry["at"] = set(mine)  # the switches that hold a rule for it
        return entry

    def _check(self, tag: int, rules) -> None:
        """Where ``rules`` take the tag's frames: every receiver once, with its true
        MAC back (:func:`netsteer.unisonflow.rules.follow`, the check the simulator's
        data plane makes before it installs). A multicast tag (source rank = destination
        rank, the root) goes to every other host of its communicator."""
        c = self.controller
        hosts = c.jobs[(tag >> 34) & 0x3F].comms[(tag >> 30) & 0xF]
        t = decode(tag, len(hosts))
        src = hosts[t.src]
        dsts = sorted({h for h in hosts if h != src}) if t.src == t.dst else [hosts[t.dst]]
        follow(rules, c.fabric, src, dsts, [true_mac(h) for h in dsts])

    def _fallback(self, tag: int, node: int, entry: dict) -> dict[int, list[str]]:
        """The rule for a tag no module decided: the default routing, or the true MAC
        of its destination rank's host (module text); none where that is unknown."""
        match = f"table=0,priority={TAG_PRIORITY},dl_dst={_mac(tag)}"
        if self.default_table is not None:
            return {node: [f"flow add {match} actions=resubmit(,{self.default_table})"]}
        rank = tag & 0x7FFF
        if self.rank_host is None or rank >= len(self.rank_host):
            entry["failed"] = (entry.get("failed") or "") + f"; no host known for rank {rank}: no rule"
            return {}
        return {node: [f"flow add {match} actions=set_field:{host_mac(self.rank_host[rank])}->eth_dst,resubmit(,0)"]}

    def _resend(self, node: int, ev: dict) -> None:
        if ev.get("truncated"):
            self.dropped += 1  # only its headers came: TCP sends it again
            return
        try:
            self.switches[node].packet_out(int(ev["in_port"]), ev["data"])
            self.resent += 1
        except SwitchError as exc:
            if len(self.errors) < 20:
                self.errors.append(str(exc))

    def report(self) -> dict[str, Any]:
        inst = list(self.installed.values())
        times = sorted(b["install_s"] for b in self.bundles)
        return {"packet_ins": self.packet_ins, "tags": len(inst), "resent": self.resent, "dropped": self.dropped,
                "quieted": self.quieted, "batches": len(self.bundles),
                "by_module": {m: sum(1 for e in inst if e.get("module") == m) for m in {e.get("module") for e in inst}},
                "failures": [e["failed"] for e in inst if e.get("failed")][:20],
                "install_s_median": times[len(times) // 2] if times else None,
                "install_s_max": times[-1] if times else None,
                "errors": list(self.errors)}


__all__ = ["ReactiveTags", "rule_lines", "MISS", "TAG_PRIORITY"]
