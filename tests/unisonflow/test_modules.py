"""Modules on fabrics of several shapes: disjoint all-reduce rounds, multicast trees."""

import numpy as np
import pytest

from netsteer.topology.hyperx import hyperx
from netsteer.topology.pgft import pgft
from netsteer.unisonflow.controller import InterconnectController
from netsteer.unisonflow.fabric import Fabric
from netsteer.unisonflow.modules import JobView
from netsteer.unisonflow.modules.allreduce import rounds
from netsteer.unisonflow.rules import follow
from netsteer.unisonflow.tags import Tag, host_mac

FABRICS = {
    "2-level full bisection": lambda: pgft(2, [4, 4], [1, 4], link_bandwidth=1e9, link_latency_ns=0),
    "3-level": lambda: pgft(3, [4, 4, 4], [1, 4, 4], link_bandwidth=1e9, link_latency_ns=0),
    "hyperx 4x4": lambda: hyperx([4, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0),
}


def controller(topo, mods, ranks=None):
    f = Fabric(topo)
    hosts = list(range(ranks or topo.n_hosts))
    return f, hosts, InterconnectController(f, {0: (JobView(0, {0: hosts}), mods)})


@pytest.mark.parametrize("name", ["2-level full bisection", "3-level"])
def test_allreduce_rounds_share_no_link_where_the_fabric_has_enough(name):
    topo = FABRICS[name]()
    f, hosts, c = controller(topo, [{"module": "allreduce-disjoint", "algorithm": "recursive_doubling"}])
    for rnd in rounds("recursive_doubling", len(hosts)):
        used = []
        for s, d in rnd:
            d_ = c.handle(Tag("allreduce", 0, 0, s, d).value())
            assert d_.module == "allreduce-disjoint" and d_.failed is None
            used += follow(d_.rules, f, hosts[s], [hosts[d]], [host_mac(hosts[d])])
        assert len(used) == len(set(used)), "two flows of one round share a link"


def test_ecmp_shares_links_in_the_same_rounds():
    # the contrast that makes the module worth having: ECMP hashing collides somewhere
    topo = FABRICS["3-level"]()
    f, hosts, c = controller(topo, [])
    shared = 0
    for rnd in rounds("recursive_doubling", len(hosts)):
        used = []
        for s, d in rnd:
            used += follow(c.handle(Tag("allreduce", 0, 0, s, d).value()).rules, f, hosts[s], [hosts[d]], [host_mac(hosts[d])])
        shared += len(used) - len(set(used))
    assert shared > 0


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_multicast_tree_reaches_every_receiver_once(name):
    topo = FABRICS[name]()
    f, hosts, c = controller(topo, [{"module": "bcast-multicast"}])
    for root in (0, len(hosts) - 1):
        d = c.handle(Tag("bcast", 0, 0, root, root).value())
        assert d.failed is None
        others = [h for h in hosts if h != hosts[root]]
        chans = follow(d.rules, f, hosts[root], others, [host_mac(h) for h in others])
        assert len(chans) == len(set(chans))  # a tree: each link carries the data once
        groups = [r for r in d.rules if len(r.outputs) > 1]
        assert groups, "switches branch: group tables"
        # fewer link crossings than unicast to every receiver
        uni = sum(len(f.walk(hosts[root], h, lambda n, p: p[0])) + 1 for h in others)
        assert len(chans) < uni


@pytest.mark.parametrize("name", sorted(FABRICS))
def test_pin_and_default_route_every_pair(name):
    """Every pair is routed; a pair with a min-hop path through the via switch takes
    one, and a pair without one (same pod on 3 levels, most HyperX pairs) is the
    module's failure, routed by the default, never counted as pinned."""
    topo = FABRICS[name]()
    sw = next(n for n in range(topo.n_nodes) if topo.node_kind[n] != 0 and topo.node_level[n] == topo.node_level.max())
    f, hosts, c = controller(topo, [{"module": "pin", "primitive": "reduce", "via": topo.node_names[sw]}])
    rng = np.random.default_rng(0)
    pinned = failed = 0
    for s, d in rng.choice(len(hosts), size=(40, 2)):
        if s == d:
            continue
        for prim in ("reduce", "send"):
            dec = c.handle(Tag(prim, 0, 0, int(s), int(d)).value())
            follow(dec.rules, f, hosts[s], [hosts[d]], [host_mac(hosts[d])])
            if prim != "reduce":
                assert dec.failed is None
                continue
            # whether some min-hop path from s to d crosses sw: a walk over every next hop
            todo, seen, through = [f.switch_of_host[hosts[s]]], set(), False
            while todo:
                n = todo.pop()
                if n in seen or n not in f.switch_set:
                    continue
                seen.add(n)
                through |= n == sw
                todo += [f.peer[n][p][0] for p in f.next_ports(n, hosts[d])]
            single = f.switch_of_host[hosts[s]] == f.switch_of_host[hosts[d]]
            if through or single:
                assert dec.failed is None and dec.module == "pin"
                assert single or any(r.switch == sw for r in dec.rules)
                pinned += 1
            else:
                assert dec.module == "ecmp" and "crosses via" in dec.failed
                failed += 1
    assert pinned > 0
    if name == "2-level full bisection":
        assert failed == 0  # a spine is on a min-hop path of every inter-leaf pair


def test_a_switch_that_does_not_answer_keeps_its_links_as_last_measured_and_is_named_once():
    # the controller reads the port counters at each packet-in; spine s2_0 does not
    # answer from the second reading to the fifth. Its links keep the utilization last
    # measured and the other links are measured as usual (one silent switch used to
    # freeze the whole fabric's utilization, silently); the report and the notes say
    # which switch, since when, how many readings and when it answered again
    from netsteer.control.core import Inputs
    from netsteer.control.driver import Counters, NetworkView
    from netsteer.unisonflow.controller import PacketIn

    topo = pgft(2, [2, 2], [1, 2], link_bandwidth=8e9, link_latency_ns=0)  # 1 GB/s links
    _, _, c = controller(topo, [])
    spine = topo.node("s2_0")
    mine = topo.channel_src() == spine
    mac = Tag("bcast", 0, 0, 0, 3).value()

    def read(t_ms, spine_bytes):
        # the links carry 0.5 GB/s until 100 ms, 0.2 GB/s after; the spine's links read
        # spine_bytes (None: no answer)
        s = t_ms / 1e3
        ports = np.full(topo.n_channels, 0.5e9 * s if s <= 0.1 else 0.05e9 + 0.2e9 * (s - 0.1))
        ports[mine] = np.nan if spine_bytes is None else spine_bytes
        counters = Counters(t_ms * 10**6, ports)
        c.decide(Inputs(t_ms * 10**6, NetworkView(t_ms * 10**6, frozenset()), [PacketIn(t_ms * 10**6, 0, mac)],
                        read_counters=lambda: counters))

    read(100, 0.05e9)  # all links half busy
    assert np.allclose(c.state.util, 0.5)
    for t in (200, 300, 400, 500):
        read(t, None)
        # the others are measured (they stayed at 0.5 with the spine silent); the spine's kept
        assert np.allclose(c.state.util[~mine], 0.2) and np.allclose(c.state.util[mine], 0.5)
    # the spine's links ran at 0.9 GB/s since 100 ms: measured over that longer window
    read(600, 0.05e9 + 0.5 * 0.9e9)
    assert np.allclose(c.state.util[~mine], 0.2) and np.allclose(c.state.util[mine], 0.9)
    u = c.report()["unanswered"]
    (sw,) = u["switches"]
    assert sw["switch"] == "s2_0" and sw["readings_missed"] == 4 and u["readings_incomplete"] == 4
    assert sw["silences"] == [{"from_s": 0.2, "last_missed_s": 0.5, "readings": 4, "answered_again_s": 0.6}]
    (note,) = c.unplayed(10**9)
    assert note.startswith("controller.unisonflow: switch s2_0 did not answer 4 counter readings in a row, "
                           "from 200 ms to 500 ms; it answered again at 600 ms")
    assert "the links without a reading kept the utilization last measured" in note
