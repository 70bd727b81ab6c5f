"""Topology metrics (bisection bandwidth, diameter, counts) and small pictures.

Bisection bandwidth
-------------------
The minimum bisection of a general graph is NP-hard, so :func:`bisection_bandwidth`
computes, exactly, the max-flow (= min-cut) across each of a few *balanced host
splits* and returns the smallest. The splits are

- hosts in index order, first half against second half: for a PGFT (SimGrid order)
  this cuts the top label digit, for a hybrid network the racks in halves;
- for a HyperX, one split per dimension: hosts sorted by that coordinate;
- hosts sorted by breadth-first order of their switch from the first switch, a
  locality-following split that helps on imported fabrics.

The flow runs from one half to the other; each cable carries up to its bandwidth in
that direction, hosts inject and absorb but never relay. Circuit switches relay like
non-blocking crossbars, so for a hybrid network the value is what the *best* circuit
configuration could carry (pass ``circuits=False`` for the electrical part alone).

The result is an upper bound on the true minimum bisection, and equals it for the
symmetric generated topologies (fat trees cut at the top, HyperX cut across a
dimension), where the tests check it against hand-computed values.

Examples
--------
>>> from netsteer.topology.hyperx import hyperx
>>> t = hyperx([4, 4], 1, 2, link_bandwidth=10e9, link_latency_ns=0)
>>> bisection_bandwidth(t) / 1e9  # (4/2)^2 cables x 4 rows x 10 Gbit/s
160.0
>>> describe(t)["diameter"]
2
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import NetsteerError
from ..units import format_bandwidth, format_duration
from .model import CIRCUIT, HOST, KIND_NAMES, SWITCH, Topology

MAX_DRAW_NODES = 512
MAX_ASCII_NODES = 256
MAX_DIAMETER_SWITCHES = 2048


# -- bisection ----------------------------------------------------------------------------
def bisection_splits(topo: Topology) -> list[tuple[str, np.ndarray]]:
    """Candidate host orders; each is split into first and second half.

    Returns ``(label, host_indices_in_order)`` pairs.

    >>> from netsteer.topology.pgft import pgft
    >>> [s for s, _ in bisection_splits(pgft(2, [2, 2], [1, 1], link_bandwidth=1e9,
    ...                                       link_latency_ns=0))]
    ['index order', 'switch BFS order']
    """
    n = topo.n_hosts
    out = [("index order", np.arange(n))]
    meta = topo.meta
    if meta.get("kind") == "hyperx":
        coords = np.asarray(meta["coords"])[topo.hosts]
        for d in range(coords.shape[1]):
            if meta["S"][d] > 1:
                keys = [coords[:, d]] + [coords[:, e] for e in range(coords.shape[1]) if e != d]
                out.append((f"dimension {d}", np.lexsort(keys[::-1])))
    out.append(("switch BFS order", _bfs_host_order(topo)))
    return out


def bisection_bandwidth(topo: Topology, *, circuits: bool = True) -> float:
    """Bisection bandwidth in bits/s (see the module text for the method).

    Parameters
    ----------
    topo : Topology
    circuits : bool
        Let flow cross circuit switches (as if configured at best); False drops them.

    Returns
    -------
    float
        0.0 for fewer than two hosts.

    Examples
    --------
    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=0)
    >>> bisection_bandwidth(t) / 1e9  # 2 bottom switches x 2 uplinks
    40.0
    """
    return bisection(topo, circuits=circuits)[0]


def bisection(topo: Topology, *, circuits: bool = True) -> tuple[float, str]:
    """``(bits/s, label of the split that gave it)``."""
    if topo.n_hosts < 2:
        return 0.0, "fewer than two hosts"
    best = (float("inf"), "")
    for label, order in bisection_splits(topo):
        half = np.zeros(topo.n_nodes, dtype=bool)  # True: sending half
        half[topo.hosts[order[: topo.n_hosts // 2]]] = True
        value = _cut_flow(topo, half, circuits)
        if value < best[0]:
            best = (value, label)
    return best


def _cut_flow(topo: Topology, send: np.ndarray, circuits: bool) -> float:
    n = topo.n_nodes
    src, dst = n, n + 1
    kind = topo.node_kind
    to: list[int] = []
    cap: list[float] = []
    adj: list[list[int]] = [[] for _ in range(n + 2)]

    def arc(u: int, v: int, c_uv: float, c_vu: float) -> None:
        adj[u].append(len(to))
        to.append(v)
        cap.append(c_uv)
        adj[v].append(len(to))
        to.append(u)
        cap.append(c_vu)

    for a, b, bw in zip(topo.link_a.tolist(), topo.link_b.tolist(), topo.link_bandwidth.tolist()):
        if not circuits and (kind[a] == CIRCUIT or kind[b] == CIRCUIT):
            continue
        # hosts only inject (sending half) or absorb (receiving half), never relay
        c_ab = 0.0 if (kind[a] == HOST and not send[a]) or (kind[b] == HOST and send[b]) else bw
        c_ba = 0.0 if (kind[b] == HOST and not send[b]) or (kind[a] == HOST and send[a]) else bw
        if c_ab or c_ba:
            arc(a, b, c_ab, c_ba)
    inf = float(topo.link_bandwidth.sum()) + 1.0
    for h in topo.hosts.tolist():
        if send[h]:
            arc(src, h, inf, 0.0)
        else:
            arc(h, dst, inf, 0.0)
    return _max_flow(adj, to, cap, src, dst, eps=1e-9 * float(topo.link_bandwidth.max(initial=0.0)))


def _max_flow(adj, to, cap, s: int, t: int, eps: float) -> float:
    """Dinic's algorithm; arcs come in pairs ``e``, ``e ^ 1``."""
    n = len(adj)
    total = 0.0
    while True:
        level = [-1] * n
        level[s] = 0
        q = deque([s])
        while q:
            u = q.popleft()
            for e in adj[u]:
                v = to[e]
                if cap[e] > eps and level[v] < 0:
                    level[v] = level[u] + 1
                    q.append(v)
        if level[t] < 0:
            return total
        it = [0] * n
        while True:
            path: list[int] = []
            u = s
            while u != t:
                arcs = adj[u]
                while it[u] < len(arcs):
                    e = arcs[it[u]]
                    if cap[e] > eps and level[to[e]] == level[u] + 1:
                        break
                    it[u] += 1
                if it[u] < len(arcs):
                    e = arcs[it[u]]
                    path.append(e)
                    u = to[e]
                    continue
                if u == s:
                    break
                level[u] = -1  # dead end for this phase
                e = path.pop()
                u = to[e ^ 1]
                it[u] += 1
            if u != t:
                break
            f = min(cap[e] for e in path)
            for e in path:
                cap[e] -= f
                cap[e ^ 1] += f
            total += f


