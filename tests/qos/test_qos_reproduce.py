"""reproduce qos-staging: shapes from the model on reduced sweeps (results are not
inputs: the assertions are orderings and the flow model's own arithmetic)."""

from __future__ import annotations

import json

import pytest

from netsteer.reproduce import qos as rq


@pytest.fixture(scope="module")
def rep():
    return rq.run(sizes=[1, 4096, 1 << 20, 4 << 20], a2a_sizes=[1, 1 << 16])


def test_json_keys_and_points(rep):
    assert {"latency", "bandwidth", "alltoall", "apps"} <= set(rep)
    for key, val in (("latency", "us"), ("bandwidth", "mbps")):
        assert set(rep[key]) == {"no_noise", "noise", "noise_qos"}
        for pts in rep[key].values():
            assert [p["bytes"] for p in pts] == [1, 4096, 1 << 20, 4 << 20]
            assert all(isinstance(p["bytes"], int) and isinstance(p[val], float) for p in pts)
    json.dumps(rep)


def test_noise_hurts_large_messages_and_qos_gives_it_back(rep):
    lat, bw = rep["latency"], rep["bandwidth"]
    for i in (2, 3):
        assert lat["noise"][i]["us"] > lat["no_noise"][i]["us"] * 1.05
        assert bw["noise"][i]["mbps"] < bw["no_noise"][i]["mbps"] * 0.95
        # MPI on the strict high VL: as if the noise were not there
        assert lat["noise_qos"][i]["us"] == pytest.approx(lat["no_noise"][i]["us"], rel=1e-6)
    assert rep["at_largest"]["latency_gain_us"] > 0 and rep["at_largest"]["bandwidth_gain_mbps"] > 0


def test_bandwidth_under_noise_is_what_maxmin_leaves(rep):
    # the noise is bounded by its SSD; MPI's burst gets the rest of the link
    s = rq.Setup()
    big = rep["bandwidth"]["noise"][-1]["mbps"]
    assert big == pytest.approx((s.link_bps / 8 - s.ssd_rate) / 1e6, rel=0.01)


def test_apps_faster_with_qos(rep):
    for name, r in rep["apps"].items():
        assert r["qos_ms"] < r["no_qos_ms"], name


def test_sl_weights_only_matter_beyond_one_packet(rep):
    w = {r["mpi_weight"]: r["latency_us"] for r in rep["sl_weights"]}
    # 2..32 x 64 B are below one 2 KiB packet: the arbiter sends one packet per turn
    assert len({round(w[k], 6) for k in (2, 4, 8, 16, 32)}) == 1
    assert w[128] < w[64] < w[32]


def test_cli_json(cli):
    code, out, err = cli("reproduce", "qos-staging", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert set(d["latency"]) == {"no_noise", "noise", "noise_qos"}
    assert [p["bytes"] for p in d["latency"]["noise"]] == rq.SIZES and rq.SIZES[-1] == 4 << 20


def test_small_messages_take_the_packet_engine_where_it_is_built(rep):
    fid = {p["bytes"]: p["fidelity"] for p in rep["latency"]["noise"]}
    if not rq.packet_available():
        assert set(fid.values()) == {"flow"}
        # no queueing at flow level: a 1-byte message does not see the noise
        assert rep["latency"]["noise"][0]["us"] == rep["latency"]["no_noise"][0]["us"]
        return
    assert fid[1] == fid[4096] == "packet" and fid[4 << 20] == "flow"
    lat = {k: v[0]["us"] for k, v in rep["latency"].items()}
    # packets queue behind the noise's on the shared VL; on their own VL they do not
    assert lat["noise"] > 1.5 * lat["no_noise"]
    assert lat["noise_qos"] == pytest.approx(lat["no_noise"], rel=0.02)
