"""pFTree isolates partitions physically whenever the links allow it, never above ftree's loads.

Isolating layouts are built so that an isolating routing at ftree's load is known
to exist (its spines or planes are planted); pFTree must find one. The property
tests compare pFTree with ftree on random fabrics and partitions.
"""

from __future__ import annotations

from math import prod

import numpy as np
import pytest

from netsteer.routing import build_routing
from netsteer.routing.deadlock import check_deadlock
from netsteer.routing.traffic_profile import profile
from netsteer.topology.partitions import Partition
from netsteer.topology.pgft import pgft


def tree(levels, down, up, par=None):
    return pgft(levels, down, up, par, link_bandwidth=32e9, link_latency_ns=100)


def partitions(t, label) -> list[Partition]:
    """One partition per label value (-1: the host is in none)."""
    label = np.asarray(label)
    return [Partition(f"p{k}", 0x10 + k, {t.host_node(int(h)): "full" for h in np.flatnonzero(label == k)})
            for k in sorted(set(label.tolist()) - {-1})]


def by_leaf_position(t, per_leaf, pattern):
    """Label of host ``h``: ``pattern[h % per_leaf]``."""
    return [pattern[h % per_leaf] for h in range(t.n_hosts)]


def both(t, parts):
    f = build_routing(t, "ftree", partitions=parts)
    p = build_routing(t, "pftree", partitions=parts)
    return profile(f, parts), profile(p, parts), p


