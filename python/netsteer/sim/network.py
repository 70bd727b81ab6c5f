"""Network state that changes at runtime: which circuit-switch ports are paired."""

from __future__ import annotations

import numpy as np

from ..topology.model import CIRCUIT, Topology


class CircuitState:
    """Port pairing of every circuit switch (a crossbar), ``-1`` where unpaired.

    Examples
    --------
    >>> from netsteer.topology import TopologyBuilder
    >>> b = TopologyBuilder("x")
    >>> o = b.add_circuit_switch("ocs", switching_time_ns=25_000_000)
    >>> t1, t2 = b.add_switch("t1"), b.add_switch("t2")
    >>> _ = b.add_link(t1, o, bandwidth=1e10, latency_ns=0)
    >>> _ = b.add_link(t2, o, bandwidth=1e10, latency_ns=0)
    >>> cs = CircuitState.empty(b.build())
    >>> moved = cs.pair(o, [(1, 2)])
    >>> sorted(moved), int(cs.pairing[o][1]), int(cs.pairing[o][2])
    ([1, 2], 2, 1)
    """

    def __init__(self, pairing: dict[int, np.ndarray]):
        self.pairing = pairing

    @classmethod
    def empty(cls, topo: Topology) -> "CircuitState":
        width = topo.out_channel.shape[1]
        nodes = np.flatnonzero(topo.node_kind == CIRCUIT)
        return cls({int(n): np.full(width, -1, dtype=np.int64) for n in nodes})

    @classmethod
    def initial(cls, topo: Topology) -> "CircuitState":
        """The topology's standing pairing (``meta["initial_circuits"]``), the rest unpaired."""
        state = cls.empty(topo)
        for node, arr in (topo.meta.get("initial_circuits") or {}).items():
            arr = np.asarray(arr, dtype=np.int64)
            n = min(len(arr), len(state.pairing[int(node)]))
            state.pairing[int(node)][:n] = arr[:n]
        return state

    def copy(self) -> "CircuitState":
        return CircuitState({n: p.copy() for n, p in self.pairing.items()})

    def pair(self, switch: int, pairs: list[tuple[int, int]]) -> set[int]:
        """Set the full pairing of ``switch`` to ``pairs``; return the ports that move."""
        if switch not in self.pairing:
            raise ValueError(f"node {switch} is not a circuit switch")
        old = self.pairing[switch]
        new = np.full_like(old, -1)
        for p, q in pairs:
            for x in (p, q):
                if not 0 < x < len(new):
                    raise ValueError(f"circuit switch has no port {x}")
                if new[x] >= 0:
                    raise ValueError(f"port {x} is paired twice")
            if p == q:
                raise ValueError(f"port {p} cannot be paired with itself")
            new[p], new[q] = q, p
        moved = {int(x) for x in np.flatnonzero(new != old)}
        self.pairing[switch] = new
        return moved

    def as_dict(self) -> dict[int, np.ndarray]:
        return self.pairing
