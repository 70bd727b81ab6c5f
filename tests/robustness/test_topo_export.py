"""The topology export through the command line: written, read back, edited, and a
broken one refused in one line naming the file and the field, exit code 2."""

from __future__ import annotations

import json

import pytest

from netsteer.topology import pgft, to_json


def test_the_command_line_takes_the_export(cli, tmp_path):
    spec = "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps"
    a = cli("topo", spec, "--json", "--export", tmp_path / "t.json")
    b = cli("topo", tmp_path / "t.json", "--json")
    assert a.code == b.code == 0 and json.loads(a.out) == json.loads(b.out)
    # and an edited export is what it says: one cable fewer
    data = json.loads((tmp_path / "t.json").read_text())
    data["links"].pop()
    (tmp_path / "u.json").write_text(json.dumps(data))
    assert json.loads(cli("topo", tmp_path / "u.json", "--json").out)["links"] == json.loads(a.out)["links"] - 1


@pytest.mark.parametrize("edit,field,reason", [
    (lambda d: d["links"][0].update(b="nowhere"), "links[0].b", "no node named 'nowhere'"),
    (lambda d: d["nodes"][3].update(kind="router"), "nodes[3].kind", "router"),
    (lambda d: d["links"][2].update(bandwidth_bps=-1), "links[2].bandwidth_bps", "positive"),
])
def test_a_broken_export_is_refused_in_one_line(edit, field, reason, tmp_path, cli):
    data = to_json(pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=5))
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    cli("topo", path).refused(str(path), field, reason)
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: t\ntopology: {kind: json, path: bad.json}\nrouting: {engine: minhop}\n"
                        "jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1KiB}]}]\n")
    cli("run", scenario).refused(str(path), field, reason)


def test_a_net_export_says_what_the_format_changes(cli, tmp_path):
    # tester's B3: 7 Gbps went out as 4xSDR and came back as 8 Gbps, latencies as 100ns, silently
    spec = "pgft:levels=2,down=3;3,up=1;2,link_bandwidth=7Gbps;25Gbps,link_latency=1us;3us"
    res = cli("topo", spec, "--json", "--export", tmp_path / "q.net")
    assert res.code == 0
    note = " ".join(res.err.split())  # (a long line may wrap)
    assert note.startswith(f"note: {tmp_path / 'q.net'}: the .net format holds InfiniBand rates only"), note
    assert "7Gbps written as 4xSDR (8Gbps)" in note and "25Gbps" not in note  # 1xEDR is exact
    assert "latencies 1us, 3us not held by the format: read back as 100ns" in note
    back = json.loads(cli("topo", tmp_path / "q.net", "--json").out)
    assert [c["human"] for c in back["bandwidth_classes"]] == ["25Gbps", "8Gbps"]
    # nothing to say when the fabric is InfiniBand's already
    res = cli("topo", "pgft:levels=2,down=2;2,up=1;2,link_bandwidth=32Gbps,link_latency=100ns", "--export",
              tmp_path / "r.net")
    assert res.code == 0 and res.err == ""


def test_a_level_the_file_does_not_give_is_unknown(cli, tmp_path):
    cli("topo", "pgft:levels=2,down=2;2,up=1;2,link_bandwidth=32Gbps", "--export", tmp_path / "r.net")
    d = json.loads(cli("topo", tmp_path / "r.net", "--json").out)
    assert d["switches_by_level"] == {"unknown": 4}


@pytest.mark.parametrize("name", ["x.txt", "x", "x.jpeg"])
def test_draw_refuses_a_suffix_it_cannot_write(cli, tmp_path, name):
    # tester's B9: a PNG went into x.txt without a word
    f = tmp_path / name
    cli("topo", "pgft:levels=1,down=2,up=1,link_bandwidth=10Gbps", "--draw", f).refused(str(f), "--draw",
                                                                                        ".png, .svg or .pdf")
    assert not f.exists()


@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_draw_writes_the_format_its_suffix_names(cli, tmp_path, suffix, magic):
    f = tmp_path / f"x{suffix}"
    assert cli("topo", "pgft:levels=1,down=2,up=1,link_bandwidth=10Gbps", "--draw", f).code == 0
    assert f.read_bytes().startswith(magic)


@pytest.mark.parametrize("name", ["T.JSON", "T.Net"])
def test_an_export_suffix_is_taken_in_any_case(name, cli, tmp_path):
    # explorer's fault 6e: --export x.JSON was refused, though the SPEC x.JSON is read
    spec = "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps"
    a = cli("topo", spec, "--json", "--export", tmp_path / name)
    assert a.code == 0, a.err
    b = cli("topo", tmp_path / name, "--json")
    assert b.code == 0 and json.loads(b.out)["links"] == json.loads(a.out)["links"]