def _bfs_host_order(topo: Topology) -> np.ndarray:
    """Hosts ordered by the BFS discovery of their first switch (unreached last)."""
    nbrs = _switch_neighbors(topo, circuits=True)
    rank = np.full(topo.n_nodes, np.iinfo(np.int64).max, dtype=np.int64)
    if len(topo.switches):
        order = 0
        for start in topo.switches.tolist():
            if rank[start] != np.iinfo(np.int64).max:
                continue
            rank[start] = order
            order += 1
            q = deque([start])
            while q:
                u = q.popleft()
                for v in nbrs[u]:
                    if rank[v] == np.iinfo(np.int64).max:
                        rank[v] = order
                        order += 1
                        q.append(v)
    host_rank = np.full(topo.n_hosts, np.iinfo(np.int64).max, dtype=np.int64)
    for a, b in zip(topo.link_a.tolist(), topo.link_b.tolist()):
        for h, s in ((a, b), (b, a)):
            if topo.node_kind[h] == HOST and topo.node_kind[s] != HOST:
                i = topo.host_index[h]
                host_rank[i] = min(host_rank[i], rank[s])
    return np.lexsort((np.arange(topo.n_hosts), host_rank))


def _switch_neighbors(topo: Topology, circuits: bool) -> dict[int, list[int]]:
    keep = (topo.node_kind == SWITCH) | ((topo.node_kind == CIRCUIT) & circuits)
    out: dict[int, list[int]] = {int(s): [] for s in np.flatnonzero(keep)}
    for a, b in zip(topo.link_a.tolist(), topo.link_b.tolist()):
        if keep[a] and keep[b]:
            out[a].append(b)
            out[b].append(a)
    return out


