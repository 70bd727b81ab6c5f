"""``netsteer topo --export x.json`` read back: the same topology, by every way in
(``kind: json`` in a scenario, the file on the command line, ``read_json``), and a
broken file refused with the field and the reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

from netsteer.errors import NetsteerError
from netsteer.topology import hybrid, hyperx, pgft, read_json, to_json
from netsteer.topology.hyperx import CircuitSpec
from netsteer.topology.ibsim_net import fabric_guids
from netsteer.topology.spec import build_topology, parse_topo_arg

FABRICS = {
    "pgft": lambda: pgft(3, [2, 3, 4], [1, 2, 3], [1, 1, 2], link_bandwidth=[10e9, 25e9, 40e9],
                         link_latency_ns=[100, 200, 300]),
    "hyperx": lambda: hyperx([3, 4], [1, 2], 2, link_bandwidth=25e9, link_latency_ns=50,
                             circuits=[CircuitSpec(dim=1, switching_time_ns=10_000)]),
    "hybrid": lambda: hybrid(5, 3, server_bandwidth=10e9, tor_uplinks=1, core_bandwidth=1e9,
                             circuit_switches=2, circuit_ports=10, circuit_uplinks=2, circuit_bandwidth=10e9,
                             switching_time_ns=25_000_000, link_latency_ns=1000),
}


#: (edit of a good export, the field named, a fragment of the reason)
BROKEN = [
    (lambda d: d["links"][0].update(b="nowhere"), "links[0].b", "no node named 'nowhere'"),
    (lambda d: d["links"][1].update(a_port=d["links"][0]["a_port"], a=d["links"][0]["a"]), "links[1].a_port",
     "used twice"),
    # unknown keys: a misspelt one would leave the cable as it was, silently
    (lambda d: d["links"][0].update(bandwidth="7Gbps"), "links[0].bandwidth",
     "unknown key 'bandwidth'; did you mean 'bandwidth_bps'?"),
    (lambda d: d["links"][0].update(typo_key=1), "links[0].typo_key", "unknown key 'typo_key'"),
    (lambda d: d["nodes"][0].update(colour="red"), "nodes[0].colour", "unknown key 'colour'"),
    (lambda d: d.update(extra_top=1), "extra_top", "unknown key 'extra_top'"),
    (lambda d: d["links"][2].update(bandwidth_bps=0), "links[2].bandwidth_bps", "positive"),
    # explorer's fault 6: past a spec's cap, 1e308 overflowed topo's metrics (RuntimeWarning, inf)
    (lambda d: d["links"][2].update(bandwidth_bps=1e308), "links[2].bandwidth_bps",
     "1e+308 bits per second is too large: at most 1e18 bps (1 Ebps)"),
    (lambda d: d["links"][2].update(latency_ns=-5), "links[2].latency_ns", "negative"),
    (lambda d: d["links"][2].update(latency_ns=1.5), "links[2].latency_ns", "integer"),
    (lambda d: d["nodes"][3].update(kind="router"), "nodes[3].kind", "router"),
    (lambda d: d["nodes"][3].update(name=d["nodes"][2]["name"]), "nodes[3].name", "twice"),
    (lambda d: d["nodes"][0].update(guid="0xzz"), "nodes[0].guid", "hex"),
    # explorer's fault 2: GUIDs past 64 bits crashed (OverflowError, exit 1); a float or a
    # bool was truncated to an integer silently
    (lambda d: d["nodes"][0].update(guid=-1), "nodes[0].guid", "a GUID is 64 bits (0..0xffffffffffffffff), got -1"),
    (lambda d: d["nodes"][0].update(guid="-0x5"), "nodes[0].guid", "64 bits"),
    (lambda d: d["nodes"][0].update(guid=2**70), "nodes[0].guid", "64 bits"),
    (lambda d: d["nodes"][0].update(guid="0x10000000000000000"), "nodes[0].guid", "64 bits"),
    (lambda d: d["nodes"][0].update(guid=1.5), "nodes[0].guid", "expected an integer or hex string, got 1.5"),
    (lambda d: d["nodes"][0].update(guid=True), "nodes[0].guid", "got True"),
    # explorer's fault 1: two nodes on one GUID were read (route wrote them on one port GUID)
    (lambda d: d["nodes"][1].update(guid=d["nodes"][0]["guid"]), "nodes[1].guid", "0x2c90300000000 is h0's"),
    (lambda d: d.update(links={}), "links", "expected a list"),
    # explorer's fault 8: another format was read as this one; a missing key was "expected a list, got NoneType"
    (lambda d: d.update(format="other"), "format", "expected 'netsteer-topology' (what topo --export writes), got 'other'"),
    (lambda d: d.pop("links"), "links", "required key is missing"),
    (lambda d: d.pop("nodes"), "nodes", "required key is missing"),
    (lambda d: d.update(meta={"$ndarray": [1], "dtype": "nonsense"}), "meta", "export"),
    (lambda d: d.update(switching_time_ns={"h0": 5}), "switching_time_ns.h0", "not a circuit switch"),
    # explorer's fault 3: port 0 was accepted (its .net export then wrote "Ca 0"), a port
    # past int32 wrapped negative (IndexError) and a latency past int64 overflowed (exit 1)
    (lambda d: d["links"][0].update(a_port=0), "links[0].a_port", "ports are numbered 1.."),
    (lambda d: d["links"][0].update(b_port=2**63), "links[0].b_port", "ports are numbered 1.."),
    (lambda d: d["links"][0].update(b_port=2**31), "links[0].b_port", "ports are numbered 1.."),
    (lambda d: d["links"][0].update(latency_ns=10**30), "links[0].latency_ns", "int64 nanoseconds"),
    # explorer's fault 4: the memory limit named neither the file nor the port that makes the table huge
    (lambda d: d["links"][3].update(b_port=10**9), "links[3].b_port", "the topology would need about"),
]


def same(a, b) -> bool:
    """Deep equality of meta values, arrays by value and dtype, types kept."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def export(t, path):
    path.write_text(json.dumps(to_json(t)))
    return path


