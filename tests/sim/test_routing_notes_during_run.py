"""Routings built during a run (a scripted ``routing:`` change, a re-route after links
change) say their notes as the initial routing's are said: in the result's ``notes``
(``--json``, and the text's ``note:`` lines), each once, with when and why the tables
were built. Before, only the initial routing's notes reached the result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from netsteer.cli import run_cli
from netsteer.drivers.opensm.partitions import write_partitions_conf
from netsteer.topology.ibsim_net import read_ibsim_net
from netsteer.topology.partitions import Partition

SCEN = Path(__file__).resolve().parents[2] / "scenarios"


def _scenario(tmp_path: Path, events: str) -> Path:
    shutil.copy(SCEN / "pftree-16.net", tmp_path)
    t = read_ibsim_net(tmp_path / "pftree-16.net")
    a = Partition("a", 0x10, {t.host_node(h): "full" for h in range(4)})
    b = Partition("b", 0x11, {t.host_node(h): "full" for h in range(4, 16)})
    storage = Partition("storage", 0x01, {t.host_node(h): "full" for h in range(16)})  # common: left out
    write_partitions_conf([storage, a, b], t, tmp_path / "p.conf")
    s = tmp_path / "s.yaml"
    # ftree takes the partitions and routes as without them: no notes at the start
    s.write_text("name: pf\ntopology: {kind: ibsim, path: pftree-16.net}\n"
                 "routing: {engine: ftree, partitions: p.conf}\n"
                 "jobs: [{name: a, flows: [{src: 0, dst: 5, bytes: 64MiB}, {src: 1, dst: 6, bytes: 64MiB}]}]\n"
                 f"events: {events}\n")
    return s


def _run(s: Path, capsys, *args) -> tuple[str, str]:
    assert run_cli(["run", str(s), "--no-progress", *args]) == 0
    out = capsys.readouterr()
    return out.out, out.err


def test_a_scripted_routing_change_says_its_routings_notes(tmp_path, capsys):
    s = _scenario(tmp_path, "[{at: 1ms, routing: {engine: pftree, partitions: p.conf}}]")
    res = json.loads(_run(s, capsys, "--json")[0])
    assert [e["engine"] for e in res["events"] if e["intent"] == "routing"] == ["pftree"]
    notes = [n for n in res.get("notes", []) if "pftree:" in n]
    assert len(notes) == 1, res.get("notes")
    (note,) = notes
    assert note.startswith("routing built during the run at 1 ms (a scripted routing change, pftree): pftree: "
                           "partition 'storage'"), note
    assert "not isolated" in note
    _, err = _run(s, capsys)  # the text says the same note
    assert "routing built during the run at 1 ms" in " ".join(err.split())


def test_tables_built_twice_with_the_same_note_say_it_once_with_both_times(tmp_path, capsys):
    s = _scenario(tmp_path, "[{at: 1ms, routing: {engine: pftree, partitions: p.conf}}, "
                            "{at: 2ms, routing: {engine: ftree, partitions: p.conf}}, "
                            "{at: 3ms, routing: {engine: pftree, partitions: p.conf}}]")
    res = json.loads(_run(s, capsys, "--json")[0])
    notes = [n for n in res.get("notes", []) if "pftree:" in n]
    assert len(notes) == 1, res.get("notes")
    assert notes[0].startswith("routing built during the run at 1 ms (a scripted routing change, pftree) and 3 ms "
                               "(a scripted routing change, pftree): pftree: partition 'storage'"), notes[0]


def test_a_run_without_routing_changes_keeps_its_notes_as_they_were(tmp_path, capsys):
    s = _scenario(tmp_path, "[]")
    res = json.loads(_run(s, capsys, "--json")[0])
    assert not [n for n in res.get("notes", []) if "routing built during the run" in n]