# -- diameter -----------------------------------------------------------------------------
def switch_diameter(topo: Topology) -> int | None:
    """Switch-to-switch cables on the longest shortest path between host switches.

    Only packet switches count and hosts never relay. A circuit switch joins what its
    standing pairing joins (``meta["initial_circuits"]``: a flexible HyperX counts as
    the plain HyperX it starts as); without one (a hybrid network's circuits are
    planned at run time) it joins nothing. A host cabled to several switches (a
    multi-rail fabric) takes the nearest pair of its and the other host's switches.
    None when two hosts' switches are not connected that way, or when the topology
    has more than ``MAX_DIAMETER_SWITCHES`` switches (too costly).

    >>> from netsteer.topology.pgft import pgft
    >>> switch_diameter(pgft(3, [2, 2, 2], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=0))
    4
    >>> from netsteer.topology.hyperx import CircuitSpec, hyperx
    >>> switch_diameter(hyperx([2, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0,
    ...                        circuits=[CircuitSpec(dim=0)]))
    2
    >>> switch_diameter(pgft(2, [2, 3], [2, 2], [2, 1], link_bandwidth=1e9, link_latency_ns=0))  # two rails
    2
    """
    sw = np.flatnonzero(topo.node_kind == SWITCH)
    if len(sw) == 0 or len(sw) > MAX_DIAMETER_SWITCHES:
        return None
    pos = np.full(topo.n_nodes, -1, dtype=np.int64)
    pos[sw] = np.arange(len(sw))
    adj = np.zeros((len(sw), len(sw)), dtype=np.float32)
    a, b = pos[topo.link_a], pos[topo.link_b]
    ok = (a >= 0) & (b >= 0)
    adj[a[ok], b[ok]] = 1
    adj[b[ok], a[ok]] = 1
    if topo.meta.get("initial_circuits"):
        from ..routing._graph import circuit_table, effective_neighbors

        # the switch each port reaches through the standing circuits
        reach_sw = effective_neighbors(topo, circuit_table(topo, None))[sw]
        rows, ports = np.nonzero(reach_sw >= 0)
        far = pos[reach_sw[rows, ports]]
        adj[rows[far >= 0], far[far >= 0]] = 1
    # the switches each host is cabled to (several on a multi-rail fabric)
    ha = (topo.node_kind[topo.link_a] == HOST) & (pos[topo.link_b] >= 0)
    hb = (topo.node_kind[topo.link_b] == HOST) & (pos[topo.link_a] >= 0)
    host_sw: dict[int, set[int]] = {}
    for h, s in zip(np.concatenate([topo.link_a[ha], topo.link_b[hb]]).tolist(),
                    np.concatenate([pos[topo.link_b[ha]], pos[topo.link_a[hb]]]).tolist()):
        host_sw.setdefault(h, set()).add(s)
    if not host_sw:
        return None
    groups = [np.array(sorted(g)) for g in {frozenset(g) for g in host_sw.values()}]
    attached = np.unique(np.concatenate(groups))
    col = np.full(len(sw), -1, dtype=np.int64)
    col[attached] = np.arange(len(attached))
    # hops between host switches: breadth-first from all of them at once, by boolean
    # matrix products, each pair's distance the step it is first reached
    dist = np.full((len(attached), len(attached)), -1, dtype=np.int64)
    reach = np.eye(len(sw), dtype=np.float32)[attached]
    hops = 0
    while True:
        seen = reach[:, attached] > 0
        dist[seen & (dist < 0)] = hops
        if (dist >= 0).all():
            break
        new = ((reach @ adj) + reach) > 0
        if (new == (reach > 0)).all():
            break
        reach = new.astype(np.float32)
        hops += 1
    # a pair of hosts takes its nearest pair of their switches (any rail)
    worst = 0
    for g in groups:
        for k in groups:
            d = dist[np.ix_(col[g], col[k])]
            if not (d >= 0).any():
                return None
            worst = max(worst, int(d[d >= 0].min()))
    return worst


