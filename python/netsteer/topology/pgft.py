"""Parallel Generalized Fat-Trees (PGFT), with SimGrid's FAT_TREE parameters.

``levels``, ``down`` (children per switch, per level), ``up`` (parents per node, per
level) and ``parallel`` (cables between a node and each parent, per level) mean what
SimGrid's ``levels;down;up;parallel`` means, and nodes are labelled and connected in
the same order, so a D-mod-K route here is the route SimGrid takes.

A node at level ``l`` (hosts are level 0) has a label of ``levels`` digits, little
endian: digit ``i`` counts to ``up[i]`` for ``i < l`` and to ``down[i]`` otherwise. A
parent and a child are joined when their labels agree everywhere but digit ``l``.

Examples
--------
>>> t = pgft(levels=2, down=[4, 4], up=[1, 2], parallel=[1, 1],
...          link_bandwidth=10e9, link_latency_ns=1000)
>>> t.n_hosts, t.n_switches, t.n_links
(16, 6, 24)
>>> [int(x) for x in t.meta["nodes_by_level"]]
[16, 4, 2]
"""

from __future__ import annotations

from math import prod

import numpy as np

from .digits import digits
from .model import Topology, TopologyBuilder


def level_radices(levels: int, down: list[int], up: list[int], level: int) -> list[int]:
    """Radix of each label digit for nodes at ``level``."""
    return [up[i] if i < level else down[i] for i in range(levels)]


def nodes_by_level(levels: int, down: list[int], up: list[int]) -> list[int]:
    return [prod(level_radices(levels, down, up, lv)) for lv in range(levels + 1)]


def check_pgft(levels: int, down: list[int], up: list[int], parallel: list[int]) -> None:
    """Raise ``ValueError`` naming the parameter when the shape is impossible."""
    if not isinstance(levels, int) or levels < 1:
        raise ValueError(f"levels must be a positive integer, got {levels!r}")
    for name, vec in (("down", down), ("up", up), ("parallel", parallel)):
        if len(vec) != levels:
            raise ValueError(
                f"{name} has {len(vec)} entries but levels is {levels}; give one per level"
            )
        if any((not isinstance(v, int)) or v < 1 for v in vec):
            raise ValueError(f"{name} entries must be positive integers, got {vec}")


def pgft(
    levels: int,
    down: list[int],
    up: list[int],
    parallel: list[int] | None = None,
    *,
    link_bandwidth: float | list[float],
    link_latency_ns: int | list[int],
    name: str | None = None,
) -> Topology:
    """Build a PGFT.

    Parameters
    ----------
    levels : int
        Number of switch levels.
    down, up, parallel : list of int
        Per level, as in SimGrid's FAT_TREE. ``parallel`` defaults to all ones.
    link_bandwidth : float or list of float
        Bits per second, for every level or one per level (level 0 is the host links).
    link_latency_ns : int or list of int
        Per cable, for every level or one per level.

    Returns
    -------
    Topology
        Hosts ``h0..`` in SimGrid's order, then switches ``s<level>_<position>``.
        ``meta`` holds ``labels`` (per node), ``position`` and ``nodes_by_level``.

    Examples
    --------
    >>> t = pgft(2, [2, 2], [1, 1], link_bandwidth=1e9, link_latency_ns=0)
    >>> node, port = t.port_peer(t.node("h3"), 1)
    >>> t.node_names[node], port
    ('s1_1', 2)
    """
    down, up = list(down), list(up)
    # down's length, not levels (checked against it next): a huge levels makes no huge list
    parallel = list(parallel) if parallel is not None else [1] * len(down)
    check_pgft(levels, down, up, parallel)
    bw = _per_level(link_bandwidth, levels, "link_bandwidth")
    lat = _per_level(link_latency_ns, levels, "link_latency")
    counts = nodes_by_level(levels, down, up)

    b = TopologyBuilder(name or f"pgft-{levels};{down};{up};{parallel}")
    first: list[int] = []  # node id of position 0 at each level
    labels: list[np.ndarray] = []
    for lv in range(levels + 1):
        radices = level_radices(levels, down, up, lv)
        first.append(len(b.names))
        for pos in range(counts[lv]):
            if lv == 0:
                b.add_host(f"h{pos}")
            else:
                b.add_switch(f"s{lv}_{pos}", level=lv)
        labels.append(digits(counts[lv], radices))

    for lv in range(levels):
        strides = _strides(level_radices(levels, down, up, lv + 1))
        below = down[lv - 1] * parallel[lv - 1] if lv > 0 else 0
        for pos in range(counts[lv]):
            label = labels[lv][pos]
            base = int((label * strides).sum() - label[lv] * strides[lv])
            for u in range(up[lv]):
                ppos = base + u * int(strides[lv])
                for j in range(parallel[lv]):
                    b.add_link(
                        first[lv] + pos,
                        first[lv + 1] + ppos,
                        bandwidth=bw[lv],
                        latency_ns=lat[lv],
                        a_port=below + 1 + u + j * up[lv],
                        b_port=1 + int(label[lv]) + j * down[lv],
                    )
    b.meta = {
        "kind": "pgft",
        "levels": levels,
        "down": down,
        "up": up,
        "parallel": parallel,
        "nodes_by_level": counts,
        "first_node": first,
        "labels": np.concatenate(labels),
        "position": np.concatenate([np.arange(c) for c in counts]),
    }
    return b.build()


def _strides(radices: list[int]) -> np.ndarray:
    s = np.ones(len(radices), dtype=np.int64)
    for i in range(1, len(radices)):
        s[i] = s[i - 1] * radices[i - 1]
    return s


def _per_level(value, levels: int, what: str) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != levels:
            raise ValueError(f"{what} has {len(value)} entries but levels is {levels}")
        return list(value)
    return [value] * levels
