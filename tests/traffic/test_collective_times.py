"""Simulated times of collectives on one switch, computed by hand.

A 1-level PGFT is a star: every host has its own cable to the switch, so a path is 2
channels (2 latencies) and flows of one step never share a channel. With 8 Gbps
cables a byte takes 1 ns: a message of N bytes takes 2 * lat + N ns.
"""

import pytest

pytest.importorskip("netsteer._core")

from netsteer.routing import build_routing  # noqa: E402
from netsteer.sim import simulate  # noqa: E402
from netsteer.topology.pgft import pgft  # noqa: E402
from netsteer.traffic.collectives import expand  # noqa: E402
from netsteer.traffic.dag import FlowDag  # noqa: E402

LAT = 1000
MSG = 2 * LAT  # latency of one message, ns


def run(op, algo, p, nbytes, **kw):
    topo = pgft(1, [p], [1], [1], link_bandwidth=8e9, link_latency_ns=LAT)
    dag = FlowDag()
    expand(dag, op, algo, list(range(p)), nbytes, **kw)
    return simulate(topo, build_routing(topo, "dmodk"), dag, sharing="cm02").makespan_ns


def test_binomial_bcast_root_sends_log_p_times():
    # 8 ranks: the root sends 3 times in a row; its last send ends the bcast
    assert run("bcast", "binomial", 8, 100_000) == 3 * (MSG + 100_000)


def test_ring_allreduce_is_2_p_minus_1_steps_of_n_over_p():
    assert run("allreduce", "ring", 4, 400_000) == 6 * (MSG + 100_000)


def test_recursive_doubling_is_log_p_full_exchanges():
    assert run("allreduce", "recursive_doubling", 8, 50_000) == 3 * (MSG + 50_000)


def test_pairwise_alltoall_is_p_minus_1_exchanges():
    assert run("alltoall", "pairwise", 4, 30_000) == 3 * (MSG + 30_000)


def test_linear_gather_serialises_on_the_root_cable():
    # the root receives 4 messages one after the other
    assert run("gather", "linear", 5, 10_000) == 4 * (MSG + 10_000)


def test_envelope_adds_16_ns_per_message_at_1_byte_per_ns():
    assert run("allreduce", "ring", 4, 400_000, envelope_bytes=16) == 6 * (MSG + 100_016)


def test_barrier_costs_only_latency():
    assert run("barrier", "dissemination", 8, 0) == 3 * MSG
