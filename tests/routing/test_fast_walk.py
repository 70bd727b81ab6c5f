"""The Rust walk of tables (ECMP groups included) gives exactly the paths of the
general (numpy) walk, and hands what it cannot resolve back to it."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.routing import build_routing
from netsteer.routing.table import Routing
from netsteer.topology import pgft
from netsteer.topology.hyperx import hyperx


def fast(routing, src, dst, fid=None):
    src, dst = np.asarray(src), np.asarray(dst)
    fid = np.arange(len(src)) if fid is None else np.asarray(fid)
    return routing._walk_fast(src, dst, fid)


def general_walk(routing, src, dst, monkeypatch, flow_ids=None):
    with monkeypatch.context() as m:
        m.setattr(Routing, "_walk_fast", lambda self, s, d, f: None)
        return routing.paths(src, dst, flow_ids=flow_ids)


CASES = [
    (pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0), "dmodk", {}),
    (pgft(3, [4, 4, 4], [2, 2, 2], [1, 2, 1], link_bandwidth=1e9, link_latency_ns=0), "dmodk", {}),
    (pgft(3, [4, 4, 4], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=0), "minhop", {}),
    (hyperx([3, 3], 1, 2, link_bandwidth=1e9, link_latency_ns=0), "minhop", {}),
    # ECMP groups, every hash, parallel cables and a HyperX
    (pgft(3, [4, 4, 4], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=0), "ecmp", {"hash": "dst"}),
    (pgft(3, [4, 4, 4], [2, 2, 2], [1, 2, 1], link_bandwidth=1e9, link_latency_ns=0), "ecmp",
     {"hash": "src-dst"}),
    (pgft(2, [4, 6], [1, 3], [1, 2], link_bandwidth=1e9, link_latency_ns=0), "ecmp", {"hash": "flow"}),
    (hyperx([4, 3], 2, 2, link_bandwidth=1e9, link_latency_ns=0), "ecmp", {"hash": "src-dst"}),
    (hyperx([3, 3, 3], 1, 1, link_bandwidth=1e9, link_latency_ns=0), "ecmp", {"hash": "flow"}),
]


@pytest.mark.parametrize("topo,engine,params", CASES)
def test_fast_walk_matches_general_walk(topo, engine, params, monkeypatch):
    r = build_routing(topo, engine, **params)
    rng = np.random.default_rng(7)
    src = rng.integers(0, topo.n_hosts, 500)
    dst = rng.integers(0, topo.n_hosts, 500)
    fid = rng.integers(-(1 << 40), 1 << 40, 500)  # ids past 32 bits hash modulo 2^32
    assert fast(r, src, dst, fid) is not None  # the fast walk handled them
    fo, fc = r.paths(src, dst, flow_ids=fid)
    go, gc = general_walk(r, src, dst, monkeypatch, flow_ids=fid)
    assert fo.tolist() == go.tolist() and fc.tolist() == gc.tolist()
    if engine == "ecmp":  # only the flow hash gives one pair several paths
        assert r.groups
        pairs = {}
        for i in range(500):
            pairs.setdefault((src[i], dst[i]), set()).add(tuple(fc[fo[i]:fo[i + 1]]))
        spread = max(len(p) for p in pairs.values())
        assert (spread > 1) == (params["hash"] == "flow")


def test_fast_walk_hands_errors_to_the_general_walk():
    from netsteer.errors import RoutingError

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "dmodk")
    r.set_entry(t.node("s1_0"), 5, -1)  # s1_0 no longer knows h5
    assert fast(r, [0], [5]) is None
    with pytest.raises(RoutingError, match="s1_0 has no route to h5"):
        r.paths([0], [5])


def test_a_group_that_does_not_exist_goes_to_the_general_walk():
    from netsteer.errors import RoutingError

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "ecmp")
    r.set_entry(t.node("s1_0"), 5, -2 - len(r.groups))
    assert fast(r, [0], [5]) is None
    with pytest.raises(RoutingError, match="ECMP group"):
        r.paths([0], [5])
