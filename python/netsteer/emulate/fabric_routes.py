"""Default routing of any packet-switched topology as OpenFlow tables: ECMP on
select groups.

Every switch gets, per destination host, a flow on the host's true MAC address
(``dl_dst``; the testbed's hosts have static neighbours, so the destination MAC
names the host) that outputs to the single min-hop port or to a select group
over the equal min-hop ports (Open vSwitch hashes each flow's 5-tuple onto a
bucket, so one TCP connection stays on one path, as ECMP does). Rules at a
higher priority (UnisonFlow's tag rules) override this table; packets they do
not match fall back to it.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> tabs = ecmp_tables(t)
>>> sorted(tabs[t.node("s1_0")].groups.items())[0]
(3, 'type=select,bucket=output:3,bucket=output:4')
"""

from __future__ import annotations

from ..drivers.openflow.flows import Table
from ..errors import NetsteerError
from ..unisonflow.fabric import Fabric
from ..unisonflow.tags import format_mac
from .testbed import host_mac

BASE_PRIORITY = 10

# Group id ranges, one per writer, so that the tables of one switch never reuse an
# id: host ``h``'s ECMP group is ``h + 1`` (a topology has fewer than 2**24 hosts;
# tags address 32768 ranks), pinned tables' groups start at PIN_GROUPS, the
# reactive path's (:mod:`.reactive_tags`) at REACTIVE_GROUPS; OpenFlow's last
# group id is 0xffffff00.
PIN_GROUPS = 1 << 24
REACTIVE_GROUPS = 2 << 24


def ecmp_tables(topo, fabric: Fabric | None = None) -> dict[int, Table]:
    """Switch node -> its :class:`Table` (table 0, priority 10, one flow per host;
    group ``h + 1`` for host ``h`` where there are several next hops)."""
    f = fabric or Fabric(topo)
    if topo.n_hosts >= PIN_GROUPS:
        raise NetsteerError(f"{topo.n_hosts} hosts: ECMP group ids would run into the pinned tables' range",
                            field="topology")
    out = {}
    for s in f.switches:
        tab = Table()
        for h in range(topo.n_hosts):
            ports = f.next_table[s][h]
            if not ports:
                continue
            match = f"dl_dst={host_mac(h)}"
            if len(ports) == 1:
                tab.flows[(0, BASE_PRIORITY, match)] = f"output:{ports[0]}"
            else:
                tab.groups[h + 1] = "type=select," + ",".join(f"bucket=output:{p}" for p in ports)
                tab.flows[(0, BASE_PRIORITY, match)] = f"group:{h + 1}"
        out[s] = tab
    return out


TAG_PRIORITY, PIN_PRIORITY, DELIVER_PRIORITY, HOST_PRIORITY = 10, 20, 30, 40
RANK_MASK = "00:00:00:00:7f:ff"  # the tag's destination rank (bits 14..0)
PRIM_MASK = "fc:00:00:00:00:00"  # the tag's primitive (bits 47..42)


_mac = format_mac  # a 48-bit value as aa:bb:cc:dd:ee:ff


