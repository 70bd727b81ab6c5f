"""The openflow driver learns link failures and repairs from the switches' port
states, without a switch (fake switches, a fake clock)."""

from __future__ import annotations

from netsteer.control.intents import SetCircuits
from netsteer.drivers.openflow.driver import OpenFlowDriver
from netsteer.drivers.openflow.flows import HybridLayout
from netsteer.drivers.openflow.switch import SwitchError

from .test_flows import Clock, FakeSwitch, built


class PortSwitch(FakeSwitch):
    """A fake switch with port states: every port up unless listed in ``downs``;
    ``silent`` makes its port-state read fail (it does not answer)."""

    def __init__(self):
        super().__init__()
        self.downs: set[int] = set()
        self.silent = False
        self.reads = 0

    def port_state(self):
        self.reads += 1
        if self.silent:
            raise SwitchError("s: no answer within 10 s (disconnected?)")
        return {p: p not in self.downs for p in range(1, 20)}


def driver(b, **kw):
    lay = HybridLayout.of(b.topology, b.routing)
    sw = {n: PortSwitch() for n in [*lay.tors, *lay.ocs, *(int(x) for x in b.topology.meta["cores"])]}
    clock = Clock()
    d = OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=10, clock=clock, sleep=clock.sleep, **kw)
    for n, s in sw.items():
        s.table = d.tables[n].copy()
    return d, sw, lay, clock


def ocs_link(topo, ocs, port) -> int:
    return int(topo.out_channel[ocs, port]) // 2


def links_of(reports, cause, up):
    return {x for r in reports if r.cause == cause and r.up == up for x in r.links}


def test_a_port_going_down_is_a_failed_link_reported_and_kept_apart_from_dark():
    b = built()
    d, sw, lay, clock = driver(b)
    t = b.topology
    ocs = lay.ocs[0]
    (p, q), = b.hybrid.initial_state()[0][ocs]
    cable = ocs_link(t, ocs, p)
    assert d.view().failed_links == frozenset() and d.reports() == []
    # the circuit's cable goes down at the circuit switch's end: seen at the next poll
    sw[ocs].downs.add(p)
    t0 = d.now
    assert d.advance(d.now + 10**9) == "changed"  # a failure wakes the controller at once
    assert d.now - t0 <= 100_000_000  # the default poll interval
    (r,) = d.reports()
    assert (r.cause, r.links, r.up) == ("links", (cable,), False)
    v = d.view()
    assert v.failed_links == {cable} and cable in v.down_links
    # the circuit switch moves its other ports: dark, not failed
    other = 3 if 3 not in (p, q) else 2
    assert d.apply(SetCircuits(ocs, ((q, other),))).ok
    (dark,) = d.reports()
    assert dark.cause == "circuits" and not dark.up and cable in dark.links
    moved = set(dark.links) - {cable}
    assert moved
    v = d.view()
    assert v.failed_links == {cable} and moved <= v.down_links
    # the cable is repaired while its port is still dark: reported up, still down until lit
    sw[ocs].downs.clear()
    assert d.poll_links()
    (up,) = d.reports()
    assert (up.cause, up.links, up.up) == ("links", (cable,), True)
    assert d.view().failed_links == frozenset() and cable in d.view().down_links
    assert d.advance(None) == "changed"
    assert not d.down and links_of(d.reports(), "circuits", True) >= moved | {cable}
    assert d.link_changes == [{"at_s": r.at_ns / 1e9, "links": [cable], "up": False},
                              {"at_s": up.at_ns / 1e9, "links": [cable], "up": True}]


def test_a_re_pairing_never_lights_a_failed_cable():
    b = built()
    d, sw, lay, clock = driver(b)
    t = b.topology
    ocs = lay.ocs[0]
    (p, q), = b.hybrid.initial_state()[0][ocs]
    other = 3 if 3 not in (p, q) else 2
    cable = ocs_link(t, ocs, other)  # a port with no circuit yet: its cable fails
    sw[ocs].downs.add(other)
    assert d.poll_links() and links_of(d.reports(), "links", False) == {cable}
    # the controller (not knowing better) pairs that port: after the switching time the
    # circuit lights, but the failed cable is not reported up and stays down
    assert d.apply(SetCircuits(ocs, ((p, other),))).ok
    dark = links_of(d.reports(), "circuits", False)
    assert cable in dark
    assert d.advance(None) == "changed"
    lit = links_of(d.reports(), "circuits", True)
    assert cable not in lit and lit == dark - {cable}
    assert cable in d.down and d.view().failed_links == {cable}
    # its port comes back: now it is up
    sw[ocs].downs.clear()
    assert d.advance(d.now + 10**9) == "changed"
    assert links_of(d.reports(), "links", True) == {cable} and not d.down


def test_a_switch_that_does_not_answer_fails_none_of_its_links():
    b = built()
    d, sw, lay, clock = driver(b)
    t = b.topology
    ocs, tor = lay.ocs[0], lay.tors[1]
    (p, q), = b.hybrid.initial_state()[0][ocs]
    # the circuit switch goes silent; a ToR's optical port goes down meanwhile
    sw[ocs].silent = True
    tport = int(lay.tor_port_of[1, 1])
    tcable = int(t.out_channel[tor, tport]) // 2
    sw[tor].downs.add(tport)
    assert d.advance(d.now + 10**9) == "changed"
    assert links_of(d.reports(), "links", False) == {tcable}  # the silent switch's links: nothing
    assert d.view().failed_links == {tcable}
    # a failure already seen is not repaired by silence either
    sw[ocs].silent = False
    sw[ocs].downs.add(p)
    assert d.poll_links()
    d.reports()
    sw[ocs].silent = True
    sw[ocs].downs.clear()
    sw[tor].downs.clear()
    reads = sw[ocs].reads
    assert d.poll_links() and sw[ocs].reads == reads + 1
    assert links_of(d.reports(), "links", True) == {tcable}  # the answering ToR's repair
    assert d.view().failed_links == {ocs_link(t, ocs, p)}
    # it answers again: the repair is seen
    sw[ocs].silent = False
    assert d.poll_links() and d.view().failed_links == frozenset()


def test_port_states_are_read_every_poll_interval_while_the_driver_sleeps():
    b = built()
    d, sw, lay, clock = driver(b, link_poll_s=0.05)
    reads = sw[lay.tors[0]].reads
    assert reads == 1  # at start
    assert d.advance(d.now + 500_000_000) == "until"
    assert sw[lay.tors[0]].reads == reads + 10
