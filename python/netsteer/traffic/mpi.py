"""MPI jobs: ranks placed on hosts running a program of collectives, sends and compute.

A program is a list of steps, run ``repeat`` times::

    - {op: allreduce, bytes: 16MiB, algorithm: ring}
    - {op: compute, duration: 1ms}
    - {op: send, src: 0, dst: 1, bytes: 1MiB}
    - {op: bcast, bytes: 1MiB, root: 3}
    - {op: barrier}

Sizes and durations are unit strings (``16MiB``, ``1ms``) parsed by
:mod:`netsteer.units`. Each collective expands into its algorithm
(:mod:`netsteer.traffic.collectives`); ``compute`` is a pure delay on every rank.

Every flow is labelled ``"<job>:<op>"`` (``"app:allreduce"``), and
:func:`build_job` also returns one :class:`OpSpan` per executed step, so a report can
give the time spent per operation kind and the bandwidth each collective achieved
(:func:`op_report`).

Examples
--------
>>> dag = expand_job(4, "linear", [{"op": "allreduce", "bytes": "4KiB"},
...                                {"op": "compute", "duration": "1us"}],
...                  repeat=2, n_hosts=8, job_label="app")
>>> len(dag), dag.labels
(56, ['app:allreduce', 'app:compute'])
"""

from dataclasses import dataclass, field
from typing import Annotated, Any, Iterable, Literal, Sequence, Union

import numpy as np
from pydantic import (BaseModel, ConfigDict, Field, Strict, TypeAdapter, ValidationError, field_validator,
                      ValidationInfo, model_validator)

from ..errors import NetsteerError, pydantic_error
from ..schema import Duration, Size
from . import collectives as coll
from .algorithms import check_message_sizes, job_choices, rule_error
from .dag import FlowDag
from .placement import error_field, place
from .program import OpSpan, aggregate_ops  # noqa: F401  (defined there: the streamed path shares them)
from .program import (NO_OP, REDUCTIONS, bad_placement, no_elements, unknown_op,  # the same words on both paths
                      unknown_step_key, with_integer_hint)


Int = Annotated[int, Strict()]
"""An integer, as a scenario's job fields take it (``netsteer.scenario``): not a string
(``'1'``), a float (``1.0``) or a boolean, in the words ``must be an integer, got '1'``;
:class:`netsteer.traffic.program.MpiJobSpec` refuses the same."""


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Collective(_Step):
    # declared by the subclasses (a Literal); here first, so elem_bytes' check reads it
    op: str
    algorithm: str | None = None
    elem_bytes: Int = Field(1, ge=1, description="element size, for reductions' chunking (reduce, allreduce)")

    @field_validator("elem_bytes")
    @classmethod
    def _reductions_only(cls, v, info: ValidationInfo):
        # only when given (a default is not validated): it used to be taken and unused
        op = info.data.get("op")
        if op is not None and op not in REDUCTIONS:
            raise ValueError(no_elements(op))
        return v

    @model_validator(mode="after")
    def _known(self):
        # an "after" validator: ``op`` is declared by the subclasses, after ``algorithm``
        if self.algorithm is not None:
            try:
                name = coll.lookup(self.op, self.algorithm).name
            except NetsteerError as e:
                raise ValueError(e.reason) from None
            object.__setattr__(self, "algorithm", name)
        return self


class RootedStep(_Collective):
    """``bcast`` and ``reduce`` (``bytes``: the buffer), ``gather`` and ``scatter``
    (``bytes``: each rank's block)."""

    op: Literal["bcast", "reduce", "gather", "scatter"]
    bytes: Size
    root: Int = Field(0, ge=0)


class UnrootedStep(_Collective):
    """``allreduce`` (``bytes``: the buffer), ``alltoall`` and ``allgather``
    (``bytes``: what each rank sends to each peer)."""

    op: Literal["allreduce", "alltoall", "allgather"]
    bytes: Size


