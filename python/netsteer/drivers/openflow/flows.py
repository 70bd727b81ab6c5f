"""Intents as OpenFlow tables: a pure model of what each switch should hold.

Every switch's wanted state is a :class:`Table` (flows keyed by table, priority
and match; select groups by id). The driver computes the wanted tables after an
intent, diffs them against the tables in force and sends the difference as one
bundle per switch; rolling back is sending the reverse difference, and a switch
that reconnects gets its whole table back (``replace-flows``). Nothing here talks
to a switch, so the translation is tested without one.

Layout of a ToR bridge (the rack's servers' Open vSwitch and its ToR in one; the
source pushes rules to the servers' switches and tags ToR ports, which here are
flows of the same bridge)::

    table 0  per rack pair (a, b): count untagged a -> b traffic, goto 1
             optical port k, VLAN v tagged on k: to this rack -> pop, goto 3;
                                                  else (transit) -> goto 2
             optical port k, anything else: drop (an untagged VLAN goes nowhere)
             otherwise: goto 3
    table 1  pair rules by priority: circuit paths (push VLAN, goto 2; several
             paths: a select group, weighted) or the electrical network (goto 3)
    table 2  VLAN v: out of every optical port tagged with v; otherwise drop
    table 3  base routing (electrical): per destination host
    table 4  the ``extra`` rules of a push (a larger fabric's rule count), never hit

A circuit switch bridge has port-to-port flows only (``in_port=p -> output:q``).

Examples
--------
>>> a = Table(); a.flows[(0, 10, "in_port=1")] = "output:2"
>>> b = Table(); b.flows[(0, 10, "in_port=3")] = "output:4"
>>> diff(a, b)
['flow delete_strict table=0,priority=10,in_port=1', 'flow add table=0,priority=10,in_port=3 actions=output:4']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# table numbers (module text)
COUNT, RULES, VLAN, BASE, EXTRA = 0, 1, 2, 3, 4
# OpenFlow priorities of the intents' rule priorities sit above the table's default
RULE_BASE = 100


@dataclass
class Table:
    """One switch's flows and groups, as ``ovs-ofctl`` writes them."""

    flows: dict[tuple[int, int, str], str] = field(default_factory=dict)
    groups: dict[int, str] = field(default_factory=dict)  # id -> "type=select,bucket=..."

    def copy(self) -> "Table":
        return Table(dict(self.flows), dict(self.groups))

    def flow_lines(self) -> list[str]:
        """The flows in ``ovs-ofctl add-flows`` syntax (for ``replace-flows``)."""
        return [f"table={t},priority={p}{',' + m if m else ''} actions={a}" for (t, p, m), a in sorted(self.flows.items())]

    def group_lines(self) -> list[str]:
        return [f"group_id={g},{spec}" for g, spec in sorted(self.groups.items())]


def diff(old: Table, new: Table) -> list[str]:
    """``ovs-ofctl bundle`` lines that turn ``old`` into ``new``: new groups first
    (flows refer to them), then flow changes, then groups no flow uses any more."""
    out = []
    for g, spec in sorted(new.groups.items()):
        if g not in old.groups:
            out.append(f"group add group_id={g},{spec}")
        elif old.groups[g] != spec:
            out.append(f"group modify group_id={g},{spec}")
    for key in sorted(old.flows.keys() - new.flows.keys()):
        out.append(f"flow delete_strict {_match(key)}")
    for key, act in sorted(new.flows.items()):
        if old.flows.get(key) != act:
            verb = "add" if key not in old.flows else "modify_strict"
            out.append(f"flow {verb} {_match(key)} actions={act}")
    for g in sorted(old.groups.keys() - new.groups.keys()):
        out.append(f"group delete group_id={g}")
    return out


def _match(key: tuple[int, int, str]) -> str:
    t, p, m = key
    return f"table={t},priority={p}" + (f",{m}" if m else "")


def host_ip(rack: int, server: int) -> str:
    """A server's address: one /24 per rack, inside the run's own namespaces.

    >>> host_ip(3, 0), rack_net(3)
    ('10.64.3.1', '10.64.3.0/24')
    """
    return f"10.{64 + rack // 256}.{rack % 256}.{server + 1}"


def rack_net(rack: int) -> str:
    return f"10.{64 + rack // 256}.{rack % 256}.0/24"


