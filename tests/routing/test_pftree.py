"""pFTree: balance first (never above ftree's loads), then isolation of partitions: links, else VLs."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.drivers.opensm.partitions import format_partitions_conf, parse_partitions_conf
from netsteer.drivers.opensm.qos import opensm_qos_conf, partitions_with_sl
from netsteer.errors import RoutingError
from netsteer.routing import build_routing
from netsteer.routing.deadlock import PairPolicy, check_deadlock, partition_channels
from netsteer.routing.evaluate import link_load_stats, pattern_flows
from netsteer.routing.pftree import host_partitions, shared_channels
from netsteer.topology.ibsim_net import read_ibsim_net, write_ibsim_net
from netsteer.topology.partitions import Partition
from netsteer.topology.pgft import pgft

TREES = {
    "pgft-1:1": (2, [4, 4], [1, 4], [1, 1]),
    "pgft-2:1": (2, [8, 8], [1, 4], [1, 1]),
    "xgft-3lvl": (3, [4, 4, 4], [1, 4, 4], [1, 1, 1]),
    "rlft-3lvl": (3, [4, 2, 2], [1, 2, 2], [1, 1, 1]),
    "parallel": (2, [4, 4], [1, 2], [1, 2]),
    "limited": (2, [8, 8], [1, 2], [1, 1]),
}


def tree(name):
    lv, d, u, p = TREES[name]
    return pgft(lv, d, u, p, link_bandwidth=32e9, link_latency_ns=100)


def random_partitions(t, k, seed):
    perm = np.random.default_rng(seed).permutation(t.n_hosts)
    return [Partition(f"p{i}", 0x10 + i, {t.host_node(int(h)): "full" for h in g})
            for i, g in enumerate(np.array_split(perm, k))]


def test_without_partitions_it_is_ftree():
    t = tree("xgft-3lvl")
    p, f = build_routing(t, "pftree"), build_routing(t, "ftree")
    assert np.array_equal(p.rows, f.rows) and np.array_equal(p.table, f.table)


@pytest.mark.parametrize("name", list(TREES))
def test_checked_and_as_balanced_as_ftree(name):
    t = tree(name)
    parts = random_partitions(t, 3, seed=7)
    p = build_routing(t, "pftree", partitions=parts)
    p.check()
    check_deadlock(p)
    s, d = pattern_flows("all-to-all", np.arange(t.n_hosts), np.random.default_rng(0))
    f = link_load_stats(build_routing(t, "ftree"), s, d)
    assert link_load_stats(p, s, d)["max"] <= f["max"]


def test_aligned_partitions_are_isolated_physically():
    t = tree("pgft-1:1")
    # two hosts of each partition on every leaf, at positions that differ from
    # leaf to leaf (ftree's spine for a host follows its position)
    in_a = [(h % 4 < 2) == (h // 4 % 2 == 0) for h in range(16)]
    a = Partition("a", 1, {t.host_node(h): "full" for h in range(16) if in_a[h]})
    b = Partition("b", 2, {t.host_node(h): "full" for h in range(16) if not in_a[h]})
    assert shared_channels(build_routing(t, "ftree"), [a, b]) > 0
    r = build_routing(t, "pftree", partitions=[a, b])
    assert shared_channels(r, [a, b]) == 0
    assert r.partition_sl == {1: 0, 2: 0}  # isolated by links: no VL needed


@pytest.mark.parametrize("name", ["pgft-1:1", "xgft-3lvl"])
def test_random_placements_share_fewer_links_than_ftree(name):
    t = tree(name)
    fewer = 0
    for seed in range(5):
        parts = random_partitions(t, 2, seed)
        f = shared_channels(build_routing(t, "ftree", partitions=parts), parts)
        p = shared_channels(build_routing(t, "pftree", partitions=parts), parts)
        fewer += p < f
        assert p <= f
    assert fewer >= 3


def test_partitions_that_must_share_get_different_vls():
    t = tree("limited")  # 2 up links per leaf, 4 partitions: links cannot isolate them
    parts = random_partitions(t, 4, seed=3)
    r = build_routing(t, "pftree", partitions=parts, vls=4)
    mask = partition_channels(r, parts)
    vl = [r.partition_vl[p.pkey] for p in parts]
    for i in range(4):
        for j in range(i + 1, 4):
            if (mask[i] & mask[j]).any():
                assert vl[i] != vl[j], (i, j)
    assert len(set(vl)) > 1
    check_deadlock(r, PairPolicy(t, parts, r.partition_vl))


def test_one_vl_means_everyone_on_vl0():
    t = tree("limited")
    parts = random_partitions(t, 4, seed=3)
    r = build_routing(t, "pftree", partitions=parts, vls=1)
    assert set(r.partition_vl.values()) == {0}


def test_bad_vl_count_is_refused():
    with pytest.raises(RoutingError, match="vls must be 1..15"):
        build_routing(tree("pgft-1:1"), "pftree", vls=0)


def test_hosts_take_their_first_non_default_partition():
    t = tree("pgft-1:1")
    default = Partition("Default", 0x7FFF, {int(n): "limited" for n in range(t.n_nodes)})
    a = Partition("a", 1, {t.host_node(0): "full", t.host_node(1): "full"})
    b = Partition("b", 2, {t.host_node(1): "full", t.host_node(2): "full"})
    hp = host_partitions(t, [default, a, b])
    assert hp[:4].tolist() == [1, 1, 2, -1]


def test_sl_goes_into_partitions_conf_and_reads_back(tmp_path):
    t0 = tree("limited")
    write_ibsim_net(t0, tmp_path / "f.net")
    t = read_ibsim_net(tmp_path / "f.net")
    parts = random_partitions(t, 4, seed=3)
    r = build_routing(t, "pftree", partitions=parts, vls=4)
    text = format_partitions_conf(partitions_with_sl(parts, r.partition_sl), t)
    back = parse_partitions_conf(text, t)
    assert {p.pkey: p.flags.get("sl") for p in back} == r.partition_sl
    assert "qos_sl2vl 0,1,2,3,0,1,2,3" in opensm_qos_conf(4)
