"""Every command that writes an ``--out`` directory replaces its own previous result:
a second run into the same directory succeeds (the manifest names what the first wrote)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import netsteer.commands
from netsteer.report.outdir import MANIFEST

ROOT = Path(__file__).resolve().parents[2]

COMMANDS = {
    "hyperx-steering": ["reproduce", "hyperx-steering", "--no-beyond"],
    "qos-staging": ["reproduce", "qos-staging"],
    "hybrid-reconfig": ["reproduce", "hybrid-reconfig"],
    "hybrid-shifting": ["reproduce", "hybrid-shifting", "--racks", "8", "--servers-per-rack", "2", "--jobs", "2",
                        "--phases", "2", "--circuit-switches", "2"],
    "unisonflow": ["reproduce", "unisonflow", "--iterations", "10", "--osu-scale", "0.01"],
    "opensm-conf": ["qos", "opensm-conf", str(ROOT / "scenarios" / "qos-mpi-vs-io.yaml")],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_second_run_replaces_the_first(tmp_path, name):
    out = tmp_path / "out"
    for _ in range(2):
        p = subprocess.run([sys.executable, "-m", "netsteer", *COMMANDS[name], "--json", "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(listed) == sorted(x.name for x in out.iterdir())


def test_no_command_writes_a_directory_without_the_manifest():
    # output_dir alone writes no manifest: commands go through write_result_dir (or write_run_dir)
    folder = Path(netsteer.commands.__file__).parent
    direct = [p.name for p in folder.glob("*.py") if re.search(r"\boutput_dir\(", p.read_text())]
    assert not direct
