"""Inputs built to exhaust memory end with exit 2 within the stated limit: the peak
resident size of the netsteer process stays under ``--max-memory``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import ERROR_LINE, GOOD

LIMIT_MIB = 400
LAUGHS = "x: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
    f"x{i}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(9))
HEAD = GOOD.split("jobs:")[0]

BOMBS = {
    "repeat-1e9": GOOD.replace("    ranks: 4\n", "    ranks: 4\n    repeat: 1000000000\n"),
    # as a DAG (6.5e9 flows, counted exactly before expanding); streamed, the job would run
    # in bounded memory (ranks, and auto samples halving past 1,000), only for hours
    "alltoall-256-ranks-x-1e5": HEAD.replace("down: [4, 4], up: [1, 2]", "down: [16, 16], up: [1, 2]")
    + "jobs:\n  - {name: a, ranks: 256, repeat: 100000, stream: false, program: [{op: alltoall, bytes: 1B}]}\n",
    "alias-bomb": LAUGHS + GOOD,
    "pgft-1e9-hosts": GOOD.replace("down: [4, 4]", "down: [31623, 31623]"),
    "hyperx-1e9": GOOD.replace("kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1],",
                               "kind: hyperx, S: [1000, 1000], T: 1000,"),
    "samples-1ns": GOOD.replace("routing: {engine: dmodk}", "routing: {engine: dmodk}\nsample_interval: 1ns")
    .replace("bytes: 1MiB}", "bytes: 100GB}"),
    # the estimate passes (one sender at line rate), contention makes the run 3x longer:
    # the engine stops at its sample cap, and the run is refused
    "samples-under-contention": HEAD.replace("routing: {engine: dmodk}", "routing: {engine: dmodk}\nsample_interval: 1us")
    + "jobs:\n  - name: in\n    flows: [{src: 1, dst: 0, bytes: 8GB}, {src: 2, dst: 0, bytes: 8GB}, {src: 3, dst: 0, bytes: 8GB}]\n",
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bomb_is_refused_within_the_limit(tmp_path, name):
    f = tmp_path / f"{name}.yaml"
    f.write_text(BOMBS[name])
    proc = subprocess.Popen([sys.executable, "-m", "netsteer", "--max-memory", f"{LIMIT_MIB}MiB", "run", str(f),
                             "--out", str(tmp_path / "out"), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, (proc.returncode, err[-500:])
    assert ERROR_LINE.match(err), err[-500:]
    assert "memory" in err or "expands" in err, err
    assert not (tmp_path / "out").exists()


def test_peak_memory_stays_under_the_limit(tmp_path):
    """The worst of the bombs above, measured: peak RSS (ru_maxrss) of the process."""
    worst = 0
    for name in ("samples-under-contention", "alias-bomb", "repeat-1e9"):
        f = tmp_path / f"{name}.yaml"
        f.write_text(BOMBS[name])
        # the peak of the process image netsteer runs in (VmHWM, read at exit): ru_maxrss
        # would also count the pytest image the child was forked from before exec
        hwm = tmp_path / f"{name}.hwm"
        wrapper = (
            "import atexit, runpy, sys\n"
            "def _hwm():\n"
            "    line = next(l for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
            f"    open({str(hwm)!r}, 'w').write(line.split()[1])\n"
            "atexit.register(_hwm)\n"
            "sys.argv = ['netsteer'] + sys.argv[1:]\n"
            "runpy.run_module('netsteer', run_name='__main__')\n"
        )
        proc = subprocess.run([sys.executable, "-c", wrapper, "--max-memory", f"{LIMIT_MIB}MiB", "run", str(f),
                               "--out", str(tmp_path / "out"), "--no-progress"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert proc.returncode == 2, name
        worst = max(worst, int(hwm.read_text()) * 1024)
    assert 50 * 2**20 < worst < LIMIT_MIB * 2**20, f"peak {worst / 2**20:.0f} MiB"  # a real measure, under the limit
