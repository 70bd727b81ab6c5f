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


def rule_error(st, reason: str) -> NetsteerError:
    """The error for step ``st`` (a parsed collective step) that its algorithm's rules
    refuse with ``reason`` (a rank count, an element size), naming the field the step
    gives, relative to the step: ``bytes`` for a buffer that is not a whole number of
    elements, ``algorithm`` for an algorithm the step names, else the step itself,
    saying that the op's default algorithm is the problem (there is no ``algorithm``
    in the file to point at).

    >>> from types import SimpleNamespace as NS
    >>> why = "alltoall pairwise pairs ranks by XOR and needs a power-of-two rank count, got 33; use algorithm bruck"
    >>> e = rule_error(NS(op="alltoall", algorithm=None), why)
    >>> e.field, e.reason
    (None, "alltoall's default algorithm pairwise pairs ranks by XOR and needs a power-of-two rank count, got 33; set algorithm: bruck")
    >>> rule_error(NS(op="alltoall", algorithm="pairwise"), why).field
    'algorithm'
    >>> e = rule_error(NS(op="allreduce", algorithm="ring", elem_bytes=4), "buffer of 10 bytes is not a whole number of 4-byte elements")
    >>> e.field, e.reason
    ('bytes', 'buffer of 10 bytes is not a whole number of 4-byte elements (elem_bytes: 4)')
    """
    if reason.startswith("buffer of ") and reason.endswith("-byte elements"):
        return NetsteerError(f"{reason} (elem_bytes: {getattr(st, 'elem_bytes', 1)})", field="bytes")
    if getattr(st, "algorithm", None) is not None:
        return NetsteerError(reason, field="algorithm")
    algo = DEFAULTS.get(st.op)
    if algo is None:
        return NetsteerError(reason)
    head = f"{st.op} {algo} "
    said = (f"{st.op}'s default algorithm {algo} {reason[len(head):]}" if reason.startswith(head)
            else f"{st.op}'s default algorithm {algo}: {reason}")
    if "; use algorithm " in said:
        said = said.replace("; use algorithm ", "; set algorithm: ")
    else:
        said += "; set algorithm"
    return NetsteerError(said)


def message_blocks(op: str, algorithm: str | None, p: int) -> int:
    """The most blocks of the step's ``bytes`` one message of collective ``op`` carries
    on ``p`` ranks: 1 for most algorithms (their messages are the buffer or pieces of
    it), more where a message gathers blocks: Bruck (the blocks whose index has the
    step's bit set), allgather recursive doubling (the group's blocks, up to the largest
    power of two below ``p``), the binomial gather and scatter (a subtree's blocks).
    0 on one rank (no message). Read off the builders
    (:mod:`netsteer.traffic.collectives`), as ``counts.message_count`` is; the engine's
    generators send the same.

    >>> message_blocks("alltoall", "bruck", 16), message_blocks("gather", "binomial", 16)
    (8, 8)
    >>> message_blocks("allgather", "recursive_doubling", 6), message_blocks("allgather", "bruck", 6)
    (4, 2)
    >>> message_blocks("allreduce", "ring", 16), message_blocks("bcast", None, 1)
    (1, 0)
    """
    if p <= 1:
        return 0
    key = (op, canonical(op, algorithm))
    if key == ("alltoall", "bruck"):
        best, bit = 0, 1
        while bit < p:  # the indices 0..p-1 with this bit set
            best = max(best, (p // (2 * bit)) * bit + max(0, p % (2 * bit) - bit))
            bit *= 2
        return best
    if key == ("allgather", "recursive_doubling"):
        return 1 << ((p - 1).bit_length() - 1)  # the largest power of two below p
    if key == ("allgather", "bruck"):
        pof2 = 1 << (p.bit_length() - 1)
        return max(pof2 // 2, p - pof2)
    if key in (("gather", "binomial"), ("scatter", "binomial")):
        # the root's children's subtrees are the largest: min(2^k, p - 2^k) blocks
        return max(min(m, p - m) for m in (1 << k for k in range((p - 1).bit_length())))
    return 1


def check_message_sizes(steps, p: int, max_bytes: int | None = None) -> None:
    """Refuse a program whose algorithms would put more than ``max_bytes`` (the 1 EiB
    a flow may carry, :data:`netsteer.units.MAX_BYTES`) in one message: the step's
    ``bytes`` is checked against it alone, but Bruck, recursive doubling and the
    binomial gather and scatter send several blocks at once. ``steps`` are parsed
    steps (:func:`netsteer.traffic.program.parse_steps` or the pydantic ones); the
    error names ``program.<i>.bytes`` and the combined size.

    >>> from netsteer.traffic.program import parse_steps
    >>> check_message_sizes(parse_steps([{"op": "alltoall", "algorithm": "bruck", "bytes": 2**60}]), 16)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: program.0.bytes: alltoall bruck on 16 ranks sends up to 8 blocks of 1152921504606846976 bytes in one message (9223372036854775808 bytes), more than the 1152921504606846976 bytes (1 EiB) a message may carry
    """
    if max_bytes is None:
        from ..units import MAX_BYTES as max_bytes
    for i, st in enumerate(steps):
        if st.op in ("compute", "send", "barrier"):
            continue  # one buffer of its own size (a barrier's messages are empty)
        nbytes = int(getattr(st, "bytes", 0))
        try:
            name = canonical(st.op, st.algorithm)
        except NetsteerError:
            continue  # the expansion names an unknown algorithm
        blocks = message_blocks(st.op, name, p)
        if blocks * nbytes > max_bytes:
            raise NetsteerError(
                f"{st.op} {name} on {p:,} ranks sends up to {blocks:,} blocks of {nbytes} bytes in one message "
                f"({blocks * nbytes} bytes), more than the {max_bytes} bytes (1 EiB) a message may carry",
                field=f"program.{i}.bytes")
