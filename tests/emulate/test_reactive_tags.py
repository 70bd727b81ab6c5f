"""The reactive tag path's logic (packet-ins -> controller -> bundles -> packet-out)
with switches that record what they are sent; the real OVS run is in
``emulate.unisonflow_real`` (routing ``controller``)."""

from __future__ import annotations

import queue

from netsteer.drivers.openflow.switch import SwitchError
from netsteer.emulate.reactive_tags import ReactiveTags
from netsteer.topology.pgft import pgft
from netsteer.unisonflow.controller import InterconnectController
from netsteer.unisonflow.fabric import Fabric
from netsteer.unisonflow.modules import REGISTRY, JobView, PrimitiveModule
from netsteer.unisonflow.tags import Tag


class Osken:
    def __init__(self):
        self.events = queue.Queue()


class Switch:
    def __init__(self, dpid, refuse=False):
        self.dpid, self.refuse, self.bundles, self.out = dpid, refuse, [], []

    def bundle(self, lines):
        if self.refuse:
            raise SwitchError(f"switch {self.dpid} refused the change: no room")
        self.bundles.append(list(lines))

    def packet_out(self, in_port, data):
        self.out.append((in_port, data))


class Flaky(Switch):
    """Refuses its first ``times`` bundles (None: every one), as a switch whose table
    is full, then takes them; ``tried`` counts every bundle sent."""

    def __init__(self, dpid, times=None):
        super().__init__(dpid)
        self.times, self.tried, self.at = times, 0, []

    def bundle(self, lines):
        import time

        self.tried += 1
        self.at.append(time.monotonic())
        if self.times is None or self.tried <= self.times:
            raise SwitchError(f"switch {self.dpid} refused the change: OFPFMFC_TABLE_FULL")
        self.bundles.append(list(lines))


def held(switch) -> set[str]:
    """The flows (match) and groups (id) a recording switch holds after its bundles."""
    out = set()
    for b in switch.bundles:
        for x in b:
            what, verb, rest = x.split(" ", 2)
            key = rest.split(" actions=")[0] if what == "flow" else rest.split(",")[0]
            if verb == "add":
                out.add(f"{what} {key}")
            else:
                out.discard(f"{what} {key}")
    return out


