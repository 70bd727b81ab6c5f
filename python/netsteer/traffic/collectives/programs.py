"""Programs per rank (blocking send, recv, sendrecv) and the matching engine that
turns them into flows, as MPI matches messages: in order, per pair of ranks."""

from __future__ import annotations

from collections import deque
from typing import Sequence

# Bytes of MPI envelope (tag, source, communicator) SMPI adds to every message: one
# source, read there by the streamed path too
from ..algorithms import MPI_ENVELOPE_BYTES  # noqa: F401
from ..dag import FlowDag

# One blocking operation of one rank: (sends, recvs), sends = ((peer, nbytes), ...),
# recvs = (peer, ...). A ``sendrecv`` has one of each; a send or a recv has one.
Op = tuple[tuple[tuple[int, int], ...], tuple[int, ...]]
Program = list[Op]
Frontier = list[list[int]]



def send(peer: int, nbytes: int) -> Op:
    """A blocking send of ``nbytes`` to ``peer``."""
    return (((peer, nbytes),), ())


def recv(peer: int) -> Op:
    """A blocking receive from ``peer`` (the size is the sender's)."""
    return ((), (peer,))


def recv_each(peers) -> Op:
    """One operation receiving a message from each of ``peers``, all posted at once
    (``MPI_Irecv`` each, then ``MPI_Waitall``): they match in any order."""
    return ((), tuple(peers))


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
