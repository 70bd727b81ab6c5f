"""The qos section drives the packet fabric: SL2VL and VL arbitration as OpenSM's
qos_* options, traffic classes giving flows their SLs, priority changes in flight."""

from __future__ import annotations

import textwrap

import pytest

from netsteer.errors import NetsteerError
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario

CAP = 4e9
WIRE = 2048 + 26


def scenario(qos: str, packet: str = "{}", extra_events: str = "") -> str:
    return textwrap.dedent(
        """
        name: qos
        topology: {kind: pgft, levels: 1, down: [4], up: [1], parallel: [1],
                   link_bandwidth: 32Gbps, link_latency: 100ns}
        routing: {engine: dmodk}
        fidelity: packet
        packet: %s
        qos: %s
        jobs:
          - name: mpi
            flows:
              - {src: 0, dst: 3, bytes: 1MiB, start: 50us}
          - name: io
            bulk:
              - {src: 1, dst: 3}
        """
    ) % (packet, qos)


def mpi_time(text: str) -> int:
    built = build_scenario(parse_scenario(text, file="s.yaml"))
    res = run_scenario(built)
    return int(res.completion_ns[0] - res.release_ns[0])


def test_the_mpi_class_on_a_high_vl_is_not_slowed_by_io():
    # alone: 512 packets at line rate, two links and a switch
    alone_ns = 512 * WIRE / CAP * 1e9 + 300
    # no QoS: both on VL 0, the hot output serves the two inputs in turn: half the link
    shared = mpi_time(scenario("{max_vls: 1}"))
    assert shared == pytest.approx(2 * alone_ns, rel=0.03)
    # the mpi job's class on SL 1 -> VL 1 in the high table, no high limit: it takes
    # the link while it has packets, the I/O keeps the rest
    qos = ('{max_vls: 2, high_limit: 255, vlarb_high: "1:255", vlarb_low: "0:64", '
           'sl2vl: "0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0", classes: [{name: mpi, sl: 1, jobs: [mpi]}]}')
    assert mpi_time(scenario(qos)) == pytest.approx(alone_ns, rel=0.03)
    # with low weights 1:3 in its favour instead, it gets 3/4 of the link
    qos = ('{max_vls: 2, vlarb_low: "0:32,1:96", '
           'sl2vl: "0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0", classes: [{name: mpi, sl: 1, jobs: [mpi]}]}')
    assert mpi_time(scenario(qos)) == pytest.approx(alone_ns * 4 / 3, rel=0.03)


def test_vl_arbitration_is_given_in_one_place():
    qos = "{max_vls: 2}"
    with pytest.raises(NetsteerError) as info:
        build_scenario(parse_scenario(scenario(qos, packet="{vls: 2}"), file="s.yaml"))
    assert info.value.field == "packet.vls" and "qos section" in info.value.reason
