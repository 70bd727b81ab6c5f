"""D-mod-K on PGFTs: exact routes, SimGrid's walk, and the shift-permutation property."""

from math import prod

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import dmodk
from netsteer.topology.model import TopologyBuilder
from netsteer.topology.pgft import pgft


def tree(levels, down, up, parallel=None):
    return pgft(levels, down, up, parallel, link_bandwidth=1e9, link_latency_ns=0)


def test_exact_ports_and_path_on_two_level_tree():
    t = tree(2, [4, 4], [1, 2])
    r = dmodk(t)
    s10, s21, s11 = t.node("s1_0"), t.node("s2_1"), t.node("s1_1")
    # h5 has position 5, label (1, 1): up slot 5 mod 2 = 1 -> port 4 + 1 + 1
    assert r.lft[s10, 5] == 6
    assert r.lft[s21, 5] == 2  # down to the child with digit 1
    assert r.lft[s11, 5] == 2  # down to the host with digit 1
    assert r.describe(0, 5) == "h0 -> s1_0 -> s2_1 -> s1_1 -> h5"
    assert r.describe(0, 4) == "h0 -> s1_0 -> s2_0 -> s1_1 -> h4"
    assert r.describe(2, 1) == "h2 -> s1_0 -> h1"
    ch = r.path(0, 5)
    assert ch == [int(t.out_channel[n, p]) for n, p in
                  [(t.node("h0"), 1), (s10, 6), (s21, 2), (s11, 2)]]


def simgrid_route(levels, down, up, parallel, src, dst):
    """SimGrid FatTreeZone::get_local_route, re-done over its own labels and slots.

    Returns the nodes visited as (level, position) pairs.
    """
    counts = [prod(down)] + [
        prod(up[: i + 1]) * prod(down[i + 1 :]) for i in range(levels)
    ]

    def labels(lv):  # generate_labels: little-endian counter, digit i < lv counts to up[i]
        maxl = [down[j] if j + 1 > lv else up[j] for j in range(levels)]
        cur, out = [0] * levels, []
        for _ in range(counts[lv]):
            out.append(list(cur))
            for pos in range(levels):
                cur[pos] += 1
                if cur[pos] < maxl[pos]:
                    break
                cur[pos] = 0
        return out

    lab = [labels(lv) for lv in range(levels + 1)]
    parents = {}  # (lv, pos) -> slot list
    children = {}
    for lv in range(levels):
        for pos in range(counts[lv]):
            for ppos in range(counts[lv + 1]):
                pl, cl = lab[lv + 1][ppos], lab[lv][pos]
                if all(pl[i] == cl[i] or i == lv for i in range(levels)):
                    for j in range(parallel[lv]):
                        parents.setdefault((lv, pos), [None] * (up[lv] * parallel[lv]))[
                            pl[lv] + j * up[lv]] = (lv + 1, ppos)
                        children.setdefault((lv + 1, ppos), [None] * (down[lv] * parallel[lv]))[
                            cl[lv] + j * down[lv]] = (lv, pos)

    def in_sub_tree(root, node):
        (rl, rp), (nl, np_) = root, node
        if rl <= nl:
            return False
        return all(lab[rl][rp][i] == lab[nl][np_][i] for i in range(nl)) and all(
            lab[rl][rp][i] == lab[nl][np_][i] for i in range(rl, levels))

    source, dest = (0, src), (0, dst)
    cur, visited = source, [source]
    while not in_sub_tree(cur, dest):
        d = dst
        for i in range(cur[0]):
            d //= up[i] * parallel[i]
        d %= up[cur[0]] * parallel[cur[0]]
        cur = parents[cur][d]
        visited.append(cur)
    while cur != dest:  # the down loop, without its `break`, as SimGrid has it
        d = src % parallel[cur[0] - 1]
        i = d * down[cur[0] - 1]
        while i < len(children.get(cur, [])):
            if i % down[cur[0] - 1] == lab[0][dst][cur[0] - 1]:
                cur = children[cur][i]
                visited.append(cur)
            i += 1
    return visited


