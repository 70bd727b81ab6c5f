"""A circuit change split into moves that each leave the other circuits standing.

Steering re-pairs circuit-switch ports: a swap of two circuits touches four ports,
and a new pairing may chain several swaps. Changing them all at once darkens every
circuit involved together (the flexible HyperX's four SiP circuits are its only
paths between the groups). Changed ports fall into cycles that alternate old and new
pairs; each cycle is one *move*, and changing one move while the others stand lets
traffic detour around it (make-before-break, as the hybrid source's three steps: move
the routes off, switch, move them on).

Examples
--------
>>> import numpy as np
>>> old = {9: np.array([-1, 2, 1, 4, 3, 6, 5, 8, 7])}   # circuits 1-2, 3-4, 5-6, 7-8
>>> new = {9: np.array([-1, 4, 3, 2, 1, 6, 5, 8, 7])}   # 1-4, 2-3: one swap
>>> [m.ports for m in moves(old, new)]
[(1, 2, 3, 4)]
>>> m = moves(old, new)[0]
>>> m.detour[9].tolist(), m.after[9].tolist()
([-1, -1, -1, -1, -1, 6, 5, 8, 7], [-1, 4, 3, 2, 1, 6, 5, 8, 7])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Move:
    """One cycle of changed ports on circuit switch ``switch``: ``detour`` is the
    pairing with those ports dark (every other circuit as before), ``after`` the
    pairing once they are re-paired (the states accumulate move by move)."""

    switch: int
    ports: tuple[int, ...]
    detour: dict[int, np.ndarray]
    after: dict[int, np.ndarray]


def moves(old: dict, new: dict) -> list[Move]:
    """The moves from pairing ``old`` to ``new`` (node -> port array, ``-1`` unpaired),
    in port order; applying them in turn ends in ``new``."""
    state = {n: np.asarray(a, dtype=np.int64).copy() for n, a in old.items()}
    out = []
    for node in sorted(new):
        a, b = state.get(node), np.asarray(new[node], dtype=np.int64)
        if a is None:
            a = state[node] = np.full(len(b), -1, dtype=np.int64)
        changed = {int(p) for p in np.flatnonzero(a[:len(b)] != b)}
        seen: set[int] = set()
        for start in sorted(changed):
            if start in seen:
                continue
            # the cycle (or chain) through ``start``: old pairs and new pairs alternately
            cycle, todo = set(), [start]
            while todo:
                p = todo.pop()
                if p in cycle or p < 0:
                    continue
                cycle.add(p)
                todo += [int(a[p]), int(b[p])]
            seen |= cycle
            ports = tuple(sorted(cycle))
            detour = {n: s.copy() for n, s in state.items()}
            detour[node][list(ports)] = -1
            after = {n: s.copy() for n, s in detour.items()}
            after[node][list(ports)] = b[list(ports)]
            out.append(Move(node, ports, detour, after))
            state = {n: s.copy() for n, s in after.items()}
    return out


__all__ = ["Move", "moves"]