# -- describe -----------------------------------------------------------------------------
def describe(topo: Topology, *, bisection_bw: bool = True) -> dict[str, Any]:
    """Counts per kind and level, bandwidth classes, bisection and diameter.

    JSON-ready: plain ints, floats, strings, lists and dicts. Bandwidths are in bit/s,
    under keys that say so (``bisection_bandwidth_bps``, ``bandwidth_classes[].bandwidth_bps``);
    ``bisection_bandwidth`` and ``bandwidth_classes[].bandwidth`` hold the same values,
    kept for earlier readers. :func:`describe_rows` gives them as text with units.

    >>> from netsteer.topology.pgft import pgft
    >>> d = describe(pgft(2, [2, 2], [1, 1], link_bandwidth=1e9, link_latency_ns=100))
    >>> d["hosts"], d["switches_by_level"], d["bandwidth_classes"]
    (4, {'1': 2, '2': 1}, [{'bandwidth': 1000000000.0, 'bandwidth_bps': 1000000000.0, 'human': '1Gbps', 'links': 6}])
    >>> d["bisection_bandwidth_bps"], d["bisection_bandwidth"], d["diameter"]
    (1000000000.0, 1000000000.0, 2)
    """
    kinds = {KIND_NAMES[k]: int((topo.node_kind == k).sum()) for k in (HOST, SWITCH, CIRCUIT)}
    levels = topo.node_level[topo.node_kind == SWITCH]
    # a level the file does not give (ibsim, ibnetdiscover) is -1: say "unknown"
    by_level = {str(int(lv)) if lv >= 0 else "unknown": int((levels == lv).sum()) for lv in np.unique(levels)}
    classes = []
    for bw in np.unique(topo.link_bandwidth)[::-1]:
        classes.append({"bandwidth": float(bw), "bandwidth_bps": float(bw), "human": format_bandwidth(float(bw)),
                        "links": int((topo.link_bandwidth == bw).sum())})
    lat = np.unique(topo.link_latency_ns)
    out: dict[str, Any] = {
        "name": topo.name,
        "kind": topo.meta.get("kind", "custom"),
        "nodes": topo.n_nodes,
        "hosts": kinds["host"],
        "switches": kinds["switch"],
        "circuit_switches": kinds["circuit"],
        "links": topo.n_links,
        "switches_by_level": by_level,
        "max_ports": int(topo.n_ports.max()) if topo.n_nodes else 0,
        "bandwidth_classes": classes,
        "latencies": [format_duration(float(x)) for x in lat],
        "diameter": switch_diameter(topo),
    }
    if bisection_bw:
        value, split = bisection(topo)
        out["bisection_bandwidth"] = value
        out["bisection_bandwidth_bps"] = value
        out["bisection_split"] = split
        if kinds["circuit"]:
            out["bisection_bandwidth_electrical"] = bisection(topo, circuits=False)[0]
            out["bisection_bandwidth_electrical_bps"] = out["bisection_bandwidth_electrical"]
    return out


