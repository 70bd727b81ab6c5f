"""reproduce hybrid-reconfig: the source's parameters are options, its runs scenarios."""

from __future__ import annotations

import json

import pytest
import yaml

from netsteer.errors import NetsteerError
from netsteer.reproduce.hybrid import IPERF, Reconfig, fft_scenario, iperf_scenarios, run

#: a small, quick variant: one rule count, 2 s runs, a 2-rank FFT of 3 phases
SMALL = ["--rules", "7", "--period", "1s", "--duration", "3s", "--vlan-tag-time", "0.2s", "--fft-ranks", "2",
         "--fft-bytes", "64MiB", "--fft-phases", "3", "--fft-alone", "2s", "--trigger", "0.5s"]


def test_the_defaults_are_the_source_set_up():
    p = Reconfig()
    assert p.rules == (100, 5000) and (p.period, p.duration, p.trigger) == ("10s", "60s", "15s")
    runs = iperf_scenarios(p)
    assert [r[0] for r in runs] == ["no reconfiguration", "100 rules, make-before-break",
                                    "100 rules, break-before-make", "5000 rules, make-before-break",
                                    "5000 rules, break-before-make"]
    assert [e["at"] for e in runs[1][3]["controller"]["hybrid"]["schedule"]] == ["10s", "20s", "30s", "40s", "50s"]
    base = runs[0][3]
    assert {k: base[k] for k in ("topology", "jobs", "driver")} == {k: IPERF[k] for k in ("topology", "jobs", "driver")}
    fft = fft_scenario("1s", background=True)
    assert fft["topology"]["servers_per_rack"] == 4 and fft["jobs"][0]["repeat"] == 20
    assert fft["jobs"][0]["program"][1]["bytes"] == "32MiB"


def test_the_parameters_move_the_results():
    """More rules make a longer reconfiguration (sequential pushing); the rule count,
    period and run length come from the parameters."""
    p = Reconfig(rules=(0, 4000), period="1s", duration="3s", vlan_tag_time="0.1s", fft_ranks=2,
                 fft_bytes="64MiB", fft_phases=3, fft_alone="2s", trigger="0.5s")
    rep = run(params=p)
    mbb = {r["rules"]: r for r in rep["iperf"] if r["method"] == "make-before-break" and r["reconfigurations"]}
    assert set(mbb) == {0, 4000} and all(r["reconfigurations"] == 2 for r in mbb.values())
    # 4000 x 0.44 ms pushed on two switches one after the other: 3.5 s, longer than the 0.2 s of tagging
    assert mbb[0]["reconfig_delay_s"] == pytest.approx(0.2, abs=0.01)
    assert mbb[4000]["reconfig_delay_s"] > 1.0
    assert mbb[4000]["avg_gbps"] < mbb[0]["avg_gbps"] < 10.0
    assert rep["calibration"]["phases"] == 3 and rep["calibration"]["target_s"] == 2.0
    assert rep["fftw"][0]["completion_s"] == pytest.approx(2.0, rel=1e-6)
    assert rep["fftw"][2]["run"] == "background, reconfiguration at 0.5 s"


