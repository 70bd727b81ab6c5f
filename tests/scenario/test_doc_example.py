"""The scenario-format example at the top of docs/scenarios.md runs as written (its
``packet:`` line, once live, was refused at flow level)."""

from __future__ import annotations

import re
from pathlib import Path

from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim.run import run_scenario

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def test_the_format_example_runs_as_written():
    text = re.search(r"```yaml\n(.*?)```", DOC.read_text(), re.S).group(1)
    assert text.startswith("name: two-bulk-flows")
    res = run_scenario(build_scenario(parse_scenario(text, file="example.yaml")), sample=False)
    assert res.status == "done" and res.makespan_ns > 0
