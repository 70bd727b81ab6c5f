"""Properties over random small PGFTs, for every engine."""

from math import prod

import numpy as np
import pytest

from netsteer.routing import build_routing
from netsteer.topology.pgft import pgft


def random_pgfts(count, seed=2024):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < count:
        levels = int(rng.integers(1, 4))
        down = [int(x) for x in rng.integers(1, 5, levels)]
        up = [int(x) for x in rng.integers(1, 4, levels)]
        par = [int(x) for x in rng.integers(1, 3, levels)]
        up[0] = min(up[0], 2)
        if not 2 <= prod(down) <= 48:
            continue
        out.append((levels, down, up, par))
    return out


@pytest.mark.parametrize("shape", random_pgfts(20))
@pytest.mark.parametrize("engine", ["dmodk", "minhop", "ecmp"])
def test_paths_reach_destination_without_repeats(shape, engine):
    levels, down, up, par = shape
    t = pgft(levels, down, up, par, link_bandwidth=1e9, link_latency_ns=0)
    params = {"hash": "flow"} if engine == "ecmp" else {}
    r = build_routing(t, engine, **params)
    r.check()
    n = t.n_hosts
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    off, ch = r.paths(src, dst)
    csrc, cdst = t.channel_src(), t.channel_dst()
    labels = t.meta["labels"]
    for i in range(n * n):
        c = ch[off[i] : off[i + 1]]
        s, d = int(src[i]), int(dst[i])
        if s == d:
            assert c.size == 0
            continue
        assert csrc[c[0]] == t.host_node(s)
        assert cdst[c[-1]] == t.host_node(d)
        assert (cdst[c[:-1]] == csrc[c[1:]]).all()
        assert len(set(c.tolist())) == c.size
        nodes = [t.host_node(s)] + cdst[c].tolist()
        assert len(set(nodes)) == len(nodes)
        # minimal: up to the lowest level whose subtree holds both hosts, and down
        ls, ld = labels[t.host_node(s)], labels[t.host_node(d)]
        common = min(lv for lv in range(1, levels + 1) if (ls[lv:] == ld[lv:]).all())
        assert c.size == 2 * common