class BarrierStep(_Collective):
    op: Literal["barrier"]


class ComputeStep(_Step):
    """Every rank computes for ``duration``."""

    op: Literal["compute"]
    duration: Duration


class SendStep(_Step):
    """``MPI_Send`` from rank ``src``, matched by ``MPI_Recv`` at rank ``dst``; the
    other ranks go on."""

    op: Literal["send"]
    src: Int = Field(ge=0)
    dst: Int = Field(ge=0)
    bytes: Size

    @model_validator(mode="after")
    def _distinct(self) -> "SendStep":
        if self.src == self.dst:
            raise ValueError(f"send from rank {self.src} to itself")
        return self


Step = Annotated[
    Union[RootedStep, UnrootedStep, BarrierStep, ComputeStep, SendStep],
    Field(discriminator="op"),
]
_PROGRAM = TypeAdapter(list[Step])
_TAGS = set(coll.OPS) | {"compute"}


class MpiJob(BaseModel):
    """One MPI job of a scenario (``jobs[]``).

    Examples
    --------
    >>> j = MpiJob(name="app", ranks=16, program=[{"op": "barrier"}], repeat=3)
    >>> j.placement, j.program[0].op
    ('linear', 'barrier')
    """

    model_config = ConfigDict(extra="forbid")

    name: str = "job"
    ranks: Int = Field(ge=1)
    placement: Literal["linear", "random"] | list[Int] = "linear"
    seed: Int = 0
    program: list[Step] = Field(min_length=1)
    repeat: Int = Field(1, ge=1)
    start: Duration = 0
    traffic_class: Int = Field(0, ge=0)
    priority: Int = Field(0, ge=0)

    @field_validator("placement", mode="before")
    @classmethod
    def _policy_or_hosts(cls, v):
        # one message for both branches of the union; pydantic's would name one branch
        # and put its tag in the field path (placement.literal['linear','random'])
        ok = v in ("linear", "random") if isinstance(v, str) else isinstance(v, (list, tuple))
        if not ok:
            raise ValueError(bad_placement(v))
        return v


@dataclass
class JobExpansion:
    """What :func:`build_job` returns."""

    dag: FlowDag
    hosts: list[int]
    spans: list[OpSpan] = field(default_factory=list)
    frontier: list[list[int]] = field(default_factory=list)


def parse_program(program: Sequence[Any], *, field_prefix: str = "program") -> list:
    """Validate a program given as dicts; errors name the step and the field.

    >>> parse_program([{"op": "allreduce", "bytes": "-1MiB"}])
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: program.0.bytes: size must not be negative, got '-1MiB'
    """
    if all(isinstance(s, BaseModel) for s in program):
        return list(program)
    try:
        return _PROGRAM.validate_python(list(program))
    except ValidationError as e:
        raise validation_error(e, field_prefix) from None


def validation_error(e: ValidationError, prefix: str | None = None) -> NetsteerError:
    """A pydantic ``ValidationError`` of an MPI job or program as a :class:`NetsteerError`,
    in the words of the streamed path's checks (:mod:`netsteer.traffic.program`): a
    step's op or unknown key, else as any scenario field (:func:`netsteer.errors.pydantic_error`)."""
    errors = e.errors()
    err = _step_error(errors) or with_integer_hint(pydantic_error(errors, tags=_TAGS), errors)
    return err.located(prefix=prefix) if prefix else err


