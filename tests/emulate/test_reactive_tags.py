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
