"""HyperX topologies (Ahn et al., SC'09): switches on a lattice, all-to-all per dimension.

Switches sit on a ``len(S)``-dimensional lattice with ``S[d]`` positions along
dimension ``d``. Two switches are joined when their coordinates differ in exactly one
dimension ``d``, by ``K[d]`` parallel cables (trunking). Each switch has ``T``
terminals (hosts). Minimal routes take at most one hop per dimension, so the switch
diameter is the number of dimensions with ``S[d] > 1``.

Numbering
---------
Switch ``i`` has coordinates ``c`` with ``c[0]`` varying fastest (little endian, like
the PGFT labels), and is named ``x<c0>_<c1>..``. Hosts come first, ``h0..``, ``T`` per
switch in switch order: host ``j`` hangs off switch ``j // T`` on its port
``1 + j % T``.

Switch ports: ``1..T`` are the hosts, then the dimension links, dimension by
dimension. Within dimension ``d`` the peers are the other ``S[d] - 1`` coordinate
values in increasing order, ``K[d]`` consecutive ports each::

    port = T + 1 + sum(K[e] * (S[e] - 1) for e < d) + rank * K[d] + k

where ``rank`` is the peer value's index among the values other than the switch's
own (``v`` if ``v < c[d]``, else ``v - 1``) and ``k`` is the trunk index.

Examples
--------
>>> t = hyperx([4, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=100)
>>> t.n_hosts, t.n_switches, t.n_links
(32, 16, 80)
>>> sw = t.node("x1_2")
>>> [t.node_names[p] for _, p, _ in t.neighbors(sw)][:5]
['h18', 'h19', 'x0_2', 'x2_2', 'x3_2']
>>> [int(c) for c in t.meta["coords"][sw]]
[1, 2]
"""

from __future__ import annotations

from math import prod

import numpy as np

from .digits import digits
from .model import Topology, TopologyBuilder


def check_hyperx(S: list[int], K: list[int], T: int) -> None:
    """Raise ``ValueError`` naming the parameter when the shape is impossible.

    >>> check_hyperx([4, 4], [1], 2)
    Traceback (most recent call last):
    ...
    ValueError: K has 1 entries but S has 2 dimensions; give one K per dimension or a single integer
    """
    if not S:
        raise ValueError("S must list at least one dimension, e.g. S=[4, 4]")
    if any(not _is_int(s) or s < 1 for s in S):
        raise ValueError(f"S entries must be positive integers, got {S}")
    if len(K) != len(S):
        raise ValueError(
            f"K has {len(K)} entries but S has {len(S)} dimensions; "
            "give one K per dimension or a single integer"
        )
    if any(not _is_int(k) or k < 1 for k in K):
        raise ValueError(f"K entries must be positive integers, got {K}")
    if not _is_int(T) or T < 1:
        raise ValueError(f"T (hosts per switch) must be a positive integer, got {T!r}")


def hyperx(
    S: list[int],
    K: int | list[int],
    T: int,
    *,
    link_bandwidth: float,
    link_latency_ns: int,
    host_bandwidth: float | None = None,
    name: str | None = None,
) -> Topology:
    """Build a HyperX.

    Parameters
    ----------
    S : list of int
        Switches per dimension.
    K : int or list of int
        Parallel cables between two switches of the same dimension, per dimension or
        one value for all.
    T : int
        Hosts (terminals) per switch.
    link_bandwidth : float
        Bits per second of each switch-to-switch cable, each direction.
    link_latency_ns : int
        Latency of every cable.
    host_bandwidth : float, optional
        Bits per second of the host cables; defaults to ``link_bandwidth``.
    name : str, optional

    Returns
    -------
    Topology
        ``meta`` holds ``kind="hyperx"``, ``S``, ``K``, ``T``, ``coords`` (per node,
        ``[n_nodes, len(S)]``; a host row holds its switch's coordinates),
        ``host_switch`` (switch node of each host index), ``switch_at`` (array of
        shape ``S``, node id at each coordinate) and ``dim_port_base`` (first port
        of each dimension's links).

    Examples
    --------
    >>> t = hyperx([3], [2], 1, link_bandwidth=1e9, link_latency_ns=0)
    >>> t.n_links  # 3 hosts + 3 pairs x 2 trunks
    9
    >>> t.port_peer(t.node("x0"), 2), t.port_peer(t.node("x0"), 3)
    ((4, 2), (4, 3))
    """
    S = [int(s) if _is_int(s) else s for s in S]
    K = [K] * len(S) if _is_int(K) else list(K)
    check_hyperx(S, K, T)
    if not link_bandwidth > 0:
        raise ValueError(f"link_bandwidth must be positive, got {link_bandwidth!r}")
    host_bw = link_bandwidth if host_bandwidth is None else host_bandwidth
    if not host_bw > 0:
        raise ValueError(f"host_bandwidth must be positive, got {host_bandwidth!r}")

    n_sw = prod(S)
    coords = digits(n_sw, S)
    strides = np.cumprod([1] + S[:-1]).astype(np.int64)
    dim_base = [T + 1]
    for d in range(len(S) - 1):
        dim_base.append(dim_base[-1] + K[d] * (S[d] - 1))

    b = TopologyBuilder(name or f"hyperx-S{S}-K{K}-T{T}")
    for j in range(n_sw * T):
        b.add_host(f"h{j}")
    first_sw = n_sw * T
    for i in range(n_sw):
        b.add_switch("x" + "_".join(str(int(c)) for c in coords[i]), level=1)

    for i in range(n_sw):
        for t in range(T):
            b.add_link(i * T + t, first_sw + i, bandwidth=host_bw,
                       latency_ns=link_latency_ns, a_port=1, b_port=1 + t)
    for i in range(n_sw):
        for d, s in enumerate(S):
            own = int(coords[i, d])
            for v in range(own + 1, s):  # each pair once, from its lower end
                j = i + (v - own) * int(strides[d])
                for k in range(K[d]):
                    b.add_link(
                        first_sw + i, first_sw + j,
                        bandwidth=link_bandwidth, latency_ns=link_latency_ns,
                        a_port=dim_base[d] + (v - 1) * K[d] + k,
                        b_port=dim_base[d] + own * K[d] + k,
                    )

    node_coords = np.concatenate([np.repeat(coords, T, axis=0), coords])
    b.meta = {
        "kind": "hyperx",
        "S": S,
        "K": K,
        "T": T,
        "coords": node_coords,
        "host_switch": np.repeat(np.arange(n_sw, dtype=np.int32) + first_sw, T),
        "switch_at": (np.arange(n_sw, dtype=np.int32) + first_sw).reshape(S, order="F"),
        "dim_port_base": dim_base,
    }
    return b.build()


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
