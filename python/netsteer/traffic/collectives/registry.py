"""The registry of algorithms, and :func:`expand`, the way into a flow DAG."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ...errors import NetsteerError
from .. import algorithms as _names
from ..dag import FlowDag
from ._util import _check_root
from .allgather import allgather_bruck, allgather_recursive_doubling, allgather_ring
from .allreduce import allreduce_rabenseifner, allreduce_recursive_doubling, allreduce_ring
from .alltoall import alltoall_bruck, alltoall_pairwise, alltoall_ring
from .barrier import barrier_bruck, barrier_recursive_doubling
from .bcast import bcast_binomial, bcast_scatter_allgather
from .gather_scatter import gather_binomial, gather_linear, scatter_binomial, scatter_linear
from .programs import Frontier, Program, recv, run_programs, send
from .reduce import reduce_binomial, reduce_nonblocking_linear, reduce_rabenseifner
from .steps import Steps, run_steps

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
    takes : tuple of str
        Ops whose algorithm, as the job selects it, this one runs parts with
        (``programs`` then takes them as keywords; see :func:`expand`).
    """

    op: str
    name: str
    programs: Callable[..., list[Program]]
    smpi: str
    rooted: bool = False
    takes: tuple[str, ...] = ()


REGISTRY: dict[tuple[str, str], Algorithm] = {}
# names, defaults and aliases: one table (netsteer.traffic.algorithms), shared with
# the streamed path, which needs no DAG builder
DEFAULTS = _names.DEFAULTS
ALIASES = _names.ALIASES
OPS = _names.OPS
_BUILDERS: dict[tuple[str, str], Callable[..., list[Program]]] = {
    ("bcast", "binomial"): bcast_binomial,
    ("bcast", "scatter_allgather"): bcast_scatter_allgather,
    ("reduce", "binomial"): reduce_binomial,
    ("reduce", "rabenseifner"): reduce_rabenseifner,
    ("reduce", "nonblocking_linear"): reduce_nonblocking_linear,
    ("allreduce", "ring"): allreduce_ring,
    ("allreduce", "recursive_doubling"): allreduce_recursive_doubling,
    ("allreduce", "rabenseifner"): allreduce_rabenseifner,
    ("alltoall", "pairwise"): alltoall_pairwise,
    ("alltoall", "bruck"): alltoall_bruck,
    ("alltoall", "ring"): alltoall_ring,
    ("allgather", "ring"): allgather_ring,
    ("allgather", "recursive_doubling"): allgather_recursive_doubling,
    ("allgather", "bruck"): allgather_bruck,
    ("gather", "binomial"): gather_binomial,
    ("gather", "linear"): gather_linear,
    ("scatter", "binomial"): scatter_binomial,
    ("scatter", "linear"): scatter_linear,
    ("barrier", "dissemination"): barrier_bruck,
    ("barrier", "recursive_doubling"): barrier_recursive_doubling,
}
# SMPI's lr passes what the ring leaves over to the job's reduce, then its bcast
_TAKES = {("allreduce", "ring"): ("reduce", "bcast")}


def register(op: str, name: str, fn: Callable[..., list[Program]], smpi: str, *,
             rooted: bool = False, default: bool = False, aliases: Sequence[str] = (),
             takes: Sequence[str] = ()) -> None:
    """Add an algorithm to the registry (``default`` makes it the op's default)."""
    REGISTRY[(op, name)] = Algorithm(op, name, fn, smpi, rooted, tuple(takes))
    names = _names.NAMES.setdefault(op, [])
    if name not in names:
        names.append(name)
    if default:
        DEFAULTS[op] = name
    for a in (smpi, *aliases):
        if a != name:
            ALIASES[(op, a)] = name


for _op, _name, _smpi, _rooted, _default, _aliases in _names.TABLE:
    register(_op, _name, _BUILDERS[(_op, _name)], _smpi, rooted=_rooted, default=_default,
             aliases=_aliases, takes=_TAKES.get((_op, _name), ()))
assert len(_BUILDERS) == len(_names.TABLE)


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
    job_algorithms: Mapping[str, str] | None = None,
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
    job_algorithms : mapping, optional
        The algorithm the job runs for each op (SMPI selects them per job): a ring
        allreduce runs its leftover elements through the job's reduce and bcast.
        What SMPI runs unselected by default
        (:func:`netsteer.traffic.algorithms.job_choices`).

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
    chosen = {**_names.UNSELECTED, **(job_algorithms or {})}
    progs = algo.programs(p, int(nbytes), root, elem_bytes, **{o: chosen[o] for o in algo.takes})
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
    c = dag.columns()  # the arrays once: reading dag.src[i] rebuilds a column per access
    src, dst = c.src.tolist(), c.dst.tolist()
    off, deps = c.dep_offsets.tolist(), c.deps.tolist()
    depth = [0] * (len(dag) - first)
    for i in range(first, len(dag)):
        own = 1 if src[i] != dst[i] else 0
        below = max((depth[d - first] for d in deps[off[i]:off[i + 1]] if d >= first), default=0)
        depth[i - first] = below + own
    return max(depth, default=0)
