"""Against the real thing: OpenSM (-Q) on ibsim with netsteer's QoS; a job's priority
changed through the controller core; the SL2VL and VL arbitration tables of a switch
port and of an HCA port read back with smpquery hold what netsteer wrote."""

from __future__ import annotations

import pytest

from netsteer.control.core import ControllerStack, Inputs, ReplayController
from netsteer.control.intents import SetQos
from netsteer.drivers.opensm.lids import read_guid2lid
from netsteer.drivers.opensm.partitions import parse_partitions_conf, read_partitions_conf
from netsteer.drivers.opensm.qos import qos_conf_lines
from netsteer.drivers.opensm.qos_driver import OpenSmQosDriver
from netsteer.drivers.opensm.runner import IbFabric, tools_available
from netsteer.qos.config import parse_qos
from netsteer.qos.controller import QosChanges
from netsteer.qos.scenario import QosPlan
from netsteer.topology.ibsim_net import read_ibsim_net, write_ibsim_net
from netsteer.topology.pgft import pgft

pytestmark = [pytest.mark.ib]

BEFORE = {
    "max_vls": 4, "high_limit": 10, "vlarb_high": [[0, 4]], "vlarb_low": [[1, 16], [2, 8], [3, 32]],
    "sl2vl": [0, 1, 2, 3] * 4,
    "ports": {"ca": {"high_limit": 255, "vlarb_high": "0:40", "vlarb_low": "1:2,2:4,3:8"}},
    "classes": [{"name": "app", "sl": 2, "jobs": ["app"]}, {"name": "io", "sl": 1, "jobs": ["io"]}],
}
# the app's SL 2 goes to VL 0, in the high table on every port: its priority raised
AFTER = {**BEFORE, "sl2vl": [0, 1, 0, 3] * 4, "vlarb_low": [[1, 16], [3, 32]],
         "ports": {"ca": {"high_limit": 255, "vlarb_high": "0:40", "vlarb_low": "1:2,3:8"}}}


@pytest.fixture
def ib_tools():
    missing = tools_available() + [t for t in ("smpquery",) if __import__("shutil").which(t) is None]
    if missing:
        pytest.skip(f"InfiniBand tools missing: {', '.join(missing)}")


def _check_port(holds, port_cfg):
    rows = holds["sl2vl"]
    assert rows and all(v == port_cfg.sl2vl for v in rows.values())
    assert holds["vlarb"]["low"] == [(v, w) for v, w in port_cfg.vlarb_low if w > 0]
    assert holds["vlarb"].get("high", []) == [(v, w) for v, w in port_cfg.vlarb_high if w > 0]


def test_priority_change_reaches_switch_and_hca_ports(tmp_path, ib_tools):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(2, [2, 2], [1, 2], link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    conf, parts = tmp_path / "opensm-qos.conf", tmp_path / "partitions.conf"
    before, after = parse_qos(BEFORE), parse_qos(AFTER)
    conf.write_text(qos_conf_lines(before))
    parts.write_text("Default=0x7fff : ALL, SELF=full ;\n")
    with IbFabric(net, tmp_path / "run", engine="minhop", partitions=parts,
                  opensm_args=("-Q", "-F", str(conf))) as fab:
        lids = read_guid2lid(fab.guid2lid, topo)
        leaf = next(int(s) for s in topo.switches if topo.node_names[int(s)].startswith("s1_"))
        host = int(topo.hosts[0])
        drv = OpenSmQosDriver(fab, conf, topo, partitions=parts)
        _check_port(drv.holds(int(lids.lid[leaf]), 1), before.port("swe"))
        _check_port(drv.holds(int(lids.lid[host]), 1), before.port("ca"))
        # through the controller core: the QoS controller moves job app (hosts 0 and 1)
        # to SL 2, and a scripted step puts SL 2 on VL 0, in the high table everywhere
        plan = QosPlan(before, None, [(0, "app", (), 2, (0, 1))])
        ctl = ControllerStack([QosChanges(plan), ReplayController([(0, SetQos(config=after))])])
        intents = ctl.decide(Inputs(drv.now, drv.view()))
        applied = [drv.apply(i) for i in intents]
        assert [a.failed for a in applied] == [None, None]
        _check_port(drv.holds(int(lids.lid[leaf]), 1), after.port("swe"))
        _check_port(drv.holds(int(lids.lid[host]), 1), after.port("ca"))
        # the job's partition carries its SL, as OpenSM reads the file
        written = {p.name: p for p in read_partitions_conf(parts, topo)}
        assert written["app"].flags["sl"] == 2
        assert sorted(written["app"].members) == sorted(int(topo.hosts[h]) for h in (0, 1))
        assert "SUBNET UP" in fab.opensm_log.read_text()


def test_driver_refuses_other_intents(tmp_path):
    from netsteer.control.intents import SetLinks

    drv = OpenSmQosDriver(None, tmp_path / "c.conf", pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=0))
    a = drv.apply(SetLinks((0,), up=False))
    assert a.failed == "the opensm QoS driver applies SetQos intents, not SetLinks"


