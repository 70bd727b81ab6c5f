"""The names of the collective algorithms, without their DAG builders.

:mod:`netsteer.traffic.collectives` registers each algorithm with the function that
expands it into a flow DAG; a streamed run (:mod:`netsteer.sim.stream`) only needs
to check a name and hand it to the engine, which has the algorithms in Rust. This
table is the one source of the names, defaults, SMPI names and aliases: the
registry is built from it.

Examples
--------
>>> canonical("allreduce", "rdb"), canonical("bcast", None)
('recursive_doubling', 'binomial')
>>> canonical("allreduce", "nope")
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: unknown algorithm 'nope' for allreduce; known: ring, recursive_doubling, rabenseifner
"""

from __future__ import annotations

from ..errors import NetsteerError

#: Bytes SMPI adds to every message (its envelope); the engine and the DAG add them too.
MPI_ENVELOPE_BYTES = 16

#: (op, name, SMPI's name, rooted, default, other aliases), in registration order.
TABLE: tuple[tuple[str, str, str, bool, bool, tuple[str, ...]], ...] = (
    ("bcast", "binomial", "binomial_tree", True, True, ()),
    ("bcast", "scatter_allgather", "scatter_LR_allgather", True, False, ()),
    ("reduce", "binomial", "binomial", True, True, ()),
    ("reduce", "rabenseifner", "scatter_gather", True, False, ()),
    ("reduce", "nonblocking_linear", "default", True, False, ()),
    ("allreduce", "ring", "lr", False, True, ()),
    ("allreduce", "recursive_doubling", "rdb", False, False, ()),
    ("allreduce", "rabenseifner", "rab_rdb", False, False, ()),
    ("alltoall", "pairwise", "pair", False, True, ()),
    ("alltoall", "bruck", "bruck", False, False, ()),
    ("alltoall", "ring", "ring", False, False, ()),
    ("allgather", "ring", "ring", False, True, ()),
    ("allgather", "recursive_doubling", "rdb", False, False, ()),
    ("allgather", "bruck", "bruck", False, False, ()),
    ("gather", "binomial", "ompi_binomial", True, True, ()),
    ("gather", "linear", "ompi_basic_linear", True, False, ()),
    ("scatter", "binomial", "ompi_binomial", True, True, ()),
    ("scatter", "linear", "ompi_basic_linear", True, False, ()),
    ("barrier", "dissemination", "ompi_bruck", False, True, ("bruck",)),
    ("barrier", "recursive_doubling", "ompi_recursivedoubling", False, False, ()),
)

#: Operations an MPI program may use, collectives and ``send``.
OPS = ("bcast", "reduce", "allreduce", "alltoall", "allgather", "gather", "scatter",
       "barrier", "send")

NAMES: dict[str, list[str]] = {}
DEFAULTS: dict[str, str] = {}
ALIASES: dict[tuple[str, str], str] = {}
for _op, _name, _smpi, _rooted, _default, _aliases in TABLE:
    NAMES.setdefault(_op, []).append(_name)
    if _default:
        DEFAULTS[_op] = _name
    for _a in (_smpi, *_aliases):
        if _a != _name:
            ALIASES[(_op, _a)] = _name


#: What SMPI runs for an operation a job selects no algorithm for (its ``default``
#: selector): the ops whose choice other collectives take up (see :func:`job_choices`).
UNSELECTED = {"reduce": "nonblocking_linear", "bcast": "binomial"}


def job_choices(program) -> dict[str, str]:
    """The reduce and bcast algorithms a job runs, as SMPI selects them: once per
    job (``--cfg=smpi/<op>``), not per call. A ring allreduce of a size that is not
    a multiple of the ranks runs its remainder with them (SMPI's ``lr``), so it
    takes them from the job: the first step of that op (netsteer's default when it
    names none), else what SMPI runs unselected (:data:`UNSELECTED`).

    ``program`` is a sequence of parsed steps (``.op`` and ``.algorithm``).

    >>> from netsteer.traffic.mpi import parse_program
    >>> job_choices(parse_program([{"op": "allreduce", "bytes": 9}]))
    {'reduce': 'nonblocking_linear', 'bcast': 'binomial'}
    >>> job_choices(parse_program([{"op": "bcast", "bytes": 9, "algorithm": "scatter_LR_allgather"},
    ...                            {"op": "reduce", "bytes": 9}]))
    {'reduce': 'binomial', 'bcast': 'scatter_allgather'}
    """
    out = dict(UNSELECTED)
    for op in out:
        st = next((s for s in program if s.op == op), None)
        if st is not None:
            out[op] = canonical(op, st.algorithm)
    return out


def canonical(op: str, algorithm: str | None = None) -> str:
    """netsteer's name of ``algorithm`` for ``op`` (its default when None; SimGrid's
    names are accepted too), or :class:`NetsteerError` naming what is known."""
    if op not in DEFAULTS:
        known = ", ".join(o for o in OPS if o in DEFAULTS)
        raise NetsteerError(f"unknown collective {op!r}; known: {known}")
    name = algorithm or DEFAULTS[op]
    name = ALIASES.get((op, name), name)
    if name not in NAMES[op]:
        raise NetsteerError(f"unknown algorithm {algorithm!r} for {op}; known: {', '.join(NAMES[op])}")
    return name
