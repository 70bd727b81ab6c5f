"""Empty messages at packet level: InfiniBand sends a 0-byte message as one
header-only packet, which crosses every hop. Times by hand."""

from __future__ import annotations

import math

import pytest

from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario

CHAIN = """\
name: z
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
fidelity: FIDELITY
jobs:
  - name: a
    flows:
      - {id: z, src: 0, dst: 9, bytes: 0}
      - {id: y, src: 9, dst: 0, bytes: 0, after: [z]}
      - {src: 0, dst: 9, bytes: 0, after: [y]}
"""


def _completion_ns(fidelity: str) -> list[int]:
    b = build_scenario(parse_scenario(CHAIN.replace("FIDELITY", fidelity)))
    r = run_scenario(b)
    assert r.status == "done"
    return [int(x) for x in r.completion_ns]


def test_an_empty_message_is_a_header_only_packet_across_every_hop():
    # h0 -> leaf -> spine -> leaf -> h9: 4 links of 1 us, 3 cut-through switches of
    # 100 ns (the default), then the 26-byte header's tail at 10 Gbit/s
    one = 4 * 1000 + 3 * 100 + 26 * 8 / 10
    got = _completion_ns("packet")
    want, t = [], 0
    for _ in range(3):
        t = t + math.ceil(one)  # a flow ends at the ceil of its last byte, in ns
        want.append(t)
    assert got == want


def test_at_flow_level_an_empty_flow_still_pays_its_path_latency():
    assert _completion_ns("flow") == [4000, 8000, 12000]


def test_an_empty_message_has_a_time_alone_and_no_queueing():
    from netsteer.report.result import result_dict

    b = build_scenario(parse_scenario(CHAIN.replace("FIDELITY", "packet")))
    d = result_dict(b, run_scenario(b))
    assert d["packet"]["packets"] == 3
    m = d["packet"]["messages"]["a"]
    assert m["messages"] == 3
    assert m["latency_max_s"] == pytest.approx(math.ceil(4 * 1000 + 3 * 100 + 26 * 8 / 10) * 1e-9, abs=1e-15)
    assert m["queueing_max_s"] == 0.0
