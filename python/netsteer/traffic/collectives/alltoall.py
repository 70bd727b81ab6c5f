"""Alltoall: pairwise exchange and Bruck."""

from __future__ import annotations

import numpy as np

from ...errors import NetsteerError
from ._util import _is_pof2
from .steps import Steps


def alltoall_pairwise(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """Pairwise exchange (SMPI ``pair``): at step ``i`` exchange with ``rank ^ i``.
    Needs a power of two, as in SMPI; step 0 is the rank itself (no flow)."""
    if not _is_pof2(p):
        raise NetsteerError(
            f"alltoall pairwise pairs ranks by XOR and needs a power-of-two rank count, "
            f"got {p}; use algorithm bruck"
        )
    ranks = np.arange(p)
    return Steps(np.stack([ranks ^ i for i in range(1, p)]).reshape(p - 1, p),
                 np.full((p - 1, p), nbytes))


def alltoall_bruck(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """Bruck (SMPI ``bruck``): ``ceil(log2 p)`` steps; at step ``k`` send to
    ``rank + 2^k`` the blocks whose index has bit ``k`` set, receive from
    ``rank - 2^k``."""
    ranks = np.arange(p)
    dst, size = [], []
    pof2 = 1
    while pof2 < p:
        blocks = int(((ranks[1:] & pof2) != 0).sum())
        dst.append((ranks + pof2) % p)
        size.append(np.full(p, blocks * nbytes))
        pof2 *= 2
    return Steps(np.array(dst).reshape(-1, p), np.array(size).reshape(-1, p))
