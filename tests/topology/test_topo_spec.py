"""Topology specs: every kind, and errors that name file, field and reason."""

from __future__ import annotations

import json

import pytest

from netsteer.errors import NetsteerError
from netsteer.topology import build_topology, parse_topo_arg, pgft, write_ibsim_net
from netsteer.topology.spec import parse_inline

from test_topo_ibnetdiscover import REAL  # noqa: E402  (same directory)

HYBRID = {
    "kind": "hybrid", "racks": 8, "servers_per_rack": 4, "server_bandwidth": "10Gbps",
    "tor_uplinks": 2, "core_switches": 2, "core_bandwidth": "1Gbps", "circuit_switches": 2,
    "circuit_ports": 16, "circuit_uplinks": 2, "circuit_bandwidth": "10Gbps",
    "switching_time": "25ms", "link_latency": "500ns",
}


def test_pgft_spec_matches_generator():
    t = build_topology({"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2],
                        "parallel": [1, 1], "link_bandwidth": ["10Gbps", "40Gbps"],
                        "link_latency": "1us"})
    ref = pgft(2, [4, 4], [1, 2], [1, 1], link_bandwidth=[10e9, 40e9], link_latency_ns=1000)
    assert t.node_names == ref.node_names
    assert (t.link_bandwidth == ref.link_bandwidth).all()
    assert set(t.link_latency_ns.tolist()) == {1000}


def test_hyperx_and_hybrid_specs():
    t = build_topology({"kind": "hyperx", "S": [4, 4], "K": 2, "T": 2,
                        "link_bandwidth": "100Gbps", "host_bandwidth": "25Gbps"})
    assert (t.n_switches, t.n_hosts, t.n_links) == (16, 32, 96 + 32)
    assert sorted(set(t.link_bandwidth.tolist())) == [25e9, 100e9]
    h = build_topology(HYBRID)
    assert h.meta["kind"] == "hybrid" and h.n_hosts == 32
    assert set(h.switching_time_ns.values()) == {25_000_000}


def test_importer_paths_are_relative_to_the_spec_file(tmp_path):
    (tmp_path / "fabrics").mkdir()
    (tmp_path / "fabrics" / "disc.txt").write_text(REAL)
    write_ibsim_net(pgft(1, [3], [1], link_bandwidth=32e9, link_latency_ns=0),
                    tmp_path / "fabrics" / "sim.net")
    spec_file = str(tmp_path / "scenario.yaml")
    t = build_topology({"kind": "ibnetdiscover", "path": "fabrics/disc.txt",
                        "link_latency": "2us"}, file=spec_file)
    assert t.n_links == 6 and set(t.link_latency_ns.tolist()) == {2000}
    t = build_topology({"kind": "ibsim", "path": "fabrics/sim.net"}, file=spec_file)
    assert t.n_hosts == 3
    with pytest.raises(NetsteerError, match="no such file") as e:
        build_topology({"kind": "ibsim", "path": "fabrics/none.net"}, file=spec_file)
    assert (e.value.file, e.value.field) == (spec_file, "topology.path")
    # explorer's fault 7: a directory was reported as "no such file"
    with pytest.raises(NetsteerError, match="'.*fabrics' is a directory; name a topology file") as e:
        build_topology({"kind": "json", "path": "fabrics"}, file=spec_file)
    assert (e.value.file, e.value.field) == (spec_file, "topology.path")
    with pytest.raises(NetsteerError, match=": is a directory; name a topology file") as e:
        parse_topo_arg(str(tmp_path / "fabrics"))
    assert e.value.file == str(tmp_path / "fabrics")