def describe_rows(info: dict[str, Any]) -> list[tuple[str, str]]:
    """:func:`describe`'s figures as ``(name, text)`` rows for people: bandwidths with
    their unit, per-level counts and classes spelled out, no Python reprs.

    >>> from netsteer.topology.pgft import pgft
    >>> rows = dict(describe_rows(describe(pgft(2, [2, 2], [1, 1], link_bandwidth=1e9, link_latency_ns=100))))
    >>> rows["switches_by_level"], rows["bandwidth_classes"], rows["bisection_bandwidth"]
    ('level 1: 2, level 2: 1', '6 links at 1Gbps', '1Gbps')
    >>> rows["latencies"], rows["diameter"]
    ('100ns', '2 switch-to-switch hops')
    """
    rows = []
    for k, v in info.items():
        if k.endswith("_bps"):
            continue  # the same figure as the key without the suffix, shown with its unit
        if k == "switches_by_level":
            text = ", ".join(f"level {lv}: {n}" if lv != "unknown" else f"level unknown: {n}"
                             for lv, n in v.items()) or "none"
        elif k == "bandwidth_classes":
            text = ", ".join(f"{c['links']} links at {c['human']}" for c in v) or "none"
        elif k == "latencies":
            text = ", ".join(v) or "none"
        elif k.startswith("bisection_bandwidth"):
            text = "-" if v is None else format_bandwidth(float(v))
        elif k == "diameter":
            text = f"{v} switch-to-switch hop{'s' if v != 1 else ''}" if v is not None else \
                f"- ({diameter_unknown(info.get('switches', 0))})"
        else:
            text = str(v)
        rows.append((k, text))
    return rows


def diameter_unknown(switches: int) -> str:
    """Why :func:`switch_diameter` gave no diameter for a topology of ``switches``
    packet switches (``--json`` says ``null`` in each case; the text says why).

    >>> diameter_unknown(5000), diameter_unknown(0)
    ('not computed above 2048 switches: too costly', 'no switches')
    """
    if switches > MAX_DIAMETER_SWITCHES:
        return f"not computed above {MAX_DIAMETER_SWITCHES} switches: too costly"
    if not switches:
        return "no switches"
    return "some hosts' switches are not connected"


# -- pictures -----------------------------------------------------------------------------
def layers(topo: Topology) -> np.ndarray:
    """Drawing layer per node: its level where known, else hops from the hosts.

    Circuit switches go one layer above everything else.

    >>> from netsteer.topology.hyperx import hyperx
    >>> [int(x) for x in layers(hyperx([2], 1, 1, link_bandwidth=1, link_latency_ns=0))]
    [0, 0, 1, 1]
    """
    lv = topo.node_level.astype(np.int64).copy()
    lv[topo.node_kind == HOST] = 0
    unknown = (lv < 0) & (topo.node_kind != CIRCUIT)
    if unknown.any():
        dist = np.full(topo.n_nodes, -1, dtype=np.int64)
        dist[topo.hosts] = 0
        q = deque(topo.hosts.tolist())
        nb: list[list[int]] = [[] for _ in range(topo.n_nodes)]
        for a, b in zip(topo.link_a.tolist(), topo.link_b.tolist()):
            nb[a].append(b)
            nb[b].append(a)
        while q:
            u = q.popleft()
            for v in nb[u]:
                if dist[v] < 0 and topo.node_kind[v] != CIRCUIT:
                    dist[v] = dist[u] + 1
                    q.append(v)
        lv[unknown] = np.where(dist[unknown] >= 0, dist[unknown], 1)
    circ = topo.node_kind == CIRCUIT
    lv[circ] = (lv[~circ].max() + 1) if (~circ).any() else 1
    return lv