def _step_error(errors) -> NetsteerError | None:
    """A step without an op, with an unknown op, or with a key its op does not take
    (pydantic: "Unable to extract tag", "Input tag ... does not match", "Extra inputs
    are not permitted")."""
    for x in errors:
        loc, kind = tuple(x["loc"]), x["type"]
        if loc and isinstance(loc[-1], int) and kind == "union_tag_not_found":
            return NetsteerError(NO_OP, field=".".join(map(str, loc)))
        if loc and isinstance(loc[-1], int) and kind == "union_tag_invalid":
            op = x["input"].get("op") if isinstance(x.get("input"), dict) else x["ctx"]["tag"]
            # {op: null} is a step without an op, as the streamed path's check says
            return NetsteerError(NO_OP if op is None else unknown_op(op), field=".".join(map(str, loc)))
        # ("program", 0, "alltoall", "root"): the op's tag after the step's index
        if kind == "extra_forbidden" and len(loc) >= 3 and isinstance(loc[-3], int) and loc[-2] in _TAGS:
            return NetsteerError(unknown_step_key(loc[-2], loc[-1]), field=".".join(map(str, loc[:-2])))
    return None


def build_job(
    ranks: int,
    placement: str | Sequence[int],
    program: Sequence[Any],
    repeat: int,
    n_hosts: int,
    seed: int = 0,
    job_label: str = "",
    *,
    start_ns: int = 0,
    traffic_class: int = 0,
    priority: int = 0,
    rendezvous: bool = True,
    envelope_bytes: int = coll.MPI_ENVELOPE_BYTES,
    dag: FlowDag | None = None,
) -> JobExpansion:
    """Place the ranks and expand ``repeat`` iterations of ``program`` into a DAG.

    Parameters are those of :func:`expand_job`; ``dag`` lets several jobs share one
    DAG (spans then index into it). Every message carries ``envelope_bytes`` on top
    of its payload, as SMPI's do (see :mod:`netsteer.traffic.collectives`).

    Raises
    ------
    NetsteerError
        Ranks beyond the hosts, an unknown op or algorithm, a negative size, a root
        or send endpoint beyond the ranks, or an algorithm that does not fit the rank
        count. ``field`` names the step (``program.2.root``).

    Examples
    --------
    >>> x = build_job(8, "linear", [{"op": "bcast", "bytes": "1MiB"}], 2, 8, job_label="j")
    >>> [(s.iteration, s.op, s.first, s.end) for s in x.spans]
    [(0, 'bcast', 0, 7), (1, 'bcast', 7, 14)]
    """
    steps = parse_program(program)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise NetsteerError(f"repeat must be a positive integer, got {repeat!r}", field="repeat")
    try:
        hosts = place(ranks, placement, n_hosts, seed)
    except NetsteerError as e:
        raise e.located(prefix=error_field(placement)) from None
    dag = dag if dag is not None else FlowDag()
    kw = _step_kw(steps, traffic_class, priority, rendezvous, envelope_bytes)
    _check_size(steps, ranks, repeat, dag, kw, extra=ranks if start_ns else 0)
    out = JobExpansion(dag=dag, hosts=hosts)
    frontier: list[list[int]] = [[] for _ in range(ranks)]
    if start_ns:
        frontier = [[dag.delay(h, start_ns, label=f"{job_label}:start")] for h in hosts]
    for it in range(repeat):
        for i, st in enumerate(steps):
            first = len(dag)
            label = f"{job_label}:{st.op}"
            try:
                frontier, nbytes, algo = _expand_step(dag, st, hosts, frontier, label, kw)
            except NetsteerError as e:
                raise e.located(prefix=f"program.{i}") from None
            out.spans.append(OpSpan(job_label, it, i, st.op, algo, nbytes, ranks,
                                    first, len(dag)))
    out.frontier = frontier
    return out


