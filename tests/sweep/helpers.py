"""A tiny base scenario (16 hosts, one MPI job) and the CLI as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

BASE = """\
name: tiny-allreduce
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1],
           link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
jobs:
  - name: app
    ranks: 16
    placement: random
    program:
      - {op: allreduce, bytes: 1MiB, algorithm: ring}
    repeat: 200
"""


def netsteer(*args, cwd=None, timeout=180):
    p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_json(path):
    """``netsteer run PATH --json``: the reference every sweep point must match."""
    rc, out, err = netsteer("run", path, "--json", "--no-progress")
    assert rc == 0, err
    return json.loads(out)