def settled(r, timeout=5.0):
    """Wait until no tag ``r`` serves is waiting for a retry; its report."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rep = r.report()
        if rep["refused"] and all(x["outcome"] != "pending" for x in rep["refused"]):
            return rep
        time.sleep(0.005)
    raise AssertionError(f"still pending: {r.report()['refused']}")


class Broken(PrimitiveModule):
    name = "broken-for-test"

    def rules(self, tag, state):
        raise RuntimeError("a bug in the module")


def setup(specs, refuse=()):
    topo = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    fab = Fabric(topo)
    ctl = InterconnectController(fab, {0: (JobView(0, {0: [0, 1, 2, 3]}), specs)})
    sw = {n: Switch(100 + n, n in refuse) for n in fab.switches}
    return topo, fab, ctl, sw


def frame(sw, tag, port=1, truncated=False):
    return {"event": "packet_in", "dpid": sw.dpid, "in_port": port, "eth_dst": tag, "data": "00" * 60,
            "truncated": truncated}


def test_a_batch_of_misses_is_one_bundle_per_switch_then_every_frame_goes_on():
    topo, fab, ctl, sw = setup([{"module": "pin", "primitive": "bcast", "via": "s2_1"}])
    osk = Osken()
    leaf = sw[topo.node("s1_0")]
    tags = [Tag("bcast", 0, 0, 0, d).value() for d in (2, 3)]
    for t in tags + tags:  # the second frame of each tag missed before the rules came
        osk.events.put(frame(leaf, t))
    osk.events.put(frame(leaf, tags[0], truncated=True))
    with ReactiveTags(osk, sw, ctl) as r:
        pass
    rep = r.report()
    assert rep["packet_ins"] == 5 and rep["tags"] == 2 and rep["by_module"] == {"pin": 2}
    assert rep["resent"] == 4 and rep["dropped"] == 1  # a truncated frame cannot be sent on
    # one batch: each switch on the paths got one bundle with both tags' rules
    spine = sw[topo.node("s2_1")]
    assert len(leaf.bundles) == 1 and len(leaf.bundles[0]) == 2
    assert len(spine.bundles) == 1 and all("dl_dst=" in x for x in spine.bundles[0])
    assert sum(len(s.bundles) for s in sw.values()) == 3  # s1_0, s2_1, s1_1
    assert len(leaf.out) == 4
    # the last switch writes the host's true MAC back
    last = sw[topo.node("s1_1")].bundles[0]
    assert all("set_field:02:00:00:00:00:0" in x for x in last)


def test_a_failing_module_falls_back_to_the_default_and_is_reported(monkeypatch):
    monkeypatch.setitem(REGISTRY, Broken.name, Broken)  # registered for this test only
    topo, fab, ctl, sw = setup([{"module": "broken-for-test", "primitive": "reduce"}])
    osk = Osken()
    leaf = sw[topo.node("s1_0")]
    osk.events.put(frame(leaf, Tag("reduce", 0, 0, 0, 3).value()))
    with ReactiveTags(osk, sw, ctl) as r:
        pass
    rep = r.report()
    assert rep["by_module"] == {"ecmp": 1} and "a bug in the module" in rep["failures"][0]
    assert ctl.report()["failures"] == 1
    assert leaf.bundles and leaf.out  # the traffic goes on by the default routing


def test_a_switch_that_refuses_is_reported_and_the_loop_goes_on():
    topo, fab, ctl, sw = setup([], refuse=(Fabric(pgft(2, [2, 2], [1, 2], link_bandwidth=1e9,
                                                        link_latency_ns=0)).topo.node("s1_0"),))
    osk = Osken()
    leaf = sw[topo.node("s1_0")]
    osk.events.put(frame(leaf, Tag("send", 0, 0, 0, 2).value()))
    osk.events.put(frame(leaf, Tag("send", 0, 0, 1, 3).value()))
    with ReactiveTags(osk, sw, ctl) as r:
        pass
    rep = r.report()
    assert rep["tags"] == 2 and any("no room" in e for e in rep["errors"])


def test_a_tag_a_switch_refused_is_rolled_back_everywhere_and_retried_until_it_goes_in():
    """The spine refuses the batch's bundle once: the leaves, which took it, get the
    tags' rules removed (no tag half-installed), and the tags are tried again after
    the backoff on all three switches. It used to be given up, its rules left on the
    leaves (frames sent to a spine that had none) and never asked again."""
    topo, fab, ctl, sw = setup([{"module": "pin", "primitive": "bcast", "via": "s2_1"}])
    spine = sw[topo.node("s2_1")] = Flaky(100 + topo.node("s2_1"), times=1)
    osk = Osken()
    leaf, far = sw[topo.node("s1_0")], sw[topo.node("s1_1")]
    tags = [Tag("bcast", 0, 0, 0, d).value() for d in (2, 3)]
    for t in tags:
        osk.events.put(frame(leaf, t))
    with ReactiveTags(osk, sw, ctl, backoff_s=0.05) as r:
        rep = settled(r)
    assert rep["tags"] == 2 and rep["refused_tags"] == 2
    for x in rep["refused"]:
        assert x["retries"] == 1 and x["outcome"] == "installed on retry 1" and x["switch"] == "s1_0"
        assert list(x["refused_by"]) == ["s2_1"] and "TABLE_FULL" in x["refused_by"]["s2_1"]
    # the leaves: the tags' rules, then their removal, then the rules again
    for s in (leaf, far):
        assert len(s.bundles) == 3 and all(x.startswith("flow delete_strict") for x in s.bundles[1])
    assert spine.tried == 2 and len(spine.bundles) == 1
    # in the end every switch of the path holds both tags' rules
    assert all(len([k for k in held(s) if "priority=50" in k]) == 2 for s in (leaf, spine, far))
    (note,) = rep["notes"]
    assert "switch s2_1 refused the bundle with the rules of 2 tags" in note and "2 installed on retry 1" in note
    # their frames came before the rules were in: not sent back into the tables
    assert rep["dropped"] == 2 and rep["resent"] == 0


def test_a_tag_a_switch_keeps_refusing_is_given_up_after_the_retries_and_left_nowhere_half_installed():
    from netsteer.emulate.reactive_tags import RETRIES

    topo, fab, ctl, sw = setup([{"module": "pin", "primitive": "bcast", "via": "s2_1"}])
    spine = sw[topo.node("s2_1")] = Flaky(100 + topo.node("s2_1"))
    osk = Osken()
    leaf, far = sw[topo.node("s1_0")], sw[topo.node("s1_1")]
    tag = Tag("bcast", 0, 0, 0, 2).value()
    osk.events.put(frame(leaf, tag))
    with ReactiveTags(osk, sw, ctl, backoff_s=0.01) as r:
        rep = settled(r)
    (x,) = rep["refused"]
    assert x["retries"] == RETRIES and spine.tried == RETRIES + 1
    assert x["outcome"] == f"given up after {RETRIES} retries: rolled back, the default routing carries it"
    assert held(leaf) == held(far) == set() and spine.bundles == []
    (note,) = rep["notes"]
    assert f"retried up to {RETRIES} times" in note and "1 given up after" in note and _mac_of(tag) in note
    # each try is taken by the leaves, then rolled back
    assert len(leaf.bundles) == 2 * (RETRIES + 1)
    # the backoff doubles: the tries went out 0.01, 0.02, 0.04 s after each refusal
    gaps = [b - a for a, b in zip(spine.at, spine.at[1:])]
    assert all(g >= 0.01 * 2 ** i for i, g in enumerate(gaps))


def test_frames_the_default_rules_forwarded_are_not_sent_again_and_a_silent_switch_gets_a_quiet_rule():
    """Notify rules (cookie NOTIFY_COOKIE) forward the frame themselves: the controller
    only installs. A switch that tells about a tag its module gave no rule gets one
    quiet rule (the default, no copy), once."""
    from netsteer.emulate.fabric_routes import NOTIFY_COOKIE, _mac

    topo, fab, ctl, sw = setup([{"module": "pin", "primitive": "bcast", "via": "s2_1"}])
    osk = Osken()
    leaf, other = sw[topo.node("s1_0")], sw[topo.node("s2_0")]
    tag = Tag("bcast", 0, 0, 0, 2).value()
    for s in (leaf, leaf, other, other):
        osk.events.put({**frame(s, tag), "cookie": NOTIFY_COOKIE})
    with ReactiveTags(osk, sw, ctl) as r:
        pass
    rep = r.report()
    assert rep["packet_ins"] == 4 and rep["tags"] == 1
    assert rep["resent"] == 0 and leaf.out == [] and other.out == []
    # s2_0 is off the pinned path (via s2_1): it told, so it gets the quiet rule, once
    assert rep["quieted"] == 1
    quiet = [x for b in other.bundles for x in b]
    assert quiet == [f"flow add table=0,priority=45,dl_dst={_mac(tag)} actions=resubmit(,1)"]
    assert not any("resubmit" in x for b in leaf.bundles for x in b)  # the path's switches hold its rules


def test_a_tag_the_controller_cannot_decode_goes_by_the_default_routing_or_to_its_ranks_real_host():
    """No rank = host guess: with the default routing's table the tag is sent there
    (it knows each rank's host); without one, the job's own placement says where."""
    from netsteer.emulate.fabric_routes import _mac
    from netsteer.emulate.testbed import host_mac

    bad = (62 << 42) | (1 << 41) | 2  # primitive code 62 is no MPI primitive; destination rank 2
    for kwargs, want in (({}, "actions=resubmit(,1)"),
                         ({"default_table": None, "rank_host": [3, 2, 0, 1]}, f"set_field:{host_mac(0)}->eth_dst"),
                         ({"default_table": None}, None)):
        topo, fab, ctl, sw = setup([])
        osk = Osken()
        leaf = sw[topo.node("s1_0")]
        osk.events.put(frame(leaf, bad))
        with ReactiveTags(osk, sw, ctl, **kwargs) as r:
            pass
        rep = r.report()
        rules = [x for b in leaf.bundles for x in b]
        assert rep["tags"] == 1 and rep["failures"]
        if want is None:
            assert rules == [] and "no host known for rank 2" in rep["failures"][0]
        else:
            assert len(rules) == 1 and f"dl_dst={_mac(bad)}" in rules[0] and want in rules[0]


class Bouncer(PrimitiveModule):
    """Rules the controller accepts (switches, ports, match) that send the tag up to a
    spine and straight back down the way it came: frames die at the spine."""

    name = "bouncer-for-test"

    def rules(self, tag, state):
        from netsteer.unisonflow.rules import FlowRule

        f = self.fabric
        s, d = self.job.comms[tag.comm][tag.src], self.job.comms[tag.comm][tag.dst]
        leaf = f.switch_of_host[s]
        up = f.up_ports(leaf, d)[0]
        spine, back, _ = f.peer[leaf][up]
        return [FlowRule(leaf, tag.value(), ((up, None),)), FlowRule(spine, tag.value(), ((back, None),))]


def test_rules_that_do_not_deliver_are_not_installed_and_the_tag_takes_the_default(monkeypatch):
    """As the simulator's data plane: the rules are followed before they go out."""
    monkeypatch.setitem(REGISTRY, Bouncer.name, Bouncer)
    topo, fab, ctl, sw = setup([{"module": "bouncer-for-test", "primitive": "reduce"}])
    osk = Osken()
    leaf = sw[topo.node("s1_0")]
    tag = Tag("reduce", 0, 0, 0, 3).value()
    osk.events.put(frame(leaf, tag))
    with ReactiveTags(osk, sw, ctl) as r:
        pass
    rep = r.report()
    assert rep["by_module"] == {"default": 1} and "bouncer-for-test" in rep["failures"][0]
    assert "loop" in rep["failures"][0] and ctl.report()["failures"] == 1
    rules = [x for s in sw.values() for b in s.bundles for x in b]
    assert rules == [f"flow add table=0,priority=50,dl_dst={_mac_of(tag)} actions=resubmit(,1)"]


def test_a_multicast_tree_reaching_every_other_host_of_the_communicator_is_installed():
    topo, fab, ctl, sw = setup([{"module": "bcast-multicast"}])
    osk = Osken()
    leaf = sw[topo.node("s1_0")]
    osk.events.put(frame(leaf, Tag("bcast", 0, 0, 0, 0).value()))
    with ReactiveTags(osk, sw, ctl) as r:
        pass
    rep = r.report()
    assert rep["by_module"] == {"bcast-multicast": 1} and rep["failures"] == []
    assert any("type=all" in x for s in sw.values() for b in s.bundles for x in b)


def _mac_of(tag: int) -> str:
    from netsteer.emulate.fabric_routes import _mac

    return _mac(tag)
