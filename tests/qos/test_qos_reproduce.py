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


def test_small_messages_queue_behind_the_noise_at_packet_level(rep):
    flow = rep["latency"]
    # no queueing at flow level: a 1-byte message does not see the noise
    assert flow["noise"][0]["us"] == flow["no_noise"][0]["us"]
    if not rq.packet_available():
        assert rep["packet"] is None
        return
    lat = {k: v[0]["us"] for k, v in rep["packet"]["latency"].items()}
    # packets queue behind the noise's on the shared VL; on their own VL they do not
    assert lat["noise"] > 1.5 * lat["no_noise"]
    assert lat["noise_qos"] == pytest.approx(lat["no_noise"], rel=0.02)


def test_every_curve_comes_from_one_model_and_does_not_jump():
    """A curve that changed model at some size jumped there: at 64 KiB (packet) the
    noisy latency was 81 us, at 128 KiB (flow) 40 us, and the alltoall 4056 us at
    64 KiB against 499 us at 256 KiB. Each curve is now one model at every size:
    latency does not fall as the message grows, bandwidth does not leap."""
    sizes, a2a = [32 << 10, 64 << 10, 128 << 10, 256 << 10], [16 << 10, 64 << 10, 256 << 10]
    rep = rq.run(sizes=sizes, a2a_sizes=a2a)
    models = [("flow", rep)] + ([("packet", rep["packet"])] if rq.packet_available() else [])
    for model, c in models:
        for key, val in (("latency", "us"), ("bandwidth", "mbps"), ("alltoall", "us")):
            for kind, pts in c[key].items():
                assert {p["fidelity"] for p in pts} == {model}, (model, key, kind)
                ys = [p[val] for p in pts]
                if val == "us":
                    assert ys == sorted(ys), (model, key, kind, ys)
                else:
                    assert all(0.9 * a <= b <= 1.5 * a for a, b in zip(ys, ys[1:])), (model, key, kind, ys)
