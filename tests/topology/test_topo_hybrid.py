"""Hybrid electrical/optical rack networks: the seed's reference size and validation."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.topology import CIRCUIT, HOST, SWITCH, hybrid
from netsteer.topology.metrics import bisection, describe

REF = dict(server_bandwidth=10e9, tor_uplinks=4, core_switches=2, core_bandwidth=1e9,
           circuit_switches=4, circuit_ports=320, circuit_uplinks=1, circuit_bandwidth=10e9,
           switching_time_ns=25_000_000, link_latency_ns=500)


def test_reference_system_counts():
    t = hybrid(320, 32, **REF)
    assert t.n_hosts == 10_240
    assert int((t.node_kind == SWITCH).sum()) == 320 + 2
    assert int((t.node_kind == CIRCUIT).sum()) == 4
    assert t.n_links == 10_240 + 320 * 4 + 320 * 4
    tors = t.meta["tors"]
    assert (t.node_level[tors] == 1).all() and (t.node_level[t.meta["cores"]] == 2).all()
    assert (t.n_ports[tors] == 32 + 4 + 4).all()
    assert (t.n_ports[t.meta["circuit_switches"]] == 320).all()
    assert t.meta["oversubscription"] == pytest.approx(320 / 4)
    assert set(t.switching_time_ns.values()) == {25_000_000}


def test_tor_of_host_and_core_spread():
    t = hybrid(3, 4, **{**REF, "circuit_ports": 3})
    assert [t.node_names[n] for n in t.meta["tor_of_host"][[0, 3, 4, 11]]] == [
        "tor0", "tor0", "tor1", "tor2"]
    tor1 = t.node("tor1")
    peers = {p: t.node_names[n] for p, n, _ in t.neighbors(tor1)}
    # servers 1..4, electrical uplinks 5..8 alternate cores, then one port per circuit switch
    assert [peers[p] for p in range(5, 13)] == [
        "core0", "core1", "core0", "core1", "ocs0", "ocs1", "ocs2", "ocs3"]


def test_circuit_port_map_matches_cables():
    t = hybrid(5, 2, **{**REF, "circuit_uplinks": 2, "circuit_ports": 12})
    cp, tp = t.meta["circuit_port_of"], t.meta["tor_port_of"]
    assert cp.shape == (5, 8, 2)
    for r, tor in enumerate(t.meta["tors"]):
        for k in range(8):
            node, port = (int(x) for x in cp[r, k])
            assert t.port_peer(node, port) == (int(tor), int(tp[r, k]))
    # each circuit switch sees each of its ports at most once
    for j in t.meta["circuit_switches"]:
        ports = cp[cp[:, :, 0] == j][:, 1]
        assert len(ports) == len(set(ports.tolist())) == 10
        assert ports.max() <= 12


@pytest.mark.parametrize("change,match", [
    ({"circuit_ports": 319}, r"circuit_ports is 319 but 320 racks x 1 circuit_uplinks need 320"),
    ({"tor_uplinks": 3}, r"tor_uplinks \(3\) must be a multiple of core_switches \(2\)"),
    ({"core_switches": 0}, "core_switches is 0"),
    ({"circuit_uplinks": 0}, "circuit_uplinks is 0"),
    ({"server_bandwidth": 0}, "server_bandwidth must be positive"),
    ({"tor_uplinks": -1}, "tor_uplinks must be an integer >= 0"),
])
def test_bad_shapes(change, match):
    with pytest.raises(ValueError, match=match):
        hybrid(320, 32, **{**REF, **change})


def test_electrical_only_and_optical_only():
    t = hybrid(4, 2, **{**REF, "circuit_switches": 0, "circuit_ports": 0})
    assert t.summary()["circuit_switches"] == 0
    assert t.meta["circuit_port_of"].shape == (4, 0, 2)
    t = hybrid(4, 2, **{**REF, "tor_uplinks": 0, "core_switches": 0, "circuit_ports": 4})
    assert t.meta["oversubscription"] == float("inf")
    assert describe(t)["diameter"] is None  # no static path between racks


def test_bisection_best_circuits_vs_electrical():
    t = hybrid(8, 32, **{**REF, "circuit_ports": 8})
    full, split = bisection(t)
    elec, _ = bisection(t, circuits=False)
    # 4 racks on each side: electrical 4 x 4 x 1G; optical adds 4 x 4 x 10G
    # (servers could send 4 x 32 x 10G, so the uplinks are the cut)
    assert elec == pytest.approx(16e9)
    assert full == pytest.approx(16e9 + 160e9)
    assert split == "index order"
    d = describe(t)
    assert d["bisection_bandwidth_electrical"] == pytest.approx(16e9)
    assert np.isclose(d["bisection_bandwidth"], full)
    assert int((t.node_kind == HOST).sum()) == 256


def test_without_tor_uplinks_there_is_no_core_switch():
    # explorer's fault 6b: tor_uplinks=0 built (and counted) a core switch with no cables
    from netsteer.errors import NetsteerError
    from netsteer.topology.metrics import describe
    from netsteer.topology.spec import parse_topo_arg

    spec = ("hybrid:racks=2,servers_per_rack=2,server_bandwidth=10Gbps,tor_uplinks=0,core_bandwidth=1Gbps,"
            "circuit_ports=2,circuit_uplinks=1,circuit_bandwidth=10Gbps,switching_time=10ms")
    t = parse_topo_arg(spec)
    assert (t.n_ports > 0).all()  # every node has a cable
    assert describe(t)["switches"] == len(t.meta["tors"]) and len(t.meta["cores"]) == 0
    with pytest.raises(NetsteerError, match="core_switches is 1 but tor_uplinks is 0") as e:
        parse_topo_arg(spec + ",core_switches=1")
    assert e.value.field == "topology.core_switches"