def estimate_step_flows(st, p: int, kw: dict | None = None) -> int | None:
    """Flows one execution of step ``st`` on ``p`` ranks makes, without expanding it:
    exact for any ``p`` and size (a closed form per algorithm,
    :func:`netsteer.traffic.collectives.counts.message_count`). None when the step
    cannot be expanded (its expansion then gives the reason).

    >>> st = parse_program([{"op": "alltoall", "bytes": "1KiB"}])[0]
    >>> estimate_step_flows(st, 8) == len(expand_job(8, "linear", [st], 1, 8)), estimate_step_flows(st, 2**17), estimate_step_flows(st, 6)
    (True, 17179738112, None)
    """
    from .collectives.counts import message_count

    kw = kw or {}
    if st.op == "compute":
        return p  # one delay flow per rank
    if st.op == "send":
        return 1
    try:
        return message_count(st.op, st.algorithm, p, getattr(st, "bytes", 0), getattr(st, "root", 0),
                             st.elem_bytes, kw.get("job_algorithms"))
    except NetsteerError:
        return None


def check_ranks(steps, p: int) -> None:
    """Refuse, without expanding, what expanding ``steps`` on ``p`` ranks would: a
    ``send``'s or a root's rank past the job, an algorithm the rank count or size
    rules out (closed-form counts, :func:`netsteer.traffic.collectives.counts.message_count`).
    For builders that know the rank count (``netsteer.mpi_job``); fields as the
    expansion's (``program.i.root``, ``program.i.algorithm``).

    >>> check_ranks(parse_program([{"op": "alltoall", "bytes": "1KiB", "algorithm": "pairwise"}]), 6)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: program.0.algorithm: alltoall pairwise pairs ranks by XOR and needs a power-of-two rank count, got 6; use algorithm bruck
    """
    from .collectives.counts import message_count

    choices = job_choices(steps)
    for i, st in enumerate(steps):
        if st.op == "compute":
            continue
        names = ("src", "dst") if st.op == "send" else ("root",)
        for name in names:
            rank = getattr(st, name, 0)
            if rank >= p:
                what = "root " if name == "root" else ""
                raise NetsteerError(f"{what}{rank} is not a rank of this {p}-rank job (0..{p - 1})",
                                    field=f"program.{i}.{name}")
        if st.op == "send":
            continue
        try:
            message_count(st.op, st.algorithm, p, getattr(st, "bytes", 0), getattr(st, "root", 0), st.elem_bytes,
                          choices)
        except NetsteerError as e:
            raise rule_error(st, e.reason).located(prefix=f"program.{i}") from None
    check_message_sizes(steps, p)


def check_job_size(job: MpiJob, dag: FlowDag) -> None:
    """Refuse ``job`` if its flows would not fit in ``dag``'s budget, without expanding
    it (:func:`expand_mpi_job` checks the same on the way in).

    Raises
    ------
    LimitError
        With the estimate, naming the step (``program.i``) or ``repeat``.
    """
    steps = parse_program(job.program)
    _check_size(steps, job.ranks, job.repeat, dag, _step_kw(steps, job.traffic_class, job.priority),
                extra=job.ranks if job.start else 0)


def _step_kw(steps, traffic_class: int, priority: int, rendezvous: bool = True,
             envelope_bytes: int = coll.MPI_ENVELOPE_BYTES) -> dict:
    """What every step of a job expands with (:func:`_expand_step`'s ``kw``)."""
    return dict(rendezvous=rendezvous, envelope_bytes=envelope_bytes, traffic_class=traffic_class,
                priority=priority, job_algorithms=job_choices(steps))