def tag_tables(topo, rank_host: list[int], pins: dict[int, str] | None = None,
               fabric: Fabric | None = None) -> dict[int, Table]:
    """ECMP for untagged traffic plus UnisonFlow tag rules, installed ahead of traffic.

    Every switch: true host MACs (priority 40) as :func:`ecmp_tables`; a tag whose
    destination rank is ``r`` (priority 10) goes on the min-hop ports towards
    ``rank_host[r]`` (a select group where several), and the last switch writes the
    host's true MAC back before the host port (priority 30). ``pins`` (primitive
    code -> switch name or list of names) do what the ``pin`` module does: a tag of
    that primitive to rank ``r`` leaves, among the min-hop ports towards
    ``rank_host[r]``, by those that lead to a ``via`` switch, where there are some
    and not all of them are (priority 20). It never leaves min-hop routing, so
    every pair is delivered on any topology; a pair whose paths meet no ``via``
    switch takes them as unpinned.

    Group ids: ECMP's ``h + 1``, the pins' from :data:`PIN_GROUPS` (one per distinct
    port set of a switch).

    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> tab = tag_tables(t, [0, 1, 2, 3], {2: "s2_1"})[t.node("s1_0")]
    >>> tab.flows[(0, 30, "dl_dst=00:00:00:00:00:01/00:00:00:00:7f:ff")]
    'set_field:02:00:00:00:00:01->eth_dst,output:2'
    >>> tab.flows[(0, 20, "dl_dst=08:00:00:00:00:02/fc:00:00:00:7f:ff")]  # bcast to rank 2: via s2_1
    'output:4'
    """
    f = fabric or Fabric(topo)
    via = _pin_targets(topo, f, pins or {})
    out = {}
    base = ecmp_tables(topo, f)
    for s in f.switches:
        tab = Table()
        for (t, _, m), a in base[s].flows.items():
            tab.flows[(t, HOST_PRIORITY, m)] = a
        tab.groups.update(base[s].groups)
        pin_groups: dict[tuple, int] = {}
        for r, h in enumerate(rank_host):
            ports = f.next_table[s][h]
            match = f"dl_dst={_mac(r)}/{RANK_MASK}"
            if f.peer[s][ports[0]][0] == f.host_nodes[h]:  # the last switch: the host's true MAC back
                tab.flows[(0, DELIVER_PRIORITY, match)] = f"set_field:{host_mac(h)}->eth_dst,output:{ports[0]}"
                continue
            tab.flows[(0, TAG_PRIORITY, match)] = base[s].flows[(0, BASE_PRIORITY, f"dl_dst={host_mac(h)}")]
            for code, targets in via.items():
                best = tuple(p for p in ports if f.peer[s][p][0] in targets)
                if not best or len(best) == len(ports):
                    continue  # no port towards a via switch here, or all are: the tag rule does it
                if len(best) == 1:
                    action = f"output:{best[0]}"
                else:
                    gid = pin_groups.setdefault(best, PIN_GROUPS + len(pin_groups))
                    tab.groups[gid] = "type=select," + ",".join(f"bucket=output:{p}" for p in best)
                    action = f"group:{gid}"
                tab.flows[(0, PIN_PRIORITY, f"dl_dst={_mac(code << 42 | r)}/{PIN_MASK}")] = action
        out[s] = tab
    return out


PIN_MASK = "fc:00:00:00:7f:ff"  # primitive and destination rank


def _pin_targets(topo, f: Fabric, pins: dict) -> dict[int, frozenset]:
    """``pins`` as primitive code -> via switch nodes, checked (``NetsteerError``)."""
    out = {}
    for code, names in sorted(pins.items()):
        if not isinstance(code, int) or not 0 <= code < 64:
            raise NetsteerError(f"a primitive code is 0..63, not {code!r}", field="pins")
        nodes = set()
        for name in [names] if isinstance(names, str) else list(names):
            try:
                node = topo.node(str(name))
            except KeyError:
                raise NetsteerError(f"switch {name!r} does not exist in {topo.name}", field="pins") from None
            if node not in f.switch_set:
                raise NetsteerError(f"{name!r} is not a packet switch", field="pins")
            nodes.add(node)
        if not nodes:
            raise NetsteerError(f"primitive {code} is pinned via no switch", field="pins")
        out[code] = frozenset(nodes)
    return out


#: the cookie of the rule that forwards an unknown tag and tells the controller
NOTIFY_COOKIE = 0x4E0001
NOTIFY_PRIORITY = 2