@pytest.mark.parametrize("spec,field,match", [
    ({"kind": "torus"}, "topology.kind", "kind must be one of pgft, hyperx"),
    ({"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "1Gbps",
      "uplinks": 3}, "topology.uplinks", "unknown key 'uplinks' for kind pgft"),
    ({"kind": "pgft", "levels": 2, "down": [4, 4], "link_bandwidth": "1Gbps"},
     "topology.up", "missing key 'up'"),
    ({"kind": "pgft", "levels": 2, "down": [4, 4, 4], "up": [1, 2], "link_bandwidth": "1Gbps"},
     "topology.down", "down has 3 entries but levels is 2"),
    ({"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "1GHz"},
     "topology.link_bandwidth", "unknown bandwidth unit 'GHz'"),
    ({"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "1Gbps",
      "link_latency": "5"}, "topology.link_latency", "unknown duration unit '' in '5'"),
    ({"kind": "pgft", "levels": "two", "down": [4], "up": [1], "link_bandwidth": "1Gbps"},
     "topology.levels", "expected an integer, got 'two'"),
    ({"kind": "pgft", "levels": True, "down": [4], "up": [1], "link_bandwidth": "1Gbps"},
     "topology.levels", "expected an integer"),
    # explorer's fault 3: a huge levels crashed (OverflowError) or made a list of 1e11
    # ones (out of memory) before it was checked against down's length
    ({"kind": "pgft", "levels": 99999999999999999999, "down": [4, 4], "up": [1, 2], "link_bandwidth": "1Gbps"},
     "topology.down", "down has 2 entries but levels is 99999999999999999999"),
    ({"kind": "pgft", "levels": 10**11, "down": [4, 4], "up": [1, 2], "link_bandwidth": "1Gbps"},
     "topology.down", "down has 2 entries but levels is 100000000000"),
    ({"kind": "hyperx", "S": [4, 4], "K": [1, 2, 3], "T": 1, "link_bandwidth": "1Gbps"},
     "topology.K", "K has 3 entries but S has 2"),
    ({**HYBRID, "circuit_ports": 15}, "topology.circuit_ports",
     "circuit_ports is 15 but 8 racks x 2 circuit_uplinks need 16"),
    ({**HYBRID, "switching_time": "fast"}, "topology.switching_time", "expected a duration"),
])
def test_errors_name_the_field(spec, field, match):
    with pytest.raises(NetsteerError, match=match) as e:
        build_topology(spec, file="scn.yaml")
    assert (e.value.file, e.value.field) == ("scn.yaml", field)


def test_inline_spec_from_the_brief():
    t = parse_topo_arg("pgft:levels=2,down=16;16,up=1;8,parallel=1;1,link_bandwidth=10Gbps")
    assert (t.n_hosts, t.n_switches) == (256, 16 + 8)
    assert set(t.link_bandwidth.tolist()) == {10e9}


def test_inline_errors():
    with pytest.raises(NetsteerError, match="unknown topology kind 'torus'"):
        parse_topo_arg("torus:x=1")
    with pytest.raises(NetsteerError, match="expected key=value, got 'down'"):
        parse_inline("pgft:levels=2,down")
    with pytest.raises(NetsteerError, match="given twice") as e:
        parse_inline("pgft:levels=2,levels=3")
    assert e.value.field == "topology.levels"
    with pytest.raises(NetsteerError, match="no such file") as e:
        parse_topo_arg("fabrics/missing.yaml")
    assert e.value.file == "fabrics/missing.yaml"


def test_file_args_of_every_format(tmp_path):
    y = tmp_path / "scenario.yaml"
    y.write_text("name: demo\ntopology:\n  kind: hyperx\n  S: [3, 3]\n  T: 1\n"
                 "  link_bandwidth: 10Gbps\n")
    assert parse_topo_arg(str(y)).n_switches == 9
    j = tmp_path / "topo.json"
    j.write_text(json.dumps(HYBRID))
    assert parse_topo_arg(str(j)).meta["kind"] == "hybrid"
    d = tmp_path / "fabric.out"
    d.write_text(REAL)
    t = parse_topo_arg(str(d))
    assert t.meta["kind"] == "ibnetdiscover" and "Switch1" in t.node_names
    n = tmp_path / "fabric.net"
    write_ibsim_net(pgft(1, [2], [1], link_bandwidth=8e9, link_latency_ns=0), n)
    assert parse_topo_arg(str(n)).meta["kind"] == "ibsim"


def test_bad_yaml_names_the_line(tmp_path):
    y = tmp_path / "bad.yaml"
    y.write_text("topology:\n  kind: pgft\n  down: [4, 4\n")
    with pytest.raises(NetsteerError, match="not valid YAML") as e:
        parse_topo_arg(str(y))
    assert e.value.file == str(y) and e.value.field.startswith("line ")
    y.write_text("- 1\n- 2\n")
    with pytest.raises(NetsteerError, match="expected a mapping"):
        parse_topo_arg(str(y))


def test_an_inline_whole_number_written_with_a_point_is_taken_as_yaml_takes_it(tmp_path):
    # explorer's fault 6e: inline T=1.0 was refused, YAML T: 1.0 accepted
    y = tmp_path / "h.yaml"
    y.write_text("kind: hyperx\nS: [2, 2]\nT: 1.0\nlink_bandwidth: 1Gbps\n")
    a, b = parse_topo_arg("hyperx:S=2;2,T=1.0,link_bandwidth=1Gbps"), parse_topo_arg(str(y))
    assert a.n_hosts == b.n_hosts == parse_topo_arg("hyperx:S=2;2,T=1,link_bandwidth=1Gbps").n_hosts
    with pytest.raises(NetsteerError, match="expected an integer, got '1.5'") as e:
        parse_topo_arg("hyperx:S=2;2,T=1.5,link_bandwidth=1Gbps")
    assert e.value.field == "topology.T"
