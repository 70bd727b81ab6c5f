"""A stalled run says why in one text: netsteer run's warning, Result.notes, a sweep point's error."""

from __future__ import annotations

import subprocess
import sys

import netsteer as ns
from netsteer.sweep.point import run_point

STALL = """\
name: stall
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
jobs:
  - name: x
    flows: [{src: 0, dst: 5, bytes: 100MiB}]
events:
  - {at: 1ms, link_down: [{node: h0, port: 1}]}
"""


def test_a_stall_is_in_the_notes_the_cli_warning_and_the_sweep_points_error(tmp_path):
    import yaml

    path = tmp_path / "stall.yaml"
    path.write_text(STALL)
    r = ns.Scenario.from_yaml(path).run(sample=False)
    assert r.status == "stalled"
    warning = r.notes[-1]
    assert warning.startswith("1 flows never finished (jobs: x; flows ") and "links left down" in warning
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(path), "--no-progress"],
                       capture_output=True, text=True)
    assert p.returncode == 0
    assert " ".join(p.stderr.split()).endswith("warning: " + " ".join(warning.split()))
    point = run_point(yaml.safe_load(STALL), {}, None, str(path))
    assert (point["status"], point["error"]) == ("stalled", warning)
