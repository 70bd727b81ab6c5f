"""Min-hop port sets (``MinHop.candidates``, which computes each set once per class of
hosts cabled to the same switches) against a breadth-first search per destination,
on fabrics with multi-homed hosts, parallel host cables, HyperX and dead cables."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from netsteer.routing._hops import MinHop
from netsteer.topology.hyperx import hyperx
from netsteer.topology.model import HOST
from netsteer.topology.pgft import pgft


def port_sets_by_bfs(topo, down=()):
    """{(node, host): set of ports} of least switch hops; hosts never forward."""
    dead = set(down)
    nbr = {}  # node -> [(port, peer)]
    for k in range(topo.n_links):
        if k in dead:
            continue
        a, b = int(topo.link_a[k]), int(topo.link_b[k])
        nbr.setdefault(a, []).append((int(topo.link_a_port[k]), b))
        nbr.setdefault(b, []).append((int(topo.link_b_port[k]), a))
    out = {}
    for h, node in enumerate(topo.hosts.tolist()):
        dist = {node: 0}
        q = deque([node])
        while q:  # backwards from the host; only switches pass it on
            x = q.popleft()
            if x != node and topo.node_kind[x] == HOST:
                continue
            for _, y in nbr.get(x, []):
                if y not in dist:
                    dist[y] = dist[x] + 1
                    q.append(y)
        for s in range(topo.n_nodes):
            if s == node:
                continue
            hops = [(dist[y], p) for p, y in nbr.get(s, []) if y in dist and (y == node or topo.node_kind[y] != HOST)]
            if hops:
                best = min(d for d, _ in hops)
                out[s, h] = {p for d, p in hops if d == best}
    return out


FABRICS = [
    pgft(2, [4, 4], [2, 2], [2, 1], link_bandwidth=1e9, link_latency_ns=0),  # dual-homed, parallel
    pgft(3, [2, 3, 4], [1, 2, 3], [1, 1, 2], link_bandwidth=1e9, link_latency_ns=0),
    pgft(2, [3, 5], [2, 1], [1, 2], link_bandwidth=1e9, link_latency_ns=0),
    hyperx([3, 4], [1, 2], 3, link_bandwidth=1e9, link_latency_ns=0),
]


@pytest.mark.parametrize("topo", FABRICS, ids=lambda t: t.name)
@pytest.mark.parametrize("cut", [0, 3])
def test_candidates_are_the_min_hop_ports(topo, cut):
    rng = np.random.default_rng(cut)
    down = tuple(sorted(rng.choice(topo.n_links, size=cut, replace=False).tolist()))
    sources, entry, groups = MinHop(topo, down_links=down).candidates()
    want = port_sets_by_bfs(topo, down)
    for i, s in enumerate(sources.tolist()):
        for h in range(topo.n_hosts):
            e = int(entry[i, h])
            got = set() if e == -1 else {e} if e >= 0 else set(groups[-2 - e].tolist())
            assert got == want.get((s, h), set()), (topo.node_names[s], h)