def _moved_io(tmp_path, original: str):
    from pathlib import Path

    from netsteer.topology.ibsim_net import read_ibsim_net

    scen = Path(__file__).resolve().parents[2] / "scenarios"
    topo = read_ibsim_net(scen / "pftree-16.net")
    parts = tmp_path / "partitions.conf"
    parts.write_text(original)
    drv = OpenSmQosDriver(None, tmp_path / "c.conf", topo, partitions=parts)
    drv._write(SetQos(sl=1, job="io", hosts=(0, 2)))
    drv._write(SetQos(sl=2, job="io", hosts=(0, 2)))  # again: the same partition, new SL
    return topo, {p.pkey: p for p in read_partitions_conf(parts, topo)}


def test_moving_a_job_keeps_the_partitions_the_file_had(tmp_path):
    from pathlib import Path

    scen = Path(__file__).resolve().parents[2] / "scenarios"
    orig_text = (scen / "pftree-victim-aggressor.conf").read_text()
    topo, got = _moved_io(tmp_path, orig_text)
    orig = {p.pkey: p for p in parse_partitions_conf(orig_text, topo)}
    for pkey in (0x10, 0x11):  # victim and aggressor, as they were
        assert got[pkey].name == orig[pkey].name and got[pkey].members == orig[pkey].members
    # no 0x7fff rule: OpenSM's implicit one, written out
    assert all(m == "limited" for m in got[0x7FFF].members.values())
    assert got[0x7FFF].self_membership == "full"
    io = [p for p in got.values() if p.name == "io"]
    assert len(io) == 1 and io[0].flags["sl"] == 2 and io[0].pkey not in (0x10, 0x11, 0x7FFF)
    assert sorted(io[0].members) == sorted(int(topo.hosts[h]) for h in (0, 2))
    # the user's own default partition keeps its membership
    _, got = _moved_io(tmp_path, "Default=0x7fff : ALL=full ;\nio=0x0100 : ALL=limited ;\n")
    assert set(got[0x7FFF].members.values()) == {"full"}
    assert 0x100 in got and got[0x100].name == "io"
    assert [p.name for p in got.values() if p.flags.get("sl") == 2] == ["io_101"]


def test_moving_a_job_without_a_partitions_file_keeps_every_port_full(tmp_path):
    # no file: OpenSM's default partition is ALL=full; the driver wrote ALL=limited, so the
    # SIGHUP after a priority change cut every host from every other on 0x7fff
    from pathlib import Path

    from netsteer.topology.ibsim_net import read_ibsim_net

    topo = read_ibsim_net(Path(__file__).resolve().parents[2] / "scenarios" / "pftree-16.net")
    parts = tmp_path / "partitions.conf"
    drv = OpenSmQosDriver(None, tmp_path / "c.conf", topo, partitions=parts)
    drv._write(SetQos(sl=1, job="io", hosts=(0, 2)))
    drv._write(SetQos(sl=2, job="io", hosts=(0, 2)))  # the file now exists: still the no-file default
    got = {p.pkey: p for p in read_partitions_conf(parts, topo)}
    assert set(got[0x7FFF].members.values()) == {"full"} and len(got[0x7FFF].members) == topo.n_nodes