@pytest.mark.parametrize("kind", sorted(FABRICS))
def test_an_export_reads_back_as_the_same_topology(kind, tmp_path):
    t = FABRICS[kind]()
    back = read_json(str(export(t, tmp_path / "t.json")))
    assert back.name == t.name and back.node_names == t.node_names
    for col in ("node_kind", "node_level", "link_a", "link_a_port", "link_b", "link_b_port",
                "link_bandwidth", "link_latency_ns"):
        x, y = getattr(t, col), getattr(back, col)
        assert x.dtype == y.dtype and np.array_equal(x, y), col
    # a generated fabric has no GUIDs; the export holds the ones route and .net give it
    assert not t.node_guid.any()
    assert back.node_guid.dtype == t.node_guid.dtype
    assert back.node_guid.tolist() == fabric_guids(t) and back.node_guid.all()
    assert read_json(str(export(back, tmp_path / "again.json"))).node_guid.tolist() == fabric_guids(t)
    assert back.switching_time_ns == t.switching_time_ns
    assert same(t.meta, back.meta)


def test_a_scenario_on_the_export_runs_as_on_the_spec(tmp_path):
    from netsteer.scenario import Scenario, ScenarioModel, build_scenario
    from netsteer.sim.run import run_scenario

    spec = {"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "10Gbps",
            "link_latency": "1us"}
    export(build_topology(spec), tmp_path / "fabric.json")
    jobs = [{"name": "a", "ranks": 16, "placement": "random", "seed": 3,
             "program": [{"op": "alltoall", "bytes": "32KiB"}]}]
    got = []
    for topo in (spec, {"kind": "json", "path": "fabric.json"}):
        data = {"name": "t", "topology": topo, "routing": {"engine": "dmodk"}, "jobs": jobs}
        res = run_scenario(build_scenario(Scenario(ScenarioModel.model_validate(data),
                                                   str(tmp_path / "s.yaml"))), sample=False)
        got.append(res.makespan_ns)
    assert got[0] == got[1] > 0


def test_a_cable_without_latency_has_the_default_100ns(tmp_path):
    data = to_json(pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=5))
    for link in data["links"]:
        del link["latency_ns"]
    t = read_json(str(export_data(data, tmp_path / "t.json")))
    assert t.link_latency_ns.tolist() == [100, 100]
    assert build_topology({"kind": "pgft", "levels": 1, "down": [2], "up": [1],
                           "link_bandwidth": "1Gbps"}).link_latency_ns.tolist() == [100, 100]