def test_the_command_writes_every_run_as_a_scenario_that_reruns_alone(tmp_path, capsys):
    from netsteer.cli import run_cli

    out = tmp_path / "hr"
    assert run_cli(["reproduce", "hybrid-reconfig", *SMALL, "--json", "--out", str(out)]) == 0
    rep = json.loads(capsys.readouterr().out)
    names = sorted(p.name for p in out.glob("scenario-*.yaml"))
    assert names == ["scenario-fftw-alone.yaml", "scenario-fftw-background.yaml", "scenario-fftw-congestion.yaml",
                     "scenario-fftw-reconfiguration.yaml", "scenario-iperf-7-rules-break-before-make.yaml",
                     "scenario-iperf-7-rules-make-before-break.yaml", "scenario-iperf-none.yaml"]
    data = yaml.safe_load((out / "scenario-fftw-reconfiguration.yaml").read_text())
    assert data["controller"]["hybrid"]["schedule"][0]["at"] == "0.5s"
    assert run_cli(["run", str(out / "scenario-fftw-reconfiguration.yaml"), "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    fft = next(j for j in alone["jobs"] if j["name"] == "fftw")
    assert fft["completion_s"] == pytest.approx(rep["fftw"][2]["completion_s"], rel=1e-9)


@pytest.mark.parametrize("args,option,reason", [
    (["--rules", "100,x"], "--rules", "must be integers separated by commas"),
    (["--rules", "-1"], "--rules", "must be one or more integers >= 0"),
    (["--period", "0s"], "--period", "must be longer than 0"),
    (["--period", "60s"], "--period", "must be shorter than duration"),
    (["--period", "1ms", "--duration", "1000s"], "--period", "1,000,000 reconfigurations"),
    (["--duration", "1h"], "--duration", "unknown duration unit 'h'"),
    (["--vlan-tag-time", "-1s"], "--vlan-tag-time", "must not be negative"),
    (["--rule-time", "5"], "--rule-time", "unknown duration unit"),
    (["--switching-time", "x"], "--switching-time", "expected a duration"),
    (["--push", "foo"], "--push", "must be sequential or parallel"),
    (["--core-bandwidth", "0Gbps"], "--core-bandwidth", "bandwidth must be positive"),
    (["--trigger", "abc"], "--trigger", "expected a duration"),
    (["--poll", "0s"], "--poll", "must be longer than 0"),
    (["--fft-ranks", "3"], "--fft-ranks", "must be a power of two"),
    # even is not enough: pairwise alltoall pairs ranks by XOR (the scenario's field is no option)
    (["--fft-ranks", "6"], "--fft-ranks", "must be a power of two"),
    # the same runs twice under one name, and one scenario file for both with --out
    (["--rules", "100,100"], "--rules", "must not repeat a count"),
    (["--fft-ranks", "100"], "--fft-ranks", "must be a power of two"),
    (["--fft-ranks", "0"], "--fft-ranks", "must be an integer >= 2"),
    (["--fft-bytes", "0"], "--fft-bytes", "must be at least 1 byte"),
    (["--fft-phases", "0"], "--fft-phases", "must be an integer >= 1"),
    (["--fft-rules", "-2"], "--fft-rules", "must be an integer >= 0"),
    (["--fft-ranks", "131072"], "--fft-ranks, --fft-phases", "the FFT's messages would need"),
    (["--fft-ranks", "2", "--fft-phases", "1", "--fft-alone", "1ms"], "--fft-alone",
     "the FFT's communication alone takes"),
])
def test_the_command_names_the_option_typed(capsys, args, option, reason):
    from netsteer.cli import run_cli

    assert run_cli(["reproduce", "hybrid-reconfig", *args, "--json"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"netsteer: error: {option}: ") and reason in err, err


def test_check_names_the_parameter():
    with pytest.raises(NetsteerError) as e:
        Reconfig(rules=()).check()
    assert e.value.field == "rules"


def test_a_trigger_past_the_fft_run_is_noted(capsys):
    # the run with the reconfiguration ends before it: it is the background run, and
    # the report says so instead of listing no reconfiguration silently
    from netsteer.cli import run_cli

    args = [a if a != "0.5s" else "1000s" for a in SMALL]
    assert run_cli(["reproduce", "hybrid-reconfig", *args, "--json"]) == 0
    fftw = {r["run"]: r for r in json.loads(capsys.readouterr().out)["fftw"]}
    late = fftw["background, reconfiguration at 1000 s"]
    assert late["reconfigurations"] == [] and len(late["notes"]) == 1
    assert late["notes"][0].startswith("controller.hybrid.schedule: the reconfiguration at 1000 s") \
        and "never happened: the run ended at" in late["notes"][0]
    assert "notes" not in fftw["background"]


def test_fig3_plots_one_direction_labelled_as_such_from_zero_and_the_run_without_reconfiguration_on_top(
        tmp_path, monkeypatch):
    """Fig. 3b plots each direction's throughput (the source's 3.54 Gbit/s peak is one
    direction's on a 10 Gbit/s circuit), not both summed under "bandwidth"; Fig. 3a
    draws the run without reconfiguration dashed on top of the others; both from 0."""
    from matplotlib.figure import Figure

    from netsteer.reproduce.hybrid import plot

    figs = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (figs.append(fig), save(fig, *a, **k))[1])
    p = Reconfig(rules=(7,), period="1s", duration="3s", vlan_tag_time="0.2s", fft_ranks=2, fft_bytes="64MiB",
                 fft_phases=3, fft_alone="2s", trigger="0.5s")
    rep = run(params=p)
    plot(rep, tmp_path / "a.png", tmp_path / "b.png")
    iperf, fftw = figs
    ax = iperf.axes[0]
    assert ax.get_ylim()[0] == 0 and "rack 1 -> rack 2" in ax.get_ylabel()
    none = next(l for l in ax.get_lines() if l.get_label() == "no reconfiguration")
    assert none.get_linestyle() == "--"
    assert none.get_zorder() > max(l.get_zorder() for l in ax.get_lines() if l is not none)
    assert len(fftw.axes) == 2
    for ax, key in zip(fftw.axes, ("gbps_rack1_to_rack2", "gbps_rack2_to_rack1")):
        assert ax.get_ylim()[0] == 0 and "one direction" in ax.get_ylabel()
        for line, r in zip(ax.get_lines(), rep["fftw"]):
            assert line.get_label() == r["run"]
            assert list(line.get_ydata()) == r[key]
    for r in rep["fftw"]:
        # the two directions are what the summed series adds up
        assert [a + b for a, b in zip(r["gbps_rack1_to_rack2"], r["gbps_rack2_to_rack1"])] == pytest.approx(r["gbps"])
        assert r["peak_gbps_one_direction"] <= min(r["peak_gbps"], 10.0) + 1e-9  # a 10 Gbit/s circuit
