"""HyperX topologies (Ahn et al., SC'09), optionally with circuit switches in chosen links.

Switches sit on a ``len(S)``-dimensional lattice with ``S[d]`` positions along
dimension ``d``. Two switches are joined when their coordinates differ in exactly one
dimension ``d``, by ``K[d]`` parallel cables (trunking). Each switch has ``T``
terminals (hosts). Minimal routes take at most one hop per dimension, so the switch
diameter is the number of dimensions with ``S[d] > 1``. A switch needs
``T + sum(K[d] * (S[d] - 1))`` ports; with ``radix`` given, a shape that needs more
is refused.

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

Circuit switches (the flexible HyperX)
--------------------------------------
A :class:`CircuitSpec` inserts a circuit switch (silicon photonics, MEMS) into
chosen switch-to-switch cables: cable ``a - b`` becomes ``a - C`` and ``C - b``
(the packet switches keep their port numbers; each half has the cable's bandwidth
and half its latency). The ``n``-th cable given gets circuit ports ``2n + 1`` (the
lower-numbered switch's end) and ``2n + 2``, paired together at first, so the
network starts as the plain HyperX. Re-pairing the ports (an ``SetCircuits``
intent) re-wires those cables: ports ``1..2n`` can be paired any way, and the moved
ports are dark for ``switching_time_ns``. The first pairing is in
``meta["initial_circuits"]``: what routing and the simulator assume until told
otherwise. Circuit switches are named ``sip0..`` unless named.

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

The source document's flexible HyperX: two fully meshed groups of four switches,
two servers each, the four links between the groups through one SiP switch:

>>> f = hyperx([2, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=100,
...            circuits=[CircuitSpec(dim=0, switching_time_ns=10_000)])
>>> f.summary()["circuit_switches"], f.n_links  # 16 hosts + 12 mesh + 4 x 2 halves
(1, 36)
>>> sip = f.node("sip0")
>>> [f.node_names[p] for _, p, _ in f.neighbors(sip)]
['x0_0', 'x1_0', 'x0_1', 'x1_1', 'x0_2', 'x1_2', 'x0_3', 'x1_3']
>>> f.meta["initial_circuits"][sip][1:9].tolist()
[2, 1, 4, 3, 6, 5, 8, 7]
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from .digits import digits
from .model import Topology, TopologyBuilder


@dataclass(frozen=True)
class CircuitSpec:
    """A circuit switch inserted into HyperX cables.

    Parameters
    ----------
    links : tuple of (a, b) or (a, b, k)
        The cables it carries: switch names (``"x0_1"``) or switch indices (lattice
        order), and the trunk ``k`` (default 0) when ``K > 1``.
    dim : int, optional
        Instead of (or besides) ``links``: every cable of dimension ``dim`` (all
        trunks), in switch order.
    switching_time_ns : int
        How long moved ports stay dark.
    name : str, optional
        Default ``sip<i>``.
    """

    links: tuple = ()
    dim: int | None = None
    switching_time_ns: int = 0
    name: str | None = None


def paired_lines(S: list[int], per_switch: int, switching_time_ns: int) -> list[CircuitSpec]:
    """Circuit switches over pairs of parallel lines of a 2-D HyperX.

    Lines of dimension ``d`` (switches sharing the other coordinate) are taken two
    by two (``2m``, ``2m + 1``); the cables ``x_{2i} - x_{2i+1}`` along both lines go
    into circuit switches, ``per_switch`` cables each. Re-pairing can then join two
    switches of different lines directly (a diagonal, one hop instead of two), as
    the source's SiP switch joins its two groups.

    >>> specs = paired_lines([16, 16], 8, 10_000)
    >>> len(specs), len(specs[0].links), specs[0].links[:2]
    (32, 8, (('x0_0', 'x1_0'), ('x2_0', 'x3_0')))
    """
    if len(S) != 2:
        raise ValueError(f"paired_lines takes a 2-D HyperX, got S={S}")
    specs = []
    for d in (0, 1):
        o = 1 - d
        for m in range(S[o] // 2):
            cables = []
            for line in (2 * m, 2 * m + 1):
                for i in range(S[d] // 2):
                    a, b = [0, 0], [0, 0]
                    a[d], b[d], a[o], b[o] = 2 * i, 2 * i + 1, line, line
                    cables.append((f"x{a[0]}_{a[1]}", f"x{b[0]}_{b[1]}"))
            for k in range(0, len(cables), per_switch):
                specs.append(CircuitSpec(links=tuple(cables[k:k + per_switch]), switching_time_ns=switching_time_ns,
                                         name=f"sip_d{d}_l{2 * m}_{k // per_switch}"))
    return specs


def switch_radix(S: list[int], K: list[int], T: int) -> int:
    """Ports a HyperX switch needs: ``T + sum(K[d] * (S[d] - 1))``.

    >>> switch_radix([16, 16], [1, 1], 4)
    34
    """
    return T + sum(k * (s - 1) for s, k in zip(S, K))


def check_hyperx(S: list[int], K: list[int], T: int, radix: int | None = None) -> None:
    """Raise ``ValueError`` naming the parameter when the shape is impossible.

    >>> check_hyperx([4, 4], [1], 2)
    Traceback (most recent call last):
    ...
    ValueError: K has 1 entries but S has 2 dimensions; give one K per dimension or a single integer
    >>> check_hyperx([8, 8], [2, 2], 4, radix=24)
    Traceback (most recent call last):
    ...
    ValueError: radix is 24 but S=[8, 8], K=[2, 2], T=4 need 32 ports per switch (T + sum(K*(S-1)) = 4 + 28); use fewer terminals, less trunking or smaller dimensions
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
    if radix is not None:
        if not _is_int(radix) or radix < 1:
            raise ValueError(f"radix must be a positive integer, got {radix!r}")
        need = switch_radix(S, K, T)
        if need > radix:
            links = need - T
            raise ValueError(
                f"radix is {radix} but S={list(S)}, K={list(K)}, T={T} need {need} ports per switch "
                f"(T + sum(K*(S-1)) = {T} + {links}); use fewer terminals, less trunking or smaller dimensions"
            )


