"""netsteer qos tune: the trade-off curve comes from the model; the answer keeps the bound."""

from __future__ import annotations

import json

from netsteer.qos.tune import packet_weights


def test_tune_curve_and_best(cli):
    code, out, err = cli("qos", "tune", "scenarios/qos-mpi-vs-io.yaml", "--mpi", "mpi", "--io", "io",
                         "--max-slowdown", "1.2", "--json")
    assert code == 0, err
    d = json.loads(out)
    curve = d["curve"]
    assert len(curve) == 2 * len(packet_weights()) - 1
    # more I/O weight against MPI: more I/O throughput, more MPI slowdown
    assert all(a["slowdown"] <= b["slowdown"] + 1e-9 for a, b in zip(curve, curve[1:]))
    assert all(a["io_Bps"] <= b["io_Bps"] + 1 for a, b in zip(curve, curve[1:]))
    best = d["best"]
    assert best["slowdown"] <= 1.2
    assert all(p["io_Bps"] <= best["io_Bps"] for p in curve if p["slowdown"] <= 1.2)
    assert any(p["slowdown"] > 1.2 for p in curve)
    assert curve[0]["slowdown"] >= 1.0 - 1e-9
    assert d["opensm"]["qos_vlarb_low"].startswith(f"0:{best['mpi_weight']},1:{best['io_weight']}")


def test_tune_impossible_bound(cli):
    code, out, err = cli("qos", "tune", "scenarios/qos-mpi-vs-io.yaml", "--mpi", "mpi", "--io", "io",
                         "--max-slowdown", "1.0", "--json")
    assert code == 0, err
    assert json.loads(out)["best"] is None


MPI_ONLY = """\
name: tn
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 32Gbps, link_latency: 700ns}
routing: {engine: dmodk}
jobs:
  - name: app
    ranks: 2
    placement: [0, 1]
    program:
      - {op: send, src: 0, dst: 1, bytes: 4MiB}
    repeat: 4
qos:
  max_vls: 2
  classes:
    - {name: mpi, sl: 0, kind: mpi}
    - {name: io, sl: 1, kind: bulk}
"""


def test_tune_refuses_a_class_without_flows(cli, tmp_path):
    sc = tmp_path / "tn.yaml"
    sc.write_text(MPI_ONLY)
    # was: internal error (ValueError: zero-size array), exit 1
    code, out, err = cli("qos", "tune", sc, "--mpi", "io", "--io", "mpi", "--max-slowdown", "1.1")
    assert code == 2 and "--mpi" in err and "'io' carries no flows" in err, err
    # was: exit 0, io_Bps 0 for every candidate, a table recommended without a word
    code, out, err = cli("qos", "tune", sc, "--mpi", "mpi", "--io", "io", "--max-slowdown", "1.1")
    assert code == 2 and "--io" in err and "'io' carries no flows" in err, err


def test_tune_refuses_one_class_for_both(cli, tmp_path):
    sc = tmp_path / "tn.yaml"
    sc.write_text(MPI_ONLY)
    code, out, err = cli("qos", "tune", sc, "--mpi", "mpi", "--io", "mpi", "--max-slowdown", "1.1")
    assert code == 2 and "--io" in err and "qos.sl2vl" not in err, err


def _with_qos(tmp_path, qos: str):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "scenarios" / "qos-mpi-vs-io.yaml").read_text()
    head = text.split("\nqos:")[0]
    f = tmp_path / "s.yaml"
    f.write_text(head + "\nqos:\n" + qos)
    return f


def test_tune_writes_the_port_types_own_tables(cli, tmp_path):
    # ports.swe / ports.ca tables were dropped from the runs, and the answer gave base
    # qos_vlarb_low lines that OpenSM does not apply on those ports (their own lines win)
    f = _with_qos(tmp_path, """\
  max_vls: 4
  high_limit: 10
  vlarb_high: [[0, 4]]
  vlarb_low: [[1, 16], [2, 8], [3, 32]]
  classes:
    - {name: mpi, sl: 0, kind: mpi}
    - {name: io, sl: 1, jobs: [io]}
  ports: {swe: {vlarb_low: "1:200,2:9,3:32"}, ca: {high_limit: 255, vlarb_high: "0:64"}}
""")
    code, out, err = cli("qos", "tune", f, "--mpi", "mpi", "--io", "io", "--max-slowdown", "1.2", "--json")
    assert code == 0, err
    d = json.loads(out)
    best, osm = d["best"], d["opensm"]
    tuned = f"0:{best['mpi_weight']},1:{best['io_weight']}"
    assert osm["qos_vlarb_low"] == tuned + ",2:8,3:32"
    assert osm["qos_swe_vlarb_low"] == tuned + ",2:9,3:32"  # the port type's own other VLs kept
    assert osm["qos_ca_vlarb_low"] == tuned + ",2:8,3:32" and osm["qos_ca_vlarb_high"] == "0:0"


def test_tune_keeps_a_class_served_by_the_high_table(cli, tmp_path):
    # a third class on a VL only the high table serves: tune emptied the high table and
    # failed blaming the user's valid file (qos.classes.2.sl: ... no weight)
    f = _with_qos(tmp_path, """\
  max_vls: 3
  high_limit: 255
  vlarb_high: [[2, 10]]
  vlarb_low: [[0, 64], [1, 64]]
  sl2vl: [0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
  classes:
    - {name: mpi, sl: 0, kind: mpi}
    - {name: io, sl: 1, jobs: [io]}
    - {name: mg, sl: 2, jobs: [mgmt]}
""")
    f.write_text(f.read_text().replace("\nqos:", "\n  - name: mgmt\n    flows: [{src: 0, dst: 3, bytes: 1MB}]\nqos:"))
    code, out, err = cli("qos", "tune", f, "--mpi", "mpi", "--io", "io", "--max-slowdown", "1.2", "--json")
    assert code == 0, err
    osm = json.loads(out)["opensm"]
    assert osm["qos_vlarb_high"] == "2:10" and osm["qos_high_limit"] == 255


def test_tune_refuses_an_endless_class_to_time(cli):
    # --mpi io: MPI's class was the endless bulk flow; served first it starved the app and
    # tune failed with "the run ended stalled", naming no option and no reason
    code, out, err = cli("qos", "tune", "scenarios/qos-mpi-vs-io.yaml", "--mpi", "io", "--io", "mpi",
                         "--max-slowdown", "1.2")
    assert code == 2 and "Traceback" not in err
    assert ": --mpi: class 'io' has only endless bulk flows" in err, err
