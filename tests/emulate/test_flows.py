"""The openflow driver's translation and its rollback logic, without a switch."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.control.intents import PairRule, PushRules, RemoveRules, SetCircuits, TagPorts, VlanPath
from netsteer.drivers.openflow.driver import OpenFlowDriver
from netsteer.drivers.openflow.flows import BASE, EXTRA, RULES, VLAN, HybridLayout, HybridState, Table, diff, tor_table
from netsteer.drivers.openflow.switch import SwitchError


def built(racks=3, planes=2):
    from netsteer.scenario import Scenario, ScenarioModel, build_scenario

    data = {
        "name": "t",
        "topology": {"kind": "hybrid", "racks": racks, "servers_per_rack": 2, "server_bandwidth": "10Gbps",
                     "tor_uplinks": 1, "core_bandwidth": "1Gbps", "circuit_switches": planes,
                     "circuit_ports": racks, "circuit_uplinks": 1, "circuit_bandwidth": "10Gbps",
                     "switching_time": "25ms", "link_latency": "1us"},
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "iperf", "bulk": [{"src": 0, "dst": 2, "duration": "1s"}]}],
        "controller": {"hybrid": {"initial": [[0, 0, 1]]}},
    }
    return build_scenario(Scenario(ScenarioModel.model_validate(data), None))


def apply_lines(table: Table, lines: list[str]) -> Table:
    """What a switch holds after a bundle: a tiny interpreter of diff's lines."""
    t = table.copy()
    for line in lines:
        kind, verb, rest = line.split(" ", 2)
        if kind == "group":
            gid = int(rest.split(",", 1)[0].split("=")[1])
            if verb == "delete":
                del t.groups[gid]
            else:
                t.groups[gid] = rest.split(",", 1)[1]
            continue
        match, _, actions = rest.partition(" actions=")
        parts = match.split(",")
        key = (int(parts[0].split("=")[1]), int(parts[1].split("=")[1]), ",".join(parts[2:]))
        if verb == "delete_strict":
            del t.flows[key]
        else:
            t.flows[key] = actions
    return t


def test_a_bundle_turns_any_table_into_any_other_and_back():
    b = built()
    lay = HybridLayout.of(b.topology, b.routing)
    tor = lay.tors[0]
    s0 = HybridState()
    s1 = HybridState(rules={1: {(0, 1): PairRule(0, 1, (VlanPath(7, (0, 1), (0,)),)),
                                (0, 2): PairRule(0, 2, (VlanPath(8, (0, 2), (1,), 0.25), VlanPath(9, (0, 2), (0,), 0.75)))}},
                     tags={(tor, int(lay.tor_port_of[0, 0])): frozenset({7, 9})}, extra={tor: (50, 1)})
    t0, t1 = tor_table(lay, s0, tor), tor_table(lay, s1, tor)
    assert apply_lines(t0, diff(t0, t1)) == t1
    assert apply_lines(t1, diff(t1, t0)) == t0  # the rollback bundle
    assert diff(t1, t1) == []


def test_pair_rules_vlans_and_weighted_groups():
    b = built()
    lay = HybridLayout.of(b.topology, b.routing)
    tor = lay.tors[0]
    p0, p1 = (int(x) for x in lay.tor_port_of[0])
    state = HybridState(rules={1: {(0, 2): PairRule(0, 2, (VlanPath(8, (0, 2), (1,), 0.25), VlanPath(9, (0, 2), (0,), 0.75))),
                                   (0, 1): PairRule(0, 1)}},
                        tags={(tor, p0): frozenset({9})})
    t = tor_table(lay, state, tor)
    # two paths: a select group, weighted 1:3
    (gid, spec), = t.groups.items()
    assert "weight:250" in spec and "weight:750" in spec and "type=select" in spec
    assert t.flows[(RULES, 101, "ip,nw_dst=10.64.2.0/24")] == f"group:{gid}"
    # no paths: the electrical network
    assert t.flows[(RULES, 101, "ip,nw_dst=10.64.1.0/24")] == f"goto_table:{BASE}"
    # VLAN 9 leaves by the port tagged with it; VLAN 8 is tagged nowhere: dropped
    assert t.flows[(VLAN, 10, "dl_vlan=9")] == f"output:{p0}"
    assert not any(m == "dl_vlan=8" for (tb, _, m) in t.flows if tb == VLAN)
    assert t.flows[(VLAN, 0, "")] == "drop"
    # only rack 0's rules are in rack 0's ToR
    assert tor_table(lay, state, lay.tors[1]).groups == {}


