"""Mixed-radix digits: the coordinates of a lattice (HyperX) and the labels of a
PGFT level are both a node's index written in per-digit radices, least significant
digit first."""

from __future__ import annotations

import numpy as np


def digits(count: int, radices: list[int]) -> np.ndarray:
    """``[count, len(radices)]`` digits of ``0..count-1``, little endian.

    >>> digits(6, [2, 3]).tolist()
    [[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2]]
    """
    out = np.zeros((count, len(radices)), dtype=np.int64)
    rest = np.arange(count, dtype=np.int64)
    for i, r in enumerate(radices):
        out[:, i] = rest % r
        rest //= r
    return out
