"""A finish time that is a whole ns is that ns (explore-mpi: +1 ns per message).

At 8 Gbit/s (1 byte per ns) with no latency a 1016-byte flow takes 1016 ns, but in
floating point ``1016 / 1e9 * 1e9`` is ``1016.0000000000001``, and the engine's ceil to
whole ns made it 1017: one ns more per message (a chain of three 3051 ns, a 7-rank
ring allreduce 12.204 us). The ceil now takes a time within a few ulps of a whole ns
as that ns (``netsteer_core::ceil_time``); a time truly above one still rounds up.
"""

import pytest

import netsteer as ns
from netsteer.routing import build_routing
from netsteer.sim import simulate
from netsteer.topology.pgft import pgft
from netsteer.traffic.dag import FlowDag

NIC = 8e9  # bit/s: 1 byte per ns
BYTE_NS = 8e9 / NIC  # ns per byte


def topo():
    return pgft(2, [8, 2], [1, 1], link_bandwidth=NIC, link_latency_ns=0)


def test_a_chain_of_whole_ns_flows_ends_on_the_sum():
    t = topo()
    dag = FlowDag()
    a = dag.add(0, 1, 1016)
    b = dag.add(1, 2, 1016, deps=[a])
    dag.add(2, 3, 1016, deps=[b])
    res = simulate(t, build_routing(t, "dmodk"), dag)
    assert res.completion_ns.tolist() == [round(k * 1016 * BYTE_NS) for k in (1, 2, 3)]  # was 1017, 2034, 3051


@pytest.mark.parametrize("sharing", ["maxmin", "cm02"])
def test_a_ring_allreduce_takes_its_steps_whole(sharing):
    # 7 ranks, 7000 B: 2 (p - 1) = 12 steps of a 1000-byte piece plus SMPI's 16-byte
    # envelope, each alone on its links: 12 x 1016 ns (was 12.204 us)
    p, n = 7, 7000
    job = ns.mpi_job(p, [ns.op.allreduce(f"{n}B", algorithm="ring")], stream=False)
    r = ns.simulate(topo(), "dmodk", [job], sharing={"model": sharing, "tcp_gamma": 0} if sharing == "cm02"
                    else sharing)
    steps, piece = 2 * (p - 1), n // p + 16
    assert r.raw.makespan_ns == round(steps * piece * BYTE_NS)


def test_a_finish_truly_past_a_whole_ns_still_rounds_up():
    t = topo()
    dag = FlowDag()
    dag.add(0, 1, 1017)  # at 1 B/ns alone: 1017 ns
    dag.add(2, 3, 1017)
    dag.add(2, 4, 1016)  # shares host 2's link with the flow above: 2032 ns, then 1 B alone
    res = simulate(t, build_routing(t, "dmodk"), dag)
    assert res.completion_ns.tolist() == [1017, 2033, 2032]