def notify_tables(topo, rank_host: list[int], fabric: Fabric | None = None) -> dict[int, Table]:
    """The reactive path's starting tables: every frame goes on by default routing,
    and a tag nobody has decided yet also tells the controller.

    Table 0 holds the true host MACs (priority 40, :func:`ecmp_tables`) and, for any
    other IPv4 frame (a tag) coming in from a host, ``CONTROLLER:128,resubmit(,1)``
    with cookie :data:`NOTIFY_COOKIE` (priority 2): the headers go to the controller
    and the frame goes on through table 1, which is :func:`tag_tables` without pins
    (ECMP on the destination rank, the true MAC back at the last switch). Tags from
    other switches go on through table 1 untold (priority 1): the first switch
    speaks for the path. The controller's rules for a tag go in table 0 above these,
    so a tag stops reaching the controller once its rules are in, and no frame waits
    for them or is lost meanwhile.

    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> tab = notify_tables(t, [0, 1, 2, 3])[t.node("s1_0")]
    >>> tab.flows[(0, 2, f"cookie={NOTIFY_COOKIE:#x},in_port=1,ip")]
    'CONTROLLER:128,resubmit(,1)'
    >>> tab.flows[(0, 1, "ip")]
    'resubmit(,1)'
    >>> tab.flows[(1, 30, "dl_dst=00:00:00:00:00:01/00:00:00:00:7f:ff")]
    'set_field:02:00:00:00:00:01->eth_dst,output:2'
    """
    f = fabric or Fabric(topo)
    base, tags = ecmp_tables(topo, f), tag_tables(topo, rank_host, None, f)
    out = {}
    for s in f.switches:
        tab = Table(groups=dict(tags[s].groups))
        for (_, _, m), a in base[s].flows.items():
            tab.flows[(0, HOST_PRIORITY, m)] = a
        for p, (n, _, _) in sorted(f.peer[s].items()):
            if n not in f.switch_set:
                tab.flows[(0, NOTIFY_PRIORITY, f"cookie={NOTIFY_COOKIE:#x},in_port={p},ip")] = \
                    "CONTROLLER:128,resubmit(,1)"
        tab.flows[(0, NOTIFY_PRIORITY - 1, "ip")] = "resubmit(,1)"
        for (_, p, m), a in tags[s].flows.items():
            if p != HOST_PRIORITY:
                tab.flows[(1, p, m)] = a
        out[s] = tab
    return out


def routing_tables(routing, circuits: dict | None = None) -> dict[int, Table]:
    """Any :class:`netsteer.routing.Routing` as OpenFlow tables, for the circuits in force.

    Every packet switch: per destination host, a flow on the host's true MAC
    (priority 10) that outputs to the table's port, or to a select group over an
    ECMP entry's ports (group ``g + 1`` for the routing's group ``g``). Every circuit
    switch: a crossbar of its pairing (``circuits``: node -> port array, as the
    simulator's; default the topology's standing pairing), see
    :func:`netsteer.drivers.openflow.flows.ocs_table`.

    >>> from netsteer.topology.hyperx import hyperx, CircuitSpec
    >>> from netsteer.routing.dor import dor
    >>> t = hyperx([2, 2], 1, 1, link_bandwidth=1e9, link_latency_ns=0,
    ...            circuits=[CircuitSpec(dim=0, switching_time_ns=0)])
    >>> tabs = routing_tables(dor(t))
    >>> tabs[t.node("x0_0")].flows[(0, 10, "dl_dst=02:00:00:00:00:03")]  # dimension 0 first: the circuit
    'output:2'
    >>> sorted(tabs[t.node("sip0")].flow_lines())[:2]
    ['table=0,priority=0 actions=drop', 'table=0,priority=10,in_port=1 actions=output:2']
    """
    from ..control.steering import pairs_of
    from ..drivers.openflow.flows import ocs_table
    from ..routing._graph import circuit_table
    from ..topology.model import CIRCUIT

    topo = routing.topo
    out = {}
    pairing = circuit_table(topo, circuits)
    for node in topo.switches:
        node = int(node)
        if topo.node_kind[node] == CIRCUIT:
            out[node] = ocs_table(pairs_of(pairing[node]))
            continue
        tab = Table()
        for h, e in enumerate(routing.node_rows([node])[0].tolist()):
            if e >= 0:
                tab.flows[(0, BASE_PRIORITY, f"dl_dst={host_mac(h)}")] = f"output:{e}"
            elif e <= -2:
                g = -2 - e
                tab.groups[g + 1] = "type=select," + ",".join(f"bucket=output:{p}" for p in routing.groups[g])
                tab.flows[(0, BASE_PRIORITY, f"dl_dst={host_mac(h)}")] = f"group:{g + 1}"
        out[node] = tab
    return out


__all__ = ["ecmp_tables", "notify_tables", "routing_tables", "tag_tables", "BASE_PRIORITY", "NOTIFY_COOKIE",
           "PIN_GROUPS", "REACTIVE_GROUPS"]
