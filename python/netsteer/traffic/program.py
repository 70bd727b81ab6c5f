"""MPI jobs and programs as plain data, checked by hand: the streamed path's input.

:class:`netsteer.traffic.mpi.MpiJob` is the pydantic model of a scenario's MPI job;
importing pydantic and building its models costs a short run more than the run
itself (about 0.1 s, most of a 256-rank job's process). :class:`MpiJobSpec` takes
the same fields with the same rules and the same field paths in its errors
(``program.0.bytes``), with nothing but the standard library: it is what
:func:`netsteer.sim.stream.simulate_mpi` runs, and an ``MpiJob`` converts into it
(:func:`as_spec`). It is stricter on types than pydantic's lax mode: integers must be
integers (not ``"16"`` nor ``16.0``).

Examples
--------
>>> job = MpiJobSpec(ranks=16, placement="random", seed=1,
...                  program=[{"op": "allreduce", "bytes": "1MiB", "algorithm": "rdb"},
...                           {"op": "compute", "duration": "1us"}])
>>> job.program[0].bytes, job.program[0].algorithm, job.program[1].duration
(1048576, 'recursive_doubling', 1000)
>>> MpiJobSpec(ranks=16, program=[{"op": "bcast", "bytes": "1MiB", "root": -1}])
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: program.0.root: must be >= 0, got -1
>>> MpiJobSpec(ranks=16, program=[{"op": "send", "src": 1, "dst": 1, "bytes": 8}])
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: program.0: send from rank 1 to itself
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields
from typing import Any, Iterable, Sequence

from ..errors import NetsteerError, did_you_mean, short_repr, unknown_key_reason
from .algorithms import canonical

#: :data:`netsteer.units.MAX_BYTES`, for the shortcut of :func:`_size` (a test checks both agree)
_MAX_BYTES = 2**60


def _size(value: Any) -> int:
    """:func:`netsteer.units.checked_size`; a plain integer in range is itself, without
    importing the unit parser (``decimal``, ``re``) for it."""
    if type(value) is int and 0 <= value <= _MAX_BYTES:
        return value
    from ..units import checked_size

    return checked_size(value)


def _duration(value: Any) -> int:
    """:func:`netsteer.units.checked_duration`; a plain ``0`` is 0 without the parser."""
    if type(value) is int and value == 0:
        return 0
    from ..units import checked_duration

    return checked_duration(value)

ROOTED = ("bcast", "reduce", "gather", "scatter")
UNROOTED = ("allreduce", "alltoall", "allgather")
#: The ops that combine elements, and so split their buffer by ``elem_bytes``.
REDUCTIONS = ("reduce", "allreduce")
#: The fields each step kind takes besides ``op`` (as the pydantic step models).
STEP_FIELDS: dict[str, tuple[str, ...]] = {
    **{op: ("bytes", "root", "algorithm") + (("elem_bytes",) if op in REDUCTIONS else ()) for op in ROOTED},
    **{op: ("bytes", "algorithm") + (("elem_bytes",) if op in REDUCTIONS else ()) for op in UNROOTED},
    # a barrier moves no data: it has no elements (elem_bytes used to be taken, unused)
    "barrier": ("algorithm",),
    "compute": ("duration",),
    "send": ("src", "dst", "bytes"),
}
_REQUIRED = {**{op: ("bytes",) for op in ROOTED + UNROOTED}, "barrier": (),
             "compute": ("duration",), "send": ("src", "dst", "bytes")}


#: The reason for a step without an op (as :func:`netsteer.traffic.mpi.validation_error` words it too).
NO_OP = "a step needs an op: " + ", ".join(STEP_FIELDS)


def unknown_op(op: Any) -> str:
    """The reason for a step whose op is not one: the closest op, or the list of them.

    >>> unknown_op("alltoal")
    "unknown op 'alltoal'; did you mean 'alltoall'?"
    """
    hint = did_you_mean(op, STEP_FIELDS) if isinstance(op, str) else ""
    return f"unknown op {short_repr(op)}" + (hint or "; ops: " + ", ".join(STEP_FIELDS))


def unknown_step_key(op: str, key: Any) -> str:
    """The reason for a key that step kind ``op`` does not take: the closest key it
    takes, or the keys it takes.

    >>> unknown_step_key("alltoall", "root")
    "unknown key 'root' for op alltoall; alltoall takes bytes, algorithm"
    >>> unknown_step_key("allreduce", "byts")
    "unknown key 'byts' for op allreduce; did you mean 'bytes'?"
    """
    takes = STEP_FIELDS[op]
    return f"unknown key {key!r} for op {op}" + (did_you_mean(key, takes) or f"; {op} takes {', '.join(takes)}")


def no_elements(op: str) -> str:
    """Why step kind ``op`` (not a reduction) takes no ``elem_bytes``: only a reduction
    combines elements, so only its split depends on their size (the other ops used to
    take it and ignore it).

    >>> no_elements("alltoall")
    'alltoall moves blocks of bytes without combining them, so an element size changes nothing (elem_bytes applies to reductions: reduce, allreduce); alltoall takes bytes, algorithm'
    """
    if op == "barrier":
        return "a barrier moves no data, so it has no elements; barrier takes algorithm"
    return (f"{op} moves blocks of bytes without combining them, so an element size changes nothing "
            f"(elem_bytes applies to reductions: {', '.join(REDUCTIONS)}); {op} takes {', '.join(STEP_FIELDS[op])}")


def bad_placement(placement: Any) -> str:
    """The reason for a placement that is neither a policy nor a host list (as
    :class:`netsteer.traffic.mpi.MpiJob` words it too)."""
    return f"placement must be linear, random or a list of host indices, got {short_repr(placement)}"


@dataclass(frozen=True)
class Step:
    """One checked step of a program; fields a kind does not take keep their default."""

    op: str
    bytes: int = 0
    algorithm: str | None = None
    root: int = 0
    elem_bytes: int = 1
    src: int = 0
    dst: int = 0
    duration: int = 0


def not_an_integer(value: Any) -> str:
    """The reason for an integer field (a count, a rank, an element size) given
    ``value``: the words of :func:`netsteer.errors.plain_words`, and, for a float of a
    whole value, the rule: only a size (``bytes``) takes any spelling of a whole
    number, ``1e6`` or ``1000000.0`` (YAML reads ``1e6`` as text, a size's unit syntax);
    the other integer fields take integers, as a job's ``ranks`` and ``repeat`` do.

    >>> not_an_integer(1.0)
    'must be an integer, got 1.0 (write 1: only a size, such as bytes, may be written 1e6 or 1000000.0)'
    >>> not_an_integer("1")
    "must be an integer, got '1'"
    """
    reason = f"must be an integer, got {short_repr(value)}"
    if isinstance(value, float) and value.is_integer():
        reason += f" (write {int(value)}: only a size, such as bytes, may be written 1e6 or 1000000.0)"
    return reason


def with_integer_hint(err: NetsteerError, errors: Sequence[dict]) -> NetsteerError:
    """``err`` (made from pydantic's ``errors``) with :func:`not_an_integer`'s words
    when it refuses a float of a whole value for an integer field."""
    for x in errors:
        got = x.get("input")
        if x.get("type") == "int_type" and isinstance(got, float) and err.reason == f"must be an integer, got {got!r}":
            return type(err)(not_an_integer(got), file=err.file, field=err.field)
    return err


def _int(value: Any, field: str, ge: int | None = None) -> int:
    # the words of netsteer.errors.plain_words, as the pydantic model's errors read
    if isinstance(value, bool):
        raise NetsteerError(not_an_integer(value), field=field)
    try:
        n = operator.index(value)
    except TypeError:
        raise NetsteerError(not_an_integer(value), field=field) from None
    if ge is not None and n < ge:
        raise NetsteerError(f"must be >= {ge}, got {n}", field=field)
    return int(n)


def parse_step(raw: Any, field: str = "step") -> Step:
    """One step from a dict (as in a scenario file), a pydantic step model or a
    :class:`Step`; errors name ``field`` and the step's field."""
    if isinstance(raw, Step):
        return raw
    if not isinstance(raw, dict):
        # a validated pydantic step (netsteer.traffic.mpi): take its fields
        op = getattr(raw, "op", None)
        if op not in STEP_FIELDS:
            raise NetsteerError(f"expected a step (a dict with 'op'), got {type(raw).__name__}",
                                field=field)
        raw = {"op": op, **{k: getattr(raw, k) for k in STEP_FIELDS[op] if hasattr(raw, k)}}
        if "duration" in raw and isinstance(raw["duration"], int):
            raw["duration"] = f"{raw['duration']}ns"  # parsed already: integer ns
    op = raw.get("op")
    if op is None:
        raise NetsteerError(NO_OP, field=field)
    if not isinstance(op, str) or op not in STEP_FIELDS:  # a list is no key of STEP_FIELDS: a TypeError
        raise NetsteerError(unknown_op(op), field=field)
    allowed = STEP_FIELDS[op]
    for k in raw:
        if k == "elem_bytes" and k not in allowed and op != "compute" and op != "send":
            raise NetsteerError(no_elements(op), field=f"{field}.elem_bytes")
        if k != "op" and k not in allowed:
            raise NetsteerError(unknown_step_key(op, k), field=field)
    for k in _REQUIRED[op]:
        if k not in raw:
            raise NetsteerError("required key is missing", field=f"{field}.{k}")
    out: dict[str, Any] = {"op": op}
    for k in allowed:
        if k not in raw:
            continue
        v, where = raw[k], f"{field}.{k}"
        try:
            if k == "bytes":
                out[k] = _size(v)
            elif k == "duration":
                out[k] = _duration(v)
            elif k == "algorithm":
                if v is not None and not isinstance(v, str):
                    raise NetsteerError(f"must be a string, got {short_repr(v)}", field=where)
                out[k] = v
            else:
                out[k] = _int(v, where, ge=1 if k == "elem_bytes" else 0)
        except ValueError as e:
            raise NetsteerError(str(e), field=where) from None
    if op == "send" and out["src"] == out["dst"]:
        raise NetsteerError(f"send from rank {out['src']} to itself", field=field)
    if out.get("algorithm") is not None:
        try:
            out["algorithm"] = canonical(op, out["algorithm"])
        except NetsteerError as e:
            raise NetsteerError(e.reason, field=field) from None
    return Step(**out)


def parse_steps(program: Any, field: str = "program") -> tuple[Step, ...]:
    """A whole program (a non-empty list of steps), as :func:`parse_step` checks each.

    >>> [s.op for s in parse_steps([{"op": "barrier"}, {"op": "compute", "duration": "1ms"}])]
    ['barrier', 'compute']
    >>> parse_steps([{"op": "allreduce", "bytes": "-1MiB"}])
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: program.0.bytes: size must not be negative, got '-1MiB'
    """
    if isinstance(program, (str, bytes, dict)) or not isinstance(program, Iterable):
        raise NetsteerError(f"must be a list, got {short_repr(program)}", field=field)
    steps = tuple(parse_step(s, f"{field}.{i}") for i, s in enumerate(program))
    if not steps:
        raise NetsteerError("must not be empty", field=field)
    return steps


@dataclass(frozen=True)
class MpiJobSpec:
    """One MPI job, checked on construction (the fields of a scenario's MPI job).

    ``program`` is given as dicts (or :mod:`netsteer.op` steps) and kept as a tuple
    of :class:`Step`; ``start`` is a duration (``"1ms"``), kept in ns.
    """

    ranks: int
    program: Sequence[Any]
    name: str = "job"
    placement: Any = "linear"
    seed: int = 0
    repeat: int = 1
    start: Any = 0
    traffic_class: int = 0
    priority: int = 0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.name, str):
            raise NetsteerError(f"must be a string, got {short_repr(self.name)}", field="name")
        set_(self, "ranks", _int(self.ranks, "ranks", ge=1))
        pl = self.placement
        if isinstance(pl, str):
            if pl not in ("linear", "random"):
                raise NetsteerError(bad_placement(pl), field="placement")
        elif isinstance(pl, Iterable) and not isinstance(pl, (bytes, dict)):
            set_(self, "placement", tuple(_int(h, f"placement.{i}") for i, h in enumerate(pl)))
        else:
            raise NetsteerError(bad_placement(pl), field="placement")
        set_(self, "seed", _int(self.seed, "seed"))
        set_(self, "program", parse_steps(self.program))
        set_(self, "repeat", _int(self.repeat, "repeat", ge=1))
        try:
            set_(self, "start", _duration(self.start))
        except ValueError as e:
            raise NetsteerError(str(e), field="start") from None
        set_(self, "traffic_class", _int(self.traffic_class, "traffic_class", ge=0))
        set_(self, "priority", _int(self.priority, "priority", ge=0))


_JOB_FIELDS = tuple(f.name for f in fields(MpiJobSpec))


def as_spec(job: Any) -> MpiJobSpec:
    """``job`` as an :class:`MpiJobSpec`: one already, a dict of its fields, or a
    validated :class:`netsteer.traffic.mpi.MpiJob` (its fields taken as they are).

    >>> as_spec({"ranks": 4, "program": [{"op": "barrier"}]}).program
    (Step(op='barrier', bytes=0, algorithm=None, root=0, elem_bytes=1, src=0, dst=0, duration=0),)
    >>> as_spec({"ranks": 4, "program": [{"op": "barrier"}], "size": 3})
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: unknown key 'size'
    """
    if isinstance(job, MpiJobSpec):
        return job
    if isinstance(job, dict):
        # as the model's message: an unknown key first, with the required key it may misspell
        unknown = [k for k in job if k not in _JOB_FIELDS]
        missing = [k for k in ("ranks", "program") if k not in job]
        if unknown:
            raise NetsteerError(unknown_key_reason(unknown, missing))
        if missing:
            raise NetsteerError("required key is missing", field=missing[0])
        return MpiJobSpec(**job)
    if not all(hasattr(job, k) for k in _JOB_FIELDS):
        raise NetsteerError(f"expected an MPI job (MpiJobSpec, MpiJob or dict), got "
                            f"{type(job).__name__}")
    kw = {k: getattr(job, k) for k in _JOB_FIELDS}
    if isinstance(kw["start"], int):
        kw["start"] = f"{kw['start']}ns"  # parsed already: integer ns
    return MpiJobSpec(**kw)


# --------------------------------------------------------------------------------------
# executed steps and the operations report (shared with the DAG path)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpSpan:
    """One executed step: flows ``first .. end-1`` of the DAG.

    ``nbytes`` is the MPI size (count semantics); ``ranks`` the job's rank count.
    """

    job: str
    iteration: int
    step: int
    op: str
    algorithm: str | None
    nbytes: int
    ranks: int
    first: int
    end: int

    def shifted(self, offset: int) -> "OpSpan":
        """The same span after its DAG was appended at ``offset`` (``FlowDag.extend``)."""
        return OpSpan(self.job, self.iteration, self.step, self.op, self.algorithm,
                      self.nbytes, self.ranks, self.first + offset, self.end + offset)


#: Operations whose MPI size is what each rank gives or gets per peer (count semantics).
PER_RANK_BLOCK = ("alltoall", "allgather", "gather", "scatter")


def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor: ``busbw = algbw x factor``, the fraction of
    the data that must cross a rank's link whatever the algorithm, so the figure
    compares with the link's rate: ``2 (p-1)/p`` for allreduce, ``(p-1)/p`` for
    allgather, alltoall, gather and scatter (and reduce_scatter), 1 for bcast,
    reduce and a send.

    >>> busbw_factor("allreduce", 8), busbw_factor("alltoall", 8), busbw_factor("bcast", 8)
    (1.75, 0.875, 1.0)
    """
    p = max(int(ranks), 1)
    if op == "allreduce":
        return 2.0 * (p - 1) / p
    if op in PER_RANK_BLOCK or op == "reduce_scatter":
        return (p - 1) / p
    return 1.0


def aggregate_ops(timed: Iterable[tuple[OpSpan, int | None, int | None]]) -> dict:
    """:func:`netsteer.traffic.mpi.op_report` from each executed step's ``(span,
    start_ns, end_ns)`` (``None`` times: a step that moved nothing; its job is still
    listed).

    Operations whose MPI size is a per-rank block (:data:`PER_RANK_BLOCK`: alltoall,
    allgather, gather, scatter) move that block times the ranks: a rank's whole send
    (alltoall) or receive buffer (allgather; the root's, for gather and scatter), as
    nccl-tests sizes them. The others move their MPI size. ``busbw_Bps`` is that
    bandwidth times nccl-tests' bus factor (:func:`busbw_factor`).

    A step's time runs from the release of its first flow (on whichever rank) to the
    end of its last: it includes the ranks' arrival skew (a rank that left the
    previous step late), and consecutive executions may overlap, so the times of a
    job's operations can sum to more than its completion.

    >>> s = OpSpan("j", 0, 0, "alltoall", "pairwise", 4096, 8, 0, 0)
    >>> o = aggregate_ops([(s, 0, 1000)])["j"]["ops"]["alltoall"]
    >>> o["algbw_Bps"], o["busbw_Bps"]
    (32768000000.0, 28672000000.0)
    """
    out: dict = {}
    for s, t0, t1 in timed:
        job = out.setdefault(s.job, {"completion_ns": 0, "ops": {}})
        if t0 is None or t1 is None:
            continue
        job["completion_ns"] = max(job["completion_ns"], t1)
        o = job["ops"].setdefault(s.op, {"count": 0, "time_ns": 0, "bytes": 0, "_moved": 0, "_bus": 0.0})
        o["count"] += 1
        o["time_ns"] += t1 - t0
        o["bytes"] += s.nbytes
        moved = s.nbytes * (s.ranks if s.op in PER_RANK_BLOCK else 1)
        o["_moved"] += moved
        o["_bus"] += moved * busbw_factor(s.op, s.ranks)
    for job in out.values():
        for op, o in job["ops"].items():
            moved, bus = o.pop("_moved"), o.pop("_bus")
            if op not in ("compute", "barrier") and o["time_ns"] > 0:
                o["algbw_Bps"] = moved * 1e9 / o["time_ns"]
                o["busbw_Bps"] = bus * 1e9 / o["time_ns"]
    return out
