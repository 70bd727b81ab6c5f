"""What the figures of ``run --out`` (and ``Result.plot``) show, checked on the
matplotlib objects: a job that did not finish, legends clear of the data, the
whole span of every counter interval."""

from __future__ import annotations

import pytest

import netsteer as ns

STALL = {
    "name": "stall",
    "topology": {"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "parallel": [1, 1],
                 "link_bandwidth": "10Gbps", "link_latency": "1us"},
    "routing": {"engine": "minhop"},
    "jobs": [{"name": "ok", "flows": [{"src": 0, "dst": 1, "bytes": "64MiB"}]},
             {"name": "cut", "flows": [{"src": 2, "dst": 5, "bytes": "256MiB"}]}],
    "events": [{"at": "10ms", "link_down": [{"node": "h5", "port": 1}]}],
}


@pytest.fixture(scope="module")
def stalled():
    r = ns.Scenario.from_dict(STALL).run()
    assert r.status == "stalled"
    return r


def test_a_job_that_did_not_finish_is_marked_not_done_not_drawn_as_0s(stalled):
    fig = stalled.plot.jobs()
    ax = fig.axes[0]
    bars = ax.patches
    assert len(bars) == 2
    ok, cut = bars
    assert ok.get_height() == pytest.approx(stalled.to_dict()["jobs"][0]["completion_s"])
    assert ok.get_hatch() is None
    # the job not done: a hatched bar up to when the run stopped, labelled "not done"
    assert cut.get_hatch() == "//"
    assert cut.get_height() == pytest.approx(stalled.to_dict()["stalled"]["at_s"])
    assert cut.get_height() > 0
    texts = [t for t in ax.texts if t.get_text() == "not done"]
    assert len(texts) == 1
    assert texts[0].xy[0] == pytest.approx(cut.get_x() + cut.get_width() / 2)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["ok", "cut"]


@pytest.fixture
def saved(monkeypatch):
    """Every figure saved while the test runs, with whether its legends are clear of
    the axes (checked as it is saved, laid out as written)."""
    from matplotlib.figure import Figure

    from netsteer.report.figures import legend_clear_of_axes

    seen: list[tuple[Figure, bool]] = []
    save = Figure.savefig

    def record(fig, *args, **kw):
        seen.append((fig, legend_clear_of_axes(fig)))
        return save(fig, *args, **kw)

    monkeypatch.setattr(Figure, "savefig", record)
    return seen


def _legends_clear(saved, n):
    with_legend = [(f, clear) for f, clear in saved if any(ax.get_legend() is not None for ax in f.axes)]
    assert len(with_legend) >= n
    for fig, clear in with_legend:
        assert clear, [ax.get_title() for ax in fig.axes]


def test_link_throughput_legend_is_outside_the_data(stalled, tmp_path, saved):
    stalled.write(tmp_path / "o")
    figs = [f for f, _ in saved if f.axes[0].get_ylabel() == "Throughput (Gbps)"]
    assert len(figs) == 1
    from netsteer.report.figures import legend_clear_of_axes

    assert legend_clear_of_axes(figs[0]) and figs[0].axes[0].get_legend() is not None
    assert legend_clear_of_axes(stalled.plot.links())


def test_queue_occupancy_legend_is_outside_the_data(tmp_path, saved):
    from netsteer.cli import run_cli

    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    assert run_cli(["run", str(root / "scenarios" / "hotspot-victim-packet.yaml"), "--json", "--no-progress",
                    "--out", str(tmp_path / "o")]) == 0
    _legends_clear(saved, 2)
    assert any(f.axes[0].get_ylabel() == "Input buffer (KiB)" for f, _ in saved)


def test_hyperx_steering_fig3c_fig3d_legends_are_outside_the_data(tmp_path, saved):
    import netsteer.reproduce.hyperx as hx

    hx.plot(hx.run(iterations=2, beyond=False), tmp_path / "c.png", tmp_path / "d.png")
    _legends_clear(saved, 2)


def test_hybrid_reconfig_fig3_legends_are_outside_the_data(tmp_path, saved):
    from netsteer.reproduce.hybrid import Reconfig, plot, run

    p = Reconfig(rules=(7,), period="1s", duration="3s", vlan_tag_time="0.2s", fft_ranks=2, fft_bytes="64MiB",
                 fft_phases=3, fft_alone="2s", trigger="0.5s")
    plot(run(params=p), tmp_path / "a.png", tmp_path / "b.png")
    _legends_clear(saved, 2)


def test_topo_draw_legend_is_outside_the_drawing(tmp_path, saved):
    from netsteer.topology.metrics import draw
    from netsteer.topology.pgft import pgft

    draw(pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=0), tmp_path / "t.png")
    _legends_clear(saved, 1)


def test_link_throughput_draws_every_interval_over_its_whole_span(stalled):
    """From the first sample to the last: the first and last half-intervals too."""
    c = stalled.counters
    t = sorted(set(c.time_s))
    ax = stalled.plot.links().axes[0]
    for line in ax.get_lines():
        assert line.get_drawstyle() == "steps-post"
        x, y = line.get_xdata(), line.get_ydata()
        assert x[0] == pytest.approx(t[0]) and x[-1] == pytest.approx(t[-1])
        # interval k (t[k]..t[k+1]) is drawn at its rate from its start
        ch = c[c.channel.map(lambda ch: stalled.built.topology.channel_name(ch)) == line.get_label()]
        rates = ch.set_index("time_s").gbps.reindex(t[1:]).fillna(0).to_numpy()
        assert list(y[:-1]) == pytest.approx(list(rates))


def test_cli_md_lists_every_file_run_out_writes_for_a_packet_run(tmp_path):
    """docs/cli.md's `run --out` list names every file of a flow and a packet run."""
    import json
    import re
    from pathlib import Path

    from netsteer.cli import run_cli

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "cli.md").read_text()
    section = doc[doc.index("`--out DIR` writes, as a whole"):doc.index("## `topo`")]
    listed = set(re.findall(r"^- `([\w.]+)`", section, flags=re.M))
    assert run_cli(["run", str(root / "scenarios" / "hotspot-victim-packet.yaml"), "--json", "--no-progress",
                    "--out", str(tmp_path / "o")]) == 0
    files = json.loads((tmp_path / "o" / "result.json").read_text())["files"]
    assert "queue_occupancy.png" in files
    assert set(files) <= listed, set(files) - listed
