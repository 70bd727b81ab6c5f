"""``allreduce-disjoint`` chooses each flow's whole path: a link busy with background
traffic is not taken while a free path exists (it used to choose hop by hop, the up
port with no look-ahead to the down cable, ties to the lowest port)."""

import numpy as np

from netsteer.reproduce import unisonflow as U
from netsteer.topology.pgft import pgft
from netsteer.unisonflow.fabric import Fabric
from netsteer.unisonflow.modules import JobView, NetState, build
from netsteer.unisonflow.modules.allreduce import rounds
from netsteer.unisonflow.run import simulate
from netsteer.unisonflow.workload import TaggedWorkload


def test_background_links_are_avoided_when_a_free_path_exists():
    # the reproduction's acceleration case: 16 ranks (4 per leaf), 8 bulk flows to the next leaf
    p = U.PARAMS
    topo = U.fabric_topology(p)
    hosts = [leaf * 6 + k for leaf in range(4) for k in range(4)]
    w = TaggedWorkload()
    w.collective("allreduce", "recursive_doubling", hosts=hosts, nbytes=1 << 20, repeat=3,
                 overhead_ns=p["overhead_ns"])
    n = len(w.dag)
    for h in (h for h in range(24) if h not in hosts):
        w.untagged(h, (h + 6) % 24, 10 ** 12)
    bg = np.zeros(len(w.dag), bool)
    bg[n:] = True
    r = simulate(topo, w, {0: [{"module": "allreduce-disjoint", "algorithm": "recursive_doubling"}]},
                 tables=U.tables(p), background=bg)
    bg_ch = {int(c) for f in range(n, len(w.dag)) for c in r.paths[f]}
    shared = [f for f in range(n) if set(r.paths[f].tolist()) & bg_ch and w.dag.columns().src[f] != w.dag.columns().dst[f]]
    assert shared == [], "allreduce flows on links carrying background traffic"
    # so a steady call is 4 rounds of an unshared 1 MiB message at 1 Gbit/s, each after
    # the 25 us software overhead and 4 cables of 1 us (hand calculation)
    per = n // 3
    steady = (r.completion_ns[:n].max() - r.completion_ns[:per].max()) / 2
    by_hand = 4 * ((1 << 20) * 8 / 1e9 * 1e9 + p["overhead_ns"] + 4 * p["link_latency_ns"])
    assert abs(steady - by_hand) / by_hand < 2e-3, (steady, by_hand)


def test_a_hop_is_chosen_with_the_links_after_it_in_view():
    # two leaves, two spines: the up cable to spine 0 is free but its down cable to the
    # destination leaf is busy; the whole path through spine 1 is free
    topo = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    f = Fabric(topo)
    via0 = [h for h in f.walk(0, 2, lambda node, ports: ports[0])]
    down0 = f.channels(0, via0)[-2]  # spine -> destination leaf (the last is leaf -> host)
    util = np.zeros(topo.n_channels)
    util[down0] = 0.99
    mod = build([{"module": "allreduce-disjoint"}], f, JobView(0, {0: [0, 2]}))["allreduce"]
    plan = mod.plan(0, NetState(f, util=util))
    for (s, d), hops in plan.items():
        assert down0 not in f.channels([0, 2][s], hops)
    assert rounds("recursive_doubling", 2) == [[(0, 1), (1, 0)]]
