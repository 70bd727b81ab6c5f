"""netsteer qos opensm-conf: the qos_* options hold the scenario's QoS, read back."""

from __future__ import annotations

import json

import numpy as np

from qos_samples import two_flows

from netsteer.drivers.opensm.qos import parse_qos_conf

QOS = """\
max_vls: 4
high_limit: 10
vlarb_high: [[0, 4]]
vlarb_low: [[1, 16], [2, 8], [3, 32]]
sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
ports:
  ca: {high_limit: 255, vlarb_high: "0:40", vlarb_low: "1:2,2:4,3:8"}
  sw0: {max_vls: 2, sl2vl: "0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1", vlarb_low: [[1, 64]]}
classes:
  - {name: app, sl: 0, jobs: [mpi]}
  - {name: io, sl: 1, jobs: [io]}
"""


def test_opensm_conf_lines_hold_every_port_type(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(QOS))
    code, out, err = cli("qos", "opensm-conf", f, "--out", tmp_path / "osm")
    assert code == 0, err
    conf = parse_qos_conf((tmp_path / "osm" / "opensm.conf").read_text())
    assert conf["qos"] == "TRUE"
    assert conf["qos_max_vls"] == "4" and conf["qos_high_limit"] == "10"
    assert conf["qos_vlarb_high"] == "0:4" and conf["qos_vlarb_low"] == "1:16,2:8,3:32"
    assert conf["qos_sl2vl"] == ",".join(str(s % 4) for s in range(16))
    # CA ports: their own limit and tables, the base SL2VL and VLs
    assert conf["qos_ca_high_limit"] == "255" and conf["qos_ca_vlarb_high"] == "0:40"
    assert conf["qos_ca_vlarb_low"] == "1:2,2:4,3:8" and conf["qos_ca_max_vls"] == "4"
    assert conf["qos_sw0_max_vls"] == "2" and conf["qos_sw0_vlarb_low"] == "1:64"
    assert conf["qos_sw0_sl2vl"] == ",".join(str(s % 2) for s in range(16))
    # port types not overridden fall back to the base keys (OpenSM does the same)
    assert not any(k.startswith(("qos_swe_", "qos_rtr_")) for k in conf)