def export_data(data, path):
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("edit,field,reason", BROKEN)
def test_a_broken_export_is_refused_with_its_field(edit, field, reason, tmp_path):
    data = to_json(pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=5))
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(NetsteerError) as e:
        parse_topo_arg(str(path))
    assert e.value.field == field and reason in str(e.value) and e.value.file == str(path)


def test_an_export_without_cables_is_reported_and_refused_by_routing(tmp_path):
    # explorer's fault 3: links: [] crashed topo (ValueError in the bisection) and route (IndexError)
    from netsteer.commands.route import route_topology
    from netsteer.topology.metrics import describe

    data = to_json(pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=5))
    data["links"] = []
    t = read_json(str(export_data(data, tmp_path / "bare.json")))
    d = describe(t)
    assert (d["links"], d["hosts"], d["bisection_bandwidth"]) == (0, t.n_hosts, 0.0)
    with pytest.raises(NetsteerError, match="has no route to") as e:
        route_topology(t, "minhop", None, topology_file=str(tmp_path / "bare.json")).check()
    assert "Traceback" not in str(e.value)


def _add_host(d, first=False):
    """A host more, cabled to the first switch's first free port (an edited export)."""
    sw = next(n["name"] for n in d["nodes"] if n["kind"] == "switch")
    used = [ln["a_port"] for ln in d["links"] if ln["a"] == sw] + [ln["b_port"] for ln in d["links"] if ln["b"] == sw]
    node = {"name": "h99", "kind": "host", "level": 0, "guid": "0x0"}
    d["nodes"].insert(0, node) if first else d["nodes"].append(node)
    d["links"].append({"a": "h99", "a_port": 1, "b": sw, "b_port": max(used) + 1, "bandwidth_bps": 1e9,
                       "latency_ns": 5})


@pytest.mark.parametrize("kind", sorted(FABRICS))
@pytest.mark.parametrize("edit, reason", [
    (lambda d: _add_host(d), "no longer describes the nodes read"),
    (lambda d: _add_host(d, first=True), "no longer describes the nodes read"),
    (lambda d: d["meta"].update(kind={"pgft": "hyperx", "hyperx": "hybrid", "hybrid": "pgft"}[d["meta"]["kind"]]),
     "it has no"),
], ids=["host-appended", "host-first", "kind-changed"])
def test_meta_that_no_longer_describes_the_nodes_is_refused_naming_meta(kind, edit, reason, tmp_path):
    # explorer's fault 2: such files crashed topo (IndexError in bisection_splits, KeyError
    # 'coords') and route/run under dmodk (IndexError), exit 1
    from netsteer.topology.metrics import describe

    d = to_json(FABRICS[kind]())
    edit(d)
    path = export_data(d, tmp_path / "edited.json")
    with pytest.raises(NetsteerError) as e:
        parse_topo_arg(str(path))
    assert (e.value.file, e.value.field) == (str(path), "meta") and reason in e.value.reason
    # without meta the file reads as a plain fabric, its cables as they are
    del d["meta"]
    t = parse_topo_arg(str(export_data(d, tmp_path / "plain.json")))
    assert t.meta == {} and t.n_hosts == FABRICS[kind]().n_hosts + ("h99" in [n["name"] for n in d["nodes"]])
    assert describe(t)["hosts"] == t.n_hosts


def test_edited_cables_keep_meta_and_a_cli_refusal_exits_2(tmp_path):
    import subprocess
    import sys

    d = to_json(pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=5))
    d["links"].pop()  # a cable removed: meta still numbers the same nodes
    assert parse_topo_arg(str(export_data(d, tmp_path / "cut.json"))).meta["kind"] == "pgft"
    _add_host(d)
    path = export_data(d, tmp_path / "added.json")
    for argv in (["topo", path], ["route", "-t", path, "-e", "dmodk", "-o", tmp_path / "x.dump"]):
        p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, argv)], capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.startswith(f"netsteer: error: {path}: meta: "), p.stderr


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self"), reason="needs /proc")
@pytest.mark.parametrize("option,name", [("--export", "x.json"), ("--export", "x.net"), ("--draw", "x.png")])
def test_a_write_that_fails_names_its_option(option, name):
    # explorer's fault 12: /proc passes the checks made before the work, and the write's
    # failure named the file only
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "netsteer", "topo", "pgft:levels=1,down=2,up=1,link_bandwidth=1Gbps",
                        option, f"/proc/{name}"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and f"/proc/{name}: {option}: cannot write" in p.stderr, p.stderr
