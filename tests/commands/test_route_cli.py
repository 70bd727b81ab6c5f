"""``netsteer route`` / ``route-eval`` / ``reproduce pftree``: outputs and bad input (exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netsteer.drivers.opensm.lft_dump import read_lft_tables
from netsteer.errors import NetsteerError
from netsteer.drivers.opensm.partitions import Partition, read_partitions_conf, write_partitions_conf
from netsteer.routing import build_routing
from netsteer.topology.hyperx import hyperx
from netsteer.topology.ibsim_net import read_ibsim_net, write_ibsim_net
from netsteer.topology.pgft import pgft


def netsteer(*args, cwd=None):
    p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def fabric(tmp_path):
    """A 16-host 2:1 tree as ibsim numbers it, and victim/aggressor partitions."""
    net = tmp_path / "f.net"
    write_ibsim_net(pgft(2, [4, 4], [1, 2], link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    hosts = [int(h) for h in topo.hosts]
    parts = [Partition("victim", 0x10, {h: "full" for h in hosts[1:16:4]}),
             Partition("aggressor", 0x11, {h: "full" for h in hosts if h not in hosts[1:16:4]})]
    conf = tmp_path / "p.conf"
    write_partitions_conf(parts, topo, conf)
    return net, conf, topo, parts


def test_route_writes_the_tables_it_computed(fabric, tmp_path):
    net, conf, topo, parts = fabric
    out = tmp_path / "lfts.dump"
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", out, "--sl-out",
                               tmp_path / "sl.conf", "--qos-out", tmp_path / "qos.conf", "--json")
    assert rc == 0, err
    info = json.loads(stdout)
    assert info["engine"] == "pftree" and info["checked"] is True
    got = read_lft_tables(out, topo)
    want = build_routing(topo, "pftree", partitions=parts)
    assert np.array_equal(got.hosts[topo.switches], want.node_rows(topo.switches))
    assert "sl=" in (tmp_path / "sl.conf").read_text()
    assert "qos_sl2vl" in (tmp_path / "qos.conf").read_text()


@pytest.mark.parametrize("engine", ["minhop", "dmodk", "ftree"])
def test_other_engines(engine, tmp_path):
    out = tmp_path / "x.dump"
    rc, _, err = netsteer("route", "-t", "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=32Gbps", "-e", engine, "-o", out)
    assert rc == 0, err
    assert out.read_text().count("Unicast lids") == 6


def test_route_eval_json_keys_and_partitions(fabric, tmp_path):
    net, conf, topo, parts = fabric
    out = tmp_path / "lfts.dump"
    assert netsteer("route", "-t", net, "-e", "ftree", "-o", out)[0] == 0
    rc, stdout, err = netsteer("route-eval", "-t", net, "-l", out, "-p", conf, "--pattern", "bisect",
                               "--seeds", 3, "--json")
    assert rc == 0, err
    rep = json.loads(stdout)
    assert {"max_link_load", "effective_bisection_bandwidth", "partitions"} <= set(rep)
    assert set(rep["partitions"]) == {"victim", "aggressor"}
    assert 0 < rep["effective_bisection_bandwidth"] <= 1
    assert rep["partitions"]["victim"]["hosts"] == 4
    # the keys docs/pftree.md lists (it left out engine), the tables evaluated
    assert rep["engine"] == "file:lfts.dump"
    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "pftree.md").read_text().split())
    said = doc[doc.index("`route-eval --json` prints"):].split(". A PKey", 1)[0]
    while re.search(r"\([^()]*\)", said):
        said = re.sub(r"\([^()]*\)", "", said)
    assert re.findall(r"`(\w+)`", said) == list(rep)


def test_reproduce_pftree_json():
    rc, stdout, err = netsteer("reproduce", "pftree", "--quick", "--seeds", 1, "--json")
    assert rc == 0, err
    rep = json.loads(stdout)
    assert set(rep["victims"]) == {"A", "B", "C", "D"}
    assert set(rep["ring_ebb"]) == {"non-oversubscribed", "oversubscribed", "limited-resource"}


def bad(rc, err, *fragments):
    assert rc == 2, err
    assert err.startswith("netsteer: error:"), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err


def test_malformed_net_file(tmp_path):
    net = tmp_path / "bad.net"
    net.write_text('Switch 4 "S-1"\n[1] "H-1"[1]\n[9 "oops\n')
    rc, _, err = netsteer("route", "-t", net, "-e", "ftree", "-o", tmp_path / "x")
    bad(rc, err, str(net), "line")


def test_malformed_ibnetdiscover(tmp_path):
    f = tmp_path / "bad.ibnd"
    f.write_text('Switch\t4 "S-0000000000000001"\t\t# "sw" base port 0 lid 1 lmc 0\n[1]\t"H-zz"[1]\n')
    rc, _, err = netsteer("route", "-t", f, "-e", "ftree", "-o", tmp_path / "x")
    bad(rc, err, str(f))


def test_partitions_naming_an_unknown_guid(fabric, tmp_path):
    net, conf, topo, parts = fabric
    text = conf.read_text().splitlines()
    i = next(k for k, l in enumerate(text) if "0x" in l and "=full" in l and "victim" not in l)
    text[i] = "    0x00000000deadbeef=full,"
    conf.write_text("\n".join(text) + "\n")
    rc, _, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", tmp_path / "x")
    bad(rc, err, str(conf), f"line {i + 1}", "0x00000000deadbeef is not in the topology")


@pytest.mark.parametrize("engine", ["ftree", "pftree"])
def test_not_a_fat_tree(engine, tmp_path):
    net = tmp_path / "hx.net"
    write_ibsim_net(hyperx([4, 4], 1, 2, link_bandwidth=32e9, link_latency_ns=100), net)
    rc, _, err = netsteer("route", "-t", net, "-e", engine, "-o", tmp_path / "x")
    bad(rc, err, str(net), "not a fat-tree", "cabled to each other")


def test_dump_with_missing_entries(fabric, tmp_path):
    net, conf, topo, parts = fabric
    out = tmp_path / "lfts.dump"
    assert netsteer("route", "-t", net, "-e", "ftree", "-o", out)[0] == 0
    lines = out.read_text().splitlines()
    k = next(i for i, l in enumerate(lines) if "Channel Adapter" in l)
    del lines[k]
    out.write_text("\n".join(lines) + "\n")
    rc, _, err = netsteer("route-eval", "-t", net, "-l", out, "--pattern", "shift")
    bad(rc, err, str(out), "line 1", "has no entry for 1 host(s)")


def test_unknown_pattern_and_engine(fabric, tmp_path):
    net, conf, topo, parts = fabric
    rc, _, err = netsteer("route", "-t", net, "-e", "updn", "-o", tmp_path / "x")
    bad(rc, err, "unknown routing engine 'updn'")
    rc, _, err = netsteer("route-eval", "-t", net, "-l", tmp_path / "none.dump", "--pattern", "rings")
    bad(rc, err, "unknown pattern 'rings'")
    rc, _, err = netsteer("route-eval", "-t", net, "-l", tmp_path / "none.dump", "--pattern", "shift")
    bad(rc, err, "none.dump", "cannot read LFT dump")


# -- route -> route-eval on every kind of topology source ------------------------------
SPEC = "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps,link_latency=1us"
SOURCES = ("inline", "scenario", "json", "net")


def topology_source(kind, tmp_path):
    """The fabric of ``SPEC`` as ``--topology`` takes it: inline, a scenario, an export."""
    if kind == "inline":
        return SPEC
    if kind == "scenario":
        yaml = tmp_path / "scenario.yaml"
        yaml.write_text("name: same-fabric\n"
                        "topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2],\n"
                        "           link_bandwidth: 10Gbps, link_latency: 1us}\n")
        return yaml
    path = tmp_path / f"fabric.{kind}"
    rc, _, err = netsteer("topo", SPEC, "--export", path)
    assert rc == 0, err
    return path


@pytest.mark.parametrize("engine", ["minhop", "ftree", "dmodk"])
def test_route_then_route_eval_on_every_topology_source(engine, tmp_path):
    # route writes GUIDs for fabrics that have none (generated, JSON exports); route-eval
    # must name the same nodes by the same GUIDs, or it refuses route's own tables
    # (ftree also picks its roots by GUID). dmodk needs the PGFT parameters, which a
    # .net file does not keep.
    sources = [k for k in SOURCES if not (engine == "dmodk" and k == "net")]
    dumps, reports = {}, {}
    for kind in sources:
        d = tmp_path / kind
        d.mkdir()
        topo = topology_source(kind, d)
        out = d / "l.dump"
        rc, _, err = netsteer("route", "-t", topo, "-e", engine, "-o", out)
        assert rc == 0, f"{kind}: {err}"
        rc, stdout, err = netsteer("route-eval", "-t", topo, "-l", out, "--pattern", "shift",
                                   "--seeds", 2, "--json")
        assert rc == 0, f"{kind}: {err}"
        dumps[kind], reports[kind] = out.read_text(), json.loads(stdout)
    # one fabric, one numbering: the same GUIDs and LIDs whatever the source, and so
    # the same tables (the .net export is the file ibsim and OpenSM would run)
    assert all(text == dumps["inline"] for text in dumps.values())
    assert "guid 0x0000000000000000" not in dumps["inline"]
    for kind, rep in reports.items():
        assert rep["flows"] == 2 * 16, kind
        assert rep["max_link_load"] == reports["inline"]["max_link_load"], kind
        assert rep["throughput"] == pytest.approx(reports["inline"]["throughput"]), kind


def test_an_export_carries_the_guids_route_numbers_the_spec_by(tmp_path):
    # export -> import -> route-eval: the JSON shows the GUIDs route writes for the spec,
    # so a partitions.conf can be written from it, and they stay with their nodes when
    # the export is edited (here its nodes listed in reverse: made-up GUIDs follow order)
    path = topology_source("json", tmp_path)
    data = json.loads(path.read_text())
    guids = {n["name"]: int(n["guid"], 16) for n in data["nodes"]}
    # partitions name ports: a CA's port 1 is its node GUID + 1 (a node GUID is refused)
    hosts = [guids[f"h{i}"] + 1 for i in range(16)]
    assert 0 not in guids.values() and len(set(guids.values())) == len(guids)
    conf = tmp_path / "p.conf"
    conf.write_text(f"a=0x10: {', '.join(f'{g:#x}=full' for g in hosts[:4])};\n"
                    f"b=0x11: {', '.join(f'{g:#x}=full' for g in hosts[4:])};\n")
    out = tmp_path / "l.dump"
    rc, _, err = netsteer("route", "-t", SPEC, "-e", "pftree", "-p", conf, "-o", out)
    assert rc == 0, err
    assert all(f"guid 0x{g:016x}" in out.read_text() for n, g in guids.items() if n.startswith("s"))
    data["nodes"].reverse()
    # meta numbers the nodes as the generator made them: reordered, it is refused, and
    # the file reads as a plain fabric without it (route-eval needs only the cables)
    path.write_text(json.dumps(data))
    rc, _, err = netsteer("route-eval", "-t", path, "-l", out, "-p", conf, "--pattern", "shift", "--json")
    assert rc == 2 and err.startswith(f"netsteer: error: {path}: meta: no longer describes the nodes read"), err
    del data["meta"]
    path.write_text(json.dumps(data))
    rc, stdout, err = netsteer("route-eval", "-t", path, "-l", out, "-p", conf, "--pattern", "shift", "--json")
    assert rc == 0, err
    rep = json.loads(stdout)
    assert {k: v["hosts"] for k, v in rep["partitions"].items()} == {"a": 4, "b": 12}


# -- engines whose tables cannot be an LFT ----------------------------------------------
@pytest.mark.parametrize("check", ["--check", "--no-check"])
def test_ecmp_groups_are_refused_naming_the_engine_option(check, tmp_path):
    out = tmp_path / "x.dump"
    rc, _, err = netsteer("route", "-t", SPEC, "-e", "ecmp", "-o", out, check)
    bad(rc, err, "--engine", "one port per destination", "ECMP groups", "dmodk", "minhop")
    assert len(err.strip().splitlines()) == 1, err
    assert "deadlock" not in err, err  # the check is not what failed
    assert not out.exists()


def test_ecmp_without_groups_is_an_lft(tmp_path):
    # the refusal is for groups, not for the name: on one switch every destination
    # has one port, and ecmp's tables are plain LFTs
    out = tmp_path / "x.dump"
    rc, _, err = netsteer("route", "-t", "pgft:levels=1,down=4,up=1,link_bandwidth=1Gbps", "-e", "ecmp", "-o", out)
    assert rc == 0, err
    assert out.read_text().count("Unicast lids") == 1


def test_route_help_names_the_engines_an_lft_can_hold():
    rc, stdout, err = netsteer("route", "--help")
    assert rc == 0, err
    assert "any registered engine" not in stdout
    text = " ".join(stdout.split())  # undo the help's line wrapping
    for engine in ("minhop", "dmodk", "ftree", "pftree", "dor"):
        assert engine in text, engine
    from netsteer.commands.route import LFT_ENGINES
    from netsteer.routing import ENGINES

    assert set(LFT_ENGINES) <= set(ENGINES)  # the help and the refusal name real engines


# -- route-eval's virtual lanes come from partitions.conf's sl= -------------------------
def test_route_eval_split_puts_partitions_on_their_sl(tmp_path):
    # the documented pFTree workflow: route gives the partitions SLs and writes them as
    # sl= flags; route-eval --vl-model split must put each partition on that lane
    scen = Path(__file__).resolve().parents[2] / "scenarios"
    net, dump, sl_conf = scen / "pftree-16.net", tmp_path / "l.dump", tmp_path / "p-sl.conf"
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", scen / "pftree-victim-aggressor.conf",
                               "-o", dump, "--sl-out", sl_conf, "--vls", 2, "--json")
    assert rc == 0, err
    sl = {int(k, 16): v for k, v in json.loads(stdout)["partition_sl"].items()}
    sl_text = {f"{k:#06x}": v for k, v in sl.items()}
    assert len(set(sl.values())) == 2, sl  # two lanes, else split could not differ
    conf_sl = {p.pkey: p.flags["sl"] for p in read_partitions_conf(sl_conf, read_ibsim_net(net))}
    assert conf_sl == sl
    def evaluate(conf, model):
        rc, stdout, err = netsteer("route-eval", "-t", net, "-l", dump, "-p", conf, "--pattern",
                                   "partition-local", "--vl-model", model, "--json")
        assert rc == 0, err
        return json.loads(stdout)

    shared, split = evaluate(sl_conf, "shared"), evaluate(sl_conf, "split")
    for rep in (shared, split):
        assert {p["pkey"]: p["vl"] for p in rep["partitions"].values()} == sl_text  # SL2VL the identity
    # lanes split the links the two partitions share, so both change
    for name in ("victim", "aggressor"):
        assert split["partitions"][name]["throughput"] != pytest.approx(shared["partitions"][name]["throughput"])
    # the lanes come from sl=: the same tables with the partitions.conf route read (no
    # sl=) put both on VL 0, where split is shared
    plain = scen / "pftree-victim-aggressor.conf"
    assert "sl=" not in plain.read_text()
    plain_split = evaluate(plain, "split")
    assert {p["vl"] for p in plain_split["partitions"].values()} == {0}
    assert plain_split["partitions"] == evaluate(plain, "shared")["partitions"]


@pytest.mark.parametrize("argv, option", [
    (["reproduce", "pftree", "--seeds", "0"], "--seeds"),
    (["route-eval", "-t", "pgft:levels=1,down=4,up=1,link_bandwidth=10Gbps", "--lfts", "x.dump",
      "--vl-model", "both"], "--vl-model"),
])
def test_an_option_error_names_the_option_once(argv, option, tmp_path):
    p = subprocess.run([sys.executable, "-m", "netsteer", *argv], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2
    line = p.stderr.strip()
    assert "\n" not in line and line.count(option) == 1, line


# -- --sl-out writes back what the input gave, read by OpenSM's rules ------------------
def test_sl_out_gives_every_port_the_memberships_of_the_input(fabric, tmp_path):
    # the usual Default rule, a port listed twice and a name with a blank (OpenSM keeps
    # inner blanks): every port, the SM's wherever it runs, keeps its membership
    from netsteer.drivers.opensm.guids import endpoint_guid
    from netsteer.drivers.opensm.partitions import parse_partitions_conf

    net, _, topo, _ = fabric
    g = [endpoint_guid(topo, int(h)) for h in topo.hosts]
    conf = tmp_path / "in.conf"
    conf.write_text("Default=0x7fff : ALL=limited, SELF=full ;\n"
                    f"my part=0x10 : {g[0]:#x}=full, {g[1]:#x}=full, {g[0]:#x}=limited ;\n"
                    f"b=0x11 : ALL_CAS=full, {g[2]:#x}=limited ;\n")
    sl_conf = tmp_path / "sl.conf"
    rc, _, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", tmp_path / "l.dump",
                          "--sl-out", sl_conf)
    assert rc == 0, err
    written = sl_conf.read_text()
    for sm in range(topo.n_nodes):
        want = parse_partitions_conf(conf.read_text(), topo, sm_node=sm)
        got = parse_partitions_conf(written, topo, sm_node=sm)
        assert [(p.name, p.pkey, p.members) for p in got] == [(p.name, p.pkey, p.members) for p in want], sm


@pytest.mark.parametrize("option", ["--sl-out", "--qos-out"])
def test_sl_and_qos_out_need_an_engine_that_assigns_sls(fabric, tmp_path, option):
    # ftree assigns no SLs: --qos-out's SL i -> VL i lines would do nothing, as --sl-out's sl=
    net, conf, _, _ = fabric
    out = tmp_path / "l.dump"
    rc, _, err = netsteer("route", "-t", net, "-e", "ftree", "-p", conf, "-o", out, option, tmp_path / "x.conf")
    assert rc == 2 and f"{option}: " in err and ("ftree assigns none" in err or "not ftree" in err), err
    assert not out.exists() and not (tmp_path / "x.conf").exists()


def test_tables_that_fail_their_check_name_the_topology_file(tmp_path):
    # tester's B4: an exported PGFT with a spine cable deleted; dmodk still routes by
    # the PGFT labels and its tables send traffic out of the empty port. The message
    # named neither the file nor the option.
    from netsteer.topology.json_io import to_json

    d = to_json(pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=100))
    d["links"] = [ln for ln in d["links"] if not (ln["a"] == "s1_0" and ln["a_port"] == 5 or
                                                  ln["b"] == "s1_0" and ln["b_port"] == 5)]
    f = tmp_path / "e1.json"
    f.write_text(json.dumps(d))
    rc, _, err = netsteer("route", "--topology", f, "--engine", "dmodk", "--out", tmp_path / "x.dump")
    assert rc == 2
    assert err.startswith(f"netsteer: error: {f}: --topology: dmodk's tables: switch s1_0 sends traffic for "), err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "x.dump").exists()


def test_an_output_that_cannot_be_written_leaves_no_other_output(fabric, tmp_path):
    import os

    net, conf, _, _ = fabric
    if os.geteuid() == 0:
        bad_out = Path("/proc/netsteer-test-x")  # root passes os.access; the write itself fails
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        bad_out = ro / "x"
    dump, qos = tmp_path / "new" / "e.dump", tmp_path / "q.conf"
    rc, out, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "--out", dump,
                            "--qos-out", qos, "--sl-out", bad_out)
    assert rc == 2 and str(bad_out) in err and "--sl-out" in err, err
    # nothing written, and no directory made for --out
    assert not dump.exists() and not (tmp_path / "new").exists() and not qos.exists()
    # with every output writable, all are written (the missing directory made then)
    rc, out, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "--out", dump,
                            "--qos-out", qos, "--sl-out", tmp_path / "s.conf", "--json")
    assert rc == 0, err
    assert json.loads(out)["files"] == [str(dump), str(tmp_path / "s.conf"), str(qos)]
    assert dump.exists() and qos.exists() and (tmp_path / "s.conf").exists()


def test_checking_an_output_creates_no_directory(tmp_path):
    from netsteer.errors import NetsteerError
    from netsteer.report.atomic import check_writable

    check_writable(tmp_path / "a" / "b" / "x.dump", field="--out")
    assert not (tmp_path / "a").exists()
    (tmp_path / "f").write_text("")
    with pytest.raises(NetsteerError, match="not a directory"):
        check_writable(tmp_path / "f" / "x.dump", field="--out")


def test_vls_is_refused_for_engines_that_give_no_vls(fabric, tmp_path):
    net, conf, _, _ = fabric
    rc, out, err = netsteer("route", "-t", net, "-e", "ftree", "-p", conf, "--vls", "4", "--out", tmp_path / "x")
    assert rc == 2 and "--vls" in err and "ftree" in err, err
    assert not (tmp_path / "x").exists()


def test_too_many_partitions_name_the_partitions_file(fabric, tmp_path):
    net, _, topo, _ = fabric
    hosts = [int(h) for h in topo.hosts]
    # 65 partitions (host pairs, wrapping): one over pftree's limit
    parts = [Partition(f"p{k}", 0x100 + k, {hosts[k % 16]: "full", hosts[(k + 1) % 16]: "full"}) for k in range(65)]
    conf = tmp_path / "many.conf"
    write_partitions_conf(parts, topo, conf)
    rc, out, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "--out", tmp_path / "x")
    assert rc == 2 and str(conf) in err and "--partitions" in err and "at most 64" in err, err
    assert "--topology" not in err
    write_partitions_conf(parts[:64], topo, conf)
    rc, out, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "--out", tmp_path / "x", "--no-check")
    assert rc == 0, err


def test_more_than_8_vls_get_a_note(fabric, tmp_path):
    net, conf, _, _ = fabric
    rc, out, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "--vls", "15", "--out", tmp_path / "x",
                            "--qos-out", tmp_path / "q.conf", "--json")
    assert rc == 0, err
    (note,) = json.loads(out)["notes"]
    assert "VL0-7" in note and "qos_max_vls 15" in note
    rc, out, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "--vls", "8", "--out", tmp_path / "x",
                            "--json")
    assert rc == 0 and json.loads(out)["notes"] == [], err


def test_route_and_route_eval_name_pkeys_alike(tmp_path):
    # route --json keyed partition_sl by "0x0001" strings, route-eval --json gave each
    # partition's pkey as an int: one form now, the PKey as the partitions.conf header has it
    scen = Path(__file__).resolve().parents[2] / "scenarios"
    net, dump, sl_conf = scen / "pftree-16.net", tmp_path / "l.dump", tmp_path / "p-sl.conf"
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", scen / "pftree-victim-aggressor.conf",
                               "-o", dump, "--sl-out", sl_conf, "--json")
    assert rc == 0, err
    routed = json.loads(stdout)["partition_sl"]
    rc, stdout, err = netsteer("route-eval", "-t", net, "-l", dump, "-p", sl_conf, "--pattern",
                               "partition-local", "--json")
    assert rc == 0, err
    evaluated = {p["pkey"]: p["vl"] for p in json.loads(stdout)["partitions"].values()}
    assert evaluated == routed
    headers = {line.split("=")[1].split(",")[0].split()[0] for line in sl_conf.read_text().splitlines()
               if line and not line.startswith((" ", "#")) and not line.startswith("Default")}
    assert set(routed) == headers


# -- partitions.conf membership is per port (dual-port HCAs) ---------------------------
@pytest.fixture
def dual_port(tmp_path):
    """A 16-host tree whose HCAs have two ports, both to their leaf."""
    net = tmp_path / "dp.net"
    write_ibsim_net(pgft(2, [4, 4], [1, 2], parallel=[2, 1], link_bandwidth=32e9, link_latency_ns=100), net)
    return net, read_ibsim_net(net)


def test_sl_out_keeps_each_ports_membership(tmp_path, dual_port):
    # port 1 limited and port 2 full used to be read as the host, full, and written back
    # as port 1 full with port 2 dropped: a P_Key change nobody asked for
    from netsteer.drivers.opensm.guids import port_guid

    net, topo = dual_port
    h = [int(x) for x in topo.hosts]
    conf = tmp_path / "p.conf"
    conf.write_text(f"a=0x10 : {port_guid(topo, h[0], 1):#x}=limited, {port_guid(topo, h[0], 2):#x}=full, "
                    + ", ".join(f"{port_guid(topo, x, 1):#x}=full" for x in h[1:8]) + " ;\n"
                    f"b=0x11 : " + ", ".join(f"{port_guid(topo, x, 2):#x}=full" for x in h[8:]) + " ;\n")
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", tmp_path / "l.dump",
                               "--sl-out", tmp_path / "sl.conf")
    assert rc == 0, err
    before, after = read_partitions_conf(conf, topo), read_partitions_conf(tmp_path / "sl.conf", topo)
    assert [(p.members, p.other_ports) for p in after] == [(p.members, p.other_ports) for p in before]
    assert before[0].members[h[0]] == "limited" and before[0].other_ports[(h[0], 2)] == "full"
    assert before[1].members == {}  # only second ports: the routed ports are not members


def test_node_guid_in_partitions_is_refused_naming_the_ports(tmp_path, dual_port):
    from netsteer.drivers.opensm.guids import port_guid

    net, topo = dual_port
    h1 = int(topo.hosts[1])
    conf = tmp_path / "p.conf"
    conf.write_text(f"\na=0x10 : {int(topo.node_guid[h1]):#x}=full ;\n")
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", tmp_path / "l.dump")
    assert rc == 2 and "Traceback" not in err
    assert str(conf) in err and "line 2" in err and "node GUID of h1" in err
    assert f"{port_guid(topo, h1, 1):#018x} (port 1)" in err and f"{port_guid(topo, h1, 2):#018x} (port 2)" in err
    assert not (tmp_path / "l.dump").exists()


def test_route_notes_common_partition_and_replaced_sl(tmp_path):
    # a storage partition of every host listed first made pftree plan all hosts as
    # one; a user's sl= was replaced by pftree's without a word
    scen = Path(__file__).resolve().parents[2] / "scenarios"
    net, conf = scen / "pftree-16.net", scen / "pftree-victim-aggressor.conf"
    mine = tmp_path / "p.conf"
    mine.write_text("storage=0x0001 : ALL_CAS=full ;\n"
                    + conf.read_text().replace("victim=0x0010", "victim=0x0010,sl=5"))
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", mine, "-o", tmp_path / "a.dump", "--json")
    assert rc == 0, err
    got = json.loads(stdout)
    rc, stdout, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", tmp_path / "b.dump", "--json")
    assert rc == 0, err
    alone = json.loads(stdout)
    assert (tmp_path / "a.dump").read_text() == (tmp_path / "b.dump").read_text()
    assert got["partition_sl"] == alone["partition_sl"] | {"0x0001": 0}
    notes = got["notes"]
    assert [n for n in notes if "'storage'" in n and "not isolated" in n]
    victim_sl = got["partition_sl"]["0x0010"]
    assert [n for n in notes if "'victim'" in n and "sl=5" in n and f"SL {victim_sl}" in n]


@pytest.mark.parametrize("spec_text, reason", [
    ("name: hxc\ntopology: {kind: hyperx, S: [2, 3], K: [2, 1], T: 1, link_bandwidth: 10Gbps,\n"
     "           circuits: [{dim: 0, switching_time: 10us}]}\n", "InfiniBand has no circuit switches"),
    ("kind: pgft\nlevels: 1\ndown: [300]\nup: [1]\nlink_bandwidth: 10Gbps\n",
     "InfiniBand nodes have at most 255 ports"),
])
@pytest.mark.parametrize("command", ["route", "route-eval"])
def test_a_fabric_an_lft_cannot_describe_is_refused_naming_the_file(spec_text, reason, command, tmp_path):
    # explorer's fault 4: the refusal said "--topology: ..." without the file
    f = tmp_path / "fabric.yaml"
    f.write_text(spec_text)
    dump = tmp_path / "x.dump"
    args = ["-o", dump] if command == "route" else ["--lfts", dump]
    rc, _, err = netsteer(command, "-t", f, "-e", "minhop", *args) if command == "route" else \
        netsteer(command, "-t", f, *args)
    assert rc == 2, err
    assert err.startswith(f"netsteer: error: {f}: --topology: {reason}"), err
    assert "Traceback" not in err


# -- hosts with several cabled ports: each LID's entries end at that port ----------------

def _dual_homed_export(tmp_path):
    """A 2-level PGFT export with one cable more: h0 port 2 to s1_1 port 5 (h0 port 1 is on s1_0)."""
    from netsteer.topology.json_io import to_json

    d = to_json(pgft(2, [2, 2], [1, 2], link_bandwidth=10e9, link_latency_ns=100))
    d["links"].append({"a": "h0", "a_port": 2, "b": "s1_1", "b_port": 5, "bandwidth_bps": 10e9, "latency_ns": 100})
    f = tmp_path / "dual.json"
    f.write_text(json.dumps(d))
    return f


def _arrivals(topo, tables):
    from netsteer.drivers.opensm.guids import endpoint_port
    from netsteer.drivers.opensm.lft_dump import endpoint_arrivals

    ep = np.array([endpoint_port(topo, int(v)) for v in topo.hosts])
    return endpoint_arrivals(topo, tables.hosts[topo.switches]), ep


def test_an_endpoint_lid_is_routed_to_its_own_port_on_a_dual_homed_host(tmp_path):
    # explorer's fault 1: s1_1 sent h0 port 1's LID out of port 5, to h0 port 2, which
    # drops packets for another port's LID; the check passed
    from netsteer.commands.route import with_guids
    from netsteer.drivers.opensm.lft_dump import parse_lft_tables
    from netsteer.topology.spec import parse_topo_arg

    f = _dual_homed_export(tmp_path)
    out = tmp_path / "dual.dump"
    rc, stdout, err = netsteer("route", "-t", f, "-e", "minhop", "-o", out, "--json")
    assert rc == 0, err
    topo = with_guids(parse_topo_arg(str(f)))
    tables = read_lft_tables(out, topo)
    s11, h0 = topo.node("s1_1"), topo.node("h0")
    to_port2 = topo.port_peer(h0, 2)[1]  # s1_1's port cabled to h0 port 2
    assert tables.hosts[s11, topo.host_index[h0]] != to_port2
    arrive, ep = _arrivals(topo, tables)
    assert ((arrive == ep[None, :]) | (arrive == -1)).all() and (arrive == ep[None, :]).any(axis=0).all()
    notes = json.loads(stdout)["notes"]
    assert len(notes) == 1 and notes[0].startswith("1 of minhop's entries for 1 multi-port host(s) (h0)")
    # the old dump's entry (towards h0 port 2) is refused when read, naming its line
    lines = out.read_text().splitlines()
    block = next(i for i, ln in enumerate(lines) if "('s1_1')" in ln)
    k = next(i for i in range(block + 1, len(lines)) if lines[i].startswith(f"0x{int(tables.lids.lid[h0]):04x} "))
    lines[k] = f"{lines[k][:7]}{to_port2:03d}{lines[k][10:]}"
    with pytest.raises(NetsteerError, match=rf"line {k + 1}: switch s1_1 sends LID 0x0001 \(h0 port 1\) out of "
                                            rf"port {to_port2}, a route that ends at h0 port 2"):
        parse_lft_tables("\n".join(lines) + "\n", topo, file="old.dump")


def test_a_multi_rail_dump_says_it_does_not_route_as_the_engine(tmp_path):
    # explorer's fault 1, second symptom: dmodk reaches each host at any of its ports; the
    # dump cannot, and nothing said so
    from netsteer.commands.route import with_guids
    from netsteer.drivers.opensm.lft_dump import lid_tables
    from netsteer.drivers.opensm.lids import opensm_lids
    from netsteer.routing.evaluate import evaluate
    from netsteer.topology.spec import parse_topo_arg

    spec = "pgft:levels=2,down=2;3,up=2;2,parallel=2;1,link_bandwidth=10Gbps"
    out = tmp_path / "p2w.dump"
    rc, stdout, err = netsteer("route", "-t", spec, "-e", "dmodk", "-o", out, "--json")
    assert rc == 0, err
    topo = with_guids(parse_topo_arg(spec))
    engine = build_routing(topo, "dmodk")
    changed = lid_tables(topo, opensm_lids(topo, sm_node=0), engine)[2]
    assert changed.any()
    notes = json.loads(stdout)["notes"]
    assert len(notes) == 1 and notes[0].startswith(f"{int(changed.sum())} of dmodk's entries for "
                                                   f"{int(changed.any(axis=0).sum())} multi-port host(s)")
    tables = read_lft_tables(out, topo)
    arrive, ep = _arrivals(topo, tables)
    assert ((arrive == ep[None, :]) | (arrive == -1)).all()
    rc, stdout, err = netsteer("route-eval", "-t", spec, "--lfts", out, "--pattern", "all-to-all", "--json")
    assert rc == 0, err
    dump, run = json.loads(stdout), evaluate(engine, "all-to-all")
    # the dump delivers every host at its endpoint port: not what the engine (and netsteer run) does
    assert dump["max_link_load"] != run["max_link_load"]


@pytest.mark.parametrize("engine", ["ftree", "pftree", "dor"])
def test_a_dual_homed_refusal_advises_engines_route_takes(engine, tmp_path):
    """It said "route this fabric with minhop or ecmp", and route refuses ecmp; a scenario
    (any engine) keeps the full advice."""
    spec = "pgft:levels=2,down=4;4,up=2;2,link_bandwidth=10Gbps"
    rc, _, err = netsteer("route", "-t", spec, "-e", engine, "-o", tmp_path / "x.dump")
    assert rc == 2
    assert err.strip().endswith(f"--topology: {engine} needs single-homed hosts: h0 is cabled to 2 switches "
                                "(s1_0, s1_1); route this fabric with minhop"), err
    advised = err.strip().rsplit("route this fabric with ", 1)[1].split(" or ")
    for other in advised:
        assert netsteer("route", "-t", spec, "-e", other, "-o", tmp_path / f"{other}.dump")[0] == 0
    with pytest.raises(NetsteerError, match="route this fabric with minhop or ecmp$"):
        build_routing(pgft(2, [4, 4], [2, 2], link_bandwidth=1e10, link_latency_ns=0), engine)


@pytest.mark.parametrize("names", [("--out", "--sl-out"), ("--sl-out", "--qos-out"), ("--out", "--qos-out")])
def test_two_outputs_on_one_file_are_refused_naming_both_options(fabric, tmp_path, names):
    # explorer's fault 4: the second output replaced the first silently (exit 0)
    net, conf, topo, parts = fabric
    paths = {"--out": tmp_path / "o.dump", "--sl-out": tmp_path / "sl.conf", "--qos-out": tmp_path / "q.conf"}
    paths[names[1]] = tmp_path / "sub" / ".." / paths[names[0]].name  # the same file, written otherwise
    argv = [x for k, v in paths.items() for x in (k, v)]
    rc, _, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, *argv)
    assert rc == 2 and f"{names[1]}: is the file {names[0]} writes too" in err, err
    assert "Traceback" not in err and not any(p.exists() for p in paths.values())


def test_sl_out_may_write_over_the_partitions_it_read(fabric, tmp_path):
    net, conf, topo, parts = fabric
    rc, _, err = netsteer("route", "-t", net, "-e", "pftree", "-p", conf, "-o", tmp_path / "o.dump",
                          "--sl-out", conf)
    assert rc == 0, err
    assert "sl=" in conf.read_text()


def test_a_scenario_routes_with_its_own_partitions(fabric, tmp_path):
    # explorer's fault 5: route -t SCENARIO ignored routing.partitions (partition_sl {}),
    # while run routes with them
    import shutil

    net, conf, topo, parts = fabric
    d = tmp_path / "scn"
    d.mkdir()
    shutil.copy(conf, d / "parts.conf")
    scn = d / "s.yaml"
    scn.write_text(f"topology: {{kind: ibsim, path: {net}}}\nrouting: {{engine: pftree, partitions: parts.conf}}\n"
                   "jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1MiB}]}]\n")
    rc, out, err = netsteer("route", "-t", scn, "-e", "pftree", "-o", tmp_path / "o.dump", "--json",
                            "--sl-out", tmp_path / "sl.conf")
    assert rc == 0, err
    info = json.loads(out)
    assert info["partition_sl"] == {"0x0010": 0, "0x0011": 1}
    assert "routing.partitions" in info["notes"][0] and "parts.conf" in info["notes"][0]
    # --partitions still decides; a scenario naming a missing file is refused naming it
    rc, out, err = netsteer("route", "-t", scn, "-e", "pftree", "-o", tmp_path / "o.dump", "--json", "-p", conf)
    assert rc == 0 and not any("routing.partitions" in n for n in json.loads(out)["notes"]), err
    (d / "parts.conf").unlink()
    rc, _, err = netsteer("route", "-t", scn, "-e", "pftree", "-o", tmp_path / "o.dump")
    assert rc == 2 and "s.yaml: routing.partitions: no such partitions file" in err, err


def test_split_vl_model_needs_partitions(fabric, tmp_path):
    # explorer's fault 9: --vl-model split without partitions was accepted and changed nothing
    net, conf, topo, parts = fabric
    dump = tmp_path / "o.dump"
    assert netsteer("route", "-t", net, "-e", "minhop", "-o", dump)[0] == 0
    rc, _, err = netsteer("route-eval", "-t", net, "-l", dump, "--vl-model", "split")
    assert rc == 2 and "--vl-model: split puts each partition on the VL of its sl=; it needs --partitions" in err, err
    assert netsteer("route-eval", "-t", net, "-l", dump, "--vl-model", "split", "-p", conf)[0] == 0
