"""The fabric table builders, walked as Open vSwitch would forward (no switch)."""

from __future__ import annotations

import pytest

from netsteer.emulate.fabric_routes import PIN_GROUPS, REACTIVE_GROUPS, ecmp_tables, tag_tables
from netsteer.emulate.testbed import host_mac as true_mac
from netsteer.errors import NetsteerError
from netsteer.topology.model import TopologyBuilder
from netsteer.topology.pgft import pgft
from netsteer.unisonflow.fabric import Fabric
from netsteer.unisonflow.tags import Tag


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _lookup(tab, mac: int) -> str:
    """The action of the highest-priority table-0 flow matching ``dl_dst=mac``."""
    best = None
    for (table, prio, match), act in tab.flows.items():
        if table != 0 or not match.startswith("dl_dst="):
            continue
        value, _, mask = match[7:].partition("/")
        m = _mac(mask) if mask else (1 << 48) - 1
        if mac & m == _mac(value) & m:
            assert best is None or best[0] != prio, f"two flows of priority {prio} match {mac:012x}"
            if best is None or prio > best[0]:
                best = (prio, act)
    assert best is not None, f"no flow for {mac:012x}"
    return best[1]


def walks(topo, tabs, src_host: int, mac: int):
    """Every way a frame to ``mac`` from ``src_host`` can go (each bucket of a select
    group followed): a list of (host node reached, its MAC there, switches on the way).
    Output to the in_port is a drop (Open vSwitch never sends a frame back out of
    the port it came in on), asserted against."""
    fab = Fabric(topo)
    out = []

    def go(node, in_port, mac, path):
        if node not in fab.switch_set:
            out.append((node, mac, path))
            return
        assert len(path) <= 2 * topo.n_nodes, f"loop: {path}"
        act = _lookup(tabs[node], mac)
        if act.startswith("set_field:"):
            value, rest = act[10:].split("->eth_dst,", 1)
            mac, act = _mac(value), rest
        if act.startswith("group:"):
            ports = [int(b.split(":")[1]) for b in tabs[node].groups[int(act[6:])].split(",")[1:]]
        else:
            ports = [int(act.split(":")[1])]
        for p in ports:
            assert p != in_port, f"{topo.node_names[node]} sends {mac:012x} back out of its in_port {p} (dropped)"
            nxt, nport, _ = fab.peer[node][p]
            go(nxt, nport, mac, path + [node])

    node, port, _ = fab.peer[fab.host_nodes[src_host]][min(fab.peer[fab.host_nodes[src_host]])]
    go(node, port, mac, [])
    return out


def every_tagged_pair_is_delivered(topo, tabs, prims=("bcast", "reduce")):
    hosts = [int(h) for h in topo.hosts]
    for a in range(topo.n_hosts):
        for b in range(topo.n_hosts):
            if a == b:
                continue
            for prim in prims:
                ends = walks(topo, tabs, a, Tag(prim, 0, 0, a, b).value())
                assert ends and all(node == hosts[b] and mac == _mac(true_mac(b)) for node, mac, _ in ends), \
                    (prim, a, b, ends)


TOPOLOGIES = {
    "source fabric (2 levels, parallel cables)": (pgft(2, [6, 4], [1, 2], [1, 4], link_bandwidth=1e9,
                                                        link_latency_ns=0), ("s2_0", "s1_1")),
    "3 levels, k=4": (pgft(3, [2, 2, 4], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=0),
                      ("s3_0", "s2_0", "s1_0")),
}


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_pinned_tables_deliver_every_tagged_pair_whatever_switch_they_pin_through(name):
    topo, vias = TOPOLOGIES[name]
    for via in vias:
        tabs = tag_tables(topo, list(range(topo.n_hosts)), {2: via, 3: [vias[0], vias[-1]]})
        assert any(p == 20 for t in tabs.values() for (_, p, _) in t.flows), via  # some pin rule
        every_tagged_pair_is_delivered(topo, tabs)