def _check_size(steps, ranks: int, repeat: int, dag: FlowDag, kw: dict, extra: int = 0) -> None:
    """Refuse a job whose flows would exceed the DAG's budget, before expanding it
    (``extra``: flows besides the iterations', one delay per rank for a ``start``)."""
    from ..errors import LimitError
    from ..limits import FLOW_BYTES, SPAN_BYTES, current, fmt_bytes

    check_message_sizes(steps, ranks)  # before counting: a count of messages no flow can carry means nothing
    budget = dag.max_flows if dag.max_flows is not None else current().max_flows(0)
    room = budget - len(dag) - extra
    per_step = [estimate_step_flows(st, ranks, kw) or 0 for st in steps]
    per_iter = sum(per_step)
    # a record of every step run (OpSpan), flows or not: 2**31 iterations of a 1-rank barrier made none
    spans = repeat * len(steps) * SPAN_BYTES
    if per_iter * repeat * FLOW_BYTES + spans <= room * FLOW_BYTES:
        return
    if per_iter * repeat <= room:
        raise LimitError(
            f"the job would need about {fmt_bytes(per_iter * repeat * FLOW_BYTES + spans)} ({repeat:,} iterations x "
            f"{len(steps)} step{'s' if len(steps) != 1 else ''}, a record of {SPAN_BYTES} B per step run"
            + (f", and {per_iter * repeat:,} flows" if per_iter else "")
            + f"), more than the {fmt_bytes(max(room, 0) * FLOW_BYTES)} left in the memory limit; raise it with "
            "--max-memory or NETSTEER_MAX_MEMORY",
            field="repeat" if repeat > 1 else "program")
    big = max(range(len(steps)), key=lambda i: per_step[i])
    where = "repeat" if per_step[big] <= room and repeat > 1 else f"program.{big}"
    raise LimitError(
        f"the job would make about {per_iter * repeat:,} flows ({per_iter:,} per iteration x {repeat:,}; "
        f"about {fmt_bytes(per_iter * repeat * FLOW_BYTES)}), more than the {max(room, 0):,} that fit in the memory "
        "limit; raise it with --max-memory or NETSTEER_MAX_MEMORY", field=where)


def _expand_step(dag, st, hosts, frontier, label, kw):
    kw = dict(kw)
    choices = kw.pop("job_algorithms", None)
    p = len(hosts)
    if st.op == "compute":
        new = []
        for r, h in enumerate(hosts):
            new.append([dag.add(h, h, 0, deps=frontier[r], delay_ns=st.duration, label=label,
                                traffic_class=kw["traffic_class"], priority=kw["priority"])])
        return new, 0, None
    if st.op == "send":
        for name in ("src", "dst"):
            if getattr(st, name) >= p:
                raise NetsteerError(
                    f"{getattr(st, name)} is not a rank of this {p}-rank job (0..{p - 1})",
                    field=name,
                )
        return coll.point_to_point(dag, hosts, st.src, st.dst, st.bytes, frontier, label,
                                   **kw), st.bytes, None
    root = getattr(st, "root", 0)
    if root >= p:
        raise NetsteerError(f"root {root} is not a rank of this {p}-rank job (0..{p - 1})",
                            field="root")
    nbytes = getattr(st, "bytes", 0)
    algo = coll.lookup(st.op, st.algorithm)
    try:
        front = coll.expand(dag, st.op, algo.name, hosts, nbytes, frontier, label, root=root,
                            elem_bytes=st.elem_bytes, job_algorithms=choices, **kw)
    except NetsteerError as e:
        raise (rule_error(st, e.reason) if e.field is None else e.located(prefix="algorithm")) from None
    return front, nbytes, algo.name


def expand_job(
    ranks: int,
    placement: str | Sequence[int],
    program: Sequence[Any],
    repeat: int,
    n_hosts: int,
    seed: int = 0,
    job_label: str = "",
    **kw,
) -> FlowDag:
    """The flow DAG of one MPI job.

    Parameters
    ----------
    ranks : int
    placement : ``"linear"``, ``"random"`` or list of host indices
    program : list of step dicts or models
    repeat : int
        Iterations of the program; iteration ``i + 1`` starts on each rank when that
        rank is done with iteration ``i``.
    n_hosts : int
        Hosts in the topology.
    seed : int
        Seed of random placement.
    job_label : str
        Prefix of the flow labels (``"<job>:<op>"``).
    **kw
        ``start_ns``, ``traffic_class``, ``priority``, ``rendezvous``,
        ``envelope_bytes`` (see :func:`build_job`).

    Examples
    --------
    >>> dag = expand_job(2, [1, 0], [{"op": "send", "src": 0, "dst": 1, "bytes": "1KiB"}],
    ...                  repeat=1, n_hosts=2)
    >>> dag.src, dag.dst, dag.bytes
    ([1], [0], [1040])
    """
    return build_job(ranks, placement, program, repeat, n_hosts, seed, job_label, **kw).dag


