"""``TopologyBuilder`` refuses what no cable or node can be, naming the parameter,
as a NetsteerError (api.md: never a bare ValueError from inside)."""

from __future__ import annotations

import math

import pytest

from netsteer.errors import NetsteerError
from netsteer.topology.model import TopologyBuilder


def builder():
    b = TopologyBuilder("t")
    return b, b.add_host("h0"), b.add_switch("s0")


@pytest.mark.parametrize("latency", [-5_000_000, -1, math.inf, math.nan, "fast", "-1us", True])
def test_a_latency_that_no_cable_has_is_refused(latency):
    # ("1us" is a latency: the API takes unit strings, test_api_errors)
    b, h, s = builder()
    with pytest.raises(NetsteerError) as e:
        b.add_link(h, s, bandwidth=1e9, latency_ns=latency)
    assert e.value.field == "latency_ns" and "h0-s0" in e.value.reason
    assert not b.links


@pytest.mark.parametrize("bandwidth", [0, -1e9, math.inf, math.nan])
def test_a_bandwidth_that_no_cable_has_is_refused(bandwidth):
    b, h, s = builder()
    with pytest.raises(NetsteerError) as e:
        b.add_link(h, s, bandwidth=bandwidth, latency_ns=0)
    assert e.value.field == "bandwidth"


def test_a_duplicate_name_and_a_missing_node_are_refused_with_their_parameter():
    b, h, s = builder()
    with pytest.raises(NetsteerError, match="duplicate node name 'h0'") as e:
        b.add_host("h0")
    assert e.value.field == "name"
    for a, z, field in [(h, 99, "b"), (-1, s, "a"), (h, h, "b"), ("h0", s, "a")]:
        with pytest.raises(NetsteerError) as e:
            b.add_link(a, z, bandwidth=1e9, latency_ns=0)
        assert e.value.field == field, (a, z)
    b.add_link(h, s, bandwidth=1e9, latency_ns=0, a_port=1)
    with pytest.raises(NetsteerError, match="port 1 of h0 is used twice") as e:
        b.add_link(h, b.add_switch("s1"), bandwidth=1e9, latency_ns=0, a_port=1)
    assert e.value.field == "a_port"
    # (still a ValueError, which the readers that build topologies catch)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("port", [0, -1, 2**31, 2**63, 1.0, True])
def test_a_port_no_cable_table_can_hold_is_refused(port):
    # explorer's fault 3: port 0 was taken, 2**63 wrapped negative in the int32 table
    b, h, s = builder()
    with pytest.raises(NetsteerError) as e:
        b.add_link(h, s, bandwidth=1e9, latency_ns=0, b_port=port)
    assert e.value.field == "b_port" and "s0" in e.value.reason
    assert not b.links
    b.add_link(h, s, bandwidth=1e9, latency_ns=0, b_port=2**31 - 1)  # the highest a table holds
    assert b.links[0][3] == 2**31 - 1


def test_a_latency_past_the_clock_is_refused():
    from netsteer.units import MAX_DURATION_NS

    b, h, s = builder()
    with pytest.raises(NetsteerError, match="int64 nanoseconds") as e:
        b.add_link(h, s, bandwidth=1e9, latency_ns=MAX_DURATION_NS + 1)
    assert e.value.field == "latency_ns" and not b.links
    b.add_link(h, s, bandwidth=1e9, latency_ns=MAX_DURATION_NS)
    assert int(b.build().link_latency_ns[0]) == MAX_DURATION_NS


def test_pgft_refuses_a_huge_levels_before_building_anything():
    # explorer's fault 3: parallel's default was [1] * levels, made before levels was checked
    from netsteer.topology import pgft

    with pytest.raises(ValueError, match="down has 1 entries but levels is 100000000000000000000"):
        pgft(10**20, [2], [1], link_bandwidth=1e9, link_latency_ns=0)
