"""``netsteer plan circuits``: JSON output agrees with the API; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from netsteer.control.planning import plan_circuits


def netsteer(*args):
    p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def matrix(tmp_path):
    rng = np.random.default_rng(9)
    d = rng.exponential(1.0, (24, 24)) * 6
    np.fill_diagonal(d, 0)
    path = tmp_path / "m.csv"
    np.savetxt(path, d, delimiter=",", fmt="%.4f")
    return path, np.loadtxt(path, delimiter=",")


@pytest.mark.parametrize("hops", [1, 2])
def test_json_is_the_plan(matrix, hops):
    path, d = matrix
    rc, out, err = netsteer("plan", "circuits", "--matrix", path, "--ocs", 3, "--capacity", "10Gbps",
                            "--hops", hops, "--json")
    assert rc == 0, err
    info = json.loads(out)
    want = plan_circuits(d, 3, 10.0, hops=hops)
    assert info["circuits"] == [{"ocs": c.ocs, "a": c.a, "b": c.b} for c in want.circuits]
    assert info["served_gbps"] == pytest.approx(want.served_gbps)
    assert info["bound_gbps"] == pytest.approx(want.bound_gbps)
    assert info["served_gbps"] <= info["bound_gbps"]
    assert 0 < info["wall_s"] < 60
    assert info["racks"] == 24 and info["hops"] == hops and info["vlans"] == want.vlans


def test_capacity_units(matrix):
    path, d = matrix
    rc, out, err = netsteer("plan", "circuits", "-m", path, "-k", 2, "-c", "40Gbps", "--json")
    assert rc == 0, err
    assert json.loads(out)["served_gbps"] == pytest.approx(plan_circuits(d, 2, 40.0).served_gbps)


def test_table_output(matrix):
    path, _ = matrix
    rc, out, err = netsteer("plan", "circuits", "-m", path, "-k", 2, "-c", "10Gbps")
    assert rc == 0, err
    assert "upper bound" in out and "circuits per switch" in out


@pytest.mark.parametrize("content, args, words", [
    ("0,1,2\n1,0,x\n1,1,0\n", [], ["m.csv", "line 2, row 1, column 2", "'x' is not a number"]),
    ("0,1\n-1,0\n", [], ["m.csv", "row 1, column 0", ">= 0"]),
    ("0,1,nan\n1,0,1\n1,1,0\n", [], ["m.csv", "row 0, column 2", "NaN"]),
    ("0,1,2\n1,0\n", [], ["row 1", "row has 2 numbers"]),
    ("0,1,2\n1,0,3\n", [], ["must be n x n, got 2 rows of 3"]),
    ("", [], ["empty"]),
    ("0,1\n1,0\n", ["--ocs", "0"], ["--ocs", "from 1 to 256"]),
    ("0,1,1\n1,0,1\n1,1,0\n", ["--ports", "2"], ["--ports", "2 ports but there are 3 racks"]),
    ("0,1\n1,0\n", ["--capacity", "10parsecs"], ["--capacity", "unknown bandwidth unit"]),
    ("0,1\n1,0\n", ["--hops", "3"], ["--hops", "1 or 2"]),
    ("0,1\n1,0\n", ["--effort", "-3"], ["--effort", "integer >= 0, got -3"]),  # was 0 kicks, silently
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, content, args, words):
    path = tmp_path / "m.csv"
    path.write_text(content)
    base = {"--ocs": "1", "--capacity": "10Gbps"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    rc, out, err = netsteer("plan", "circuits", "--matrix", path, *[x for kv in base.items() for x in kv])
    assert rc == 2, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err


def test_missing_file(tmp_path):
    rc, _, err = netsteer("plan", "circuits", "--matrix", tmp_path / "nope.csv", "--ocs", 1, "--capacity", "10Gbps")
    assert rc == 2 and "nope.csv" in err and "cannot read" in err


def test_a_byte_order_mark_is_read_past(tmp_path):
    # spreadsheets' "CSV UTF-8" starts with one: it was '\ufeff0' is not a number
    path = tmp_path / "m.csv"
    path.write_bytes(b"\xef\xbb\xbf0,4\n3,0\n")
    rc, out, err = netsteer("plan", "circuits", "--matrix", path, "--ocs", 1, "--capacity", "10Gbps", "--json")
    assert rc == 0, err
    assert json.loads(out)["served_gbps"] == pytest.approx(7.0)


def test_fair_is_the_fair_plan_and_single_hop_only(matrix):
    path, d = matrix
    rc, out, err = netsteer("plan", "circuits", "-m", path, "-k", 3, "-c", "10Gbps", "--fair", "--json")
    assert rc == 0, err
    want = plan_circuits(d, 3, 10.0, fair=True)
    assert json.loads(out)["circuits"] == [{"ocs": c.ocs, "a": c.a, "b": c.b} for c in want.circuits]
    assert want.circuits != plan_circuits(d, 3, 10.0).circuits  # the option changes the plan
    rc, out, err = netsteer("plan", "circuits", "-m", path, "-k", 3, "-c", "10Gbps", "--fair", "--hops", 2)
    assert rc == 2 and "--fair" in err and "single-hop" in err and "Traceback" not in err
