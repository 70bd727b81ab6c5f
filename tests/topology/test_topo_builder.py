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


@pytest.mark.parametrize("latency", [-5_000_000, -1, math.inf, math.nan, "1us", True])
def test_a_latency_that_no_cable_has_is_refused(latency):
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
