"""A resumed sweep refuses to mix results when a file the base scenario names
changed, not only when the base scenario itself did (B10): only the base YAML was
hashed, so a topology.path whose links went from 10 to 1 Gbps gave one sweep of
points at both rates."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from netsteer.errors import NetsteerError
from netsteer.sweep import load_sweep
from netsteer.sweep.runner import MANIFEST, _check_manifest
from netsteer.sweep.spec import referenced_files

from .helpers import netsteer

BASE = """\
name: jb
topology: {kind: json, path: p.json}
routing: {engine: dmodk}
jobs:
  - name: x
    flows:
      - {src: 0, dst: 3, bytes: 1MB}
      - {src: 1, dst: 3, bytes: 1MB}
"""


@pytest.fixture
def folder(tmp_path):
    rc, _, err = netsteer("topo", "pgft:levels=1,down=4,up=1,link_bandwidth=10Gbps,link_latency=1us",
                          "--export", tmp_path / "p.json")
    assert rc == 0, err
    (tmp_path / "jb.yaml").write_text(BASE)
    (tmp_path / "sw.yaml").write_text("base: jb.yaml\ngrid: {jobs.0.flows.1.bytes: [1MB, 2MB]}\n")
    return tmp_path


def _recorded(sweep, out: Path) -> SimpleNamespace:
    """``out`` as a sweep of ``sweep`` leaves it: the manifest, a recorded point."""
    out.mkdir(exist_ok=True)
    store = SimpleNamespace(rows={"p": {"status": "done"}})
    _check_manifest(sweep, out, store)
    return store


def _slow_links(p: Path) -> None:
    d = json.loads(p.read_text())
    text = json.dumps(d).replace("10000000000", "1000000000")
    assert text != json.dumps(d)
    p.write_text(text)


def test_a_changed_topology_file_refuses_the_resumed_sweep(folder):
    out = folder / "out"
    store = _recorded(load_sweep(folder / "sw.yaml"), out)
    assert str(folder / "p.json") in json.loads((out / MANIFEST).read_text())["files_sha256"]
    _check_manifest(load_sweep(folder / "sw.yaml"), out, store)  # unchanged: resumes
    _slow_links(folder / "p.json")
    with pytest.raises(NetsteerError) as info:
        _check_manifest(load_sweep(folder / "sw.yaml"), out, store)
    assert info.value.file == str(out / "results.parquet")
    assert info.value.reason.startswith(f"{folder / 'p.json'}, which the base scenario {folder / 'jb.yaml'} "
                                        "(or a point) refers to, changed since these results were recorded")


def test_a_file_gone_and_a_manifest_from_before_files_were_recorded(folder):
    out = folder / "out"
    store = _recorded(load_sweep(folder / "sw.yaml"), out)
    (folder / "p.json").unlink()
    with pytest.raises(NetsteerError, match="p.json, which .* is gone since"):
        _check_manifest(load_sweep(folder / "sw.yaml"), out, store)
    # an older manifest, without files_sha256: nothing to compare, the files are recorded now
    m = json.loads((out / MANIFEST).read_text())
    del m["files_sha256"]
    (out / MANIFEST).write_text(json.dumps(m))
    (folder / "p.json").write_text("{}")
    _check_manifest(load_sweep(folder / "sw.yaml"), out, store)
    assert json.loads((out / MANIFEST).read_text())["files_sha256"] == {
        str(folder / "p.json"): __import__("hashlib").sha256(b"{}").hexdigest()}


def test_a_file_a_point_names_is_recorded_too(folder):
    (folder / "q.json").write_text((folder / "p.json").read_text())
    (folder / "sw.yaml").write_text("base: jb.yaml\ngrid: {topology.path: [p.json, q.json]}\n")
    out = folder / "out"
    store = _recorded(load_sweep(folder / "sw.yaml"), out)
    assert set(json.loads((out / MANIFEST).read_text())["files_sha256"]) == {str(folder / "p.json"),
                                                                           str(folder / "q.json")}
    _slow_links(folder / "q.json")
    with pytest.raises(NetsteerError, match="q.json, which"):
        _check_manifest(load_sweep(folder / "sw.yaml"), out, store)


def test_referenced_files_names_partitions_events_and_ibsim_includes(tmp_path):
    (tmp_path / "net").mkdir()
    (tmp_path / "net" / "top.net").write_text('include "part.net"\nSwitch 4 "s0"\n')
    (tmp_path / "net" / "part.net").write_text('include "/abs/deeper.net"\n')
    raw = {"topology": {"kind": "ibsim", "path": "net/top.net"},
           "routing": {"engine": "pftree", "partitions": "p.conf"},
           "events": [{"at": "1ms", "link_down": []}, {"at": "2ms", "routing": {"engine": "pftree",
                                                                               "partitions": "/etc/q.conf"}}]}
    assert referenced_files(raw, tmp_path / "s.yaml") == [
        ("topology.path", tmp_path / "net" / "top.net"),
        ("topology.path (include)", tmp_path / "net" / "part.net"),
        ("topology.path (include)", Path("/abs/deeper.net")),
        ("routing.partitions", tmp_path / "p.conf"),
        ("events.1.routing.partitions", Path("/etc/q.conf")),
    ]
    assert referenced_files({"topology": {"kind": "pgft"}, "routing": {"engine": "dmodk"}}, "s.yaml") == []


def test_the_cli_refuses_with_one_line_exit_2(folder):
    """The tester's case end to end: run, change the topology file, add a point, run again."""
    out = folder / "out"
    rc, _, err = netsteer("sweep", folder / "sw.yaml", "--out", out, "--workers", "1", "--json", "--no-progress")
    assert rc == 0, err
    _slow_links(folder / "p.json")
    (folder / "sw.yaml").write_text("base: jb.yaml\ngrid: {jobs.0.flows.1.bytes: [1MB, 2MB, 3MB]}\n")
    rc, stdout, err = netsteer("sweep", folder / "sw.yaml", "--out", out, "--workers", "1", "--json", "--no-progress")
    assert (rc, stdout) == (2, ""), err
    assert err.strip().splitlines() == [
        f"netsteer: error: {out / 'results.parquet'}: {folder / 'p.json'}, which the base scenario "
        f"{folder / 'jb.yaml'} (or a point) refers to, changed since these results were recorded; give another "
        "--out (or remove the folder) to start afresh"]
