"""Broadcast: binomial tree, and scatter + ring allgather (van de Geijn)."""

from __future__ import annotations

from ._util import _check_root
from .programs import Program, recv, send, sendrecv


def bcast_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial tree (SMPI ``binomial_tree``): receive from ``rank - mask``, then
    forward the whole buffer to ``rank + mask`` for decreasing masks."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        rel = (rank - root) % p
        mask = 1
        while mask < p:
            if rel & mask:
                progs[rank].append(recv((rank - mask) % p))
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < p:
                progs[rank].append(send((rank + mask) % p, nbytes))
            mask >>= 1
    return progs


def _scatter_for_bcast(p: int, nbytes: int, root: int, progs: list[Program]) -> None:
    """MPICH's binomial scatter of a bcast buffer in ``ceil(nbytes/p)`` pieces."""
    piece = (nbytes + p - 1) // p
    got = {0: nbytes}  # relative rank -> bytes it holds after its receive
    # a parent has a smaller relative rank than its children: visit in that order
    for rel in range(p):
        rank = (rel + root) % p
        curr = 0
        mask = 1
        while mask < p:
            if rel & mask:
                if nbytes - rel * piece > 0:
                    progs[rank].append(recv((rank - mask) % p))
                    curr = got.get(rel, 0)
                break
            mask <<= 1
        if rel == 0:
            curr = nbytes
        mask >>= 1
        while mask > 0:
            if rel + mask < p:
                size = curr - piece * mask
                if size > 0:
                    progs[rank].append(send((rank + mask) % p, size))
                    got[rel + mask] = size
                    curr -= size
            mask >>= 1


def bcast_scatter_allgather(
    p: int, nbytes: int, root: int = 0, elem_bytes: int = 1
) -> list[Program]:
    """Van de Geijn (SMPI ``scatter_LR_allgather``): binomial scatter of ``p`` pieces,
    then a ring allgather of the pieces (``p - 1`` steps to the right neighbour)."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    _scatter_for_bcast(p, nbytes, root, progs)
    piece = (nbytes + p - 1) // p
    counts = [max(0, min(piece, nbytes - i * piece)) for i in range(p)]
    for rank in range(p):
        left, right = (rank - 1) % p, (rank + 1) % p
        src = rank
        for _ in range(1, p):
            progs[rank].append(sendrecv(right, counts[(src - root) % p], left))
            src = (src - 1) % p
    return progs
