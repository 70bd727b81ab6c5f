"""Bad QoS input: one line naming the file and the field, exit code 2."""

from __future__ import annotations

import pytest
from qos_samples import two_flows

BASE = """\
max_vls: 4
high_limit: 10
vlarb_high: [[0, 4]]
vlarb_low: [[1, 16], [2, 8], [3, 32]]
sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]
classes:
  - {name: app, sl: 0, jobs: [mpi]}
  - {name: io, sl: 1, jobs: [io]}
"""

CASES = [
    ("vlarb_low: [[1, 16], [2, 8], [3, 32]]", "vlarb_low: [[1, 16], [2, 256], [3, 32]]", "qos.vlarb_low",
     "outside 0..255"),
    ("vlarb_high: [[0, 4]]", "vlarb_high: [[5, 4]]", "qos.vlarb_high", "beyond max_vls 4"),
    ("sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]", "sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2]",
     "qos.sl2vl", "sl2vl is 16 VLs, one per SL 0..15"),
    ("sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]", "sl2vl: [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 9]",
     "qos.sl2vl", "SL 15 is mapped to VL 9"),
    # SL 1 is used by class io, but VL 1 has no weight anywhere
    ("vlarb_low: [[1, 16], [2, 8], [3, 32]]", "vlarb_low: [[1, 0], [2, 8], [3, 32]]", "qos.classes.1.sl",
     "maps to VL 1, which has no weight"),
    ("  - {name: io, sl: 1, jobs: [io]}", "  - {name: io, sl: 1, jobs: [io]}\nchanges: [{at: 1ms, job: nobody, sl: 2}]",
     "qos.changes.0.job", "'nobody', which does not exist"),
    ("  - {name: io, sl: 1, jobs: [io]}", "  - {name: io, sl: 1, jobs: [iox]}", "qos.classes.1.jobs.0", "no job named"),
    ("high_limit: 10", "high_limit: 10\nlimit: 3", "qos.limit", "unknown key"),
    ("high_limit: 10", "high_limit: 256", "qos.high_limit", "255"),
    ("vlarb_high: [[0, 4]]", "vlarb_high: '0:4,1'", "qos.vlarb_high", "not VL:weight"),
    ("vlarb_high: [[0, 4]]", "vlarb_high: '0:4,1:08'", "qos.vlarb_high", "not VL:weight"),  # 8 is no octal digit
    ("vlarb_high: [[0, 4]]", "vlarb_high: '15:0'", "qos.vlarb_high", "OpenSM would read it as VL 0"),
    ("  - {name: io, sl: 1, jobs: [io]}", "  - {name: io, sl: 1, jobs: [io]}\n  - {name: io, sl: 2}",
     "qos.classes.2.name", "used twice"),
    ("max_vls: 4", "max_vls: 4\nports: {hca: {high_limit: 3}}", "qos.ports", "hca"),
    ("max_vls: 4", "max_vls: 4\nports: {ca: {vlarb_low: [[7, 1]]}}", "qos.ports.ca.vlarb_low", "beyond max_vls"),
]


@pytest.mark.parametrize("old,new,field,reason", CASES, ids=[c[2] + ":" + c[3][:14] for c in CASES])
def test_bad_qos_is_one_line_exit_2(tmp_path, cli, old, new, field, reason):
    assert old in BASE
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(BASE.replace(old, new, 1)))
    code, out, err = cli("run", f, "--json", "--no-progress")
    assert code == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"{f}: {field}" in line, line
    assert reason in line, line


def test_good_base_runs(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(BASE))
    code, out, err = cli("run", f, "--json", "--no-progress")
    assert code == 2 - 2, err


def test_opensm_conf_without_qos_section(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows("").replace("qos:\n", ""))
    code, out, err = cli("qos", "opensm-conf", f)
    assert code == 2 and f"{f}: qos: the scenario has no qos section" in err


def test_tune_unknown_class_and_bound(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(BASE))
    code, _, err = cli("qos", "tune", f, "--mpi", "app", "--io", "nope", "--max-slowdown", "1.1")
    assert code == 2 and "--io: no class named 'nope'" in err
    code, _, err = cli("qos", "tune", f, "--mpi", "app", "--io", "io", "--max-slowdown", "0.5")
    assert code == 2 and "--max-slowdown" in err


@pytest.mark.parametrize("bound", ["inf", "nan", "-inf"])
def test_tune_refuses_a_bound_that_is_not_finite(tmp_path, cli, bound):
    # inf reached the --json report as Infinity (not JSON); nan was "below 1"
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(BASE))
    code, out, err = cli("qos", "tune", f, "--mpi", "app", "--io", "io", "--max-slowdown", bound, "--json")
    assert code == 2 and out == ""
    assert "--max-slowdown: must be a finite number" in err and "Traceback" not in err


def test_table_numbers_are_read_as_opensm_reads_them():
    # OpenSM reads a table's numbers with strtoul(.., 0): a line copied from opensm.conf
    # means the same here (010 was weight 10, 0x28 refused)
    from netsteer.qos.config import parse_vlarb

    assert parse_vlarb("0:0x28,1:010,2:0") == [(0, 40), (1, 8), (2, 0)]
    assert parse_vlarb("0X1:0xFF") == [(1, 255)]


NO_IO_CLASS = BASE.replace("  - {name: io, sl: 1, jobs: [io]}\n", "")


@pytest.mark.parametrize("qos,io_class,field,reason", [
    # was "jobs: flow 1 has class 20": a DAG index and no field
    (NO_IO_CLASS, 20, "jobs.1.flows.0.class", "class 20 is not an InfiniBand SL"),
    # was qos.sl2vl, a key the scenario never set: the flow's class put it on SL 1
    (NO_IO_CLASS.replace("[[1, 16], [2, 8], [3, 32]]", "[[2, 8], [3, 32]]"), 1, "jobs.1.flows.0.class",
     "maps to VL 1, which has no weight"),
    # was qos.ports.ca.vlarb_low, a key the scenario never wrote: ca ports inherit the base table
    (BASE + "ports: {ca: {max_vls: 2}}\n", 0, "qos.ports.ca.max_vls", "VL 2 (in vlarb_low, which ca ports take"),
], ids=["class-20", "unserved-flow-class", "inherited-table"])
def test_errors_name_the_field_the_user_wrote(tmp_path, cli, qos, io_class, field, reason):
    f = tmp_path / "s.yaml"
    f.write_text(two_flows(qos, io=f"flows: [{{src: 1, dst: 3, bytes: 100MB, class: {io_class}}}]"))
    code, out, err = cli("run", f, "--json", "--no-progress")
    line = err.strip()
    assert code == 2 and "\n" not in line and "Traceback" not in line
    assert line.startswith(f"netsteer: error: {f}: {field}: ") or f"{f}: {field}: " in line, line
    assert reason in line, line
