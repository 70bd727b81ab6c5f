"""pFTree with a *common* partition (storage, management: one that holds hosts of the
job partitions): it used to take the hosts of whichever partition came first, so a
common partition listed first made pFTree plan all hosts as one, and its own traffic,
which reaches every job, counted against the jobs' isolation in any order. It is now
left out of the isolation, and the result does not depend on the listing order."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.routing.pftree import pftree, shared_channels
from netsteer.topology.partitions import Partition
from netsteer.topology.pgft import pgft

SHAPES = [(2, [4, 4], [1, 2]), (2, [8, 8], [1, 4]), (3, [4, 4, 4], [1, 2, 2])]


def jobs_and_storage(t, seed):
    perm = np.random.default_rng(seed).permutation(t.n_hosts)
    k = t.n_hosts // 4
    a = Partition("a", 0x10, {t.host_node(int(h)): "full" for h in perm[:k]})
    b = Partition("b", 0x11, {t.host_node(int(h)): "full" for h in perm[k:]})
    storage = Partition("storage", 0x01, {t.host_node(h): "full" for h in range(t.n_hosts)})
    return a, b, storage


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1])
def test_common_partition_does_not_defeat_isolation_in_any_order(shape, seed):
    t = pgft(*shape, link_bandwidth=1e9, link_latency_ns=0)
    a, b, storage = jobs_and_storage(t, seed)
    alone = pftree(t, partitions=[a, b])
    for parts in ([storage, a, b], [a, b, storage], [b, storage, a]):
        r = pftree(t, partitions=parts)
        assert np.array_equal(r.table, alone.table), [p.name for p in parts]
        assert shared_channels(r, [a, b]) == shared_channels(alone, [a, b])
        assert r.partition_sl[storage.pkey] == 0
        assert {k: v for k, v in r.partition_sl.items() if k != storage.pkey} == alone.partition_sl
        note = [n for n in r.notes if "'storage'" in n]
        assert len(note) == 1 and "not isolated" in note[0] and "'a'" in note[0] and "'b'" in note[0]


def test_a_host_in_two_jobs_is_planned_with_the_smaller_whatever_the_order():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    a = Partition("a", 0x10, {t.host_node(h): "full" for h in range(0, 6)})
    b = Partition("b", 0x11, {t.host_node(h): "full" for h in range(5, 8)})  # h5 in both
    c = Partition("c", 0x12, {t.host_node(h): "full" for h in range(8, 16)})
    tables = [pftree(t, partitions=ps).table for ps in ([a, b, c], [b, a, c], [c, b, a])]
    assert all(np.array_equal(tables[0], x) for x in tables[1:])


def test_user_sl_replaced_by_pftree_is_noted():
    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    a, b, _ = jobs_and_storage(t, 0)
    a.flags["sl"] = 7
    r = pftree(t, partitions=[a, b])
    used = r.partition_sl[a.pkey]
    assert used != 7
    assert [n for n in r.notes if "'a'" in n and "sl=7" in n and f"SL {used}" in n]
    assert not [n for n in r.notes if "'b'" in n]  # b gave no sl=
