"""README.md's table of shipped scenarios names every file in scenarios/ (it left out
qos-mpi-vs-io and qos-staging-checkpoint)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_scenario_is_in_the_readme_table():
    text = (ROOT / "README.md").read_text()
    listed = set()
    for first, twin in re.findall(r"^\| `([\w-]+)`(?: \(\+ `(-[\w-]+)`\))? \|", text, flags=re.M):
        listed.add(first)
        if twin:
            listed.add(first + twin)
    shipped = {p.stem for p in (ROOT / "scenarios").glob("*.yaml")}
    assert shipped - listed == set()
    assert listed - shipped == set()
