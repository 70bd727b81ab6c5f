"""Golden-output scenario tests (as htsim does): every scenario in scenarios/ runs
and its result must equal the recorded one. The engine is deterministic (integer
time, total event order), so any change in a number is a change in behaviour.

Regenerate after an intended change with ``NETSTEER_UPDATE_GOLDEN=1 pytest tests/golden``
and review the diff.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from netsteer.report.result import result_dict
from netsteer.scenario import build_scenario, load_scenario
from netsteer.sim import run_scenario

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
GOLDEN = Path(__file__).parent / "expected"
VOLATILE = {"wall_s"}


def run(path: Path) -> dict:
    b = build_scenario(load_scenario(path))
    res = run_scenario(b)
    out = {k: v for k, v in result_dict(b, res).items() if k not in VOLATILE}
    # a digest of the port counters keeps them under the golden check too
    out["counter_samples"] = int(len(res.sample_times_ns))
    out["channel_bytes_total"] = float(res.final_channel_bytes.sum())
    return json.loads(json.dumps(out))


def same(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = [f"{path}.{k}: missing on one side" for k in set(a) ^ set(b)]
        for k in set(a) & set(b):
            diffs += same(a[k], b[k], f"{path}.{k}")
        return diffs
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in same(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) else [f"{path}: {a!r} != {b!r}"]
    # an integer stays one (byte counts, flows): 1048576.0 is not 1048576 in a JSON result
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_matches_golden(scenario: Path):
    got = run(scenario)
    expected_file = GOLDEN / f"{scenario.stem}.json"
    if os.environ.get("NETSTEER_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        expected_file.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    assert expected_file.exists(), f"no golden output for {scenario.name}; run with NETSTEER_UPDATE_GOLDEN=1"
    expected = json.loads(expected_file.read_text())
    diffs = same(got, expected)
    assert not diffs, "\n".join(diffs[:20])


def test_every_scenario_completes():
    for s in SCENARIOS:
        got = run(s)
        assert got["status"] == "done", s.name
        assert all(j["completion_s"] is not None for j in got["jobs"]), s.name
