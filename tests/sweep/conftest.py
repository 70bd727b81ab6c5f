"""Fixtures: the tiny base scenario in a temporary folder, and sweep files beside it."""

from __future__ import annotations

import textwrap

import pytest

from .helpers import BASE


@pytest.fixture
def base(tmp_path):
    p = tmp_path / "base.yaml"
    p.write_text(BASE)
    return p


@pytest.fixture
def write_sweep(tmp_path, base):
    def write(text: str, name: str = "sweep.yaml"):
        p = tmp_path / name
        p.write_text(textwrap.dedent(text))
        return p

    return write