def counts_title(topo: Topology) -> str:
    """``name: N hosts, N switches[, N circuit switches], N links`` (packet and
    circuit switches apart, as ``netsteer topo`` counts them).

    >>> from netsteer.topology.pgft import pgft
    >>> counts_title(pgft(1, [2], [1], link_bandwidth=10e9, link_latency_ns=1000))
    'pgft-1;[2];[1];[1]: 2 hosts, 1 switches, 2 links'
    """
    s = topo.summary()
    circuits = f", {s['circuit_switches']} circuit switches" if s["circuit_switches"] else ""
    return f"{topo.name}: {s['hosts']} hosts, {s['switches']} switches{circuits}, {s['links']} links"


def _line_width(bw: np.ndarray, rate):
    """The line width of a link of ``rate`` among links of rates ``bw``: 0.5 for the
    slowest to 2.5 for the fastest."""
    return 0.5 + 2.0 * (rate - bw.min()) / (np.ptp(bw) or 1.0)


def _width_legend(bw: np.ndarray) -> list[tuple[float, float]]:
    """``(bandwidth, line width)`` pairs a legend shows when the width encodes the
    bandwidth (links of more than one rate): every rate, or the extremes of more than four.

    >>> _width_legend(np.array([1e9, 10e9, 10e9]))
    [(1000000000.0, 0.5), (10000000000.0, 2.5)]
    >>> _width_legend(np.array([10e9, 10e9]))
    []
    """
    rates = np.unique(bw)
    if len(rates) < 2:
        return []
    shown = rates if len(rates) <= 4 else rates[[0, -1]]
    return [(float(r), float(_line_width(bw, r))) for r in shown]


#: Picture formats :func:`draw` writes, by the file's suffix.
DRAW_FORMATS = ("png", "svg", "pdf")


def draw_format(path: str | Path) -> str:
    """The picture format ``path``'s suffix asks for; refused unless one of
    :data:`DRAW_FORMATS` (a PNG in ``x.txt`` was written without a word).

    >>> draw_format("fabric.SVG")
    'svg'
    >>> draw_format("x.txt")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: x.txt: --draw: draw to .png, .svg or .pdf, not '.txt'
    """
    suffix = Path(path).suffix.lower()
    if suffix.lstrip(".") not in DRAW_FORMATS:
        raise NetsteerError(f"draw to .png, .svg or .pdf, not {suffix or 'no suffix'!r}", file=str(path),
                            field="--draw")
    return suffix.lstrip(".")


