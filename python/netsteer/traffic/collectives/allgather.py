"""Allgather: ring."""

from __future__ import annotations

import numpy as np

from .steps import Steps


def allgather_ring(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """SMPI's ``ring``: at step ``i`` (1..p-1) send the own block to ``rank + i``
    and receive from ``rank - i``. (A shift exchange: partners change every step.)"""
    ranks = np.arange(p)
    return Steps(np.stack([(ranks + i) % p for i in range(1, p)]).reshape(p - 1, p),
                 np.full((p - 1, p), nbytes))
