"""Compact tables: rows only for switches and multi-homed hosts, and the accessors."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import build_routing
from netsteer.routing._graph import forwarding_nodes
from netsteer.routing.table import Routing
from netsteer.topology import pgft
from netsteer.topology.hybrid import hybrid


def small_hybrid():
    return hybrid(
        4, 2, server_bandwidth=10e9, tor_uplinks=1, core_switches=1, core_bandwidth=10e9,
        circuit_switches=1, circuit_ports=4, circuit_uplinks=1, circuit_bandwidth=10e9,
        switching_time_ns=1000, link_latency_ns=0,
    )


@pytest.mark.parametrize("engine", ["dmodk", "minhop", "ecmp", "ftree", "pftree"])
def test_single_homed_hosts_have_no_row(engine):
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, engine)
    assert r.rows.tolist() == t.switches.tolist()
    assert r.table.shape == (t.n_switches, t.n_hosts) and r.table.dtype == np.int32
    assert (r.row_of[t.hosts] == -1).all() and (r.row_of[r.rows] == np.arange(len(r.rows))).all()
    assert (r.node_rows(t.hosts) == -1).all()
    r.check()


def test_multi_homed_hosts_have_rows():
    t = pgft(2, [4, 4], [2, 2], link_bandwidth=1e9, link_latency_ns=0)
    assert forwarding_nodes(t).tolist() == list(range(t.n_nodes))  # every host has 2 ports
    for engine in ("dmodk", "minhop"):
        r = build_routing(t, engine)
        assert r.rows.tolist() == list(range(t.n_nodes))
        assert (r.node_rows(t.hosts) >= 0).sum() == t.n_hosts * (t.n_hosts - 1)
    # ftree routes a host by one leaf only, so it refuses hosts on two (its tables
    # had no entry for them at the other leaf: they failed the check)
    with pytest.raises(RoutingError, match="ftree needs single-homed hosts"):
        build_routing(t, "ftree")


def test_circuit_switches_have_empty_rows():
    t = small_hybrid()
    r = build_routing(t, "minhop")
    assert r.rows.tolist() == t.switches.tolist()
    circ = t.switches[t.node_kind[t.switches] == 2]
    assert circ.size and (r.node_rows(circ) == -1).all()


def test_dense_tables_are_compacted_keeping_rows_that_say_something():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    base = build_routing(t, "dmodk")
    dense = base.node_rows(np.arange(t.n_nodes))
    r = Routing(t, dense)
    assert np.array_equal(r.rows, base.rows) and np.array_equal(r.table, base.table)
    h3 = t.host_node(3)
    dense[h3, 0] = 1  # a single-homed host row with an entry is kept, as given
    ov = np.full_like(dense, -1)
    ov[t.host_node(5), 1] = 1
    r = Routing(t, dense, overrides={2: ov})
    assert r.rows.tolist() == sorted([*t.switches.tolist(), h3, t.host_node(5)])
    assert r.entry(h3, [0, 1]).tolist() == [1, -1]
    assert r.entry(t.host_node(5), 1, classes=2) == 1 and r.entry(t.host_node(5), 1) == -1
    assert r.overrides[2].shape == r.table.shape


def test_accessors():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "dmodk")
    s10, h0 = t.node("s1_0"), t.host_node(0)
    assert r.entry([s10, h0], 5).tolist() == [6, -1]
    assert r.entry(np.array([[s10], [h0]]), np.arange(3)).shape == (2, 3)
    r.set_rows([s10], 5)
    assert (r.node_rows([s10]) == 5).all()
    r.set_entry(s10, 0, 1, cls=4)  # an override table appears, in the same layout
    assert r.overrides[4].shape == r.table.shape
    assert r.node_rows([s10], cls=4)[0, :2].tolist() == [1, 5]
    assert r.entry([s10, s10], [0, 0], classes=[0, 4]).tolist() == [5, 1]
    with pytest.raises(RoutingError, match="h0 has no table row"):
        r.set_entry(h0, 1, 1)
    with pytest.raises(RoutingError, match="rows must be sorted"):
        Routing(t, r.table[::-1], rows=r.rows[::-1])
    with pytest.raises(RoutingError, match=r"table has shape \(3, 16\), expected"):
        Routing(t, r.table[:3], rows=r.rows)


def test_fast_walk_refuses_a_row_of_naming_missing_rows():
    from netsteer._core import walk_tables

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = build_routing(t, "dmodk")
    args = [r._host_port().astype(np.int64), t.out_channel.astype(np.int64), t.channel_dst().astype(np.int64),
            t.node_kind == 0, t.node_kind == 2, t.hosts[[0]].astype(np.int64), np.array([5]),
            t.hosts[[5]].astype(np.int64), 10, r.group_arrays(), np.array([0]), np.array([0])]
    off, ch = walk_tables(r.table, r.row_of, *args)
    assert ch.tolist() == r.path(0, 5)
    bad = r.row_of.copy()
    bad[t.node("s1_0")] = len(r.rows)
    with pytest.raises(Exception, match="row_of names a missing row"):
        walk_tables(r.table, bad, *args)
