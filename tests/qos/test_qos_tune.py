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
