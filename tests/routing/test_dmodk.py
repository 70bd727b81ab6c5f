"""D-mod-K on PGFTs: exact routes, SimGrid 3.32's walk (transcribed from
src/kernel/routing/FatTreeZone.cpp), and the shift-permutation property."""

from math import prod

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import dmodk
from netsteer.routing.dmodk import SimGridFatTreeRoutes
from netsteer.topology.model import TopologyBuilder
from netsteer.topology.pgft import pgft


def tree(levels, down, up, parallel=None):
    return pgft(levels, down, up, parallel, link_bandwidth=1e9, link_latency_ns=0)


def test_exact_ports_and_path_on_two_level_tree():
    t = tree(2, [4, 4], [1, 2])
    r = dmodk(t)
    s10, s21, s11 = t.node("s1_0"), t.node("s2_1"), t.node("s1_1")
    # h5 has position 5, label (1, 1): up slot 5 mod 2 = 1 -> port 4 + 1 + 1
    assert r.entry(s10, 5) == 6
    assert r.entry(s21, 5) == 2  # down to the child with digit 1
    assert r.entry(s11, 5) == 2  # down to the host with digit 1
    assert r.describe(0, 5) == "h0 -> s1_0 -> s2_1 -> s1_1 -> h5"
    assert r.describe(0, 4) == "h0 -> s1_0 -> s2_0 -> s1_1 -> h4"
    assert r.describe(2, 1) == "h2 -> s1_0 -> h1"
    ch = r.path(0, 5)
    assert ch == [int(t.out_channel[n, p]) for n, p in
                  [(t.node("h0"), 1), (s10, 6), (s21, 2), (s11, 2)]]


def simgrid_walk(levels, down, up, parallel, src, dst):
    """SimGrid 3.32's FatTreeZone, transcribed literally: labels, the parents/children
    arrays filled by connect_node_to_parents, and get_local_route's two loops.

    Returns the hops as (level, position, array, index): the node left and the slot
    taken in its ``parents`` ("up") or ``children`` ("down") array.
    """
    counts = [prod(down)] + [prod(up[: i + 1]) * prod(down[i + 1 :]) for i in range(levels)]

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
    parents, children = {}, {}
    for lv in range(levels):
        for pos in range(counts[lv]):
            parents[lv, pos] = [None] * (up[lv] * parallel[lv])
        for ppos in range(counts[lv + 1]):
            children[lv + 1, ppos] = [None] * (down[lv] * parallel[lv])
    for lv in range(levels):  # connect_node_to_parents
        for pos in range(counts[lv]):
            for ppos in range(counts[lv + 1]):
                pl, cl = lab[lv + 1][ppos], lab[lv][pos]
                if all(pl[i] == cl[i] or i == lv for i in range(levels)):
                    for j in range(parallel[lv]):
                        children[lv + 1, ppos][cl[lv] + j * down[lv]] = (lv, pos)
                        parents[lv, pos][pl[lv] + j * up[lv]] = (lv + 1, ppos)

    def in_sub_tree(root, node):
        (rl, rp), (nl, np_) = root, node
        if rl <= nl:
            return False
        return all(lab[rl][rp][i] == lab[nl][np_][i] for i in range(nl)) and all(
            lab[rl][rp][i] == lab[nl][np_][i] for i in range(rl, levels))

    dest, cur, hops = (0, dst), (0, src), []
    while not in_sub_tree(cur, dest):
        d = dst
        for i in range(cur[0]):
            d //= up[i]  # num_parents_per_node_[i]: no cable count in 3.32
        d %= up[cur[0]] * parallel[cur[0]]
        hops.append((*cur, "up", d))
        cur = parents[cur][d]
    while cur != dest:
        d = src % parallel[cur[0] - 1]
        i = d * down[cur[0] - 1]
        while i < len(children.get(cur, [])):  # the scan has no `break`, as in SimGrid
            if i % down[cur[0] - 1] == lab[0][dst][cur[0] - 1]:
                hops.append((*cur, "down", i))
                cur = children[cur][i]
            i += 1
    return hops


def _channels(t, hops):
    """The walk's hops as netsteer channels, through pgft's port numbering."""
    meta = t.meta
    down, par = meta["down"], meta["parallel"]
    out = []
    for lv, pos, way, i in hops:
        name = f"h{pos}" if lv == 0 else f"s{lv}_{pos}"
        below = down[lv - 1] * par[lv - 1] if lv > 0 else 0
        port = below + 1 + i if way == "up" else 1 + i
        out.append(int(t.out_channel[t.node(name), port]))
    return out


def d_label(t, host, digit):
    return int(np.asarray(t.meta["labels"])[t.host_node(host)][digit])


