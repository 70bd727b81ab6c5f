"""Flow rules a module returns, their check, and where they send a tag.

A rule is what an OpenFlow flow entry says for one tag at one switch: match the
destination MAC (the tag), and output on one port, or on several (a group of type
ALL: switch multicast), each output optionally rewriting the destination MAC to
the receiver's true address (the last switch restores it, so the NIC accepts the
frame).

Examples
--------
>>> r = path_rules(0x0a0400000005, [(24, 7), (28, 1)], final_mac=0x020000000005)
>>> r[-1]
FlowRule(switch=28, match=11012296146949, outputs=((1, 2199023255557),))
>>> r[0].ports
(7,)
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import NetsteerError


class FlowRule(NamedTuple):
    """``outputs``: ``((port, set_dst_mac or None), ...)``; more than one is a group."""

    switch: int
    match: int
    outputs: tuple

    @property
    def ports(self) -> tuple:
        return tuple(p for p, _ in self.outputs)


class RuleError(NetsteerError):
    """A module returned rules the network cannot hold; names the module and the rule."""


def path_rules(tag: int, hops, final_mac: int | None) -> list[FlowRule]:
    """One rule per switch hop of a unicast path; the last one restores ``final_mac``."""
    out = [FlowRule(n, tag, ((p, None),)) for n, p in hops[:-1]]
    n, p = hops[-1]
    out.append(FlowRule(n, tag, ((p, final_mac),)))
    return out


def check_rules(rules, fabric, tag: int, module: str) -> None:
    """Refuse rules for switches or ports that do not exist, or for another tag."""
    if not rules:
        raise RuleError(f"module {module} returned no rules", field="rules")
    switches, peer = fabric.switch_set, fabric.peer
    for r in rules:
        if type(r) is not FlowRule:
            raise RuleError(f"module {module} returned {type(r).__name__}, not a FlowRule", field="rules")
        if r.switch not in switches:
            raise RuleError(f"module {module} returned a rule for switch {r.switch}, which does not exist", field="rules")
        if r.match != tag:
            raise RuleError(f"module {module} returned a rule matching {r.match:#014x}, not the tag {tag:#014x}", field="rules")
        ports = peer[r.switch]
        for p, _ in r.outputs:
            if p not in ports:
                raise RuleError(f"module {module} returned a rule for port {p} of {fabric.name(r.switch)}, "
                                f"which is not cabled", field="rules")


def follow(rules, fabric, src_host: int, dst_hosts, final_macs) -> list[int]:
    """Engine channels the tag's frames take from ``src_host`` under ``rules``: a path
    (one destination) or a tree (multicast). Raises :class:`RuleError` where the
    rules loop, lead nowhere, miss a receiver or leave a frame with a tag at a host."""
    table = {r.switch: r for r in rules}
    hosts = {int(fabric.topo.hosts[h]): h for h in dst_hosts}
    want = dict(zip(dst_hosts, final_macs))
    chans = [fabric.host_channel[src_host]]
    frontier, seen, reached = [fabric.switch_of_host[src_host]], set(), set()
    while frontier:
        node = frontier.pop()
        if node in seen:
            raise RuleError(f"rules loop or deliver twice at {fabric.name(node)}", field="rules")
        seen.add(node)
        rule = table.get(node)
        if rule is None:
            raise RuleError(f"no rule at {fabric.name(node)}: frames stop there", field="rules")
        for port, mac in rule.outputs:
            nxt, _, ch = fabric.peer[node][port]
            chans.append(ch)
            if nxt in hosts:
                h = hosts[nxt]
                if mac != want[h]:
                    raise RuleError(f"frames reach host {h} without its true MAC restored", field="rules")
                reached.add(h)
            elif nxt in fabric.switch_set:
                frontier.append(nxt)
            else:
                raise RuleError(f"rules send frames to {fabric.name(nxt)}, which is not a receiver", field="rules")
    missing = set(dst_hosts) - reached
    if missing:
        raise RuleError(f"rules never reach host {min(missing)}", field="rules")
    return chans
