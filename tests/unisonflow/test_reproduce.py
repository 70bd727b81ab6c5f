"""netsteer reproduce unisonflow, on fewer iterations: phases follow the modules,
ECMP spreads, overhead is the first packet only, modules accelerate."""

import json
from pathlib import Path

import pytest

from netsteer.cli import run_cli
from netsteer.reproduce import unisonflow as u

P = dict(u.PARAMS, iterations=200, sample_interval_ns=5_000_000)


@pytest.fixture(scope="module")
def phases():
    return u.phases(P)


def test_controller_moves_each_phase_to_its_spine(phases):
    c = phases["controller"]
    total_b = c["bcast"]["spine1_bytes"] + c["bcast"]["spine2_bytes"]
    assert c["bcast"]["spine1_bytes"] > 0 and c["bcast"]["spine2_bytes"] == 0
    assert c["reduce"]["spine2_bytes"] > 0 and c["reduce"]["spine1_bytes"] == 0
    assert c["t1_s"] == 0 < c["t2_s"] < c["t3_s"]
    # the same traffic leaves the leaves under ECMP, spread over both spines
    e = phases["ecmp"]
    assert e["bcast"]["spine1_bytes"] + e["bcast"]["spine2_bytes"] == total_b
    for ph in ("bcast", "reduce"):
        assert e[ph]["spine1_bytes"] > 0 and e[ph]["spine2_bytes"] > 0


def test_port_series_hold_each_phase_on_its_spine(phases):
    s = phases["controller"]["series"]
    t = s["time_s"]
    t2 = phases["controller"]["t2_s"]
    # samples wholly inside the bcast phase see spine2 idle, inside reduce spine1 idle
    for i in range(len(t) - 1):
        s1 = sum(s["ports"][f"spine1-leaf{k}"]["rx_mbps"][i] for k in range(1, 5))
        s2 = sum(s["ports"][f"spine2-leaf{k}"]["rx_mbps"][i] for k in range(1, 5))
        if t[i + 1] <= t2:
            assert s2 == 0 and s1 > 0
        elif t[i] >= t2:
            assert s1 == 0 and s2 > 0


def test_overhead_is_the_first_packet_only():
    o = u.overhead(P, sizes=[8, 65536], scale=0.02)
    for r in o["sizes"]:
        assert r["latency_overhead_us"] == 0  # after OSU's warm-up, tags cost nothing here
        assert r["tagged"]["bandwidth_mbs"] == r["plain"]["bandwidth_mbs"]
        assert r["latency_overhead_all_us"] > 0  # the packet-in, spread over every iteration
    # on one leaf: two tags (ping, pong), each one round trip and one rule, over
    # 2 x iterations one-way messages
    iters = 200 + 2  # 10000 * 0.02 measured + 100 * 0.02 warm-up
    expected = 2 * (P["controller_rtt_ns"] + P["rule_time_ns"]) / (2 * iters) / 1e3
    assert o["sizes"][0]["latency_overhead_all_us"] == pytest.approx(expected, rel=1e-3)


def test_modules_beat_ecmp_under_background():
    a = u.acceleration(P, nbytes=1 << 18, repeat=2)
    for name in ("allreduce", "bcast"):
        assert a[name]["background_flows"] > 0
        assert a[name]["steady_speedup"] > 1.1, a[name]


def test_cli_json_has_the_issue_keys(capsys, tmp_path):
    rc = run_cli(["reproduce", "unisonflow", "--json", "--iterations", "20", "--osu-scale", "0.002",
                  "--sample", "10ms", "--out", str(tmp_path / "o")])
    assert rc == 0
    rep = json.loads(capsys.readouterr().out)
    for mode in ("controller", "ecmp"):
        for ph in ("bcast", "reduce"):
            assert set(rep[mode][ph]) == {"spine1_bytes", "spine2_bytes"}
    files = {p.name for p in (tmp_path / "o").iterdir()}
    assert {"report.json", "fig7_ecmp_spine1.png", "fig10_unisonflow_spine2.png", "fig13_latency_overhead.png"} <= files


def test_figs_7_to_10_agree_with_the_phase_table(tmp_path, monkeypatch):
    """Figs. 9/10 showed spine2 carrying traffic during the bcast (a 2 s counter bin
    straddling t2) while the table says 0 bytes: they now draw each phase's bytes on each
    port over the phase, the table's bytes, so spine2 is idle t1-t2 under the controller."""
    from matplotlib.figure import Figure

    figs = {}
    save = Figure.savefig

    def record(fig, path, *a, **k):
        figs[Path(str(path)).name] = fig
        return save(fig, path, *a, **k)

    monkeypatch.setattr(Figure, "savefig", record)
    rc = run_cli(["reproduce", "unisonflow", "--json", "--iterations", "300", "--osu-scale", "0.002",
                  "--out", str(tmp_path / "o")])  # the source's 2 s counters: t2 inside the first bin
    assert rc == 0
    rep = json.loads((tmp_path / "o" / "report.json").read_text())
    for mode, fname, spine in (("controller", "fig10_unisonflow_spine2.png", 2),
                               ("controller", "fig9_unisonflow_spine1.png", 1),
                               ("ecmp", "fig8_ecmp_spine2.png", 2)):
        run_ = rep[mode]
        t1, t2, t3 = run_["t1_s"], run_["t2_s"], run_["t3_s"]
        assert t2 < 2.0  # the case of the fault: t2 inside the first 2 s counter bin
        drawn = {"bcast": 0.0, "reduce": 0.0}
        for ax in figs[fname].axes:
            for patch in ax.patches:
                values, edges = patch.get_data().values, patch.get_data().edges
                assert list(edges) == [t1, t2, t3]
                if patch.get_label().startswith("RX"):  # leaf to spine: bytes entering the spine
                    drawn["bcast"] += values[0] * 1e6 / 8 * (t2 - t1)
                    drawn["reduce"] += values[1] * 1e6 / 8 * (t3 - t2)
        for op in ("bcast", "reduce"):
            assert drawn[op] == pytest.approx(run_[op][f"spine{spine}_bytes"], rel=1e-9, abs=1e-6)
    # under the controller, spine2 carries nothing during the bcast, in the figure as in the table
    assert rep["controller"]["bcast"]["spine2_bytes"] == 0
    for ax in figs["fig10_unisonflow_spine2.png"].axes:
        for patch in ax.patches:
            assert patch.get_data().values[0] == 0
