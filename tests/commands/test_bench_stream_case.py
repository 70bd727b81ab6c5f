"""`benchmarks/bench_stream.py --case`: a case of one's own is checked before anything
runs; a bad one is named with its reason, exit code 2, no traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_stream.py"
TREE = '"tree": {"levels": 2, "down": [4, 4], "up": [1, 2]}'


@pytest.mark.parametrize("case,reason", [
    ("not json", "Expecting value"),
    ('{"ranks": 8, ' + TREE + "}", "missing field 'program'"),
    ('{"ranks": 8, ' + TREE + ', "program": [["allreduce", "nosuch", 1024, 0]]}', "unknown algorithm 'nosuch'"),
    ('{"ranks": 99, ' + TREE + ', "program": [["allreduce", "ring", 1024, 0]]}', "do not fit on 16 hosts"),
    ('{"ranks": 8, "tree": {"levels": 2, "down": [4, 4], "up": [1]}, "program": [["barrier", "dissemination", 0, 0]]}',
     "up has 1 entries"),
])
def test_a_bad_case_is_refused_with_its_reason(case, reason):
    p = subprocess.run([sys.executable, str(BENCH), "--case", case], capture_output=True, text=True)
    assert p.returncode == 2
    assert reason in p.stderr
    assert "Traceback" not in p.stderr
