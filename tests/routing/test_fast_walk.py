"""The Rust walk of plain tables gives exactly the paths of the general (numpy) walk."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.routing import build_routing
from netsteer.routing.table import Routing
from netsteer.topology import pgft
from netsteer.topology.hyperx import hyperx


def general_walk(routing, src, dst, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(Routing, "_walk_plain", lambda self, s, d: None)
        return routing.paths(src, dst)


@pytest.mark.parametrize(
    "topo,engine",
    [
        (pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0), "dmodk"),
        (pgft(3, [4, 4, 4], [2, 2, 2], [1, 2, 1], link_bandwidth=1e9, link_latency_ns=0), "dmodk"),
        (pgft(3, [4, 4, 4], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=0), "minhop"),
        (hyperx([3, 3], 1, 2, link_bandwidth=1e9, link_latency_ns=0), "minhop"),
    ],
)
def test_fast_walk_matches_general_walk(topo, engine, monkeypatch):
    r = build_routing(topo, engine)
    rng = np.random.default_rng(7)
    src = rng.integers(0, topo.n_hosts, 500)
    dst = rng.integers(0, topo.n_hosts, 500)
    assert r._walk_plain(src, dst) is not None  # the fast walk handled them
    fo, fc = r.paths(src, dst)
    go, gc = general_walk(r, src, dst, monkeypatch)
    assert fo.tolist() == go.tolist() and fc.tolist() == gc.tolist()


def test_fast_walk_hands_errors_to_the_general_walk():
    from netsteer.errors import RoutingError

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "dmodk")
    r.set_entry(t.node("s1_0"), 5, -1)  # s1_0 no longer knows h5
    assert r._walk_plain(np.array([0]), np.array([5])) is None
    with pytest.raises(RoutingError, match="s1_0 has no route to h5"):
        r.paths([0], [5])
