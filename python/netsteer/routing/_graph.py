"""Graph views shared by the engines and the checker: who is behind each port.

Circuit switches are crossbars whose pairing is network state, so the routing layer
never routes *through* them: it looks through them. ``effective_neighbors`` gives, for
every (node, port), the first host or packet switch reached when leaving by that port
and following circuit pairings on the way.

Examples
--------
>>> from netsteer.topology.model import TopologyBuilder
>>> b = TopologyBuilder("x")
>>> h, s, t = b.add_host("h0"), b.add_switch("s0"), b.add_switch("s1")
>>> x = b.add_circuit_switch("x0", switching_time_ns=10)
>>> _ = b.add_link(h, s, bandwidth=1e9, latency_ns=0)
>>> _ = b.add_link(s, x, bandwidth=1e9, latency_ns=0)   # s0 port 2 -> x0 port 1
>>> _ = b.add_link(t, x, bandwidth=1e9, latency_ns=0)   # s1 port 1 -> x0 port 2
>>> topo = b.build()
>>> nbr = effective_neighbors(topo, circuit_table(topo, {x: [-1, 2, 1]}))
>>> int(nbr[s, 2]) == t, int(nbr[t, 1]) == s
(True, True)
>>> int(effective_neighbors(topo, circuit_table(topo, None))[s, 2])
-1
"""

from __future__ import annotations

import numpy as np

from ..errors import RoutingError
from ..topology.model import CIRCUIT, HOST, SWITCH, Topology


def circuit_table(topo: Topology, circuits: dict | None) -> np.ndarray:
    """Dense ``[n_nodes, n_port_slots]`` int32: out port for each in port, -1 unpaired.

    Rows of nodes that are not circuit switches stay -1. ``None`` means the
    topology's standing pairing (``meta["initial_circuits"]``, e.g. a flexible HyperX
    wired as the plain HyperX), or all unpaired. Raises :class:`RoutingError`
    when ``circuits`` names a node that is not a circuit switch or pairs a port that is
    not connected.
    """
    if circuits is None:
        circuits = topo.meta.get("initial_circuits")
    n_slots = topo.out_channel.shape[1]
    table = np.full((topo.n_nodes, n_slots), -1, dtype=np.int32)
    for node, arr in (circuits or {}).items():
        node = int(node)
        if not 0 <= node < topo.n_nodes or topo.node_kind[node] != CIRCUIT:
            what = topo.node_names[node] if 0 <= node < topo.n_nodes else f"node {node}"
            raise RoutingError(f"circuits names {what}, which is not a circuit switch")
        arr = np.asarray(arr, dtype=np.int64).ravel()
        name = topo.node_names[node]
        connected = topo.out_channel[node] >= 0
        for p in np.flatnonzero(arr >= 0):
            q = int(arr[p])
            for port in (int(p), q):
                if port >= n_slots or not connected[port]:
                    raise RoutingError(
                        f"circuit switch {name} pairs port {p} with port {q}, "
                        f"but port {port} is not connected"
                    )
        if (arr < -1).any():
            raise RoutingError(f"circuit switch {name}: pairing entries must be ports or -1")
        n = min(len(arr), n_slots)
        table[node, :n] = arr[:n]
    return table


def effective_neighbors(topo: Topology, pairing: np.ndarray) -> np.ndarray:
    """``[n_nodes, n_port_slots]`` int32: host or switch reached by leaving on a port.

    -1 where the port is unconnected, or the way runs into an unpaired circuit port
    (or around a cycle of circuit switches). Rows of circuit switches are -1.
    """
    out = topo.out_channel
    if not topo.n_links:  # a fabric without cables reaches nothing (and has no channel 0)
        return np.full(out.shape, -1, dtype=np.int64)
    dst, dport = topo.channel_dst(), topo.channel_dst_port()
    connected = out >= 0
    ch = np.where(connected, out, 0)
    nxt = np.where(connected, dst[ch], -1).astype(np.int64)
    inport = np.where(connected, dport[ch], -1).astype(np.int64)
    is_circ = topo.node_kind == CIRCUIT
    if is_circ.any():
        # every step crosses one circuit port pair, so this many steps means a cycle
        limit = int((pairing >= 0).sum()) + 1
        todo = np.flatnonzero((nxt >= 0).ravel() & is_circ[np.maximum(nxt, 0)].ravel())
        flat_n, flat_p = nxt.reshape(-1), inport.reshape(-1)
        for _ in range(limit):
            if todo.size == 0:
                break
            n, p = flat_n[todo], flat_p[todo]
            q = pairing[n, p]
            c = np.where(q >= 0, out[n, np.maximum(q, 0)], -1)
            ok = c >= 0
            flat_n[todo] = np.where(ok, dst[np.maximum(c, 0)], -1)
            flat_p[todo] = np.where(ok, dport[np.maximum(c, 0)], -1)
            todo = todo[ok]
            todo = todo[is_circ[flat_n[todo]]]
        flat_n[todo] = -1
        nxt[is_circ] = -1
    return nxt.astype(np.int32)


def reachable_from_hosts(topo: Topology, nbr: np.ndarray) -> np.ndarray:
    """Boolean per node: reachable from some host over ``nbr`` (circuits looked through)."""
    reach = topo.node_kind == HOST
    frontier = reach.copy()
    while frontier.any():
        seen = nbr[frontier].ravel()
        seen = seen[seen >= 0]
        new = np.zeros_like(reach)
        new[seen] = True
        frontier = new & ~reach
        reach |= frontier
    return reach


def routers(topo: Topology) -> np.ndarray:
    """Node ids of packet switches (the nodes that hold forwarding entries)."""
    return np.flatnonzero(topo.node_kind == SWITCH).astype(np.int32)


def forwarding_nodes(topo: Topology) -> np.ndarray:
    """Sorted node ids whose table rows can carry entries: every switch (packet or
    circuit) and every host with more than one cabled port.

    A single-homed host needs no row: it leaves on its only port.
    """
    multi = (topo.out_channel >= 0).sum(axis=1) > 1
    return np.flatnonzero((topo.node_kind != HOST) | multi).astype(np.int64)


def dead_end_reason(topo: Topology, pairing: np.ndarray, node: int, port: int) -> str:
    """Why leaving ``node`` on ``port`` reaches no host or switch, in words."""
    names = topo.node_names
    if not 0 <= port < topo.out_channel.shape[1] or topo.out_channel[node, port] < 0:
        return f"port {port}, which is not connected"
    dst, dport = topo.channel_dst(), topo.channel_dst_port()
    c = int(topo.out_channel[node, port])
    seen = set()
    while True:
        n, p = int(dst[c]), int(dport[c])
        if (n, p) in seen:
            return f"port {port}, into a cycle of circuit switches at {names[n]}"
        seen.add((n, p))
        q = int(pairing[n, p])
        if q < 0:
            return f"port {port}, into circuit switch {names[n]} whose port {p} is unpaired"
        c = int(topo.out_channel[n, q])
        if topo.node_kind[int(dst[c])] != CIRCUIT:
            return f"port {port}"  # not a dead end after all
