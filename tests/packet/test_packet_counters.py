"""Port counters at packet level count a packet's bytes as they are serialised, so
no sample interval shows a link carrying more than its rate."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario

ONE = """\
name: one
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps}
routing: {engine: dmodk}
fidelity: packet
sample_interval: INTERVAL
jobs:
  - name: t
    flows:
      - {src: 0, dst: 1, bytes: 1MiB}
"""


@pytest.mark.parametrize("interval", ["5us", "3us", "20us"])
def test_no_interval_shows_a_link_above_its_rate(interval):
    b = build_scenario(parse_scenario(ONE.replace("INTERVAL", interval)))
    r = run_scenario(b, sample=True)
    t = np.asarray(r.sample_times_ns, dtype=np.float64)
    c = np.asarray(r.channel_bytes, dtype=np.float64)
    rate = np.diff(c, axis=0) / np.diff(t)[:, None]  # bytes per ns
    assert rate.max() <= 10e9 / 8 * 1e-9 * (1 + 1e-9)
    # every wire byte is counted by the end: 512 full packets of 2048 + 26 bytes,
    # on the host's link and on the switch's link to h1
    wire = 512 * (2048 + 26)
    assert sorted(c[-1][c[-1] > 0].tolist()) == [wire, wire]
    # and the busy link runs at its rate in a full interval mid-flow (header included)
    assert rate.max() == pytest.approx(10e9 / 8 * 1e-9, rel=1e-6)