def expand_mpi_job(job: MpiJob, n_hosts: int, dag: FlowDag | None = None,
                   **kw) -> JobExpansion:
    """:func:`build_job` for a validated :class:`MpiJob`."""
    return build_job(job.ranks, job.placement, job.program, job.repeat, n_hosts, job.seed,
                     job.name, start_ns=job.start, traffic_class=job.traffic_class,
                     priority=job.priority, dag=dag, **kw)


def release_times(dag: FlowDag, completion_ns: np.ndarray) -> np.ndarray:
    """When each flow was released: its start time or its last dependency's end.

    >>> d = FlowDag(); a = d.add(0, 1, 8); b = d.add(1, 0, 8, deps=[a]); c = d.add(0, 0, 0, start_ns=5)
    >>> release_times(d, np.array([10, 20, 5])).tolist()
    [0, 10, 5]
    """
    comp = np.asarray(completion_ns, dtype=np.int64)
    c = dag.columns()
    rel = np.zeros(len(dag), dtype=np.int64)
    counts = np.diff(c.dep_offsets)
    has = counts > 0
    if has.any():
        # max over each non-empty CSR segment of the dependencies' completions
        rel[has] = np.maximum.reduceat(comp[c.deps], c.dep_offsets[:-1][has])
    return np.maximum(rel, c.start_ns)


def op_report(spans: Sequence[OpSpan], dag: FlowDag, completion_ns: np.ndarray,
              release_ns: np.ndarray | None = None) -> dict:
    """Time per operation kind and bandwidth per collective, per job.

    A step's time runs from the release of its first flow, on whichever rank, to the
    end of its last, on whichever rank: it includes the ranks' arrival skew (ranks
    that left the previous step at different times), so it is not the time of the
    operation alone that nccl-tests or OSU measure after synchronising the ranks,
    and a job's operation times can sum to more than its completion. The algorithm
    bandwidth (``algbw``, as in nccl-tests) is the data over that time: the MPI size,
    and for ``alltoall``, ``allgather``, ``gather`` and ``scatter`` (sized per rank)
    that size times the ranks (see :func:`netsteer.traffic.program.aggregate_ops`);
    the bus bandwidth (``busbw``) is ``algbw`` times nccl-tests' factor
    (:func:`netsteer.traffic.program.busbw_factor`: ``2 (p-1)/p`` allreduce,
    ``(p-1)/p`` allgather, alltoall, gather, scatter, 1 bcast, reduce, send).

    Returns
    -------
    dict
        ``{job: {"completion_ns", "ops": {op: {"count", "time_ns", "bytes",
        "algbw_Bps", "busbw_Bps"}}}}``; the bandwidths are absent for ``compute`` and
        ``barrier``.

    Examples
    --------
    >>> x = build_job(2, "linear", [{"op": "allreduce", "bytes": 1000}], 1, 2, job_label="a",
    ...               envelope_bytes=0)
    >>> op_report(x.spans, x.dag, np.array([1000, 1000, 2000, 2000]))["a"]["ops"]
    {'allreduce': {'count': 1, 'time_ns': 2000, 'bytes': 1000, 'algbw_Bps': 500000000.0, 'busbw_Bps': 500000000.0}}
    """
    comp = np.asarray(completion_ns, dtype=np.int64)
    rel = release_times(dag, comp) if release_ns is None else np.asarray(release_ns, dtype=np.int64)
    return aggregate_ops((s, int(rel[s.first:s.end].min()), int(comp[s.first:s.end].max()))
                         if s.end > s.first else (s, None, None) for s in spans)
