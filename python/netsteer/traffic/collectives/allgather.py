"""Allgather: ring, recursive doubling and Bruck."""

from __future__ import annotations

import numpy as np

from ._util import _is_pof2
from .programs import Program, recv, send, sendrecv
from .steps import Steps


def allgather_ring(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """SMPI's ``ring``: at step ``i`` (1..p-1) send the own block to ``rank + i``
    and receive from ``rank - i``. (A shift exchange: partners change every step.)"""
    ranks = np.arange(p)
    return Steps(np.stack([(ranks + i) % p for i in range(1, p)]).reshape(p - 1, p),
                 np.full((p - 1, p), nbytes))


def allgather_recursive_doubling(p: int, nbytes: int, root: int = 0,
                                 elem_bytes: int = 1) -> Steps | list[Program]:
    """Recursive doubling (SMPI ``rdb``, MPICH's): at the step of ``mask`` (1, 2, 4,
    ...) exchange every block held with ``rank ^ mask``.

    A rank holds the blocks of its aligned group of ``mask`` ranks, so it sends
    ``min(mask, p - group) * nbytes``, ``group`` being the group's first rank. On a
    non-power of two the partner may not exist: where the partner's group is cut
    short by the end of the ranks (``pgroup + mask > p``), the ``done = p - pgroup``
    ranks of the rank's group that did exchange pass the ``done`` blocks they
    received on inside the group, halving it each time (``rank ^ (mask / 2)``,
    ``rank ^ (mask / 4)``, ...): a rank sends (blocking) if it has them and the
    partner, above it, has not; it receives if the reverse.

    Parameters
    ----------
    p : int
        Ranks.
    nbytes : int
        Each rank's block (MPI count semantics).
    root, elem_bytes : int
        Unused (the registry's signature).

    Returns
    -------
    Steps or list of Program
        ``Steps`` on a power of two (``log2 p`` exchanges of ``nbytes``,
        ``2 nbytes``, ...), otherwise one program per rank.

    Examples
    --------
    >>> allgather_recursive_doubling(4, 10).nbytes.tolist()
    [[10, 10, 10, 10], [20, 20, 20, 20]]

    On 3 ranks, 2 has no partner at mask 1; at mask 2 it gives 0 its block and gets
    0's two, then 0 passes block 2 on to 1:

    >>> progs = allgather_recursive_doubling(3, 10)
    >>> progs[0] == [sendrecv(1, 10, 1), sendrecv(2, 20, 2), send(1, 10)]
    True
    >>> progs[1] == [sendrecv(0, 10, 0), recv(0)], progs[2] == [sendrecv(0, 10, 0)]
    (True, True)
    """
    ranks = np.arange(p)
    if _is_pof2(p):
        masks = [1 << k for k in range(p.bit_length() - 1)]
        return Steps(np.array([ranks ^ m for m in masks]).reshape(-1, p),
                     np.array([np.full(p, m * nbytes) for m in masks]).reshape(-1, p))
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        prog = progs[rank]
        mask = 1
        while mask < p:
            dst = rank ^ mask
            group = rank & ~(mask - 1)
            pgroup = dst & ~(mask - 1)
            if dst < p:
                prog.append(sendrecv(dst, min(mask, p - group) * nbytes, dst))
            if pgroup + mask > p:
                done = p - group - mask  # ranks of the group with the partner's blocks
                half = mask >> 1
                while half:
                    peer = rank ^ half
                    first = rank & ~(2 * half - 1)  # the sub-group being split
                    if peer > rank and rank < first + done <= peer:
                        prog.append(send(peer, done * nbytes))
                    elif peer < rank and peer < first + done <= rank:
                        prog.append(recv(peer))
                    half >>= 1
            mask <<= 1
    return progs


def allgather_bruck(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """Bruck (SMPI ``bruck``): ``ceil(log2 p)`` steps. At the step of ``pof2`` (1, 2,
    4, ... while ``pof2 <= p / 2``) send the ``pof2`` blocks gathered so far to
    ``rank - pof2`` and receive as many from ``rank + pof2``; then, if ``p`` is not a
    power of two, the last ``p - pof2`` blocks (``pof2`` now the largest power of two
    not above ``p``) go the same way. Any ``p``.

    Parameters
    ----------
    p : int
        Ranks.
    nbytes : int
        Each rank's block (MPI count semantics).
    root, elem_bytes : int
        Unused (the registry's signature).

    Returns
    -------
    Steps

    Examples
    --------
    >>> st = allgather_bruck(6, 10)
    >>> st.dst[:, 0].tolist(), st.nbytes[:, 0].tolist()
    ([5, 4, 2], [10, 20, 20])
    """
    ranks = np.arange(p)
    dst, size = [], []
    pof2 = 1
    while pof2 <= p // 2:
        dst.append((ranks - pof2) % p)
        size.append(np.full(p, pof2 * nbytes))
        pof2 *= 2
    if p - pof2:
        dst.append((ranks - pof2) % p)
        size.append(np.full(p, (p - pof2) * nbytes))
    return Steps(np.array(dst).reshape(-1, p), np.array(size).reshape(-1, p))