def test_extra_rules_are_rewritten_on_every_push():
    b = built()
    lay = HybridLayout.of(b.topology, b.routing)
    tor = lay.tors[0]
    a = tor_table(lay, HybridState(extra={tor: (300, 1)}), tor)
    c = tor_table(lay, HybridState(extra={tor: (300, 2)}), tor)
    lines = diff(a, c)
    assert len(lines) == 300 and all(line.startswith("flow modify_strict table=4") for line in lines)
    assert sum(1 for (tb, _, _) in a.flows if tb == EXTRA) == 300


class FakeSwitch:
    """Holds a table the way a switch would; refuses, drops out, commits but answers
    late, or raises something else on demand. Like Open vSwitch, it refuses a
    ``group add`` of a group it has."""

    def __init__(self):
        self.table = Table()
        self.refuse = False
        self.away = False
        self.late = False  # commits, then the answer comes too late
        self.raises: Exception | None = None
        self.stats_fail = False
        self.bundles = 0
        self.replaced = 0

    def bundle(self, lines):
        if self.raises is not None:
            raise self.raises
        if self.away:
            raise SwitchError("s: no answer within 10 s (disconnected?)")
        if self.refuse:
            raise SwitchError("s refused the change: OFPBFC_MSG_FAILED")
        for line in lines:
            if line.startswith("group add ") and int(line.split("group_id=")[1].split(",")[0]) in self.table.groups:
                raise SwitchError("s refused the change: OFPGMFC_GROUP_EXISTS")
        self.table = apply_lines(self.table, lines)
        self.bundles += 1
        if self.late:
            raise SwitchError("s: no answer within 10 s (disconnected?)")

    def replace(self, flows, groups):
        if self.away or self.refuse:
            raise SwitchError("s: no answer")
        t = Table()
        for f in flows:
            head, _, act = f.partition(" actions=")
            parts = head.split(",")
            t.flows[(int(parts[0][6:]), int(parts[1][9:]), ",".join(parts[2:]))] = act
        for g in groups:
            gid, spec = g.split(",", 1)
            t.groups[int(gid.split("=")[1])] = spec
        self.table = t
        self.replaced += 1

    def port_bytes(self):
        if self.stats_fail:
            raise SwitchError("s: no answer within 10 s")
        return {p: (10**9, 2 * 10**9) for p in range(1, 20)}

    def flow_bytes(self, table):
        if self.stats_fail:
            raise SwitchError("s: no answer within 10 s")
        return {}


class Clock:
    def __init__(self):
        self.t = 0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += int(s * 1e9)


def driver(b):
    lay = HybridLayout.of(b.topology, b.routing)
    sw = {n: FakeSwitch() for n in [*lay.tors, *lay.ocs, *(int(x) for x in b.topology.meta["cores"])]}
    clock = Clock()
    d = OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=10, clock=clock, sleep=clock.sleep)
    for n, s in sw.items():  # the start-up replace: the switches hold the driver's tables
        s.table = d.tables[n].copy()
    return d, sw, lay, clock


