"""Lock-step algorithms (every rank one sendrecv per step, partners a permutation),
expanded with numpy rather than message matching."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..dag import FlowDag
from .programs import Frontier, Program, run_programs, sendrecv  # noqa: F401 (run_programs: doctest)

@dataclass
class Steps:
    """A lock-step algorithm: at step ``k`` every rank ``r`` sends ``nbytes[k][r]``
    to ``dst[k][r]`` and receives from the rank that sends to it, in one
    ``MPI_Sendrecv``. Each ``dst[k]`` is a permutation without fixed points.

    Ring, pairwise, Bruck and recursive doubling on powers of two have this shape;
    :func:`run_steps` expands them with numpy, far faster than matching messages.
    """

    dst: np.ndarray  # (steps, p) int
    nbytes: np.ndarray  # (steps, p) int

    def programs(self) -> list[Program]:
        """The same algorithm as per-rank programs (for :func:`run_programs`)."""
        k, p = self.dst.shape
        src = np.empty_like(self.dst)
        for i in range(k):
            src[i, self.dst[i]] = np.arange(p)
        return [
            [sendrecv(int(self.dst[i, r]), int(self.nbytes[i, r]), int(src[i, r]))
             for i in range(k)]
            for r in range(p)
        ]


def run_steps(
    dag: FlowDag,
    steps: Steps,
    hosts: Sequence[int],
    frontier: Frontier | None = None,
    *,
    label: str = "",
    rendezvous: bool = True,
    envelope_bytes: int = 0,
    traffic_class: int = 0,
    priority: int = 0,
) -> Frontier:
    """Append a lock-step algorithm; same result as :func:`run_programs`.

    Flow ``base + k*p + r`` is what rank ``r`` sends at step ``k``.

    Examples
    --------
    >>> st = Steps(dst=np.array([[1, 2, 0], [1, 2, 0]]), nbytes=np.full((2, 3), 8))
    >>> a, b = FlowDag(), FlowDag()
    >>> fa = run_steps(a, st, [0, 1, 2])
    >>> fb = run_programs(b, st.programs(), [0, 1, 2])
    >>> sorted(map(sorted, a.deps)) == sorted(map(sorted, b.deps)), fa
    (True, [[3, 5], [4, 3], [5, 4]])
    """
    dst = np.asarray(steps.dst, dtype=np.int64)
    nb = np.asarray(steps.nbytes, dtype=np.int64)
    k, p = dst.shape
    if (nb < 0).any():
        raise ValueError("a step sends a negative size")
    front = [list(f) for f in frontier] if frontier is not None else [[] for _ in range(p)]
    if k == 0:
        return front
    ranks = np.arange(p)
    src = np.empty_like(dst)
    for i in range(k):
        src[i, dst[i]] = ranks
        if (dst[i] == ranks).any():
            raise ValueError(f"step {i} sends a rank to itself")
    if not (np.sort(dst, axis=1) == ranks).all():
        raise ValueError("a step is not a permutation of the ranks")
    base = len(dag)
    hosts_arr = np.asarray(hosts, dtype=np.int64)[:p]
    # step 0 waits on the given frontier
    first_deps: list[list[int]] = []
    for r in range(p):
        d = int(dst[0, r])
        fs = front[r]
        first_deps.append(fs + [x for x in front[d] if x not in fs] if rendezvous else list(fs))
    counts = [np.fromiter(map(len, first_deps), dtype=np.int64, count=p)]
    flat = [np.fromiter((x for ds in first_deps for x in ds), dtype=np.int64, count=int(counts[0].sum()))]
    if k > 1:
        # later steps wait on the flows each end sent and received one step before
        prev = base + (np.arange(k - 1)[:, None] * p)  # (k-1, 1)
        s_ = np.broadcast_to(ranks, (k - 1, p))
        d_ = dst[1:]
        cols = [prev + s_, prev + src[:-1][np.arange(k - 1)[:, None], s_]]
        if rendezvous:
            cols += [prev + d_, prev + src[:-1][np.arange(k - 1)[:, None], d_]]
        cand = np.stack(cols, axis=-1).reshape(-1, len(cols))
        cand.sort(axis=1)
        keep = np.ones_like(cand, dtype=bool)
        keep[:, 1:] = cand[:, 1:] != cand[:, :-1]
        counts.append(keep.sum(axis=1))
        flat.append(cand[keep])  # row-major: each row's distinct deps, in order

    n = k * p
    dep_counts = np.concatenate(counts)
    dag.add_block(
        hosts_arr[np.broadcast_to(ranks, (k, p))].reshape(-1),
        hosts_arr[dst].reshape(-1),
        nb.reshape(-1) + envelope_bytes,
        dep_offsets=np.concatenate([[0], np.cumsum(dep_counts)]),
        deps=np.concatenate(flat),
        traffic_class=int(traffic_class),
        priority=int(priority),
        label=label,
    )
    assert len(dag) == base + n
    last = base + (k - 1) * p
    return [[last + r, last + int(src[-1, r])] for r in range(p)]


# --------------------------------------------------------------------------------------