# (name, tree, label per host) where an isolating routing at ftree's load exists
ISOLABLE = {
    # the issue's case: 10 leaves of 6, 3 spines; A = hosts 4-5, B = hosts 0-3 of every leaf
    "issue-10x6-3spines": (tree(2, [6, 10], [1, 3]), lambda t: by_leaf_position(t, 6, [1, 1, 1, 1, 0, 0])),
    "interleaved": (tree(2, [6, 10], [1, 3]), lambda t: by_leaf_position(t, 6, [0, 1, 0, 1, 0, 0])),
    "uneven-4-1": (tree(2, [6, 8], [1, 3]), lambda t: by_leaf_position(t, 6, [0, 0, 0, -1, 0, 1])),
    "three-partitions": (tree(2, [8, 8], [1, 4]), lambda t: by_leaf_position(t, 8, [2, 0, 1, 2, 1, 2, 0, 2])),
    "four-partitions-2:1": (tree(2, [8, 8], [1, 4]), lambda t: by_leaf_position(t, 8, [0, 1, 2, 3, 3, 2, 1, 0])),
    "parallel-cables": (tree(2, [4, 4], [1, 2], [1, 2]), lambda t: by_leaf_position(t, 4, [0, 0, 0, 1])),
    "3-level-2:1": (tree(3, [4, 4, 4], [1, 2, 4]), lambda t: by_leaf_position(t, 4, [0, 1, 1, 0])),
    "3-level-6x4x3": (tree(3, [6, 4, 3], [1, 3, 2]), lambda t: by_leaf_position(t, 6, [1, 0, 0, 1, 0, 0])),
    "3-level-F-like": (tree(3, [8, 8, 4], [1, 4, 8]), lambda t: by_leaf_position(t, 8, [2, 0, 2, 1, 2, 0, 2, 1])),
    "rlft": (tree(3, [4, 2, 2], [1, 2, 2]), lambda t: by_leaf_position(t, 4, [1, 0, 0, 1])),
    # contiguous blocks: whole pods; whole leaves sharing spines but no link
    "contiguous-3-level": (tree(3, [4, 4, 4], [1, 2, 4]), lambda t: [h // 32 for h in range(t.n_hosts)]),
    "contiguous-leaves": (tree(2, [4, 6], [1, 2]), lambda t: [h // 8 for h in range(t.n_hosts)]),
    # hosts in no partition beside two partitions
    "with-unpartitioned": (tree(2, [6, 10], [1, 3]), lambda t: by_leaf_position(t, 6, [0, -1, 1, 1, -1, 0])),
}


@pytest.mark.parametrize("name", list(ISOLABLE))
def test_isolates_whenever_the_links_allow(name):
    t, label = ISOLABLE[name]
    parts = partitions(t, label(t))
    pf, pp, r = both(t, parts)
    assert pp.shared_channels == 0
    assert pp.max_switch_load <= pf.max_switch_load
    assert pp.max_routes <= pf.max_routes
    assert set(r.partition_vl.values()) == {0}  # links did it: no lanes needed
    r.check()


def test_the_issue_case_is_shared_everywhere_by_ftree():
    t, label = ISOLABLE["issue-10x6-3spines"]
    parts = partitions(t, label(t))
    pf, pp, _ = both(t, parts)
    assert pf.shared_channels > 0 and pp.shared_channels == 0
    assert pp.max_switch_load == pf.max_switch_load


def planted(rng, levels):
    """A tree and partitions with an isolating routing at ftree's load by construction.

    Every leaf's up links (2 levels: spines; 3 levels: planes of level-2 switches and
    the roots above them) are dealt to the partitions; on every leaf a partition
    gets at most as many hosts as its links carry under ftree's cap, placed at
    random positions, the rest in no partition.
    """
    if levels == 2:
        k, cap, leaves = int(rng.integers(2, 7)), int(rng.integers(1, 4)), int(rng.integers(2, 9))
        t = tree(2, [k * cap, leaves], [1, k])
    else:
        k, cap, m2, m3 = int(rng.integers(2, 5)), int(rng.integers(1, 3)), int(rng.integers(2, 4)), int(rng.integers(2, 4))
        t = tree(3, [k * cap, m2, m3], [1, k, m2])
    m = k * cap
    n_parts = int(rng.integers(2, min(k, 5) + 1))
    owner = rng.permutation(np.r_[np.arange(n_parts), rng.integers(0, n_parts, k - n_parts)])
    links = np.bincount(owner, minlength=n_parts)
    label = np.full(t.n_hosts, -1)
    for leaf in range(t.n_hosts // m):
        slots = []
        for p in range(n_parts):
            most = cap * int(links[p])
            slots += [p] * (most if rng.random() < 0.6 else int(rng.integers(0, most + 1)))
        for pos, p in zip(rng.permutation(m), slots):
            label[leaf * m + pos] = p
    return t, label


@pytest.mark.parametrize("levels", [2, 3])
def test_planted_isolation_is_found(levels):
    rng = np.random.default_rng(11 + levels)
    found_where_ftree_shares = 0
    for _ in range(25):
        t, label = planted(rng, levels)
        parts = partitions(t, label)
        pf, pp, _ = both(t, parts)
        assert pp.shared_channels == 0, (t.name, label.tolist())
        assert pp.max_switch_load <= pf.max_switch_load
        found_where_ftree_shares += pf.shared_channels > 0
    assert found_where_ftree_shares >= 15  # the cases are not ones ftree isolates by luck


def random_fabrics(count, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        levels = int(rng.integers(2, 4))
        down = [int(x) for x in rng.integers(2, 7, levels)]
        up = [1] + [int(x) for x in rng.integers(1, 5, levels - 1)]
        par = [1] + [int(x) for x in rng.integers(1, 3, levels - 1)]
        if not 8 <= prod(down) <= 96:
            continue
        out.append((levels, down, up, par, int(rng.integers(1 << 30))))
    return out


@pytest.mark.parametrize("shape", random_fabrics(24, seed=9))
def test_never_above_ftree_in_load_or_shared_links(shape):
    levels, down, up, par, seed = shape
    t = tree(levels, down, up, par)
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    label = rng.integers(-1, k, t.n_hosts)  # some hosts in no partition
    parts = partitions(t, label)
    pf, pp, r = both(t, parts)
    assert pp.max_switch_load <= pf.max_switch_load
    assert pp.max_routes <= pf.max_routes
    assert pp.shared_channels <= pf.shared_channels
    r.check()
    check_deadlock(r)


def test_where_links_do_not_suffice_sharing_partitions_get_lanes():
    t = tree(2, [8, 8], [1, 2])  # 2 spines, 4 partitions on every leaf: links cannot isolate
    parts = partitions(t, by_leaf_position(t, 8, [0, 1, 2, 3, 0, 1, 2, 3]))
    pf, pp, r = both(t, parts)
    assert 0 < pp.shared_channels <= pf.shared_channels
    shared = pp.partition_mask[pp.shared]
    for m in np.unique(shared).tolist():
        lanes = [r.partition_vl[p.pkey] for i, p in enumerate(parts) if m >> i & 1]
        assert len(set(lanes)) == len(lanes)


def test_profile_is_the_walk():
    from netsteer.routing.deadlock import partition_channels
    from netsteer.routing.evaluate import pattern_flows

    t = tree(3, [4, 2, 2], [1, 2, 2])
    label = np.random.default_rng(3).integers(-1, 3, t.n_hosts)
    parts = partitions(t, label)
    parts[0].members[next(iter(parts[0].members))] = "limited"
    r = build_routing(t, "pftree", partitions=parts)
    p = profile(r, parts)
    s, d = pattern_flows("all-to-all", np.arange(t.n_hosts), np.random.default_rng(0))
    assert np.array_equal(p.load, r.channel_load(s, d))
    rows = partition_channels(r, parts)
    bits = (rows.astype(np.uint64) << np.arange(len(parts), dtype=np.uint64)[:, None]).sum(axis=0, dtype=np.uint64)
    assert np.array_equal(p.partition_mask, bits)
