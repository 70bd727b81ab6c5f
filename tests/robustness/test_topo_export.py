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