TREES = [
    (2, [4, 4], [1, 2], [1, 1]),
    (3, [2, 2, 2], [1, 2, 2], [1, 1, 1]),
    (3, [2, 3, 2], [2, 2, 3], [1, 1, 1]),
    (1, [5], [1], [1]),
    (2, [4, 4], [1, 2], [1, 2]),
    (2, [4, 4], [1, 2], [2, 1]),
    (2, [2, 3], [2, 2], [2, 3]),
    (3, [4, 2, 2], [2, 2, 2], [2, 2, 2]),
    (3, [3, 2, 4], [2, 3, 2], [3, 2, 2]),
]


@pytest.mark.parametrize("levels,down,up,par", TREES, ids=str)
def test_matches_simgrid_walk_for_all_pairs(levels, down, up, par):
    """Nodes and up cables always SimGrid's; down cables SimGrid's on single-cable
    bundles and the documented mirror rule on bundles of parallel cables.
    SimGridFatTreeRoutes is SimGrid's walk cable for cable."""
    t = tree(levels, down, up, par)
    r, sg = dmodk(t), SimGridFatTreeRoutes(t)
    r.check()
    n = t.n_hosts
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    off, ch = r.paths(src, dst)
    soff, sch = sg.paths(src, dst)
    cdst, clev = t.channel_dst(), t.node_level[t.channel_dst()]
    pos = np.asarray(t.meta["position"])
    differ = 0
    for k, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        if s == d:
            assert off[k] == off[k + 1] and soff[k] == soff[k + 1]
            continue
        hops = simgrid_walk(levels, down, up, par, s, d)
        want = _channels(t, hops)
        ours = ch[off[k] : off[k + 1]].tolist()
        assert sch[soff[k] : soff[k + 1]].tolist() == want, (s, d)
        assert [cdst[c] for c in ours] == [cdst[c] for c in want], (s, d)  # same nodes
        for (lv, _, way, _), a, b in zip(hops, ours, want):
            if way == "up" or par[lv - 1] == 1:
                assert a == b, (s, d, lv, way)
            else:  # cable (p // prod_{i<lv} up[i]) mod parallel[lv-1] of the bundle
                j = (int(pos[t.host_node(d)]) // prod(up[:lv])) % par[lv - 1]
                node = int(t.channel_src()[a])
                assert int(t.channel_src_port()[a]) == 1 + d_label(t, d, lv - 1) + j * down[lv - 1]
                assert node == int(t.channel_src()[b])
                differ += a != b
    if all(p == 1 for p in par):
        assert differ == 0



def test_up_divisor_is_simgrid_3_32s():
    # parallel=[2,1]: h6 is reached through root (6 // up[0]) mod 2 = 0, not
    # (6 // (up[0]*parallel[0])) mod 2 = 1; the host's cable is 6 mod 2 = 0
    t = tree(2, [4, 4], [1, 2], [2, 1])
    r = dmodk(t)
    assert r.describe(0, 6) == "h0 -> s1_0 -> s2_0 -> s1_1 -> h6"
    assert r.describe(0, 7) == "h0 -> s1_0 -> s2_1 -> s1_1 -> h7"
    assert r.entry(t.node("h0"), 6) == 1 and r.entry(t.node("h0"), 7) == 2
    assert r.entry(t.node("s1_0"), 6) == 8 + 1 + 0 and r.entry(t.node("s1_0"), 7) == 8 + 1 + 1


def test_parallel_cables_down_are_all_used():
    # parallel=[1,2]: each root reaches each leaf over 2 cables. The parent is
    # d mod 2 and the cable (d // 2) mod 2, so of the 4 hosts of a leaf, the 2 that a
    # root serves take one cable each (the old rule put both on one cable).
    t = tree(2, [4, 4], [1, 2], [1, 2])
    r = dmodk(t)
    for root in ("s2_0", "s2_1"):
        for leaf in range(4):
            ports = sorted(int(r.entry(t.node(root), d)) for d in range(4 * leaf, 4 * leaf + 4)
                           if (d % 2) == int(root[-1]))
            assert ports == [1 + leaf, 1 + leaf + 4], (root, leaf)
    # a shift by a leaf (h0..3 -> h4..7) loads every channel once
    load = r.channel_load(np.arange(4), np.arange(4, 8))
    assert load.max() == 1 and load.sum() == 4 * 4


def test_simgrid_routes_rejects_what_is_not_a_pgft():
    b = TopologyBuilder("pair")
    h0, h1, s = b.add_host("h0"), b.add_host("h1"), b.add_switch("s0")
    b.add_link(h0, s, bandwidth=1e9, latency_ns=0)
    b.add_link(h1, s, bandwidth=1e9, latency_ns=0)
    with pytest.raises(RoutingError, match="needs a PGFT"):
        SimGridFatTreeRoutes(b.build())


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
    assert r.node_rows([h0])[0].tolist() == [-1, 2, 1, 2]  # port 1 + (d mod 2)