def hyperx(
    S: list[int],
    K: int | list[int],
    T: int,
    *,
    link_bandwidth: float,
    link_latency_ns: int,
    host_bandwidth: float | None = None,
    radix: int | None = None,
    circuits: list[CircuitSpec] | None = None,
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
    radix : int, optional
        Ports per packet switch; the shape must fit (see :func:`check_hyperx`).
    circuits : list of CircuitSpec, optional
        Circuit switches inserted into chosen cables (see the module text).
    name : str, optional

    Returns
    -------
    Topology
        ``meta`` holds ``kind="hyperx"``, ``S``, ``K``, ``T``, ``coords`` (per node,
        ``[n_nodes, len(S)]``; a host row holds its switch's coordinates, a circuit
        switch's row is -1), ``host_switch`` (switch node of each host index),
        ``switch_at`` (array of shape ``S``, node id at each coordinate),
        ``dim_port_base`` (first port of each dimension's links), ``radix`` (given
        or needed), and with circuits ``circuit_switches`` (node ids),
        ``circuit_cables`` (per circuit switch, ``[n, 4]``: switch node, its port,
        peer switch node, its port, of each cable carried) and
        ``initial_circuits`` (circuit node -> pairing array, ``out = pairing[in]``).

    Raises
    ------
    ValueError
        Naming the parameter: impossible shapes, a radix too small, a circuit
        switch on a cable that does not exist or on a cable already taken.

    Examples
    --------
    >>> t = hyperx([3], [2], 1, link_bandwidth=1e9, link_latency_ns=0)
    >>> t.n_links  # 3 hosts + 3 pairs x 2 trunks
    9
    >>> t.port_peer(t.node("x0"), 2), t.port_peer(t.node("x0"), 3)
    ((4, 2), (4, 3))
    >>> hyperx([4, 4], 1, 1, link_bandwidth=1e9, link_latency_ns=0,
    ...        circuits=[CircuitSpec(links=(("x0_0", "x1_1"),))])
    Traceback (most recent call last):
    ...
    ValueError: circuits[0].links[0]: there is no cable x0_0 - x1_1: they differ in 2 dimensions
    """
    S = [int(s) if _is_int(s) else s for s in S]
    K = [K] * len(S) if _is_int(K) else list(K)
    check_hyperx(S, K, T, radix)
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
    sw_names = ["x" + "_".join(str(int(c)) for c in coords[i]) for i in range(n_sw)]

    # every switch-to-switch cable once, from its lower end: (i, j, port at i, port at j, dim, k)
    cables: list[tuple[int, int, int, int, int, int]] = []
    for i in range(n_sw):
        for d, s in enumerate(S):
            own = int(coords[i, d])
            for v in range(own + 1, s):
                j = i + (v - own) * int(strides[d])
                for k in range(K[d]):
                    cables.append((i, j, dim_base[d] + (v - 1) * K[d] + k, dim_base[d] + own * K[d] + k, d, k))
    carried = _circuit_cables(circuits or [], cables, coords, K, sw_names)

    b = TopologyBuilder(name or f"hyperx-S{S}-K{K}-T{T}")
    for j in range(n_sw * T):
        b.add_host(f"h{j}")
    first_sw = n_sw * T
    for i in range(n_sw):
        b.add_switch(sw_names[i], level=1)
    specs = circuits or []
    cnodes = []
    for c, spec in enumerate(specs):
        if not _is_int(spec.switching_time_ns) or spec.switching_time_ns < 0:
            raise ValueError(f"circuits[{c}].switching_time must be >= 0, got {spec.switching_time_ns!r}")
        try:
            cnodes.append(b.add_circuit_switch(spec.name or f"sip{c}", int(spec.switching_time_ns)))
        except ValueError as e:
            raise ValueError(f"circuits[{c}].name: {getattr(e, 'reason', e)}") from None

    for i in range(n_sw):
        for t in range(T):
            b.add_link(i * T + t, first_sw + i, bandwidth=host_bw,
                       latency_ns=link_latency_ns, a_port=1, b_port=1 + t)
    owner = {cab: (c, n) for c, cabs in enumerate(carried) for n, cab in enumerate(cabs)}
    half_a, half_b = link_latency_ns // 2, link_latency_ns - link_latency_ns // 2
    circuit_cables = [np.zeros((len(cabs), 4), dtype=np.int32) for cabs in carried]
    initial = {}
    for x, (i, j, pi, pj, d, k) in enumerate(cables):
        if x not in owner:
            b.add_link(first_sw + i, first_sw + j, bandwidth=link_bandwidth,
                       latency_ns=link_latency_ns, a_port=pi, b_port=pj)
            continue
        c, n = owner[x]
        b.add_link(first_sw + i, cnodes[c], bandwidth=link_bandwidth, latency_ns=half_a,
                   a_port=pi, b_port=2 * n + 1)
        b.add_link(first_sw + j, cnodes[c], bandwidth=link_bandwidth, latency_ns=half_b,
                   a_port=pj, b_port=2 * n + 2)
        circuit_cables[c][n] = (first_sw + i, pi, first_sw + j, pj)
    for c, node in enumerate(cnodes):
        width = max(switch_radix(S, K, T), 2 * len(carried[c])) + 1
        pairing = np.full(width, -1, dtype=np.int64)
        for n in range(len(carried[c])):
            pairing[2 * n + 1], pairing[2 * n + 2] = 2 * n + 2, 2 * n + 1
        initial[node] = pairing

    n_nodes = first_sw + n_sw + len(cnodes)
    node_coords = np.full((n_nodes, len(S)), -1, dtype=np.int64)
    node_coords[: first_sw + n_sw] = np.concatenate([np.repeat(coords, T, axis=0), coords])
    b.meta = {
        "kind": "hyperx",
        "S": S,
        "K": K,
        "T": T,
        "radix": int(radix) if radix is not None else switch_radix(S, K, T),
        "coords": node_coords,
        "host_switch": np.repeat(np.arange(n_sw, dtype=np.int32) + first_sw, T),
        "switch_at": (np.arange(n_sw, dtype=np.int32) + first_sw).reshape(S, order="F"),
        "dim_port_base": dim_base,
    }
    if cnodes:
        b.meta.update(circuit_switches=np.array(cnodes, dtype=np.int32),
                      circuit_cables=circuit_cables, initial_circuits=initial)
    topo = b.build()
    # the pairing arrays span the topology's port slots (what CircuitState holds)
    width = topo.out_channel.shape[1]
    for node, p in initial.items():
        full = np.full(width, -1, dtype=np.int64)
        n = min(len(p), width)
        full[:n] = p[:n]
        initial[node] = full
    return topo


def _circuit_cables(specs, cables, coords, K, names) -> list[list[int]]:
    """Cable indices each circuit switch carries, checked."""
    index = {n: i for i, n in enumerate(names)}
    by_ends: dict[tuple[int, int, int], int] = {}
    for x, (i, j, _, _, _, k) in enumerate(cables):
        by_ends[(i, j, k)] = x
    taken: dict[int, int] = {}
    out = []
    for c, spec in enumerate(specs):
        if not isinstance(spec, CircuitSpec):
            raise ValueError(f"circuits[{c}] must be a CircuitSpec, got {type(spec).__name__}")
        mine: list[int] = []
        source: list[str] = []  # what put each cable in ``mine``, for errors
        if spec.dim is not None:
            if not _is_int(spec.dim) or not 0 <= spec.dim < coords.shape[1]:
                raise ValueError(f"circuits[{c}].dim must be a dimension 0..{coords.shape[1] - 1}, got {spec.dim!r}")
            mine += [x for x, cab in enumerate(cables) if cab[4] == spec.dim]
            source += [f"dim {spec.dim}"] * len(mine)
        for n, ref in enumerate(spec.links):
            where = f"circuits[{c}].links[{n}]"
            if not isinstance(ref, (list, tuple)) or len(ref) not in (2, 3):
                raise ValueError(f"{where}: expected [switch, switch] or [switch, switch, trunk], got {ref!r}")
            ends = []
            for e in ref[:2]:
                if isinstance(e, str):
                    if e not in index:
                        raise ValueError(f"{where}: no switch named {e!r} (switches are x<c0>_<c1>..)")
                    ends.append(index[e])
                elif _is_int(e) and 0 <= e < len(names):
                    ends.append(int(e))
                else:
                    raise ValueError(f"{where}: {e!r} is not a switch (a name or an index 0..{len(names) - 1})")
            k = ref[2] if len(ref) == 3 else 0
            i, j = sorted(ends)
            diff = int((coords[i] != coords[j]).sum())
            if diff != 1:
                why = "it is the same switch" if diff == 0 else f"they differ in {diff} dimensions"
                raise ValueError(f"{where}: there is no cable {names[ends[0]]} - {names[ends[1]]}: {why}")
            d = int(np.flatnonzero(coords[i] != coords[j])[0])
            if not _is_int(k) or not 0 <= k < K[d]:
                raise ValueError(f"{where}: trunk {k!r} does not exist: dimension {d} has K={K[d]} cables per pair")
            mine.append(by_ends[(i, j, int(k))])
            source.append(f"links[{n}]")
        if not mine:
            raise ValueError(f"circuits[{c}]: give links or dim: a circuit switch needs cables")
        seen: dict[int, str] = {}
        for x, src in zip(mine, source):
            if x in seen:  # the spec names the cable twice (dim and links may overlap)
                i, j = cables[x][:2]
                raise ValueError(f"circuits[{c}]: cable {names[i]} - {names[j]} is named twice, by {seen[x]} "
                                 f"and by {src}; name each cable once")
            seen[x] = src
        for x in mine:
            if x in taken:
                i, j = cables[x][:2]
                raise ValueError(f"circuits[{c}]: cable {names[i]} - {names[j]} already runs through circuits[{taken[x]}]")
            taken[x] = c
        out.append(mine)
    return out


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