def test_opensm_conf_json(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(QOS))
    code, out, err = cli("qos", "opensm-conf", f, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["opensm_conf"]["qos_ca_vlarb_high"] == "0:40" and d["qos"]["sls_used"] == [0, 1]


def _pftree_with_qos(tmp_path, conf_text=None, qos="{max_vls: 2, vlarb_low: '0:32,1:32'}"):
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "scenarios"
    shutil.copy(root / "pftree-16.net", tmp_path)
    conf = tmp_path / "parts.conf"
    conf.write_text(conf_text if conf_text is not None else (root / "pftree-victim-aggressor.conf").read_text())
    text = (root / "pftree-victim-aggressor.yaml").read_text().replace("pftree-victim-aggressor.conf", "parts.conf")
    text += f"qos: {qos}\n"
    f = tmp_path / "s.yaml"
    f.write_text(text)
    return f


def test_partitions_conf_carries_the_routing_sls(tmp_path, cli):
    from netsteer.drivers.opensm.partitions import read_partitions_conf
    from netsteer.topology.ibsim_net import read_ibsim_net

    f = _pftree_with_qos(tmp_path)
    code, out, err = cli("qos", "opensm-conf", f, "--out", tmp_path / "osm")
    assert code == 0, err
    topo = read_ibsim_net(tmp_path / "pftree-16.net")
    parts = {p.name: p for p in read_partitions_conf(tmp_path / "osm" / "partitions.conf", topo)}
    # pFTree puts the two partitions on lanes of their own: SL 0 and SL 1
    assert sorted(p.flags.get("sl") for n, p in parts.items() if n in ("victim", "aggressor")) == [0, 1]
    assert parse_qos_conf((tmp_path / "osm" / "opensm.conf").read_text())["qos_vlarb_low"] == "0:32,1:32"


def test_partitions_file_naming_unknown_ports(tmp_path, cli):
    f = _pftree_with_qos(tmp_path, "victim=0x10 : 0x0002c903deadbeef=full ;\n")
    code, out, err = cli("qos", "opensm-conf", f)
    assert code == 2 and "Traceback" not in err
    assert err.strip().endswith("parts.conf: line 1: port GUID 0x0002c903deadbeef is not in the topology")


def test_partition_sl_without_a_weight_is_refused_naming_the_users_field(tmp_path, cli):
    # opensm-conf wrote sl=1 for a partition while VL 1 had no weight (its traffic would
    # get no bandwidth), and the packet fidelity blamed packet.vlarb_low, a key the
    # scenario never had
    from netsteer.drivers.opensm.partitions import read_partitions_conf
    from netsteer.topology.ibsim_net import read_ibsim_net

    code, out, err = cli("qos", "opensm-conf", _pftree_with_qos(tmp_path), "--out", tmp_path / "osm")
    assert code == 0, err
    topo = read_ibsim_net(tmp_path / "pftree-16.net")
    on_1 = [p for p in read_partitions_conf(tmp_path / "osm" / "partitions.conf", topo) if p.flags.get("sl") == 1]
    assert len(on_1) == 1
    f = _pftree_with_qos(tmp_path, qos="{max_vls: 2, vlarb_low: '0:64'}")
    code, out, err = cli("qos", "opensm-conf", f, "--out", tmp_path / "osm2")
    assert code == 2 and "Traceback" not in err and not (tmp_path / "osm2").exists()
    assert f"{f}: qos.vlarb_low: " in err and f"partition {on_1[0].name!r}" in err and "SL 1" in err
    code, out, err = cli("run", f, "--fidelity", "packet")
    assert code == 2 and "Traceback" not in err
    assert f"{f}: qos.vlarb_low: " in err and "packet.vlarb_low" not in err and f"partition {on_1[0].name!r}" in err


def test_opensm_conf_writes_how_jobs_get_their_sls(tmp_path, cli):
    # no sl= partitions and no note were written: loaded into OpenSM, the tables served
    # SLs that no traffic was put on. Each job on one SL other than 0 now gets a
    # partition of its hosts with that sl=, and a note says its QPs must use that P_Key
    from netsteer.drivers.opensm.partitions import read_partitions_conf
    from netsteer.scenario import build_scenario, load_scenario
    from netsteer.topology.ibsim_net import with_fabric_guids

    f = tmp_path / "s.yaml"
    f.write_text(two_flows(QOS))
    code, out, err = cli("qos", "opensm-conf", f, "--out", tmp_path / "osm", "--json")
    assert code == 0, err
    built = build_scenario(load_scenario(f))
    topo = with_fabric_guids(built.topology)
    parts = {p.name: p for p in read_partitions_conf(tmp_path / "osm" / "partitions.conf", topo)}
    cols = built.dag.columns()
    for j, job in enumerate(built.job_names):
        mine = built.job_of_flow == j
        sls = set(built.qos.sl[mine].tolist())
        assert len(sls) == 1
        hosts = {int(topo.hosts[h]) for h in np.r_[cols.src[mine], cols.dst[mine]]}
        if sls == {0}:
            assert job not in parts  # SL 0 is every partition's default
            continue
        assert parts[job].flags["sl"] == sls.pop() and set(parts[job].members) == hosts
        notes = [n for n in json.loads(out)["notes"] if f"job {job!r}" in n]
        assert len(notes) == 1 and f"{parts[job].pkey | 0x8000:#06x}" in notes[0]
    assert 0x7FFF in {p.pkey for p in parts.values()}  # the default partition is written out


def test_opensm_conf_notes_a_job_on_several_sls(tmp_path, cli):
    # one job's flows on two SLs (classes by kind): a partition cannot say that
    qos = QOS.split("classes:")[0] + ("classes:\n  - {name: bulk, sl: 2, kind: bulk}\n"
                                      "  - {name: io, sl: 1, jobs: [io]}\n")
    f = tmp_path / "s.yaml"
    io = "flows: [{src: 1, dst: 3, bytes: 100MB}]\n    bulk: [{src: 1, dst: 2, duration: 1ms}]"
    f.write_text(two_flows(qos, io=io))
    code, out, err = cli("qos", "opensm-conf", f, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [n for n in d["notes"] if "job 'io'" in n and "SLs 1, 2" in n]
    assert "io=" not in (d["partitions_conf"] or "")


def test_no_partitions_file_keeps_the_default_partition_full(tmp_path, cli):
    # with no routing.partitions, OpenSM reads no file and makes every port a full member
    # of 0x7fff; the written file made every host a limited member (ALL=limited, SELF=full),
    # so loading it cut every host from every other on the default P_Key
    from netsteer.drivers.opensm.partitions import can_communicate, read_partitions_conf
    from netsteer.scenario import build_scenario, load_scenario
    from netsteer.topology.ibsim_net import with_fabric_guids

    f = tmp_path / "s.yaml"
    f.write_text(two_flows(QOS))
    code, out, err = cli("qos", "opensm-conf", f, "--out", tmp_path / "osm")
    assert code == 0, err
    topo = with_fabric_guids(build_scenario(load_scenario(f)).topology)
    parts = read_partitions_conf(tmp_path / "osm" / "partitions.conf", topo)
    default = next(p for p in parts if p.pkey == 0x7FFF)
    assert set(default.members.values()) == {"full"} and len(default.members) == topo.n_nodes
    assert can_communicate(parts, topo).all()  # every host reaches every other, as before loading it


def test_a_partitions_file_without_a_default_rule_keeps_it_limited(tmp_path, cli):
    # a user file without 0x7fff: OpenSM's implicit rule is ALL=limited, SELF=full
    f = _pftree_with_qos(tmp_path)
    code, out, err = cli("qos", "opensm-conf", f, "--json")
    assert code == 0, err
    text = json.loads(out)["partitions_conf"]
    default = text.split("Default=0x7fff :")[1].split(";")[0]
    assert "=limited" in default and "=full" in default  # the SM's port (SELF) full, the rest limited


def _pf_small(d, classes: str):
    # the pFTree victim/aggressor scenario, cut down, with the victim in a strict-high class
    d.mkdir(exist_ok=True)
    f = _pftree_with_qos(d, qos="{max_vls: 4, high_limit: 255, vlarb_high: '3:64', "
                                        f"vlarb_low: '0:64,1:64,2:64', classes: {classes}}}")
    f.write_text(f.read_text().replace("1GiB", "64MiB").replace("256MiB", "16MiB"))
    return f


def _victim_s(cli, f, fidelity):
    code, out, err = cli("run", f, "--fidelity", fidelity, "--json")
    assert code == 0, err
    d = json.loads(out)
    return next(j["completion_s"] for j in d["jobs"] if j["name"] == "victim"), d.get("notes", [])


def test_a_class_overrides_the_partition_sl_at_both_fidelities(tmp_path, cli):
    # the packet fidelity put every flow on its pFTree partition's SL (the class did
    # nothing: victim 21.90 ms with or without it) while the flow level took the class
    # (16.78 ms). Both now take the class, as a qos-policy.conf level overrides a
    # partition's sl= in OpenSM, and say so
    f = _pf_small(tmp_path / "v", "[{name: v, sl: 3, jobs: [victim]}]")
    flow, notes = _victim_s(cli, f, "flow")
    packet, pnotes = _victim_s(cli, f, "packet")
    assert abs(packet / flow - 1) < 0.03, (flow, packet)
    without, _ = _victim_s(cli, _pf_small(tmp_path / "none", "[]"), "packet")
    assert packet < 0.9 * without  # the class's strict high table reaches the packet fidelity
    for n in (notes, pnotes):
        assert [x for x in n if "qos class 'v'" in x and "overrides" in x and "SL 3" in x]
    code, out, err = cli("qos", "opensm-conf", f, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert [x for x in d["notes"] if "qos class 'v'" in x and "overrides" in x]
    assert "sl=3" in d["partitions_conf"]