@pytest.mark.parametrize(
    "levels,down,up",
    [(2, [4, 4], [1, 2]), (3, [2, 2, 2], [1, 2, 2]), (3, [2, 3, 2], [2, 2, 3]), (1, [5], [1])],
)
def test_matches_simgrid_walk_for_all_pairs(levels, down, up):
    t = tree(levels, down, up)
    r = dmodk(t)
    n = t.n_hosts
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    off, ch = r.paths(src, dst)
    cdst = t.channel_dst()
    for i, (s, d) in enumerate(zip(src, dst)):
        if s == d:
            continue
        want = simgrid_route(levels, down, up, [1] * levels, int(s), int(d))
        ours = [t.host_node(int(s))] + [int(v) for v in cdst[ch[off[i] : off[i + 1]]]]
        names = [f"h{p}" if lv == 0 else f"s{lv}_{p}" for lv, p in want]
        assert [t.node_names[v] for v in ours] == names, (s, d)


def test_up_part_matches_simgrid_with_parallel_cables():
    levels, down, up, par = 2, [2, 3], [2, 2], [2, 3]
    t = tree(levels, down, up, par)
    r = dmodk(t)
    r.check()
    cdst = t.channel_dst()
    for s in range(t.n_hosts):
        for d in range(t.n_hosts):
            if s == d:
                continue
            want = simgrid_route(levels, down, up, par, s, d)
            ours = [t.host_node(s)] + [int(v) for v in cdst[r.path(s, d)]]
            names = [f"h{p}" if lv == 0 else f"s{lv}_{p}" for lv, p in want]
            assert [t.node_names[v] for v in ours] == names  # same nodes
    # the parallel cable going up is SimGrid's: h1 -> s1_0 takes slot 1 mod 4 = 1
    s10 = t.node("s1_0")
    assert r.path(1, 5)[0] == int(t.out_channel[t.node("h1"), 2])
    # going down over 3 parallel cables, the cable follows the destination's digit
    s2 = t.node_names[int(cdst[r.path(0, 5)[1]])]
    # h5's label is (1, 2); j = (5 // (up[0]*parallel[0])) mod parallel[1] = 1
    assert r.lft[t.node(s2), 5] == 1 + 2 + 1 * 3
    assert r.lft[s10, 0] == 1


def test_shift_permutation_loads_one_flow_per_channel():
    # non-blocking 3-level tree (64 hosts): D-mod-K routes every shift without contention
    t = tree(3, [4, 4, 4], [1, 4, 4])
    r = dmodk(t)
    n = t.n_hosts
    level = t.node_level
    src_level = level[t.channel_src()]
    dst_level = level[t.channel_dst()]
    going_up = dst_level > src_level
    for k in range(1, n):
        load = r.channel_load(np.arange(n), (np.arange(n) + k) % n)
        assert load.max() == 1, k
        if k % 16 == 0:  # every flow crosses the top level: each up channel carries one
            assert (load[going_up] == 1).all(), k
            assert load.sum() == 6 * n


def test_rejects_non_pgft():
    b = TopologyBuilder("pair")
    h0, h1, s = b.add_host("h0"), b.add_host("h1"), b.add_switch("s0")
    b.add_link(h0, s, bandwidth=1e9, latency_ns=0)
    b.add_link(h1, s, bandwidth=1e9, latency_ns=0)
    with pytest.raises(RoutingError, match="dmodk routes PGFT topologies only"):
        dmodk(b.build())


def test_multihomed_hosts_spread_over_their_up_ports():
    t = tree(2, [2, 2], [2, 2])  # each host has two parents
    r = dmodk(t)
    r.check()
    h0 = t.node("h0")
    assert r.lft[h0].tolist() == [-1, 2, 1, 2]  # port 1 + (d mod 2)
