"""Allreduce: ring, recursive doubling, and Rabenseifner."""

from __future__ import annotations

import numpy as np

from ...errors import NetsteerError
from ..algorithms import UNSELECTED
from ._util import _elements, _pof2_floor
from .programs import Program, recv, send, sendrecv
from .steps import Steps
from .reduce import _doubling_indices, _halving_counts, _reduce_scatter_halving


def allreduce_ring(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1, *,
                   reduce: str = UNSELECTED["reduce"],
                   bcast: str = UNSELECTED["bcast"]) -> list[Program] | Steps:
    """Ring (SMPI ``lr``): ``p - 1`` reduce-scatter steps then ``p - 1`` allgather
    steps, each sending ``count // p`` elements to ``rank + 1`` and receiving from
    ``rank - 1``.

    As SMPI, the ``count % p`` elements left over (or the whole buffer, when
    ``count < p``) are then reduced to rank 0 and broadcast from it, with the job's
    ``reduce`` and ``bcast`` algorithms (see
    :func:`netsteer.traffic.algorithms.job_choices`).

    >>> [len(prog) for prog in allreduce_ring(4, 10)]  # 6 ring steps, then 2 elements left over
    [9, 8, 9, 8]
    """
    count = _elements(nbytes, elem_bytes)
    if count < p:
        return _reduce_then_bcast(p, count, elem_bytes, reduce, bcast)
    chunk = count // p * elem_bytes
    right = (np.arange(p) + 1) % p
    k = 2 * (p - 1)
    ring = Steps(np.tile(right, (k, 1)), np.full((k, p), chunk))
    if count % p == 0:
        return ring
    rest = _reduce_then_bcast(p, count % p, elem_bytes, reduce, bcast)
    return [a + b for a, b in zip(ring.programs(), rest)]


def _reduce_then_bcast(p: int, count: int, elem_bytes: int, reduce: str,
                       bcast: str) -> list[Program]:
    """SMPI's ``redbcast``, as ``lr`` runs it on what the ring leaves: reduce
    ``count`` elements to rank 0, then bcast them from rank 0."""
    from .registry import lookup  # the registry imports this module

    progs: list[Program] = [[] for _ in range(p)]
    for op, name in (("reduce", reduce), ("bcast", bcast)):
        try:
            part = lookup(op, name).programs(p, count * elem_bytes, 0, elem_bytes)
        except NetsteerError as e:
            raise NetsteerError(
                f"allreduce ring passes its {count} leftover elements to the job's {op} "
                f"{name}, as SMPI's lr does: {e.reason}") from None
        if isinstance(part, Steps):
            part = part.programs()
        for prog, more in zip(progs, part):
            prog.extend(more)
    return progs


def _fold_in(prog: Program, rank: int, rem: int, nbytes: int) -> int:
    """Non-powers of two: the first ``2 * rem`` ranks fold in pairs (even sends its
    buffer to odd) before the power-of-two part. Returns the rank's place in that
    part, or -1 for a rank that sits it out."""
    if rank >= 2 * rem:
        return rank - rem
    if rank % 2 == 0:
        prog.append(send(rank + 1, nbytes))
        return -1
    prog.append(recv(rank - 1))
    return rank // 2


def _real_rank(newrank: int, rem: int) -> int:
    """The rank that holds place ``newrank`` of the power-of-two part."""
    return newrank * 2 + 1 if newrank < rem else newrank + rem


def allreduce_recursive_doubling(
    p: int, nbytes: int, root: int = 0, elem_bytes: int = 1
) -> list[Program] | Steps:
    """Recursive doubling (SMPI ``rdb``): the whole buffer is exchanged with
    ``rank ^ mask`` for ``log2 p`` steps. Non-powers of two fold the first ``2 * rem``
    ranks in pairs before (even sends to odd) and unfold them after."""
    pof2 = _pof2_floor(p)
    rem = p - pof2
    if rem == 0:
        ranks = np.arange(p)
        k = pof2.bit_length() - 1
        return Steps(np.stack([ranks ^ (1 << i) for i in range(k)]), np.full((k, p), nbytes))
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        prog = progs[rank]
        newrank = _fold_in(prog, rank, rem, nbytes)
        if newrank != -1:
            mask = 1
            while mask < pof2:
                dst = _real_rank(newrank ^ mask, rem)
                prog.append(sendrecv(dst, nbytes, dst))
                mask <<= 1
        if rank < 2 * rem:
            prog.append(send(rank - 1, nbytes) if rank % 2 else recv(rank + 1))
    return progs


def allreduce_rabenseifner(
    p: int, nbytes: int, root: int = 0, elem_bytes: int = 1
) -> list[Program]:
    """Rabenseifner (SMPI ``rab_rdb``): reduce-scatter by recursive halving, then
    allgather by recursive doubling, each over ``log2 p`` steps with halving then
    doubling sizes. Non-powers of two fold pairs as recursive doubling does."""
    count = _elements(nbytes, elem_bytes)
    pof2 = _pof2_floor(p)
    rem = p - pof2
    cnts = _halving_counts(count, pof2)

    def real(newdst: int) -> int:
        return _real_rank(newdst, rem)

    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        prog = progs[rank]
        newrank = _fold_in(prog, rank, rem, nbytes)
        if newrank != -1:
            ops, send_idx, last_idx = _reduce_scatter_halving(newrank, pof2, cnts, real, elem_bytes)
            prog.extend(ops)
            mask = pof2 >> 1
            while mask > 0:
                newdst = newrank ^ mask
                dst = real(newdst)
                recv_idx, last_idx, send_cnt = _doubling_indices(newrank, newdst, mask, pof2, cnts,
                                                                 send_idx, last_idx)
                prog.append(sendrecv(dst, send_cnt * elem_bytes, dst))
                if newrank > newdst:
                    send_idx = recv_idx
                mask >>= 1
        if rank < 2 * rem:
            prog.append(send(rank - 1, nbytes) if rank % 2 else recv(rank + 1))
    return progs
