"""Scenario text shared by the QoS tests."""

from __future__ import annotations

import textwrap


def two_flows(qos: str, *, io: str = "flows: [{src: 1, dst: 3, bytes: 100MB}]") -> str:
    """Two 100 MB flows into host 3 of one 1 GB/s switch: job mpi from host 0, job io
    from host 1, and ``qos`` as the scenario's qos section (indented YAML)."""
    return textwrap.dedent(
        """\
        name: qos-two
        topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 8Gbps, link_latency: 0ns}
        routing: {engine: dmodk}
        jobs:
          - name: mpi
            flows: [{src: 0, dst: 3, bytes: 100MB}]
          - name: io
            IO
        qos:
        """
    ).replace("IO", io) + textwrap.indent(textwrap.dedent(qos), "  ")
