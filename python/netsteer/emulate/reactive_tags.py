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

A switch that refuses the bundle holding a tag's rules (or does not answer, or
fails otherwise) leaves no tag half-installed: as the openflow driver does with an
intent (all or none), the switches that took the tag's rules get them removed
again (one rollback bundle per switch), and the tag goes on by the default
routing meanwhile. The whole tag is then tried again, at most :data:`RETRIES`
times, after :data:`BACKOFF_S` doubling after each refusal; a tag still refused
then is given up (rolled back everywhere: the default routing carries it). The
report's ``refused`` and ``notes`` say which tag each switch refused, how many
retries it took and how it ended.

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

from ..drivers.openflow.switch import SwitchError, run_per_switch
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
#: a tag whose bundle a switch refused is rolled back and tried again at most this
#: many times, BACKOFF_S seconds after the refusal, doubling after each further one
#: (0.5, 1, 2 s): a bundle round takes 0.15 s at the median, seconds on a loaded
#: machine, and the default routing carries the tag meanwhile
RETRIES = 3
BACKOFF_S = 0.5
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
    retries, backoff_s : int, float
        How often a tag whose bundle a switch refused is tried again, and after how
        long (doubling); :data:`RETRIES`, :data:`BACKOFF_S`.
    """

    def __init__(self, osken, switches: dict, controller, *, default_table: int | None = 1,
                 rank_host: list[int] | None = None, retries: int = RETRIES, backoff_s: float = BACKOFF_S):
        self.osken, self.switches, self.controller = osken, switches, controller
        self.default_table, self.rank_host = default_table, rank_host
        self.retries, self.backoff_s = int(retries), float(backoff_s)
        # tag -> how its rules are made again for a retry: (FlowRules, fallback lines)
        self._made: dict[int, tuple] = {}
        # tags a switch refused: tag -> {"tag", "switch", "refused_by", "retries", "outcome", ...}
        self.refused: dict[int, dict[str, Any]] = {}
        self._retry: dict[int, float] = {}  # tag -> when to try it again (time.monotonic)
        self._lock = threading.Lock()
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
            try:
                if self._retry:  # wake up for the next retry, if no packet-in comes first
                    wait = max(0.0, min(self._retry.values()) - time.monotonic())
                    batch = [self.osken.events.get(timeout=wait)]
                else:
                    batch = [self.osken.events.get()]
            except queue.Empty:
                batch = []
            # what queued up meanwhile goes in the same bundles: a job's wire-up
            # misses hundreds of tags at once, and a bundle costs a round trip
            while batch and batch[-1] is not None:
                try:
                    batch.append(self.osken.events.get_nowait())
                except queue.Empty:
                    break
            stop = bool(batch) and batch[-1] is None
            try:
                with self._lock:
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
        mine: dict[int, dict[int, list[str]]] = {}  # tag -> switch -> its rule lines in these bundles
        quiet: list[tuple[int, int]] = []  # (switch, tag) of the quiet rules in these bundles
        for ev in events:
            tag, node = int(ev["eth_dst"]), self.by_dpid[ev["dpid"]]
            if tag not in self.installed and tag not in new:
                new[tag] = self._decide(tag, node, lines, mine)
            entry = new.get(tag) or self.installed[tag]
            if ev.get("cookie") == NOTIFY_COOKIE and node not in entry["at"] and self.default_table is not None:
                # this switch forwards the tag by default and tells about every frame
                entry["at"].add(node)
                lines.setdefault(node, []).append(f"flow add table=0,priority={QUIET_PRIORITY},dl_dst={_mac(tag)} "
                                                  f"actions=resubmit(,{self.default_table})")
                quiet.append((node, tag))
                self.quieted += 1
        # tags a switch refused before, due to be tried again: their rules go in these bundles
        now = time.monotonic()
        again = sorted(t for t, at in self._retry.items() if at <= now)
        for tag in again:
            del self._retry[tag]
            self.refused[tag]["retries"] += 1
            rules, fallback = self._made[tag]
            made = rule_lines(rules, self._groups) if rules else fallback  # fresh group ids
            mine[tag] = made
            for n, ls in made.items():
                lines.setdefault(n, []).extend(ls)
        if lines:
            t0 = time.perf_counter()
            failed = self._bundles(lines)
            took = time.perf_counter() - t0
            for entry in new.values():
                entry["install_s"] = took
                if failed:
                    entry["install_failed"] = sorted(failed.values())
            self.errors.extend(sorted(failed.values())[: max(0, 20 - len(self.errors))])
            self.bundles.append({"tags": len(new), "retried": len(again), "switches": len(lines),
                                 "rules": sum(map(len, lines.values())), "install_s": took,
                                 **({"refused_by": sorted(self._name(n) for n in failed)} if failed else {})})
            if failed:
                self._refused(mine, failed, quiet, new)
        for tag in again:
            if tag not in self._retry and self.refused[tag]["outcome"] == "pending":
                rec = self.refused[tag]
                rec["outcome"] = f"installed on retry {rec['retries']}"
        self.installed.update(new)  # decided, with rules or not: not asked again
        for ev in events:
            if ev.get("cookie") != NOTIFY_COOKIE:  # the default rule forwarded the others
                if int(ev["eth_dst"]) in self._retry or self.refused.get(int(ev["eth_dst"]), {}).get(
                        "outcome", "").startswith("given up"):
                    # its rules are not in: sent back through the tables it would come
                    # straight back here; TCP sends it again
                    self.dropped += 1
                    continue
                self._resend(self.by_dpid[ev["dpid"]], ev)

    def _name(self, node: int) -> str:
        return self.controller.fabric.name(node)

    def _bundles(self, lines: dict[int, list[str]]) -> dict[int, str]:
        """One bundle per switch, all at once; returns the switches that failed, with
        why (a refusal, no answer in time, or any other error: as the openflow driver,
        a switch that failed)."""
        return run_per_switch(self._pool, {n: (lambda n=n, ls=ls: self.switches[n].bundle(ls))
                                           for n, ls in lines.items()}, self._name)

    def _refused(self, mine: dict, failed: dict[int, str], quiet: list, new: dict) -> None:
        """Roll back the tags whose rules a switch in ``failed`` did not take, on the
        switches that did (no tag half-installed), and try them again later, or give
        them up after ``retries`` retries (module text)."""
        hit = {tag: made for tag, made in mine.items() if set(made) & set(failed)}
        back: dict[int, list[str]] = {}
        for made in hit.values():
            for n, ls in made.items():
                if n not in failed:
                    back.setdefault(n, []).extend(_undo(ls))
        undone = self._bundles(back) if back else {}
        self.errors.extend(sorted(undone.values())[: max(0, 20 - len(self.errors))])
        for node, tag in quiet:
            if node in failed:  # not in: the switch gets one when it tells again
                (new.get(tag) or self.installed[tag])["at"].discard(node)
                self.quieted -= 1
        now = time.monotonic()
        for tag, made in hit.items():
            entry = new.get(tag) or self.installed[tag]
            rec = self.refused.setdefault(tag, {"tag": _mac(tag), "switch": entry.get("switch"),
                                                "module": entry.get("module"), "refused_by": {}, "retries": 0,
                                                "outcome": "pending"})
            for n in sorted(set(made) & set(failed)):
                rec["refused_by"][self._name(n)] = failed[n]
            stuck = sorted(self._name(n) for n in made if n in undone)
            if stuck:  # still holds the tag's rules: the retry overwrites them (same match)
                rec["rollback_failed"] = sorted(set(rec.get("rollback_failed", [])) | set(stuck))
            if rec["retries"] < self.retries:
                self._retry[tag] = now + self.backoff_s * 2 ** rec["retries"]
                continue
            rec["outcome"] = (f"given up after {rec['retries']} retries: rolled back"
                              + (f" except on {', '.join(stuck)}" if stuck else "")
                              + (", the default routing carries it" if self.default_table is not None
                                 else ", no rule for it"))
            # a switch that took nothing and keeps telling gets the quiet rule (the
            # default, no copy); not the switches that refused
            entry["at"] = {n for n in made if n in failed}

    def _decide(self, tag: int, node: int, lines: dict[int, list[str]], mine: dict | None = None) -> dict[str, Any]:
        """The controller's rules for ``tag`` (first seen at ``node``), added to ``lines``
        (and, per switch, to ``mine[tag]``)."""
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
        made = rule_lines(rules, self._groups)
        fallback = None if made else self._fallback(tag, node, entry)
        made = made or fallback
        self._made[tag] = (tuple(rules), fallback)
        for n, ls in made.items():
            lines.setdefault(n, []).extend(ls)
        if mine is not None:
            mine[tag] = made
        entry["rules"] = sum(map(len, made.values()))
        entry["at"] = set(made)  # the switches that hold a rule for it
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
        """Counts, install times, failures; ``refused``: the tags a switch refused
        (tag, first switch, module, ``refused_by`` switch -> its words, ``retries``,
        ``outcome``: ``installed on retry n``, ``given up after n retries: ...`` or
        ``pending``), the first 50; ``notes``: one line per refusing switch."""
        with self._lock:
            inst = list(self.installed.values())
            times = sorted(b["install_s"] for b in self.bundles)
            refused = [dict(r, refused_by=dict(r["refused_by"])) for r in self.refused.values()]
            return {"packet_ins": self.packet_ins, "tags": len(inst), "resent": self.resent, "dropped": self.dropped,
                    "quieted": self.quieted, "batches": len(self.bundles),
                    "by_module": {m: sum(1 for e in inst if e.get("module") == m) for m in {e.get("module") for e in inst}},
                    "failures": [e["failed"] for e in inst if e.get("failed")][:20],
                    "install_s_median": times[len(times) // 2] if times else None,
                    "install_s_max": times[-1] if times else None,
                    "refused_tags": len(refused), "refused": refused[:50], "notes": _notes(refused),
                    "errors": list(self.errors)}


def _undo(lines: list[str]) -> list[str]:
    """Bundle lines that remove what ``lines`` (``flow add``, ``group add``) added:
    the flows first, then their groups.

    >>> _undo(["group add group_id=9,type=all,bucket=actions=output:1",
    ...        "flow add table=0,priority=50,dl_dst=0a:00:00:00:00:01 actions=group:9"])
    ['flow delete_strict table=0,priority=50,dl_dst=0a:00:00:00:00:01', 'group delete group_id=9']
    """
    flows = [f"flow delete_strict {x[len('flow add '):].split(' actions=')[0]}" for x in lines
             if x.startswith("flow add ")]
    groups = [f"group delete {x[len('group add '):].split(',')[0]}" for x in lines if x.startswith("group add ")]
    return flows + groups


def _notes(refused: list[dict]) -> list[str]:
    """One line per switch that refused tags: how many, which (the first 5), the
    retries they took and how they ended."""
    by: dict[str, list[dict]] = {}
    for r in refused:
        for name in r["refused_by"]:
            by.setdefault(name, []).append(r)
    out = []
    for name, rs in sorted(by.items()):
        ends: dict[str, int] = {}
        for r in rs:
            key = r["outcome"].split(":")[0]
            ends[key] = ends.get(key, 0) + 1
        tags = ", ".join(r["tag"] for r in rs[:5]) + (f" and {len(rs) - 5} more" if len(rs) > 5 else "")
        words = rs[-1]["refused_by"][name]
        out.append(f"reactive tags: switch {name} refused the bundle with the rules of {len(rs)} "
                   f"tag{'s' if len(rs) > 1 else ''} ({tags}): {words}; rolled back on the other switches, "
                   f"retried up to {max(r['retries'] for r in rs)} times; "
                   + ", ".join(f"{n} {k}" for k, n in sorted(ends.items())))
    return out


__all__ = ["ReactiveTags", "rule_lines", "MISS", "TAG_PRIORITY"]
