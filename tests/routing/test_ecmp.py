"""ECMP groups and the engine registry."""

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import ENGINES, Routing, build_routing, ecmp, register_engine
from netsteer.topology.pgft import pgft


def tree3():
    return pgft(3, [2, 2, 2], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=0)


def test_groups_are_all_min_hop_ports():
    t = tree3()
    r = ecmp(t)
    r.check()
    s10 = t.node("s1_0")
    assert r.next_hops(s10, 0) == [1]
    assert r.next_hops(s10, 2) == [3, 4]  # both parents
    top = t.node("s3_0")
    assert r.next_hops(top, 7) == [2]  # down is unique
    assert sorted(g.tolist() for g in r.groups) == [[3, 4]]


def test_flow_hash_spreads_one_pair_over_all_paths():
    t = tree3()
    r = ecmp(t, hash="flow")
    n = 1000
    off, ch = r.paths(np.zeros(n, int), np.full(n, 7))
    paths = ch.reshape(n, 6)  # h0 -> top -> h7: six channels
    uniq, counts = np.unique(paths, axis=0, return_counts=True)
    assert len(uniq) == 4  # 2 level-2 choices x 2 level-3 choices
    assert counts.min() > 150 and counts.max() < 350


def test_dst_and_src_dst_hashes():
    t = tree3()
    by_dst = ecmp(t, hash="dst")
    s10 = t.node("s1_0")
    # h0 and h1 share leaf s1_0: with the dst hash they leave it the same way
    for d in range(2, 8):
        assert by_dst.path(0, d)[1] == by_dst.path(1, d)[1]
    by_pair = ecmp(t, hash="src-dst")
    a = by_pair.paths([0] * 5, [7] * 5, flow_ids=range(5))[1]
    assert len(set(a.reshape(5, 6)[:, 1].tolist())) == 1  # one pair, one path
    firsts = {by_pair.path(s, d)[1] for s in (0, 1) for d in range(2, 8)}
    assert firsts == {int(t.out_channel[s10, 3]), int(t.out_channel[s10, 4])}


def test_build_routing_registry():
    t = tree3()
    assert build_routing(t, "ecmp", hash="flow").ecmp_hash == "flow"
    assert build_routing(t, "dmodk").engine == "dmodk"
    with pytest.raises(RoutingError, match="unknown routing engine 'nosuch'; known engines: dmodk, .*ecmp,.*minhop"):
        build_routing(t, "nosuch")
    with pytest.raises(RoutingError, match="routing engine 'minhop' takes no parameters, not 'hash'"):
        build_routing(t, "minhop", hash="dst")
    # (down_links, which a re-route passes, is no routing: key a user could write)
    with pytest.raises(RoutingError, match=r"routing engine 'ecmp' takes hash, not 'partitions'$"):
        build_routing(t, "ecmp", partitions={})

    def flat(topo, circuits=None):
        return Routing(topo, np.full((topo.n_nodes, topo.n_hosts), -1), engine="flat")

    register_engine("flat", flat)
    try:
        assert build_routing(t, "flat").engine == "flat"
    finally:
        del ENGINES["flat"]