def test_a_refused_bundle_rolls_every_switch_back_and_is_reported():
    b = built()
    d, sw, lay, _ = driver(b)
    before = {n: s.table.copy() for n, s in sw.items()}
    sw[lay.tors[1]].refuse = True
    rules = (PairRule(0, 2), PairRule(1, 2))  # racks 0 and 1: two ToRs change
    a = d.apply(PushRules(2, rules))
    assert not a.ok and "tor1" in a.failed and "rolled back" in a.failed
    assert sw[lay.tors[0]].bundles == 2  # the change, then its reverse
    assert all(s.table == before[n] for n, s in sw.items())
    assert d.tables == {n: before[n] for n in d.tables}
    # the next change goes through on both once the switch accepts again
    sw[lay.tors[1]].refuse = False
    assert d.apply(PushRules(2, rules)).ok
    assert sw[lay.tors[1]].table == d.tables[lay.tors[1]] != before[lay.tors[1]]


def test_a_switch_that_drops_out_is_resynchronised_when_it_answers():
    b = built()
    d, sw, lay, clock = driver(b)
    sw[lay.tors[0]].away = True
    a = d.apply(RemoveRules(1, ((0, 1),)))
    assert not a.ok and "disconnected" in a.failed
    assert d.stale == {lay.tors[0]}
    d.advance(d.now + 1000)  # still away: stays stale
    assert d.stale == {lay.tors[0]}
    sw[lay.tors[0]].away = False
    d.advance(d.now + 1000)
    assert d.stale == set() and sw[lay.tors[0]].replaced == 2  # start-up, then the resync
    assert sw[lay.tors[0]].table == d.tables[lay.tors[0]]


def test_a_circuit_is_dark_for_its_switching_time():
    b = built()
    d, sw, lay, clock = driver(b)
    ocs = lay.ocs[0]
    pairs = b.hybrid.initial_state()[0][ocs]
    (p, q), = pairs
    new = ((p, 3),) if q != 3 else ((p, 2),)
    t0 = d.now
    a = d.apply(SetCircuits(ocs, new))
    assert a.ok and a.done_ns - t0 == 25_000_000
    assert not any(m.startswith("in_port") for (_, _, m) in sw[ocs].table.flows)  # dark
    assert [c.up for c in d.reports()] == [False]
    assert d.advance(None) == "changed" and d.now == t0 + 25_000_000
    assert sorted(m for (_, prio, m) in sw[ocs].table.flows if prio == 10) == sorted(
        [f"in_port={new[0][0]}", f"in_port={new[0][1]}"])
    assert [c.up for c in d.reports()] == [True]
    bad = d.apply(SetCircuits(ocs, ((p, p),)))
    assert not bad.ok


def test_a_change_is_done_once_settled_into_the_data_plane():
    """A step ends when its change is in force, not when the bundle committed: the
    driver settles after every commit (and after a rollback) and counts the time."""
    b = built()
    lay = HybridLayout.of(b.topology, b.routing)
    sw = {n: FakeSwitch() for n in [*lay.tors, *lay.ocs, *(int(x) for x in b.topology.meta["cores"])]}
    clock, log = Clock(), []

    def settle():
        log.append({n: s.bundles for n, s in sw.items()})  # what had committed by then
        clock.t += 3_000_000

    d = OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=10, clock=clock, sleep=clock.sleep,
                       settle=settle)
    assert len(log) == 1  # after the start-up tables
    for n, s in sw.items():
        s.table = d.tables[n].copy()
    t0 = d.now
    a = d.apply(PushRules(2, (PairRule(0, 2),)))
    assert a.ok and a.done_ns - t0 == 3_000_000 and len(log) == 2
    assert log[-1][lay.tors[0]] == 1  # settled after the commit, not before
    sw[lay.tors[1]].refuse = True
    a = d.apply(PushRules(2, (PairRule(0, 1), PairRule(1, 0))))
    assert not a.ok and len(log) == 4  # the change, then the rollback on tor0
    assert log[-1][lay.tors[0]] == log[-2][lay.tors[0]] + 1
    n = len(log)
    assert d.apply(RemoveRules(2, ((2, 1),))).ok and len(log) == n  # nothing changed: nothing to settle


