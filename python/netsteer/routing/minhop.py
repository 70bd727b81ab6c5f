"""Min-hop routing with OpenSM's port balancing.

Every switch forwards on a port that lies on a shortest path (in switch hops) to the
destination. Among equal-cost ports it takes the one that already carries the fewest
destinations, ties to the lowest port, processing destinations in host-index order:
OpenSM's ``minhop`` engine, with per-switch counters.

Examples
--------
A ring of four switches, one host each. h2 is two hops from s0 both ways; s0's port
to s1 already carries h1, so h2 goes by the idle port to s3. At s1, h3 is two hops
both ways and both ring ports carry one destination: the tie goes to port 1 (s0).

>>> from netsteer.topology.model import TopologyBuilder
>>> b = TopologyBuilder("ring")
>>> sw = [b.add_switch(f"s{i}") for i in range(4)]
>>> for i in range(4):
...     _ = b.add_link(sw[i], sw[(i + 1) % 4], bandwidth=1e9, latency_ns=0)
>>> for i in range(4):
...     _ = b.add_link(b.add_host(f"h{i}"), sw[i], bandwidth=1e9, latency_ns=0)
>>> t = b.build()
>>> r = minhop(t)
>>> r.describe(0, 2), r.describe(1, 3)
('h0 -> s0 -> s3 -> s2 -> h2', 'h1 -> s1 -> s0 -> s3 -> h3')
"""

from __future__ import annotations

import numpy as np

from ..topology.model import Topology
from ._hops import MinHop
from .table import Routing


def minhop(topo: Topology, circuits: dict | None = None, down_links=()) -> Routing:
    """Shortest-path tables, balanced by port-usage counters.

    Parameters
    ----------
    topo : Topology
    circuits : dict of int to array_like, optional
        Circuit switch pairings to route across (a pair joins its two peers).
    down_links : iterable of int, optional
        Links that are down: routes avoid them.

    Returns
    -------
    Routing
        No ECMP groups; single-homed hosts have no row (they use their only port).
    """
    hs = MinHop(topo, circuits, down_links)
    sources, entry, groups = hs.candidates()
    entry = least_used(entry, groups, topo.out_channel.shape[1])
    return Routing(topo, entry, rows=sources, engine="minhop", down_links=down_links)


def least_used(entry: np.ndarray, groups: list, n_slots: int, rows_per_chunk: int = 4096) -> np.ndarray:
    """Replace each group entry by one member: least-used port, ties to the lowest.

    Counters are per row (switch) and count destinations routed through each port,
    in destination order. Rows whose groups neither overlap each other nor a single
    port the row uses reduce to round-robin per group, done in one vectorised pass;
    other rows are walked destination by destination.

    Examples
    --------
    >>> least_used(np.array([[-2, 3, -2, -2]]), [np.array([1, 2])], 4).tolist()
    [[1, 3, 2, 1]]
    >>> least_used(np.array([[-2, 1, -2, -3]]), [np.array([1, 2]), np.array([2, 3])], 4).tolist()
    [[1, 1, 2, 3]]
    """
    out = np.array(entry, dtype=np.int32, copy=True)
    G = len(groups)
    if G == 0:
        return out
    S, H = out.shape
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    gptr = np.concatenate([[0], np.cumsum(sizes)])
    gports = np.concatenate(groups).astype(np.int32)
    gmask = np.zeros((G, n_slots), dtype=np.int64)
    for g, ports in enumerate(groups):
        gmask[g, ports] = 1
    slow_rows = []
    step = max(1, min(rows_per_chunk, (1 << 19) // max(H, G * 8, 1)))
    for a in range(0, S, step):
        e = out[a : a + step]
        n = len(e)
        flat = e.reshape(-1)
        gpos = np.flatnonzero(flat <= -2)
        if gpos.size == 0:
            continue
        row, g = gpos // H, -2 - flat[gpos].astype(np.int64)
        spos = np.flatnonzero(flat >= 0)
        used = np.bincount(spos // H * n_slots + flat[spos], minlength=n * n_slots) > 0
        appear = np.bincount(row * G + g, minlength=n * G).reshape(n, G) > 0
        cover = used.reshape(n, n_slots).astype(np.int64) + appear.astype(np.int64) @ gmask
        fast = cover.max(axis=1) <= 1
        # fast rows: the k-th destination using group g at a row gets member k mod |g|
        m = fast[row]
        gm, rm, pm = g[m], row[m], gpos[m]
        rank = np.empty(gm.size, dtype=np.int64)
        for gg in np.unique(gm):  # positions are in (row, destination) order already
            sel = np.flatnonzero(gm == gg)
            r = rm[sel]
            start = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
            rank[sel] = np.arange(sel.size) - np.repeat(start, np.diff(np.r_[start, sel.size]))
        flat[pm] = gports[gptr[gm] + rank % sizes[gm]]
        slow_rows.extend((a + np.flatnonzero(~fast)).tolist())
    if slow_rows:
        _sequential(out, np.array(slow_rows), groups, n_slots)
    return out


def _sequential(out: np.ndarray, rows: np.ndarray, groups: list, n_slots: int) -> None:
    """Destination by destination, each row with its own counters (in Rust: a row's
    choices depend on all its earlier ones, so it is a sequential walk)."""
    from .._core import least_used_rows

    start = np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64)
    ports = np.concatenate(groups).astype(np.int32)
    least_used_rows(out, np.asarray(rows, dtype=np.int64), start, ports, n_slots)
