"""Scenario.from_yaml -> to_yaml -> from_yaml runs to the same result, for every
shipped scenario and for scenarios built in Python (a property test)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import netsteer as ns

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))


def _same(a: ns.Result, b: ns.Result) -> None:
    da, db = a.to_dict(), b.to_dict()
    for d in (da, db):
        d.pop("wall_s")
    assert da == db


def test_every_shipped_scenario_is_checked():
    assert len(SHIPPED) >= 9


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scenario_round_trips_to_the_same_result(path, tmp_path):
    original = ns.Scenario.from_yaml(path)
    # written elsewhere: file references (net files, partitions.conf) follow
    copy = tmp_path / "elsewhere" / path.name
    copy.parent.mkdir()
    text = original.to_yaml(copy)
    assert copy.read_text() == text
    again = ns.Scenario.from_yaml(copy)
    assert again.to_dict() == original.to_dict()
    # the written text is the file's data, not a rendering of parsed numbers
    assert yaml.safe_load(text)["jobs"] == yaml.safe_load(path.read_text())["jobs"]
    _same(original.run(sample=False), again.run(sample=False))


def test_to_yaml_without_a_path_makes_file_references_absolute(tmp_path):
    src = ROOT / "scenarios" / "pftree-victim-aggressor.yaml"
    data = yaml.safe_load(ns.Scenario.from_yaml(src).to_yaml())
    assert Path(data["topology"]["path"]).is_absolute()
    assert Path(data["routing"]["partitions"]).is_file()
    moved = tmp_path / "x.yaml"
    moved.write_text(yaml.safe_dump(data))
    assert ns.Scenario.from_yaml(moved).run(sample=False).status == "done"


def test_a_scenario_moved_without_to_yaml_loses_its_files(tmp_path):
    # the contrast: a plain copy keeps relative references that no longer resolve
    src = ROOT / "scenarios" / "pftree-victim-aggressor.yaml"
    shutil.copy(src, tmp_path / src.name)
    with pytest.raises(ns.NetsteerError, match="topology.path"):
        ns.Scenario.from_yaml(tmp_path / src.name).build()


@st.composite
def python_scenarios(draw):
    down = draw(st.lists(st.integers(2, 4), min_size=1, max_size=2))
    up = [1] + [draw(st.integers(1, 2)) for _ in down[1:]]
    topo = ns.pgft(len(down), down, up, link_bandwidth=draw(st.sampled_from(["1Gbps", "10Gbps", "25GBps"])),
                   link_latency=draw(st.sampled_from(["0us", "100ns", "2us"])))
    hosts = topo.n_hosts
    flows = [ns.flow(draw(st.integers(0, hosts - 1)), draw(st.integers(0, hosts - 1)),
                     draw(st.sampled_from(["1MiB", "3MB", 4096])),
                     start=draw(st.sampled_from([None, "0us", "5us", "1ms"])))
             for _ in range(draw(st.integers(1, 6)))]
    jobs = [ns.job(flows, name="flows")]
    if hosts >= 4 and draw(st.booleans()):
        # a power of two: the ring and recursive algorithms split buffers evenly
        ranks = draw(st.sampled_from([r for r in (2, 4, 8, 16) if r <= hosts]))
        op = draw(st.sampled_from([ns.op.allreduce("64KiB"), ns.op.bcast("32KiB", root=1), ns.op.barrier(),
                                   ns.op.alltoall("4KiB"), ns.op.compute("10us")]))
        jobs.append(ns.mpi_job(ranks, [op], placement=draw(st.sampled_from(["linear", "random"])),
                               seed=draw(st.integers(0, 5)), repeat=draw(st.integers(1, 2))))
    engine = draw(st.sampled_from(["dmodk", "minhop", "ecmp"]))
    sharing = draw(st.sampled_from([None, "maxmin", "cm02"]))
    return ns.Scenario(topo, engine, jobs, name="prop", sharing=sharing)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sc=python_scenarios())
def test_python_scenarios_round_trip_to_the_same_result(sc, tmp_path):
    path = tmp_path / "prop.yaml"
    sc.to_yaml(path)
    back = ns.Scenario.from_yaml(path)
    assert back.to_dict() == sc.to_dict()
    _same(sc.run(sample=False), back.run(sample=False))


QOS_FILE = """
name: q
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
%s
jobs:
  - name: a
    flows: [{src: 0, dst: 2, bytes: 1MB}]
  - name: b
    flows: [{src: 1, dst: 2, bytes: 1MB}]
qos:
  max_vls: 2
  vlarb_low: "0:255,1:34"
  sl2vl: [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
  classes:
    - {name: ca, sl: 0, jobs: [a]}
    - {name: cb, sl: 1, jobs: [b]}
"""


@pytest.mark.parametrize("kw, keys", [
    ({}, ""),
    ({"fidelity": "packet", "packet": {"mtu": "2KiB", "buffer": "16KiB"}},
     "fidelity: packet\npacket: {mtu: 2KiB, buffer: 16KiB}"),
])
def test_qos_fidelity_and_packet_in_python_are_the_file_keys(kw, keys, tmp_path):
    # Scenario(qos=, fidelity=, packet=) was a TypeError: a file's scenario had no Python form
    f = tmp_path / "q.yaml"
    f.write_text(QOS_FILE % keys)
    from_file = ns.Scenario.from_yaml(f)
    topo = ns.pgft(levels=1, down=[4], up=[1], link_bandwidth="10Gbps", link_latency="1us")
    jobs = [ns.job([ns.flow(0, 2, "1MB")], name="a"), ns.job([ns.flow(1, 2, "1MB")], name="b")]
    qos = yaml.safe_load(QOS_FILE % "")["qos"]
    sc = ns.Scenario(topo, "dmodk", jobs, name="q", qos=qos, **kw)
    assert sc.to_dict() == from_file.to_dict()
    r = sc.run(sample=False)
    _same(r, from_file.run(sample=False))
    assert r.status == "done" and r.to_dict().get("fidelity", "flow") == kw.get("fidelity", "flow")
    # the QoS is in force: b's VL gets 34 of every 289 arbitration units while a sends
    assert r.jobs.completion_s.iloc[0] < r.jobs.completion_s.iloc[1]


def test_simulate_takes_the_fidelity_and_its_errors_are_the_files(tmp_path):
    topo = ns.pgft(levels=1, down=[4], up=[1], link_bandwidth="10Gbps", link_latency="1us")
    jobs = [ns.job([ns.flow(0, 2, "1MB"), ns.flow(1, 2, "1MB")], name="a")]
    r = ns.simulate(topo, "dmodk", jobs, fidelity="packet", packet={"mtu": "2KiB"}, name="p")
    f = tmp_path / "p.yaml"
    r.scenario.to_yaml(f)
    assert yaml.safe_load(f.read_text())["fidelity"] == "packet"
    _same(r, ns.Scenario.from_yaml(f).run())
    assert r.to_dict()["fidelity"] == "packet"
    with pytest.raises(ns.NetsteerError) as e:
        ns.simulate(topo, "dmodk", jobs, packet={"mtu": "2KiB"})
    assert e.value.field == "packet" and "apply to the packet fidelity" in e.value.reason
    with pytest.raises(ns.NetsteerError) as e:
        ns.Scenario(topo, "dmodk", jobs, qos={"max_vls": 99}).build()  # checked at build, as a file's
    assert e.value.field == "qos.max_vls"
