"""MPI collectives expanded into their real algorithms, as flow DAGs.

Each algorithm is written the way SMPI (SimGrid's MPI) runs it: a *program per rank*,
a list of blocking operations (``send``, ``recv``, ``sendrecv``), with the same
partners, the same message sizes and the same order as SimGrid's
``src/smpi/colls/*``. :func:`run_programs` then matches sends with receives the way
MPI does (in order, per pair of ranks) and adds one flow per message.

Dependencies
------------
Every rank has a *frontier*: the flows it last took part in. A blocking operation is
posted when the rank's previous operation is over, so its messages depend on the
poster's frontier; when it completes, the rank's frontier becomes the flows it sent
and received in it. Under ``rendezvous=True`` (the default) a message also waits for
the receiver to post its receive, so it depends on the receiver's frontier too: this
is how SMPI moves every message (its ``smpi/async-small-thresh`` is 0 by default)
and how MPI moves large ones. ``rendezvous=False`` is the eager protocol: the sender
alone decides when bytes leave.

Sizes follow MPI's count semantics: for ``alltoall``, ``allgather``, ``gather`` and
``scatter`` ``nbytes`` is what each rank sends to each peer; for ``bcast``,
``reduce`` and ``allreduce`` it is the buffer size. Buffers split into chunks the
way SimGrid splits them: by *elements* of ``elem_bytes`` each, with the remainder
where SimGrid puts it.

Messages between two ranks on the same host become flows with ``src == dst``: they
move nothing and cost nothing (loopback is free), but still order the DAG.

Examples
--------
>>> from netsteer.traffic.dag import FlowDag
>>> dag = FlowDag()
>>> front = expand(dag, "bcast", "binomial", hosts=list(range(8)), nbytes=1000)
>>> len(dag), dag_depth(dag)
(7, 3)
>>> sorted(dag.dst)
[1, 2, 3, 4, 5, 6, 7]
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..errors import NetsteerError
from .dag import FlowDag

# One blocking operation of one rank: (sends, recvs), sends = ((peer, nbytes), ...),
# recvs = (peer, ...). A ``sendrecv`` has one of each; a send or a recv has one.
Op = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]
Program = list[Op]
Frontier = list[list[int]]

#: Bytes of MPI envelope (tag, source, communicator) SMPI adds to every message.
MPI_ENVELOPE_BYTES = 16


def send(peer: int, nbytes: int) -> Op:
    """A blocking send of ``nbytes`` to ``peer``."""
    return (((peer, nbytes),), ())


def recv(peer: int) -> Op:
    """A blocking receive from ``peer`` (the size is the sender's)."""
    return ((), (peer,))


def sendrecv(dst: int, nbytes: int, src: int) -> Op:
    """``MPI_Sendrecv``: send ``nbytes`` to ``dst`` and receive from ``src`` at once."""
    return (((dst, nbytes),), (src,))


# --------------------------------------------------------------------------------------
# the matching engine
# --------------------------------------------------------------------------------------


def run_programs(
    dag: FlowDag,
    programs: Sequence[Program],
    hosts: Sequence[int],
    frontier: Frontier | None = None,
    *,
    label: str = "",
    rendezvous: bool = True,
    envelope_bytes: int = 0,
    traffic_class: int = 0,
    priority: int = 0,
) -> Frontier:
    """Add the flows of per-rank programs to ``dag``; return the new frontier.

    Parameters
    ----------
    dag : FlowDag
        Flows are appended to it.
    programs : sequence of list of Op
        ``programs[r]`` is rank ``r``'s list of blocking operations.
    hosts : sequence of int
        ``hosts[r]`` is the host index of rank ``r``.
    frontier : list of list of int, optional
        Per rank, the flows its first operation waits for. Empty by default.
    label : str
        Label of every added flow.
    rendezvous : bool
        Whether a message also waits for its receiver to post (see the module notes).
    envelope_bytes : int
        Added to every message: the MPI envelope (tag, source, communicator) that
        travels with the payload. SMPI sends :data:`MPI_ENVELOPE_BYTES`.

    Returns
    -------
    list of list of int
        Per rank, the flows of its last operation (its old frontier if it had none).

    Raises
    ------
    RuntimeError
        If the programs deadlock or leave a message unmatched: a bug in an algorithm,
        not in user input.

    Examples
    --------
    Two ranks swap 10 bytes, then rank 0 sends 5 more to rank 1:

    >>> dag = FlowDag()
    >>> progs = [[sendrecv(1, 10, 1), send(1, 5)], [sendrecv(0, 10, 0), recv(0)]]
    >>> run_programs(dag, progs, hosts=[3, 4])
    [[2], [2]]
    >>> dag.src, dag.dst, dag.bytes, dag.deps
    ([4, 3, 3], [3, 4, 4], [10, 10, 5], [[], [], [0, 1]])
    """
    n = len(programs)
    if len(hosts) < n:
        raise ValueError(f"{n} programs but only {len(hosts)} hosts")
    front = [list(f) for f in frontier] if frontier is not None else [[] for _ in range(n)]
    if len(front) != n:
        raise ValueError(f"frontier has {len(front)} ranks, programs have {n}")
    pc = [0] * n  # next operation of each rank
    posted_front: list[list[int]] = [[] for _ in range(n)]  # frontier when current op posted
    outstanding = [0] * n  # messages of the current op still unmatched
    done_flows: list[list[int]] = [[] for _ in range(n)]  # flows of the current op
    sends: dict[tuple[int, int], deque] = {}
    recvs: dict[tuple[int, int], deque] = {}
    ready = deque(range(n))

    def complete(r: int) -> None:
        if done_flows[r]:
            front[r] = done_flows[r]
        done_flows[r] = []
        pc[r] += 1
        ready.append(r)

    def match(key: tuple[int, int]) -> None:
        sq, rq = sends.get(key), recvs.get(key)
        while sq and rq:
            nbytes, sfront = sq.popleft()
            rfront = rq.popleft()
            s, d = key
            deps = sfront + [x for x in rfront if x not in sfront] if rendezvous else sfront
            f = dag.add(hosts[s], hosts[d], int(nbytes) + envelope_bytes, deps=deps,
                        traffic_class=traffic_class, priority=priority, label=label)
            for r in (s, d):
                done_flows[r].append(f)
                outstanding[r] -= 1
                if outstanding[r] == 0:
                    complete(r)

    while ready:
        r = ready.popleft()
        if pc[r] >= len(programs[r]):
            continue
        op_sends, op_recvs = programs[r][pc[r]]
        outstanding[r] = len(op_sends) + len(op_recvs)
        posted_front[r] = front[r]
        if outstanding[r] == 0:
            complete(r)
            continue
        keys = []
        for peer, nbytes in op_sends:
            if nbytes < 0:
                raise ValueError(f"rank {r} sends a negative size {nbytes}")
            sends.setdefault((r, peer), deque()).append((nbytes, front[r]))
            keys.append((r, peer))
        for peer in op_recvs:
            recvs.setdefault((peer, r), deque()).append(front[r])
            keys.append((peer, r))
        for key in keys:
            match(key)

    stuck = [r for r in range(n) if pc[r] < len(programs[r])]
    if stuck:
        raise RuntimeError(f"collective deadlocks: ranks {stuck[:8]} wait forever")
    if any(q for q in sends.values()) or any(q for q in recvs.values()):
        raise RuntimeError("collective leaves unmatched messages")
    return front


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
# helpers shared by algorithms
# --------------------------------------------------------------------------------------


def _pof2_floor(p: int) -> int:
    """Largest power of two not above ``p``."""
    return 1 << (p.bit_length() - 1)


def _is_pof2(p: int) -> bool:
    return p > 0 and p & (p - 1) == 0


def _elements(nbytes: int, elem_bytes: int) -> int:
    if elem_bytes < 1:
        raise NetsteerError(f"element size must be at least 1 byte, got {elem_bytes}")
    if nbytes % elem_bytes:
        raise NetsteerError(
            f"buffer of {nbytes} bytes is not a whole number of {elem_bytes}-byte elements"
        )
    return nbytes // elem_bytes


def _check_root(p: int, root: int) -> None:
    if not 0 <= root < p:
        raise NetsteerError(f"root {root} is not a rank of a {p}-rank job (0..{p - 1})")


# --------------------------------------------------------------------------------------
# algorithms: each returns one program per rank
# --------------------------------------------------------------------------------------


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


def reduce_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial tree (SMPI ``binomial``): receive the whole buffer from
    ``rel | mask`` for increasing masks, then send to ``rel & ~mask``."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
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


def reduce_rabenseifner(
    p: int, nbytes: int, root: int = 0, elem_bytes: int = 1
) -> list[Program]:
    """Rabenseifner (SMPI ``scatter_gather``): reduce-scatter by recursive halving,
    then a binomial gather of the reduced blocks to the root. Needs a power of two:
    SMPI's code has a folding step for other counts (odd ranks send to even ones),
    kept below, but it aborts there with ``MPI_ERR_TRUNCATE``, so netsteer refuses
    what no reference can check."""
    _check_root(p, root)
    if not _is_pof2(p):
        raise NetsteerError(
            f"reduce rabenseifner needs a power-of-two rank count, got {p} "
            f"(SMPI's scatter_gather fails on others); use algorithm binomial"
        )
    count = _elements(nbytes, elem_bytes)
    if count < p:
        raise NetsteerError(
            f"reduce rabenseifner needs at least one element per rank: "
            f"{count} elements for {p} ranks; use algorithm binomial"
        )
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
            if newrank < newdst:
                if mask != pof2 // 2:
                    last_idx = last_idx + pof2 // (mask * 2)
                recv_idx = send_idx + pof2 // (mask * 2)
                send_cnt = sum(cnts[send_idx:recv_idx])
            else:
                recv_idx = send_idx - pof2 // (mask * 2)
                send_cnt = sum(cnts[send_idx:last_idx])
            if (newdst >> j) << j == (newroot >> j) << j:
                prog.append(send(dst, send_cnt * elem_bytes))
                break
            prog.append(recv(dst))
            if newrank > newdst:
                send_idx = recv_idx
            mask >>= 1
            j -= 1
    return progs


def allreduce_ring(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """Ring (SMPI ``lr``): ``p - 1`` reduce-scatter steps then ``p - 1`` allgather
    steps, each sending ``count / p`` elements to ``rank + 1`` and receiving from
    ``rank - 1``. SMPI reduces a remainder of ``count % p`` elements afterwards with
    its default allreduce; netsteer refuses such sizes instead of guessing."""
    count = _elements(nbytes, elem_bytes)
    if count < p or count % p:
        raise NetsteerError(
            f"allreduce ring splits the buffer in {p} equal chunks: {count} elements "
            f"of {elem_bytes} bytes is not a positive multiple of {p}"
        )
    chunk = count // p * elem_bytes
    right = (np.arange(p) + 1) % p
    k = 2 * (p - 1)
    return Steps(np.tile(right, (k, 1)), np.full((k, p), chunk))


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
        if rank < 2 * rem:
            if rank % 2 == 0:
                prog.append(send(rank + 1, nbytes))
                newrank = -1
            else:
                prog.append(recv(rank - 1))
                newrank = rank // 2
        else:
            newrank = rank - rem
        if newrank != -1:
            mask = 1
            while mask < pof2:
                newdst = newrank ^ mask
                dst = newdst * 2 + 1 if newdst < rem else newdst + rem
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
        return newdst * 2 + 1 if newdst < rem else newdst + rem

    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        prog = progs[rank]
        if rank < 2 * rem:
            if rank % 2 == 0:
                prog.append(send(rank + 1, nbytes))
                newrank = -1
            else:
                prog.append(recv(rank - 1))
                newrank = rank // 2
        else:
            newrank = rank - rem
        if newrank != -1:
            ops, send_idx, last_idx = _reduce_scatter_halving(newrank, pof2, cnts, real, elem_bytes)
            prog.extend(ops)
            mask = pof2 >> 1
            while mask > 0:
                newdst = newrank ^ mask
                dst = real(newdst)
                if newrank < newdst:
                    if mask != pof2 // 2:
                        last_idx = last_idx + pof2 // (mask * 2)
                    recv_idx = send_idx + pof2 // (mask * 2)
                    send_cnt = sum(cnts[send_idx:recv_idx])
                else:
                    recv_idx = send_idx - pof2 // (mask * 2)
                    send_cnt = sum(cnts[send_idx:last_idx])
                prog.append(sendrecv(dst, send_cnt * elem_bytes, dst))
                if newrank > newdst:
                    send_idx = recv_idx
                mask >>= 1
        if rank < 2 * rem:
            prog.append(send(rank - 1, nbytes) if rank % 2 else recv(rank + 1))
    return progs


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


def allgather_ring(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> Steps:
    """SMPI's ``ring``: at step ``i`` (1..p-1) send the own block to ``rank + i``
    and receive from ``rank - i``. (A shift exchange: partners change every step.)"""
    ranks = np.arange(p)
    return Steps(np.stack([(ranks + i) % p for i in range(1, p)]).reshape(p - 1, p),
                 np.full((p - 1, p), nbytes))


def _in_order_children(vrank: int, p: int) -> tuple[int | None, list[int]]:
    """Parent and children (virtual ranks) in Open MPI's in-order binomial tree."""
    children, mask = [], 1
    while mask < p:
        remote = vrank ^ mask
        if remote < vrank:
            return remote, children
        if remote < p:
            children.append(remote)
        mask <<= 1
    return None, children


def gather_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial gather (SMPI ``ompi_binomial``): receive each child's subtree
    (``min(vkid - vrank, p - vkid)`` blocks) for increasing masks, then send all
    gathered blocks to the parent."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        vrank = (rank - root) % p
        parent, kids = _in_order_children(vrank, p)
        total = 1
        for vkid in kids:
            progs[rank].append(recv((vkid + root) % p))
            total += min(vkid - vrank, p - vkid)
        if parent is not None:
            progs[rank].append(send((parent + root) % p, total * nbytes))
    return progs


def scatter_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial scatter (SMPI ``ompi_binomial``): receive the subtree's blocks from
    the parent, then send each child ``min(vkid - vrank, p - vkid)`` blocks."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        vrank = (rank - root) % p
        parent, kids = _in_order_children(vrank, p)
        if parent is not None:
            progs[rank].append(recv((parent + root) % p))
        for vkid in kids:
            progs[rank].append(send((vkid + root) % p, min(vkid - vrank, p - vkid) * nbytes))
    return progs


def gather_linear(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Linear gather (SMPI ``ompi_basic_linear``): the root receives from ranks
    ``0..p-1`` in order, one at a time."""
    _check_root(p, root)
    progs: list[Program] = [[send(root, nbytes)] if r != root else [] for r in range(p)]
    progs[root] = [recv(r) for r in range(p) if r != root]
    return progs


def scatter_linear(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Linear scatter (SMPI ``ompi_basic_linear``): the root sends to ranks
    ``0..p-1`` in order, one at a time."""
    _check_root(p, root)
    progs: list[Program] = [[recv(root)] if r != root else [] for r in range(p)]
    progs[root] = [send(r, nbytes) for r in range(p) if r != root]
    return progs


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
# the registry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Algorithm:
    """One registered algorithm.

    Attributes
    ----------
    op, name : str
        The MPI operation and netsteer's name for the algorithm.
    programs : callable
        ``programs(p, nbytes, root, elem_bytes) -> list of Program``.
    smpi : str
        The name SimGrid's SMPI gives it (``--cfg=smpi/<op>:<smpi>``).
    rooted : bool
        Whether the operation has a root.
    """

    op: str
    name: str
    programs: Callable[..., list[Program]]
    smpi: str
    rooted: bool = False


REGISTRY: dict[tuple[str, str], Algorithm] = {}
DEFAULTS: dict[str, str] = {}
ALIASES: dict[tuple[str, str], str] = {}


def register(op: str, name: str, fn: Callable[..., list[Program]], smpi: str, *,
             rooted: bool = False, default: bool = False, aliases: Sequence[str] = ()) -> None:
    """Add an algorithm to the registry (``default`` makes it the op's default)."""
    REGISTRY[(op, name)] = Algorithm(op, name, fn, smpi, rooted)
    if default:
        DEFAULTS[op] = name
    for a in (smpi, *aliases):
        if a != name:
            ALIASES[(op, a)] = name


register("bcast", "binomial", bcast_binomial, "binomial_tree", rooted=True, default=True)
register("bcast", "scatter_allgather", bcast_scatter_allgather, "scatter_LR_allgather",
         rooted=True)
register("reduce", "binomial", reduce_binomial, "binomial", rooted=True, default=True)
register("reduce", "rabenseifner", reduce_rabenseifner, "scatter_gather", rooted=True)
register("allreduce", "ring", allreduce_ring, "lr", default=True)
register("allreduce", "recursive_doubling", allreduce_recursive_doubling, "rdb")
register("allreduce", "rabenseifner", allreduce_rabenseifner, "rab_rdb")
register("alltoall", "pairwise", alltoall_pairwise, "pair", default=True)
register("alltoall", "bruck", alltoall_bruck, "bruck")
register("allgather", "ring", allgather_ring, "ring", default=True)
register("gather", "binomial", gather_binomial, "ompi_binomial", rooted=True, default=True)
register("gather", "linear", gather_linear, "ompi_basic_linear", rooted=True)
register("scatter", "binomial", scatter_binomial, "ompi_binomial", rooted=True, default=True)
register("scatter", "linear", scatter_linear, "ompi_basic_linear", rooted=True)
register("barrier", "dissemination", barrier_bruck, "ompi_bruck", default=True,
         aliases=("bruck",))
register("barrier", "recursive_doubling", barrier_recursive_doubling,
         "ompi_recursivedoubling")

#: Operations an MPI program may use, collectives and ``send``.
OPS = ("bcast", "reduce", "allreduce", "alltoall", "allgather", "gather", "scatter",
       "barrier", "send")


def algorithms(op: str) -> list[str]:
    """Names of the algorithms registered for ``op``.

    >>> algorithms("allreduce")
    ['ring', 'recursive_doubling', 'rabenseifner']
    """
    return [name for (o, name) in REGISTRY if o == op]


def lookup(op: str, algorithm: str | None = None) -> Algorithm:
    """The algorithm for ``op`` (its default when ``algorithm`` is None).

    SimGrid's names are accepted too.

    >>> lookup("allreduce", "rdb").name
    'recursive_doubling'
    >>> lookup("bcast").smpi
    'binomial_tree'
    """
    if op not in DEFAULTS:
        known = ", ".join(o for o in OPS if o in DEFAULTS)
        raise NetsteerError(f"unknown collective {op!r}; known: {known}")
    name = algorithm or DEFAULTS[op]
    name = ALIASES.get((op, name), name)
    if (op, name) not in REGISTRY:
        raise NetsteerError(
            f"unknown algorithm {algorithm!r} for {op}; known: {', '.join(algorithms(op))}"
        )
    return REGISTRY[(op, name)]


def expand(
    dag: FlowDag,
    op: str,
    algorithm: str | None,
    hosts: Sequence[int],
    nbytes: int,
    frontier: Frontier | None = None,
    label: str = "",
    *,
    root: int = 0,
    elem_bytes: int = 1,
    rendezvous: bool = True,
    envelope_bytes: int = 0,
    traffic_class: int = 0,
    priority: int = 0,
) -> Frontier:
    """Append collective ``op`` over ranks ``0..len(hosts)-1`` to ``dag``.

    Parameters
    ----------
    dag : FlowDag
    op : str
        ``bcast``, ``reduce``, ``allreduce``, ``alltoall``, ``allgather``,
        ``gather``, ``scatter`` or ``barrier``.
    algorithm : str or None
        A name from :func:`algorithms` (or SimGrid's), None for the default.
    hosts : sequence of int
        Host of each rank.
    nbytes : int
        MPI count semantics (see the module notes).
    frontier : list of list of int, optional
        Per rank, the flows the collective waits for.
    label : str
        Label of the added flows.
    root : int
        Root rank of ``bcast``, ``reduce``, ``gather`` and ``scatter``.
    elem_bytes : int
        Element size, for the chunking of reductions.
    rendezvous, envelope_bytes
        As in :func:`run_programs`.

    Returns
    -------
    list of list of int
        The frontier after the collective.

    Examples
    --------
    Ring allreduce of 400 bytes on 4 ranks: 2(p-1) = 6 steps of 100 bytes per rank.

    >>> dag = FlowDag()
    >>> _ = expand(dag, "allreduce", "ring", [0, 1, 2, 3], 400)
    >>> len(dag), set(dag.bytes), dag_depth(dag)
    (24, {100}, 6)
    """
    if nbytes < 0:
        raise NetsteerError(f"size must not be negative, got {nbytes} bytes")
    algo = lookup(op, algorithm)
    p = len(hosts)
    if p < 1:
        raise NetsteerError(f"{op} needs at least one rank")
    if algo.rooted:
        _check_root(p, root)
    elif root:
        raise NetsteerError(f"{op} has no root, got root={root}")
    if p == 1:
        return [list(f) for f in frontier] if frontier is not None else [[]]
    progs = algo.programs(p, int(nbytes), root, elem_bytes)
    run = run_steps if isinstance(progs, Steps) else run_programs
    return run(dag, progs, hosts, frontier, label=label, rendezvous=rendezvous,
               envelope_bytes=envelope_bytes, traffic_class=traffic_class, priority=priority)


def point_to_point(
    dag: FlowDag,
    hosts: Sequence[int],
    src: int,
    dst: int,
    nbytes: int,
    frontier: Frontier | None = None,
    label: str = "",
    *,
    rendezvous: bool = True,
    envelope_bytes: int = 0,
    traffic_class: int = 0,
    priority: int = 0,
) -> Frontier:
    """``MPI_Send`` from rank ``src`` matched by ``MPI_Recv`` at rank ``dst``.

    >>> dag = FlowDag()
    >>> point_to_point(dag, [5, 6, 7], 0, 2, 64)
    [[0], [], [0]]
    """
    p = len(hosts)
    for name, r in (("src", src), ("dst", dst)):
        if not 0 <= r < p:
            raise NetsteerError(f"send {name} {r} is not a rank of a {p}-rank job (0..{p - 1})")
    if src == dst:
        raise NetsteerError(f"send from rank {src} to itself")
    if nbytes < 0:
        raise NetsteerError(f"size must not be negative, got {nbytes} bytes")
    progs: list[Program] = [[] for _ in range(p)]
    progs[src].append(send(dst, int(nbytes)))
    progs[dst].append(recv(src))
    return run_programs(dag, progs, hosts, frontier, label=label, rendezvous=rendezvous,
                        envelope_bytes=envelope_bytes, traffic_class=traffic_class,
                        priority=priority)


def dag_depth(dag: FlowDag, first: int = 0) -> int:
    """Longest chain of dependent flows among flows ``first..``: the number of rounds.

    Flows that move nothing (``src == dst``) do not count as a round.

    >>> d = FlowDag(); a = d.add(0, 1, 1); b = d.add(1, 2, 1, deps=[a]); dag_depth(d)
    2
    """
    depth = [0] * (len(dag) - first)
    for i in range(first, len(dag)):
        own = 1 if dag.src[i] != dag.dst[i] else 0
        below = max((depth[d - first] for d in dag.deps[i] if d >= first), default=0)
        depth[i - first] = below + own
    return max(depth, default=0)
