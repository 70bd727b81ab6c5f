"""Reduce: binomial tree, and Rabenseifner (reduce-scatter by recursive halving,
then a binomial gather)."""

from __future__ import annotations

from typing import Callable


from ...errors import NetsteerError
from ._util import _check_root, _elements, _is_pof2, _pof2_floor
from .programs import Op, Program, recv, recv_each, send, sendrecv


def reduce_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial tree (SMPI ``binomial``): receive the whole buffer from
    ``rel | mask`` for increasing masks, then send to ``rel & ~mask``. An empty
    buffer sends nothing: SMPI's ``binomial`` returns at once when ``count == 0``.

    >>> [len(prog) for prog in reduce_binomial(4, 8)], reduce_binomial(4, 0)
    ([2, 1, 2, 1], [[], [], [], []])
    """
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    if nbytes == 0:
        return progs
    for rank in range(p):
        rel = (rank - root) % p
        mask = 1
        while mask < p:
            if rel & mask == 0:
                child = rel | mask
                if child < p:
                    progs[rank].append(recv((child + root) % p))
            else:
                progs[rank].append(send(((rel & ~mask) + root) % p, nbytes))
                break
            mask <<= 1
    return progs


def _halving_counts(count: int, pof2: int) -> list[int]:
    """Element counts of the ``pof2`` blocks of MPICH's recursive halving."""
    cnts = [count // pof2] * pof2
    cnts[-1] = count - (count // pof2) * (pof2 - 1)
    return cnts


def _reduce_scatter_halving(
    newrank: int, pof2: int, cnts: list[int], real: Callable[[int], int], elem: int
) -> tuple[list[Op], int, int]:
    """Recursive halving among ``pof2`` virtual ranks; returns ops, send_idx, last_idx."""
    ops: list[Op] = []
    mask, send_idx, recv_idx, last_idx = 1, 0, 0, pof2
    while mask < pof2:
        newdst = newrank ^ mask
        if newrank < newdst:
            send_idx = recv_idx + pof2 // (mask * 2)
            send_cnt = sum(cnts[send_idx:last_idx])
        else:
            recv_idx = send_idx + pof2 // (mask * 2)
            send_cnt = sum(cnts[send_idx:recv_idx])
        dst = real(newdst)
        ops.append(sendrecv(dst, send_cnt * elem, dst))
        send_idx = recv_idx
        mask <<= 1
        if mask < pof2:
            last_idx = recv_idx + pof2 // mask
    return ops, send_idx, last_idx


def _doubling_indices(newrank: int, newdst: int, mask: int, pof2: int, cnts: list[int],
                      send_idx: int, last_idx: int) -> tuple[int, int, int]:
    """One step of Rabenseifner's second half (gather or allgather by doubling):
    the new receive index, the new last index, and the element count to send."""
    if newrank < newdst:
        if mask != pof2 // 2:
            last_idx = last_idx + pof2 // (mask * 2)
        recv_idx = send_idx + pof2 // (mask * 2)
        return recv_idx, last_idx, sum(cnts[send_idx:recv_idx])
    recv_idx = send_idx - pof2 // (mask * 2)
    return recv_idx, last_idx, sum(cnts[send_idx:last_idx])


def rabenseifner_reduce_check(p: int, nbytes: int, elem_bytes: int = 1) -> int:
    """The element count a :func:`reduce_rabenseifner` of ``nbytes`` works on (0: it
    sends nothing; fewer than ``p`` on a power of two: padded to ``p``), or the
    :class:`NetsteerError` refusing it on ``p`` ranks (also what
    :func:`netsteer.traffic.collectives.counts.message_count` refuses)."""
    count = _elements(nbytes, elem_bytes)
    if 0 < count < p:
        if not _is_pof2(p):
            raise NetsteerError(
                f"reduce rabenseifner on a non-power-of-two rank count needs at least one "
                f"element per rank: {count} elements for {p} ranks (SMPI's scatter_gather "
                f"aborts there with MPI_ERR_TRUNCATE); use algorithm binomial"
            )
        count = p  # SMPI pads the buffer to one element per rank
    return count


def reduce_rabenseifner(
    p: int, nbytes: int, root: int = 0, elem_bytes: int = 1
) -> list[Program]:
    """Rabenseifner (SMPI ``scatter_gather``, MPICH's): reduce-scatter by recursive
    halving, then a binomial gather of the reduced blocks to the root. On a
    non-power of two the first ``2 rem`` ranks fold in pairs first (odd sends its
    buffer to even, which goes on as ``rank / 2``).

    As SMPI 3.32: an empty buffer sends nothing (it returns when ``count == 0``);
    fewer elements than ranks are padded to ``p`` elements on a power of two, and
    refused on other counts, where SMPI's folding step sends ``p`` elements to a
    receive of ``count`` and aborts with ``MPI_ERR_TRUNCATE``.

    >>> [len(prog) for prog in reduce_rabenseifner(3, 6)]  # 1 fold, 1 halving, 1 gather
    [3, 1, 2]
    >>> sorted({n for prog in reduce_rabenseifner(4, 1) for sends, _ in prog for _, n in sends})
    [1, 2]
    """
    _check_root(p, root)
    count = rabenseifner_reduce_check(p, nbytes, elem_bytes)
    if count == 0:
        return [[] for _ in range(p)]
    pof2 = _pof2_floor(p)
    rem = p - pof2
    cnts = _halving_counts(count, pof2)

    def real(newdst: int) -> int:
        return newdst * 2 if newdst < rem else newdst + rem

    if root < 2 * rem:
        newroot = 0 if root % 2 else root // 2
    else:
        newroot = root - rem
    levels = pof2.bit_length() - 1  # log2(pof2)

    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        prog = progs[rank]
        if rank < 2 * rem:
            if rank % 2:
                prog.append(send(rank - 1, nbytes))
                newrank = -1
            else:
                prog.append(recv(rank + 1))
                newrank = rank // 2
        else:
            newrank = rank - rem
        send_idx = last_idx = 0
        if newrank != -1:
            ops, send_idx, last_idx = _reduce_scatter_halving(newrank, pof2, cnts, real, elem_bytes)
            prog.extend(ops)
        # the gather to the root
        if root < 2 * rem and root % 2:
            if rank == root:
                prog.append(recv(0))
                newrank, send_idx, last_idx = 0, 0, 2
            elif newrank == 0:
                prog.append(send(root, cnts[0] * elem_bytes))
                newrank = -1
        if newrank == -1:
            continue
        mask, j = pof2 >> 1, levels - 1
        while mask > 0:
            newdst = newrank ^ mask
            dst = real(newdst)
            if newdst == 0 and root < 2 * rem and root % 2:
                dst = root
            recv_idx, last_idx, send_cnt = _doubling_indices(newrank, newdst, mask, pof2, cnts,
                                                             send_idx, last_idx)
            if (newdst >> j) << j == (newroot >> j) << j:
                prog.append(send(dst, send_cnt * elem_bytes))
                break
            prog.append(recv(dst))
            if newrank > newdst:
                send_idx = recv_idx
            mask >>= 1
            j -= 1
    return progs


def reduce_nonblocking_linear(p: int, nbytes: int, root: int = 0,
                              elem_bytes: int = 1) -> list[Program]:
    """Linear reduce with every receive posted at once (SMPI ``default``, its
    ``MPI_Ireduce``): each rank sends its buffer to the root, which receives from
    all other ranks in one operation, in whatever order the messages come. SMPI
    runs it for a reduce no algorithm is selected for, and so for the remainder of
    a ring allreduce."""
    _check_root(p, root)
    progs: list[Program] = [[send(root, nbytes)] for _ in range(p)]
    progs[root] = [recv_each(r for r in range(p) if r != root)]
    return progs
