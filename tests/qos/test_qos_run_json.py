"""``netsteer run --json`` of a scenario with a ``qos:`` section carries the run's QoS
(``qos``): the tables in force, per SL in use and per class its VL and weights, the
priority changes, and the QoS notes the text says. Before, the JSON had none of it."""

from __future__ import annotations

import json
from pathlib import Path

SCEN = Path(__file__).resolve().parents[2] / "scenarios"


def test_run_json_says_the_qos_in_force(cli):
    code, out, err = cli("run", SCEN / "qos-mpi-vs-io.yaml", "--json", "--no-progress")
    assert code == 0, err
    q = json.loads(out)["qos"]
    assert (q["port"], q["max_vls"], q["high_limit"]) == ("swe", 4, 10)
    assert q["vlarb_high"] == [[0, 4]] and q["vlarb_low"] == [[1, 16], [2, 8], [3, 32]]
    assert q["sl2vl"] == [0, 1, 2, 3] * 4
    by_class = {c["name"]: c for c in q["classes"]}
    assert {k: by_class["mpi"][k] for k in ("sl", "vl", "table", "vlarb_high_weight", "flows")} == {
        "sl": 0, "vl": 0, "table": "high", "vlarb_high_weight": 4, "flows": 80}
    assert {k: by_class["io"][k] for k in ("sl", "vl", "table", "vlarb_low_weight", "flows")} == {
        "sl": 1, "vl": 1, "table": "low", "vlarb_low_weight": 16, "flows": 1}
    assert [(s["sl"], s["vl"], s["classes"]) for s in q["sls"]] == [(0, 0, ["mpi"]), (1, 1, ["io"])]
    (ch,) = q["changes"]
    assert (ch["at_s"], ch["job"], ch["sl"], ch["vl"], ch["table"]) == (0.02, "io", 0, 0, "high")


def test_run_json_qos_notes_are_the_texts(cli, tmp_path):
    # two classes on one VL (max_vls 1) and a class that matches nothing: the text says both
    s = tmp_path / "q.yaml"
    s.write_text("name: q\ntopology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 8Gbps, "
                 "link_latency: 1us}\nrouting: {engine: dmodk}\n"
                 "jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1MiB}]}]\n"
                 "qos: {classes: [{name: x, sl: 0, jobs: [a]}, {name: y, sl: 1, kind: bulk}], "
                 "changes: [{at: 10s, class: x, sl: 1}]}\n")
    code, out, err = cli("run", s, "--json", "--no-progress")
    assert code == 0, err
    res = json.loads(out)
    q = res["qos"]
    assert len(q["notes"]) == 3, q["notes"]
    assert any("share VL 0" in n for n in q["notes"]) and any("matches no flow" in n for n in q["notes"])
    assert any(n.startswith("qos.changes:") and "never happened" in n for n in q["notes"])
    assert all(n in res["notes"] for n in q["notes"])
    code, text, err = cli("run", s, "--no-progress")
    assert code == 0
    said = " ".join(err.split())
    assert all(" ".join(n.split()) in said for n in q["notes"])
    flat = " ".join(text.split())
    assert "QoS (swe ports' tables, every port): max_vls 1, high_limit 0" in flat


def test_a_run_without_qos_has_no_qos_key(cli):
    code, out, err = cli("run", SCEN / "two-bulk-flows.yaml", "--json", "--no-progress")
    assert code == 0 and "qos" not in json.loads(out)