def test_tags_on_a_node_that_is_no_tor_are_refused():
    b = built()
    d, sw, lay, _ = driver(b)
    a = d.apply(TagPorts(((lay.ocs[0], 1, frozenset({3})),)))
    assert not a.ok and "not a ToR" in a.failed
    assert np.all([s.bundles == 0 for s in sw.values()])


def test_losses_are_attributed_to_the_reconfiguration_windows_they_overlap():
    from netsteer.emulate.run import lost_during

    flow = {"lost_intervals": [(0.1, 0.2, 1), (1.0, 1.1, 7), (2.9, 3.0, 2)]}
    recs = [{"start_s": 1.02, "end_s": 1.05}, {"start_s": 2.0, "end_s": None}]
    assert lost_during(flow, recs) == 7
    assert lost_during(flow, recs, margin_s=0.95) == 1 + 7 + 2
    assert lost_during({"lost_intervals": []}, recs) == 0
    assert lost_during(flow, []) == 0


def test_a_packet_reordered_by_a_path_change_is_not_counted_as_lost():
    """iperf3 counts a sequence gap as lost and takes it back when the late packet
    comes (its next interval shows -1): net, nothing was lost in the window."""
    from netsteer.emulate.run import lost_during

    recs = [{"start_s": 1.02, "end_s": 1.05}]
    assert lost_during({"lost_intervals": [(1.0, 1.1, 1), (1.1, 1.2, -1)]}, recs) == 0
    assert lost_during({"lost_intervals": [(1.0, 1.1, 3), (1.1, 1.2, -1)]}, recs) == 2
    assert lost_during({"lost_intervals": [(1.0, 1.1, -1)]}, recs) == 0  # a gap before the window


def test_any_exception_from_a_switch_rolls_the_others_back_and_marks_it_stale():
    # an OSError (ovs-ofctl's temporary file on a full disk) is a failed switch like
    # a refusal: the switch that committed is rolled back, the failed one re-synced
    b = built()
    d, sw, lay, _ = driver(b)
    before = {n: s.table.copy() for n, s in sw.items()}
    sw[lay.tors[1]].raises = OSError(28, "No space left on device")
    a = d.apply(PushRules(2, (PairRule(0, 2), PairRule(1, 2))))
    assert not a.ok and "OSError" in a.failed and "rolled back" in a.failed
    assert sw[lay.tors[0]].table == before[lay.tors[0]] == d.tables[lay.tors[0]]
    assert d.stale == {lay.tors[1]}


def test_a_stale_switch_gets_its_whole_table_not_a_diff():
    # tor1 commits a change that adds a select group but answers late: stale, and the
    # others rolled back. The same change again, before any resync, must not diff
    # against the table the driver thinks tor1 holds (its "group add" meets the group
    # the late commit made, which Open vSwitch refuses)
    b = built()
    d, sw, lay, _ = driver(b)
    two = (VlanPath(7, (1, 2), (0,), 0.5), VlanPath(8, (1, 2), (1,), 0.5))
    intent = PushRules(2, (PairRule(0, 2), PairRule(1, 2, two)))
    sw[lay.tors[1]].late = True
    assert not d.apply(intent).ok and d.stale == {lay.tors[1]}
    sw[lay.tors[1]].late = False
    a = d.apply(intent)
    assert a.ok, a.failed
    assert sw[lay.tors[1]].replaced == 2 and d.stale == set()  # start-up, then this push
    assert all(s.table == d.tables[n] for n, s in sw.items())