def test_a_pin_takes_its_via_switch_where_the_min_hop_paths_pass_it():
    topo, _ = TOPOLOGIES["source fabric (2 levels, parallel cables)"]
    tabs = tag_tables(topo, list(range(topo.n_hosts)), {2: "s2_0", 3: "s2_1"})
    spines = {topo.node("s2_0"): "bcast", topo.node("s2_1"): "reduce"}
    for prim in ("bcast", "reduce"):
        for _, _, path in walks(topo, tabs, 0, Tag(prim, 0, 0, 0, 23).value()):
            assert [spines[n] for n in path if n in spines] == [prim]


def test_pins_that_name_no_packet_switch_are_refused():
    topo, _ = TOPOLOGIES["3 levels, k=4"]
    for pins, word in (({2: "s9_9"}, "does not exist"), ({2: topo.node_names[int(topo.hosts[0])]}, "not a packet switch"),
                       ({64: "s3_0"}, "0..63"), ({2: []}, "via no switch")):
        with pytest.raises(NetsteerError, match=word) as exc:
            tag_tables(topo, list(range(topo.n_hosts)), pins)
        assert exc.value.field == "pins"


def test_group_ids_do_not_collide_beyond_a_thousand_hosts():
    # 1040 hosts: host 1001's ECMP group (1002) was the bcast pin's (1000 + code 2)
    topo = pgft(2, [40, 26], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    tabs = tag_tables(topo, list(range(topo.n_hosts)), {2: "s2_0"})
    fab = Fabric(topo)
    for s, tab in tabs.items():
        for h in range(topo.n_hosts):
            act = tab.flows.get((0, 40, f"dl_dst={true_mac(h)}"))
            if act and act.startswith("group:"):
                spec = tab.groups[int(act[6:])]
                assert spec == "type=select," + ",".join(f"bucket=output:{p}" for p in fab.next_ports(s, h)), (s, h)
        assert all(g <= topo.n_hosts or PIN_GROUPS <= g < REACTIVE_GROUPS for g in tab.groups)
    leaf = topo.node("s1_0")
    assert tabs[leaf].flows[(0, 40, f"dl_dst={true_mac(1001)}")] == "group:1002"
    assert tabs[leaf].groups[1002] == "type=select,bucket=output:41,bucket=output:42"


def switch_first():
    """One switch listed before its three hosts (the shipped generators list hosts
    first): the topology and the switch's node."""
    b = TopologyBuilder("switch-first")
    s0 = b.add_switch("s0", level=1)
    for h in [b.add_host(f"h{i}") for i in range(3)]:
        b.add_link(h, s0, bandwidth=1e9, latency_ns=0)
    return b.build(), s0


def test_hosts_need_not_be_the_first_nodes():
    topo, s0 = switch_first()
    assert int(topo.hosts[0]) != 0
    tabs = tag_tables(topo, [0, 1, 2])
    every_tagged_pair_is_delivered(topo, tabs, prims=("send",))
    assert set(ecmp_tables(topo)) == {s0}


def test_the_testbed_makes_namespaces_of_hosts_and_bridges_of_switches_wherever_they_are(monkeypatch):
    """Testbed.build with every command recorded, none run."""
    import contextlib

    import netsteer.emulate.testbed as tb

    topo, s0 = switch_first()
    ran, bridges = [], []
    monkeypatch.setattr(tb, "_run", lambda *cmd, **kw: ran.append(cmd))
    monkeypatch.setattr(tb, "_add_bridge", lambda br, dpid: bridges.append(br))
    monkeypatch.setattr(tb, "_receive_buffers", contextlib.nullcontext)
    monkeypatch.setattr(tb.subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    monkeypatch.setattr(tb.subprocess, "Popen", lambda *a, **k: pytest.fail(f"started {a}"))
    bed = object.__new__(tb.Testbed)
    bed.topo, bed.want_host_bridges, bed.host_bridges, bed.scale = topo, False, {}, 1e-3
    bed.prefix, bed.progress, bed.bridges, bed.namespaces, bed.veths, bed.procs = "nsT", lambda m: None, {}, [], [], []
    bed.ips, bed.host_dev = [f"10.64.0.{h + 1}" for h in range(3)], {}
    bed.build()
    assert bed.bridges == {s0: f"nsTs{s0}"} and bridges == [f"nsTs{s0}"]
    assert sorted(bed.host_dev) == [0, 1, 2] and len(bed.namespaces) == 3
