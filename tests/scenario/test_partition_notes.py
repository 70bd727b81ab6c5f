"""routing.partitions shapes routing only: flows the partitions forbid get a note."""

from __future__ import annotations

from pathlib import Path

from netsteer.scenario import build_scenario, parse_scenario

SCEN = Path(__file__).resolve().parents[2] / "scenarios"


def notes(flows: str) -> list[str]:
    text = f"""
name: p
topology: {{kind: ibsim, path: pftree-16.net}}
routing: {{engine: pftree, partitions: pftree-victim-aggressor.conf}}
jobs:
  - {{name: victim, flows: [{{src: 2, dst: 6, bytes: 1MiB}}, {{src: 2, dst: 2, bytes: 1MiB}}]}}
  - {{name: other, flows: [{flows}]}}
"""
    return build_scenario(parse_scenario(text, file=str(SCEN / "p.yaml"))).notes


def test_flows_between_hosts_that_may_not_talk_get_a_note():
    # h2 (victim) and h3 (aggressor) share no partition with a full member (the file
    # has no 0x7fff rule, so OpenSM makes every host a limited member of the default)
    (note,) = notes("{src: 2, dst: 3, bytes: 1MiB}, {src: 3, dst: 2, bytes: 1MiB}, {src: 0, dst: 1, bytes: 1MiB}")
    assert note.startswith("2 flows (jobs: other) between hosts that routing.partitions does not let talk")
    assert "h2 -> h3" in note and "does not enforce P_Keys" in note


def test_flows_the_partitions_allow_get_none():
    assert notes("{src: 0, dst: 1, bytes: 1MiB}") == []


def test_the_sm_is_a_full_member_of_the_implicit_default_partition():
    # no 0x7fff rule: OpenSM's Default=0x7fff : ALL=limited, SELF=full, the SM on the
    # fabric's first node (h0, where ibsim attaches it): h0 may talk to every host
    assert notes("{src: 2, dst: 0, bytes: 1MiB}, {src: 0, dst: 3, bytes: 1MiB}") == []
    (note,) = notes("{src: 2, dst: 0, bytes: 1MiB}, {src: 3, dst: 2, bytes: 1MiB}")
    assert note.startswith("1 flow (jobs: other)") and "h3 -> h2" in note


def test_run_says_pftrees_notes_as_route_does(tmp_path, capsys):
    # a common partition left out of the isolation, and a user sl= pftree replaced: route
    # said both, run said neither (its notes, --json and the text's "note:" lines)
    import json
    import shutil

    from netsteer.cli import run_cli
    from netsteer.drivers.opensm.partitions import write_partitions_conf
    from netsteer.topology.ibsim_net import read_ibsim_net
    from netsteer.topology.partitions import Partition

    shutil.copy(SCEN / "pftree-16.net", tmp_path)
    t = read_ibsim_net(tmp_path / "pftree-16.net")
    a = Partition("a", 0x10, {t.host_node(h): "full" for h in range(4)})
    b = Partition("b", 0x11, {t.host_node(h): "full" for h in range(4, 16)}, flags={"sl": 7})
    storage = Partition("storage", 0x01, {t.host_node(h): "full" for h in range(16)})
    write_partitions_conf([storage, a, b], t, tmp_path / "p.conf")
    s = tmp_path / "s.yaml"
    s.write_text("name: pf\ntopology: {kind: ibsim, path: pftree-16.net}\n"
                 "routing: {engine: pftree, partitions: p.conf}\n"
                 "jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1MiB}]}]\n")
    assert run_cli(["route", "-t", str(tmp_path / "pftree-16.net"), "-e", "pftree", "-p", str(tmp_path / "p.conf"),
                    "-o", str(tmp_path / "lft.dump"), "--json"]) == 0
    routed = json.loads(capsys.readouterr().out)["notes"]
    assert any("'storage'" in n and "not isolated" in n for n in routed)
    assert any("'b'" in n and "sl=7" in n for n in routed)
    assert run_cli(["run", str(s), "--json", "--no-progress"]) == 0
    ran = json.loads(capsys.readouterr().out)["notes"]
    assert [n for n in ran if n.startswith("pftree:")] == routed