def test_a_circuit_whose_switch_refuses_to_light_it_stays_down_until_it_takes_it():
    b = built()
    d, sw, lay, clock = driver(b)
    ocs = lay.ocs[0]
    (p, q), = b.hybrid.initial_state()[0][ocs]
    new = ((p, 3),) if q != 3 else ((p, 2),)
    assert d.apply(SetCircuits(ocs, new)).ok
    (dark,) = d.reports()
    assert not dark.up
    sw[ocs].refuse = True
    assert d.advance(None) != "changed"
    assert d.reports() == [] and set(dark.links) <= d.down  # nothing reported up that does not forward
    (f,) = d.failed_effects
    assert f.intent == SetCircuits(ocs, new) and "not lit" in f.failed and d.applied[-1] is f
    assert ocs in d.stale and sw[ocs].table == d.tables[ocs]  # the last good (dark) table holds
    assert not any(m == f"in_port={new[0][0]}" for (_, _, m) in sw[ocs].table.flows)
    # the switch answers again: its resync installs the lit table, then the links come up
    sw[ocs].refuse = False
    assert d.advance(d.now + 1000) == "changed"
    (up,) = d.reports()
    assert up.up and up.links == dark.links and not d.down and d.stale == set()
    lit = sorted(m for (_, prio, m) in sw[ocs].table.flows if prio == 10)
    assert lit == sorted([f"in_port={new[0][0]}", f"in_port={new[0][1]}"]) and sw[ocs].table == d.tables[ocs]


def test_a_new_pairing_replaces_circuits_that_never_lit_and_brings_their_links_up():
    b = built()
    d, sw, lay, clock = driver(b)
    ocs = lay.ocs[0]
    (p, q), = b.hybrid.initial_state()[0][ocs]
    new = ((p, 3),) if q != 3 else ((p, 2),)
    d.apply(SetCircuits(ocs, new))
    (dark,) = d.reports()
    sw[ocs].refuse = True
    d.advance(None)
    sw[ocs].refuse = False
    back = d.apply(SetCircuits(ocs, ((p, q),)))  # the controller rolls back before any resync
    assert back.ok
    assert d.advance(None) == "changed"
    ups = [c for c in d.reports() if c.up]
    assert set(dark.links) <= {x for c in ups for x in c.links} and not d.down


def test_a_failed_statistics_read_is_missing_not_zero():
    b = built()
    d, sw, lay, _ = driver(b)
    t = b.topology
    tor = lay.tors[0]
    mine = [c for c in range(t.n_channels) if int(t.channel_src()[c]) == tor]
    assert not np.isnan(d.counters().port_bytes).any()
    sw[tor].stats_fail = True
    c = d.counters()
    assert np.isnan(c.port_bytes[mine]).all() and np.isnan(c.pair_bytes[0]).all()
    others = [x for x in range(t.n_channels) if x not in mine and int(t.channel_dst()[x]) != tor]
    assert not np.isnan(c.port_bytes[others]).any() and not np.isnan(c.pair_bytes[1:]).any()


def test_a_circuit_command_moved_again_before_it_lit_never_lights_its_pairing():
    """A second re-pairing of the same switch inside the first one's switching time:
    the first one's timer must not put its pairs in force (the switch would forward
    into ports the second moved), its record says it never took effect, and the
    second lights its own pairs after its own switching time."""
    b = built()
    d, sw, lay, clock = driver(b)
    ocs = lay.ocs[0]
    (p, q), = b.hybrid.initial_state()[0][ocs]
    r = ({1, 2, 3} - {p, q}).pop()
    first = d.apply(SetCircuits(ocs, ((p, r),)))
    d.applied.append(first)  # as the controller loop records what apply answered
    clock.sleep(0.010)
    second = d.apply(SetCircuits(ocs, ((q, r),)))
    assert first.ok and second.ok and second.done_ns == 35_000_000
    # the first one's timer: nothing lit ("until", not "changed"), all still dark
    assert d.advance(30_000_000) == "until" and d.now == 25_000_000
    assert not any(m.startswith("in_port") for (_, _, m) in sw[ocs].table.flows)
    assert d.state.pairing[ocs] == ()
    rec = [a for a in d.applied if a.intent is first.intent][0]
    assert rec.superseded is not None and rec.superseded.startswith("never in effect"), rec
    assert d.advance(None) == "changed" and d.now == 35_000_000
    assert sorted(m for (_, prio, m) in sw[ocs].table.flows if prio == 10) == sorted([f"in_port={q}", f"in_port={r}"])
    assert d.state.pairing[ocs] == ((q, r),)
