"""Barrier: dissemination (Bruck) and recursive doubling."""

from __future__ import annotations

import numpy as np

from ._util import _pof2_floor
from .programs import Program, recv, send, sendrecv
from .steps import Steps


def barrier_bruck(p: int, nbytes: int = 0, root: int = 0, elem_bytes: int = 1) -> Steps:
    """Dissemination (SMPI ``ompi_bruck``): ``ceil(log2 p)`` empty messages to
    ``rank + 2^k``, receiving from ``rank - 2^k``."""
    ranks = np.arange(p)
    dst = []
    d = 1
    while d < p:
        dst.append((ranks + d) % p)
        d <<= 1
    return Steps(np.array(dst).reshape(-1, p), np.zeros((len(dst), p), dtype=np.int64))


def barrier_recursive_doubling(
    p: int, nbytes: int = 0, root: int = 0, elem_bytes: int = 1
) -> list[Program]:
    """Recursive doubling (SMPI ``ompi_recursivedoubling``): empty exchanges with
    ``rank ^ mask``; ranks above the largest power of two check in with
    ``rank - pof2`` before and are released after."""
    adj = _pof2_floor(p)
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        prog = progs[rank]
        if adj != p:
            if rank >= adj:
                prog.append(sendrecv(rank - adj, 0, rank - adj))
            elif rank < p - adj:
                prog.append(recv(rank + adj))
        if rank < adj:
            mask = 1
            while mask < adj:
                remote = rank ^ mask
                mask <<= 1
                if remote < adj:
                    prog.append(sendrecv(remote, 0, remote))
        if adj != p and rank < p - adj:
            prog.append(send(rank + adj, 0))
    return progs


# --------------------------------------------------------------------------------------
