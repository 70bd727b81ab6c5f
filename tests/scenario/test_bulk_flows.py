"""Bulk (iperf-like) flows: refused when they cannot end or cannot cross the network."""

from __future__ import annotations

import pytest

from netsteer.errors import NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

HEAD = """
name: t
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
"""


@pytest.mark.parametrize("bulk", ["{src: 0, dst: 0, duration: 1s}", "{src: h2, dst: h2}"])
def test_a_bulk_flow_to_its_own_host_is_refused(bulk):
    """It never enters the network, so it had "finished" at 0 s having sent 1e18 bytes."""
    text = HEAD + f"jobs:\n  - {{name: bg, bulk: [{{src: 1, dst: 2}}, {bulk}]}}\n  - {{name: k, flows: [{{src: 2, dst: 3, bytes: 1MB}}]}}\n"
    with pytest.raises(NetsteerError) as info:
        build_scenario(parse_scenario(text, file="s.yaml"))
    e = info.value
    assert e.file == "s.yaml" and e.field == "jobs.0.bulk.1.dst" and "same host" in e.reason


def test_a_sized_flow_to_its_own_host_still_ends_at_once():
    text = HEAD + "jobs:\n  - {name: k, flows: [{src: 1, dst: 1, bytes: 1MB}, {src: 2, dst: 3, bytes: 1MB}]}\n"
    b = build_scenario(parse_scenario(text, file="s.yaml"))
    assert len(b.dag) == 2


def test_a_size_written_as_a_bare_number_in_text_is_bytes():
    # a CLI option, or a quoted YAML value, arrives as text: "1000" is 1000 bytes, as
    # the bare integer 1000 is
    from netsteer.units import checked_size, parse_size

    assert parse_size("1000") == parse_size(1000) == 1000
    assert checked_size("0") == 0
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        checked_size("1.5")


@pytest.mark.parametrize("value, kind", [("-1GiB", "size"), ("-10Gbps", "bandwidth"), ("-1us", "duration")])
def test_a_negative_value_is_called_negative(value, kind):
    from netsteer.units import UnitError, parse_bandwidth, parse_duration, parse_size

    parse = {"size": parse_size, "bandwidth": parse_bandwidth, "duration": parse_duration}[kind]
    with pytest.raises(UnitError, match=f"{kind} must not be negative"):
        parse(value)
