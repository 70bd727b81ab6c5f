"""The text output of ``netsteer route`` and ``route-eval``: readable values with units."""

from __future__ import annotations

from pathlib import Path

from netsteer.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
NET = ROOT / "scenarios" / "pftree-16.net"
PARTS = ROOT / "scenarios" / "pftree-victim-aggressor.conf"


def _dump(tmp_path, capsys):
    out = tmp_path / "lfts.dump"
    assert run_cli(["route", "--topology", str(NET), "--engine", "pftree", "--partitions", str(PARTS),
                    "--out", str(out)]) == 0
    return out, capsys.readouterr().out


def test_route_eval_text_gives_each_figure_its_unit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    dump, _ = _dump(tmp_path, capsys)
    assert run_cli(["route-eval", "--topology", str(NET), "--lfts", str(dump), "--partitions", str(PARTS)]) == 0
    out = capsys.readouterr().out
    lines = {ln.split("│")[1].strip(): ln for ln in out.splitlines() if ln.count("│") >= 3}
    assert "flows per switch-to-switch channel" in lines["max_link_load"]
    assert "fraction of the source's link rate" in lines["throughput"]
    assert "fraction of the link rate" in lines["effective_bisection_bandwidth"]
    assert "throughput (of link rate)" in out


def test_route_text_gives_readable_values_with_units(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    dump, out = _dump(tmp_path, capsys)
    rows = {ln.split("│")[1].strip(): ln.split("│")[2].strip() for ln in out.splitlines() if ln.count("│") >= 3}
    assert rows["checked"] == "yes"
    assert rows["route_s"].endswith(" s") and rows["check_s"].endswith(" s")
    assert rows["partition_sl"] == "0x0010: SL 0, 0x0011: SL 1"
    assert rows["files"] == str(dump)
    assert not any(c in out for c in "{}[]'")