@dataclass
class HybridLayout:
    """What the translation needs to know of a hybrid topology (module text)."""

    racks: int
    servers_per_rack: int
    tors: list[int]
    tor_port_of: np.ndarray  # [rack, plane] -> ToR port
    ocs: list[int]
    # base routing: (switch node, destination host) -> out port
    base: dict[tuple[int, int], int]

    @classmethod
    def of(cls, topo, routing) -> "HybridLayout":
        """From a hybrid topology and its electrical base routing (paths with no
        circuits, so that circuits carry only what the VLAN rules send them)."""
        m = topo.meta
        spr = int(m["servers_per_rack"])
        n = topo.n_hosts
        src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
        keep = src != dst
        src, dst = src[keep], dst[keep]
        offsets, channels = routing.paths(src, dst, circuits={})
        csrc, cport = topo.channel_src(), topo.channel_src_port()
        base: dict[tuple[int, int], int] = {}
        for i in range(len(src)):
            for c in channels[offsets[i]:offsets[i + 1]]:
                node = int(csrc[c])
                if topo.host_index[node] < 0:  # a switch (hosts need not be the first nodes)
                    base.setdefault((node, int(dst[i])), int(cport[c]))
        return cls(int(m["racks"]), spr, [int(x) for x in m["tors"]], np.asarray(m["tor_port_of"]),
                   [int(x) for x in m["circuit_switches"]], base)

    def rack_of_tor(self, tor: int) -> int:
        return self.tors.index(tor)

    def host(self, h: int) -> str:
        return host_ip(h // self.servers_per_rack, h % self.servers_per_rack)


@dataclass
class HybridState:
    """The forwarding the controller asked for: rules by priority per rack pair,
    ToR port tags, circuit pairings, and the extra rules' count and generation."""

    rules: dict[int, dict[tuple[int, int], object]] = field(default_factory=dict)  # prio -> pair -> PairRule
    tags: dict[tuple[int, int], frozenset] = field(default_factory=dict)
    pairing: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    extra: dict[int, tuple[int, int]] = field(default_factory=dict)  # tor -> (count, generation)

    def copy(self) -> "HybridState":
        return HybridState({p: dict(r) for p, r in self.rules.items()}, dict(self.tags), dict(self.pairing),
                           dict(self.extra))


def tor_table(lay: HybridLayout, state: HybridState, tor: int) -> Table:
    """The whole table of ToR ``tor`` for ``state`` (module text)."""
    t = Table()
    f = t.flows
    rack = lay.rack_of_tor(tor)
    optical = [int(p) for p in lay.tor_port_of[rack]]
    # table 0: pair counters (untagged traffic of this rack's servers)
    for b in range(lay.racks):
        if b != rack:
            f[(COUNT, 1000, f"ip,vlan_tci=0x0000/0x1000,nw_src={rack_net(rack)},nw_dst={rack_net(b)}")] = f"goto_table:{RULES}"
    for p in optical:
        for v in sorted(state.tags.get((tor, p), ())):
            f[(COUNT, 600, f"ip,in_port={p},dl_vlan={v},nw_dst={rack_net(rack)}")] = f"pop_vlan,goto_table:{BASE}"
            f[(COUNT, 500, f"in_port={p},dl_vlan={v}")] = f"goto_table:{VLAN}"
        f[(COUNT, 400, f"in_port={p}")] = "drop"
    f[(COUNT, 0, "")] = f"goto_table:{BASE}"
    # table 1: pair rules of this rack, by priority
    for prio, table in state.rules.items():
        for (a, b), rule in table.items():
            if a != rack:
                continue
            key = (RULES, RULE_BASE + prio, f"ip,nw_dst={rack_net(b)}")
            paths = rule.paths
            if not paths:
                f[key] = f"goto_table:{BASE}"
            elif len(paths) == 1:
                f[key] = f"push_vlan:0x8100,set_field:{4096 + paths[0].vlan}->vlan_vid,goto_table:{VLAN}"
            else:
                gid = group_id(lay, prio, a, b)
                buckets = ",".join(
                    f"bucket=weight:{max(1, round(vp.weight * 1000))},actions=push_vlan:0x8100,"
                    f"set_field:{4096 + vp.vlan}->vlan_vid,resubmit(,{VLAN})" for vp in paths)
                t.groups[gid] = f"type=select,{buckets}"
                f[key] = f"group:{gid}"
    f[(RULES, 0, "")] = f"goto_table:{BASE}"
    # table 2: each VLAN out of the optical ports tagged with it (OVS never sends a
    # packet back out of its in_port, so transit leaves by the other port)
    out: dict[int, list[int]] = {}
    for p in optical:
        for v in state.tags.get((tor, p), ()):
            out.setdefault(v, []).append(p)
    for v, ports in sorted(out.items()):
        f[(VLAN, 10, f"dl_vlan={v}")] = ",".join(f"output:{p}" for p in sorted(ports))
    f[(VLAN, 0, "")] = "drop"
    # table 3: electrical base routing, per destination host
    for (node, h), port in lay.base.items():
        if node == tor:
            f[(BASE, 10, f"ip,nw_dst={lay.host(h)}")] = f"output:{port}"
    f[(BASE, 0, "")] = "drop"
    count, gen = state.extra.get(tor, (0, 0))
    for i in range(count):
        f[(EXTRA, 10, f"ip,nw_dst=172.{16 + i // 65536}.{i // 256 % 256}.{i % 256}")] = f"set_field:{gen}->reg0"
    return t


def group_id(lay: HybridLayout, prio: int, a: int, b: int) -> int:
    return 1 + (prio * lay.racks + a) * lay.racks + b


def switch_table(lay: HybridLayout, node: int) -> Table:
    """A plain packet switch (the electrical core): base routing only."""
    t = Table()
    for (n, h), port in lay.base.items():
        if n == node:
            t.flows[(0, 10, f"ip,nw_dst={lay.host(h)}")] = f"output:{port}"
    t.flows[(0, 0, "")] = "drop"
    return t


def ocs_table(pairs) -> Table:
    """A circuit switch as a crossbar: each pair of ports joined both ways.

    >>> sorted(ocs_table([(1, 3)]).flow_lines())
    ['table=0,priority=0 actions=drop', 'table=0,priority=10,in_port=1 actions=output:3', 'table=0,priority=10,in_port=3 actions=output:1']
    """
    t = Table()
    for p, q in pairs:
        t.flows[(0, 10, f"in_port={p}")] = f"output:{q}"
        t.flows[(0, 10, f"in_port={q}")] = f"output:{p}"
    t.flows[(0, 0, "")] = "drop"
    return t
