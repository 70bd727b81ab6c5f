"""reproduce qos-staging: the source's set-up and its assumptions are options."""

from __future__ import annotations

import json

import pytest

from netsteer.reproduce import qos as rq


def test_the_defaults_are_the_source_set_up():
    s = rq.Setup()
    assert s.qos() == rq.SOURCE_QOS
    assert (s.noise_streams, s.ssd_rate, s.pfs_rate, s.compute_nodes, s.staging_nodes) == (2, 1e9, 0.5e9, 8, 2)


def test_heavier_io_slows_mpi_more(cli):
    """A faster SSD lets the dd noise take more of the link: MPI's large-message
    bandwidth under noise is what the noise leaves (flow level), with QoS all of it."""
    code, out, err = cli("reproduce", "qos-staging", "--ssd-rate", "2GBps", "--json")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["setup"]["ssd_rate"] == 2e9
    bw = {k: v[-1]["mbps"] for k, v in rep["bandwidth"].items()}
    assert bw["noise"] == pytest.approx((32e9 / 8 - 2e9) / 1e6, rel=0.01)
    assert bw["noise_qos"] == pytest.approx(bw["no_noise"], rel=1e-6)


def test_sl_weights_come_from_the_table(cli):
    code, out, err = cli("reproduce", "qos-staging", "--vlarb-low", "0:0,1:4,2:0,3:8,4:16,5:32,6:64,7:128",
                         "--compute-nodes", "4", "--alltoall-ranks", "4", "--json")
    assert code == 0, err
    rep = json.loads(out)
    # VL 2 has no weight: MPI on SL 2 would never be served, so that point is left out
    assert [(r["mpi_sl"], r["mpi_weight"], r["io_weight"]) for r in rep["sl_weights"]] == [
        (1, 4, 4), (3, 8, 4), (4, 16, 4), (5, 32, 4), (6, 64, 4), (7, 128, 4)]
    assert rep["setup"]["qos"]["vlarb_low"].startswith("0:0,1:4,2:0") and rep["setup"]["compute_nodes"] == 4


@pytest.mark.parametrize("args,option,reason", [
    (["--noise-streams", "0"], "--noise-streams", "must be an integer >= 1"),
    (["--ssd-rate", "0GBps"], "--ssd-rate", "bandwidth must be positive"),
    (["--pfs-rate", "x"], "--pfs-rate", "expected a bandwidth"),
    (["--link-bandwidth", "-1Gbps"], "--link-bandwidth", "must not be negative"),
    (["--link-latency", "5"], "--link-latency", "unknown duration unit"),
    (["--window", "0"], "--window", "must be an integer >= 1"),
    (["--compute-nodes", "3"], "--compute-nodes", "must divide the applications' 64 processes"),
    (["--staging-nodes", "0"], "--staging-nodes", "must be an integer >= 1"),
    (["--alltoall-ranks", "9"], "--alltoall-ranks", "must be at most the compute nodes (8)"),
    (["--high-limit", "256"], "--high-limit", "must be <= 255"),
    (["--vlarb-high", "0:999"], "--vlarb-high", "weight 999 of VL 0 is outside 0..255"),
    (["--vlarb-low", "0:0,1:0"], "--vlarb-high, --vlarb-low", "SL 1 is used and maps to VL 1"),
    (["--noise-streams", "1000000000"], "--noise-streams, --staging-nodes", "would need about"),
    # too slow for the bandwidth test to end within the simulator's clock: refused up
    # front, or (slow enough only with the noise) when the run stalls, not a RuntimeError
    (["--link-bandwidth", "0.1bps"], "--link-bandwidth", "past the simulator's clock"),
    (["--link-bandwidth", "1bps"], "--link-bandwidth", "would still be sending after 146 years"),
])
def test_the_command_names_the_option_typed(cli, args, option, reason):
    code, out, err = cli("reproduce", "qos-staging", *args, "--json")
    assert code == 2 and out == ""
    err = err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"netsteer: error: {option}: ") and reason in err, err


def test_sl_weight_study_labels_io_and_its_own_vl(cli, tmp_path):
    # the "MPI weight 200" row was MPI on I/O's own SL/VL (one VL's turns shared), the
    # figure's x label said "I/O weight 2" whatever the table, and points were joined in SL order
    code, out, err = cli("reproduce", "qos-staging", "--vlarb-low", "0:0,1:200,2:4,3:8", "--compute-nodes", "4",
                         "--alltoall-ranks", "4", "--out", tmp_path / "r")
    assert code == 0, err
    flat = " ".join(out.split())  # the table title wraps on a narrow console
    assert "I/O on SL 1: low weight 200" in flat and "200 (I/O's VL)" in out
    rep = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [(r["mpi_sl"], r["shares_io_vl"]) for r in rep["sl_weights"]] == [(1, True), (2, False), (3, False)]
    assert rep["sl_weights_io"] == {"sl": 1, "vl": 1, "table": "low", "weight": 200}
    # the source's two panels, latency and bandwidth, side by side
    import matplotlib.image

    h, w = matplotlib.image.imread(tmp_path / "r" / "sl_weights.png").shape[:2]
    assert w > 2 * h


def test_sl_weight_study_says_why_it_has_no_rows(cli):
    # I/O strictly above MPI and no other low VL with a weight: the study was silently empty
    code, out, err = cli("reproduce", "qos-staging", "--vlarb-high", "1:40", "--vlarb-low", "0:64,1:0",
                         "--compute-nodes", "4", "--alltoall-ranks", "4")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "high weight 40" in flat and "SL weights: no rows: no VL of SLs 1..7" in flat
