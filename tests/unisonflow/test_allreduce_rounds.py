"""``allreduce-disjoint`` plans the pairs the workload sends, round by round, on any
rank count (MPICH's fold for non-powers of two: even sends to odd, odd survives,
unfold at the end)."""

import pytest

from netsteer.topology.pgft import pgft
from netsteer.unisonflow.modules.allreduce import rounds
from netsteer.unisonflow.run import simulate
from netsteer.unisonflow.dataplane import TableModel
from netsteer.unisonflow.tags import decode
from netsteer.unisonflow.workload import TaggedWorkload


def sent_rounds(algorithm, p):
    """Per DAG depth, the (src, dst) rank pairs of the tagged messages the workload
    builds for one allreduce: computed on the workload's own DAG."""
    w = TaggedWorkload()
    w.collective("allreduce", algorithm, hosts=range(p), nbytes=p * 64, repeat=1)
    c, tags = w.dag.columns(), w.tags
    depth, out = [], {}
    for f in range(len(w.dag)):
        deps = c.deps[c.dep_offsets[f]:c.dep_offsets[f + 1]].tolist()
        depth.append(max((depth[x] + 1 for x in deps), default=0))
        if tags[f]:
            t = decode(int(tags[f]))
            out.setdefault(depth[f], set()).add((t.src, t.dst))
    return [out[k] for k in sorted(out)]


@pytest.mark.parametrize("algorithm", ["recursive_doubling", "rabenseifner"])
@pytest.mark.parametrize("p", range(2, 34))
def test_planned_rounds_are_the_rounds_sent(algorithm, p):
    planned = [set(r) for r in rounds(algorithm, p)]
    assert planned == sent_rounds(algorithm, p)


@pytest.mark.parametrize("p", [3, 7, 24])
def test_every_rank_pair_sent_is_planned_and_no_other(p):
    for algorithm in ("recursive_doubling", "rabenseifner"):
        sent = set().union(*sent_rounds(algorithm, p))
        planned = {pr for r in rounds(algorithm, p) for pr in r}
        assert planned == sent


def test_fold_is_even_to_odd_with_an_unfold_round():
    # 6 ranks: pof2 4, rem 2; ranks 0 and 2 fold into 1 and 3, which get the result back last
    r = rounds("recursive_doubling", 6)
    assert {(0, 1), (2, 3)} <= set(r[0])
    assert set(r[-1]) == {(1, 0), (3, 2)}


def test_24_ranks_no_slower_than_ecmp():
    # the source's 24-node cluster: with the plan covering every message, the module
    # must not lose to ECMP hashing (before: 126 ms a call against ECMP's 76)
    t = pgft(2, [6, 4], [1, 2], [1, 4], link_bandwidth=1e9, link_latency_ns=1000)
    w = TaggedWorkload()
    w.collective("allreduce", "recursive_doubling", hosts=range(24), nbytes=1 << 20, repeat=3)
    mods = {0: [{"module": "allreduce-disjoint", "algorithm": "recursive_doubling"}]}
    r = simulate(t, w, mods, tables=TableModel(controller_rtt_ns=1000))
    e = simulate(t, w, None)
    assert r.controller["by_module"] == {"allreduce-disjoint": r.controller["packet_ins"]}
    assert r.makespan_ns <= e.makespan_ns
