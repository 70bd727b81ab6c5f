"""Ctrl-C, SIGTERM and SIGKILL at many points of ``run --out DIR`` over an existing
result: DIR is whole old or whole new; after SIGINT/SIGTERM no temporary file is left,
the exit code is 130/143, and DIR is old unless the one line on stderr says it was written.

Each point is a real condition the test waits for (the temporary directory, or a
given file inside it, appearing), polled; no sleep stands in for synchronisation.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# long enough to be caught in every phase: ~1 s of simulation, then four files
SCENARIO = """\
name: slow
topology: {kind: pgft, levels: 2, down: [8, 8], up: [1, 4], link_bandwidth: 10Gbps}
routing: {engine: dmodk}
sample_interval: 20us
jobs:
  - name: a2a
    ranks: 64
    program:
      - {op: alltoall, bytes: 256KiB}
    repeat: 3
"""


def _start(scenario: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "netsteer", "run", str(scenario), "--out", str(out),
                             "--json", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(cond, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
    """Poll ``cond`` until it holds (True) or the process ended first (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        if proc.poll() is not None:
            return cond()
        time.sleep(0.001)
    raise AssertionError("condition never held")


def _catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def _temps(out: Path) -> list[Path]:
    return [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]


def _in_temp(out: Path, name: str | None):
    def cond() -> bool:
        return any(name is None or (t / name).exists() for t in _temps(out))
    return cond


def _state(out: Path) -> str:
    """``old`` or ``new``, asserting the directory is whole."""
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["counters.parquet", "job_completion.png", "link_throughput.png", "result.json"]), names
    result = json.loads((out / "result.json").read_text())
    mark = (out / "counters.parquet").read_bytes()
    return "old" if result["scenario"] == "old" and mark == b"old" else "new" if result["scenario"] == "slow" else "?"


@pytest.fixture
def setup(tmp_path):
    sc = tmp_path / "slow.yaml"
    sc.write_text(SCENARIO)
    out = tmp_path / "out"
    out.mkdir()
    files = ["result.json", "counters.parquet", "link_throughput.png", "job_completion.png"]
    (out / "result.json").write_text(json.dumps({"scenario": "old", "files": files}))
    for f in files[1:]:
        (out / f).write_bytes(b"old")
    return sc, out


# the points: while simulating (before any temporary directory), then as each file appears
POINTS = [None, "*", "counters.parquet", "link_throughput.png", "job_completion.png"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["INT", "TERM", "KILL"])
def test_signal_at_every_point_leaves_a_whole_directory(setup, sig):
    sc, out = setup
    seen = {"old": 0, "new": 0}
    for point in POINTS:
        proc = _start(sc, out)
        if point is None:
            # netsteer handles SIGTERM once its entry point runs (/proc shows it caught):
            # from there on it is loading, building or simulating, before any temp dir
            caught = _wait_for(lambda: _catches_sigterm(proc.pid), proc) and not _temps(out)
        else:
            caught = _wait_for(_in_temp(out, None if point == "*" else point), proc)
        proc.send_signal(sig) if proc.poll() is None else None
        _, err = proc.communicate(timeout=60)
        state = _state(out)
        seen[state] += 1
        if sig == signal.SIGKILL:
            assert proc.returncode in (-signal.SIGKILL, 0), (point, proc.returncode, err)
        elif proc.returncode != 0:
            assert proc.returncode == 128 + sig, (point, proc.returncode, err)
            assert err.count("\n") == 1 and "Traceback" not in err, err
            # stopped before the commit: the old result; sent late, after it: the line says so
            assert state == ("new" if f"after writing {out} (whole, new)" in err else "old"), err
            assert not _temps(out), f"temporary files left after {sig.name} at {point}"
        assert state in ("old", "new")
        if caught and sig != signal.SIGKILL:
            assert proc.returncode == 128 + sig or state == "new"
    if sig == signal.SIGKILL:
        # a later run clears what a killed one left, and replaces the result whole
        proc = _start(sc, out)
        proc.communicate(timeout=120)
        assert proc.returncode == 0 and _state(out) == "new" and not _temps(out)
    assert seen["old"] >= 1  # at least the interrupted-while-simulating point kept the old result


def test_finished_run_replaces_the_result_with_consistent_permissions(setup):
    sc, out = setup
    proc = _start(sc, out)
    proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert _state(out) == "new"
    modes = {p.name: p.stat().st_mode & 0o777 for p in out.iterdir()}
    mask = os.umask(0)
    os.umask(mask)
    assert set(modes.values()) == {0o666 & ~mask}, modes
