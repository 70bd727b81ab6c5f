"""How many messages (flows) a collective makes, without expanding it.

A DAG job is refused before it is built when its flows would not fit in the memory
limit (:func:`netsteer.traffic.mpi.check_job_size`), so the count must hold for any
rank count and size. Each algorithm's count is a closed form read off its builder
(the builder's loops, counted rather than run): ``p - 1`` for the trees, ``p
ceil(log2 p)`` for Bruck and dissemination, ``pof2 log2 pof2`` plus the folding for
recursive doubling, and so on. One algorithm has no short closed form, allgather
recursive doubling on a non-power of two; its loops are counted with numpy over the
ranks, ``O(p log^2 p)`` integer operations and no message.

``tests/traffic/test_flow_counts.py`` checks every count against the expanded DAG
over many rank counts, sizes, roots and element sizes.

Examples
--------
>>> message_count("alltoall", "bruck", 4096, 8)    # 4096 x 12
49152
>>> message_count("allreduce", "ring", 4096, 1024)  # count < p: only the reduce + bcast
8190
>>> message_count("allreduce", "ring", 4, 400), message_count("barrier", None, 5, 0)
(24, 15)
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ...errors import NetsteerError
from .. import algorithms as _names
from ._util import _check_root, _elements, _is_pof2, _pof2_floor


def _log2(n: int) -> int:
    """``log2 n`` of a power of two."""
    return n.bit_length() - 1


def _ceil_log2(p: int) -> int:
    return (p - 1).bit_length()


def _allgather_rdb_nonpof2(p: int) -> int:
    """Messages of :func:`allgather_recursive_doubling` on any ``p``: its loops over
    the ranks, vectorised (the exchanges with ``rank ^ mask`` that exist, and the
    blocks passed on inside a group whose partner group is cut short)."""
    rank = np.arange(p, dtype=np.int64)
    total = 0
    mask = 1
    while mask < p:
        dst = rank ^ mask
        total += int((dst < p).sum())
        group = rank & ~(mask - 1)
        pgroup = dst & ~(mask - 1)
        cut = pgroup + mask > p
        if cut.any():
            r, done = rank[cut], (p - group - mask)[cut]
            half = mask >> 1
            while half:
                peer = r ^ half
                first = r & ~(2 * half - 1)
                # the sends of the builder (each matched by the peer's recv)
                total += int(((peer > r) & (r < first + done) & (first + done <= peer)).sum())
                half >>= 1
        mask <<= 1
    return total


def message_count(op: str, algorithm: str | None, p: int, nbytes: int = 0, root: int = 0,
                  elem_bytes: int = 1, job_algorithms: Mapping[str, str] | None = None) -> int:
    """Messages of collective ``op`` (its ``algorithm``, None for the default) over
    ``p`` ranks with MPI size ``nbytes``: the flows :func:`netsteer.traffic.collectives.expand`
    adds, exactly.

    Raises
    ------
    NetsteerError
        Where :func:`~netsteer.traffic.collectives.expand` would refuse the
        collective: an unknown algorithm, a root beyond the ranks, a size that is
        not a whole number of elements, an algorithm that does not fit ``p``.

    Examples
    --------
    >>> message_count("bcast", "scatter_allgather", 8, 3)  # 2 scatter messages + the ring's 56
    58
    >>> message_count("alltoall", "pairwise", 6, 8)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: alltoall pairwise pairs ranks by XOR and needs a power-of-two rank count, got 6; use algorithm bruck
    """
    name = _names.canonical(op, algorithm)
    if nbytes < 0:
        raise NetsteerError(f"size must not be negative, got {nbytes} bytes")
    if p < 1:
        raise NetsteerError(f"{op} needs at least one rank")
    if op in ("bcast", "reduce", "gather", "scatter"):
        _check_root(p, root)
    if p == 1:
        return 0
    pof2 = _pof2_floor(p)
    rem = p - pof2
    key = (op, name)
    if key == ("reduce", "binomial"):
        return p - 1 if _elements(nbytes, elem_bytes) else 0  # SMPI returns at once on count 0
    if key in (("bcast", "binomial"), ("reduce", "nonblocking_linear"),
               ("gather", "binomial"), ("gather", "linear"), ("scatter", "binomial"),
               ("scatter", "linear")):
        return p - 1
    if key == ("bcast", "scatter_allgather"):
        piece = (nbytes + p - 1) // p
        # the scatter sends to each relative rank whose piece starts inside the buffer
        scatter = 0 if piece == 0 else min(p - 1, -(-nbytes // piece) - 1)
        return scatter + p * (p - 1)
    if key == ("reduce", "rabenseifner"):
        from .reduce import rabenseifner_reduce_check

        if rabenseifner_reduce_check(p, nbytes, elem_bytes) == 0:
            return 0
        odd_root = root < 2 * rem and root % 2 == 1
        # fold, recursive halving, binomial gather (+ the hop to an odd folded root)
        return rem + pof2 * _log2(pof2) + pof2 - 1 + odd_root
    if key == ("allreduce", "ring"):
        count = _elements(nbytes, elem_bytes)
        ring = 2 * (p - 1) * p if count >= p else 0
        left = count % p if count >= p else count
        if count >= p and left == 0:
            return ring
        chosen = {**_names.UNSELECTED, **(job_algorithms or {})}
        more = 0
        for part in ("reduce", "bcast"):
            try:
                more += message_count(part, chosen[part], p, left * elem_bytes, 0, elem_bytes)
            except NetsteerError as e:
                raise NetsteerError(
                    f"allreduce ring passes its {left} leftover elements to the job's {part} "
                    f"{chosen[part]}, as SMPI's lr does: {e.reason}") from None
        return ring + more
    if key == ("allreduce", "recursive_doubling"):
        return 2 * rem + pof2 * _log2(pof2)
    if key == ("allreduce", "rabenseifner"):
        _elements(nbytes, elem_bytes)
        return 2 * rem + 2 * pof2 * _log2(pof2)
    if key == ("alltoall", "pairwise"):
        if not _is_pof2(p):
            from .alltoall import alltoall_pairwise

            alltoall_pairwise(p, nbytes)  # raises its own refusal
        return p * (p - 1)
    if key in (("alltoall", "ring"), ("allgather", "ring")):
        return p * (p - 1)
    if key in (("alltoall", "bruck"), ("allgather", "bruck"), ("barrier", "dissemination")):
        return p * _ceil_log2(p)
    if key == ("allgather", "recursive_doubling"):
        return p * _log2(p) if rem == 0 else _allgather_rdb_nonpof2(p)
    if key == ("barrier", "recursive_doubling"):
        return 2 * rem + pof2 * _log2(pof2)
    raise NetsteerError(f"no message count for {op} {name}")  # a new algorithm: add its count


def rounds(op: str, algorithm: str | None, p: int, nbytes: int = 0, elem_bytes: int = 1,
           job_algorithms: Mapping[str, str] | None = None) -> int:
    """Dependent message rounds of a collective (the latency it pays at least, in path
    latencies): ``ceil(log2 p)`` for the trees, Bruck and dissemination, ``p - 1`` per
    ring or shift pass, and for the linear ones ``p - 1``: the root takes one message
    at a time. A lower bound of the DAG's depth
    (:func:`netsteer.traffic.collectives.dag_depth`), up to the extra hops some
    non-powers of two take; it sizes the counter sampling of a latency-bound job
    (:func:`netsteer.sim.stream.least_time_ns`). 0 on one rank, or for an algorithm it
    cannot name.

    >>> rounds("allreduce", "ring", 8, 800), rounds("bcast", None, 200), rounds("allreduce", "ring", 200, 64)
    (14, 8, 9)
    """
    try:
        name = _names.canonical(op, algorithm)
    except NetsteerError:
        return 0
    if p <= 1:
        return 0
    log = _ceil_log2(p)
    key = (op, name)
    if key in (("reduce", "binomial"), ("reduce", "rabenseifner")) and nbytes // max(elem_bytes, 1) == 0:
        return 0  # SMPI returns at once on an empty buffer
    if key == ("allreduce", "ring"):
        count = nbytes // max(elem_bytes, 1)
        left = count % p if count >= p else count
        ring = 2 * (p - 1) if count >= p else 0
        if count >= p and left == 0:
            return ring
        chosen = {**_names.UNSELECTED, **(job_algorithms or {})}
        return (ring + rounds("reduce", chosen["reduce"], p, left * elem_bytes, elem_bytes)
                + rounds("bcast", chosen["bcast"], p, left * elem_bytes, elem_bytes))
    if key == ("bcast", "scatter_allgather"):
        return p - 1  # the ring allgather (the scatter may be short, or empty at 0 bytes)
    if key == ("reduce", "nonblocking_linear"):
        return 1  # every receive posted at once
    if key in (("gather", "linear"), ("scatter", "linear"), ("alltoall", "pairwise"), ("alltoall", "ring"),
               ("allgather", "ring")):
        return p - 1
    if key in (("allreduce", "rabenseifner"), ("reduce", "rabenseifner")):
        return 2 * _log2(_pof2_floor(p))
    return log  # binomial trees, Bruck, dissemination, recursive doubling