def draw(topo: Topology, path: str | Path, *, title: str | None = None) -> None:
    """Draw ``topo`` to a PNG, layered by level (hosts at the bottom).

    Same-layer cables (HyperX dimensions) are drawn as arcs; a line's width grows with
    its link's bandwidth (shown in the legend when rates differ). Refuses topologies of
    more than 512 nodes, which no picture makes readable.

    Raises
    ------
    NetsteerError
        When the topology is too large or the file cannot be written.
    """
    if topo.n_nodes > MAX_DRAW_NODES:
        raise NetsteerError(
            f"topology {topo.name!r} has {topo.n_nodes} nodes; draw handles at most "
            f"{MAX_DRAW_NODES}; for a summary, run netsteer topo without --draw (in Python: describe or ascii)",
            file=str(path))
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path as MPath

    lv = layers(topo)
    xy = np.zeros((topo.n_nodes, 2))
    widest = 1
    for layer in np.unique(lv):
        members = np.flatnonzero(lv == layer)
        widest = max(widest, len(members))
        xy[members, 0] = (np.arange(len(members)) + 0.5) / len(members)
        xy[members, 1] = layer
    fig = Figure(figsize=(min(4 + widest * 0.25, 40), 2 + 1.5 * (lv.max() + 1)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_axis_off()
    bw = topo.link_bandwidth
    widths = _line_width(bw, bw) if len(bw) else []
    for i, (a, b) in enumerate(zip(topo.link_a.tolist(), topo.link_b.tolist())):
        (x0, y0), (x1, y1) = xy[a], xy[b]
        if y0 == y1:  # same layer: arc above
            mid = ((x0 + x1) / 2, y0 + 0.15 + 0.6 * abs(x1 - x0))
            p = MPath([(x0, y0), mid, (x1, y1)], [MPath.MOVETO, MPath.CURVE3, MPath.CURVE3])
            ax.add_patch(PathPatch(p, fill=False, lw=widths[i], color="0.6", alpha=0.6))
        else:
            ax.plot([x0, x1], [y0, y1], lw=widths[i], color="0.6", alpha=0.6, zorder=1)
    style = {HOST: ("o", "tab:blue"), SWITCH: ("s", "tab:orange"), CIRCUIT: ("D", "tab:green")}
    for k, (marker, color) in style.items():
        sel = topo.node_kind == k
        if sel.any():
            ax.scatter(xy[sel, 0], xy[sel, 1], marker=marker, c=color, s=40, zorder=2,
                       label=f"{KIND_NAMES[k]} ({int(sel.sum())})")
    if topo.n_nodes <= 64:
        for i, nm in enumerate(topo.node_names):
            ax.annotate(nm, xy[i], textcoords="offset points", xytext=(0, -12),
                        ha="center", fontsize=7)
    for rate, lw in _width_legend(bw):
        ax.plot([], [], lw=lw, color="0.6", alpha=0.6, label=f"{format_bandwidth(rate)} link")
    from ..report.figures import legend_outside

    legend_outside(ax, fontsize=8, frameon=True)
    ax.set_title(title or counts_title(topo), fontsize=10)
    fig.tight_layout()
    from ..report.atomic import atomic_file

    try:
        with atomic_file(path) as tmp:
            fig.savefig(str(tmp), format=draw_format(path), dpi=100)
    except OSError as e:
        raise NetsteerError(f"cannot write picture: {e.strerror}", file=str(path)) from None


def ascii(topo: Topology) -> str:
    """A text listing, top layer first: each node and where its ports go.

    >>> from netsteer.topology.pgft import pgft
    >>> print(ascii(pgft(1, [2], [1], link_bandwidth=10e9, link_latency_ns=1000)))
    pgft-1;[2];[1];[1]: 2 hosts, 1 switches, 0 circuit switches, 2 links
    layer 1
      s1_0  switch   1:h0[1]  2:h1[1]
    layer 0
      h0    host     1:s1_0[1]
      h1    host     1:s1_0[2]
    links: 2 x 10Gbps 1us
    """
    if topo.n_nodes > MAX_ASCII_NODES:
        raise NetsteerError(
            f"topology {topo.name!r} has {topo.n_nodes} nodes; ascii lists at most "
            f"{MAX_ASCII_NODES} (use describe for a summary)")
    s = topo.summary()
    lines = [f"{topo.name}: {s['hosts']} hosts, {s['switches']} switches, "
             f"{s['circuit_switches']} circuit switches, {s['links']} links"]
    lv = layers(topo)
    wname = max((len(n) for n in topo.node_names), default=1)
    for layer in sorted(np.unique(lv).tolist(), reverse=True):
        lines.append(f"layer {layer}")
        for i in np.flatnonzero(lv == layer).tolist():
            ports = "  ".join(f"{p}:{topo.node_names[v]}[{vp}]" for p, v, vp in topo.neighbors(i))
            lines.append(f"  {topo.node_names[i]:<{wname}}  {KIND_NAMES[int(topo.node_kind[i])]:<7}"
                         f"  {ports}".rstrip())
    pairs: dict[tuple[float, int], int] = {}
    for bw, lat in zip(topo.link_bandwidth.tolist(), topo.link_latency_ns.tolist()):
        pairs[(bw, lat)] = pairs.get((bw, lat), 0) + 1
    lines.append("links: " + ", ".join(
        f"{c} x {format_bandwidth(bw)} {format_duration(lat)}"
        for (bw, lat), c in sorted(pairs.items(), reverse=True)))
    return "\n".join(lines)
