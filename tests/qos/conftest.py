"""Fixtures of the QoS tests."""

from __future__ import annotations

import pytest

from netsteer.cli import run_cli


@pytest.fixture
def cli(capsys):
    """Run ``netsteer ARGS`` in this process: (exit code, stdout, stderr)."""

    def run(*args: str):
        code = run_cli([str(a) for a in args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
