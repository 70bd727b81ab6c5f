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
