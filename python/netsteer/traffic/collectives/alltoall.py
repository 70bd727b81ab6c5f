"""Alltoall: pairwise exchange, Bruck and ring."""

from __future__ import annotations

import numpy as np

from ...errors import NetsteerError
from ._util import _is_pof2
from .allgather import allgather_ring
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


def alltoall_ring(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """Ring (SMPI ``ring``): ``p - 1`` steps; at step ``i`` (1..p-1) send the block
    for ``rank + i`` to it and receive from ``rank - i`` the block for this rank.
    Step 0 is the rank's copy to itself (no flow). Any ``p``.

    Despite the name, the partner changes every step (a shift exchange, the same
    pattern as allgather ``ring``), each message one block.

    Parameters
    ----------
    p : int
        Ranks.
    nbytes : int
        What each rank sends to each peer (MPI count semantics).
    root, elem_bytes : int
        Unused (the registry's signature).

    Returns
    -------
    Steps

    Examples
    --------
    >>> st = alltoall_ring(5, 10)
    >>> st.dst[:, 3].tolist(), set(st.nbytes.ravel().tolist())
    ([4, 0, 1, 2], {10})
    """
    return allgather_ring(p, nbytes)
