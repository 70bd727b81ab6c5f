"""Driving the CLI itself, in process (fast) and as a subprocess (signals, memory)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

GOOD = textwrap.dedent(
    """\
    name: t
    topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1],
               link_bandwidth: 10Gbps, link_latency: 1us}
    routing: {engine: dmodk}
    jobs:
      - name: j
        flows:
          - {id: a, src: 0, dst: 5, bytes: 1MiB}
          - {src: 1, dst: 6, bytes: 2MiB, after: [a]}
      - name: m
        ranks: 4
        program:
          - {op: allreduce, bytes: 64KiB}
          - {op: compute, duration: 10us}
    """
)

#: What a refusal must look like: one line, the prefix, exit code 2.
ERROR_LINE = re.compile(r"^netsteer: error: \S.*\S\n$")


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    def refused(self, *fragments: str) -> "Outcome":
        """Exit 2 with exactly one line on stderr holding every fragment, no traceback."""
        assert self.code == 2, f"exit {self.code}: {self.err!r}"
        assert ERROR_LINE.match(self.err), repr(self.err)
        assert "Traceback" not in self.err and len(self.err) < 1200, self.err[:300]
        for f in fragments:
            assert f in self.err, f"{f!r} not in {self.err!r}"
        return self


@pytest.fixture
def cli(capsys):
    """Run ``netsteer ARGS`` in this process; returns an :class:`Outcome`."""
    from netsteer.cli import run_cli

    def run(*args) -> Outcome:
        capsys.readouterr()
        code = run_cli([str(a) for a in args])
        cap = capsys.readouterr()
        return Outcome(code, cap.out, cap.err)

    return run


def netsteer_process(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, **kw)
