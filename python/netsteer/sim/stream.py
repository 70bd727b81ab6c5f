"""MPI jobs streamed through the engine: rank programs run in Rust, in bounded memory.

:func:`netsteer.traffic.mpi.build_job` materialises a job's whole flow DAG before the
run (hundreds of bytes per message: a 4,096-rank alltoall of 4 KiB is 16.8 million
flows). Here the same programs run inside the engine instead: each rank walks its
operations (the collective algorithms of :mod:`netsteer.traffic.collectives`, written
again as Rust generators), a message becomes a flow when both ends have posted it,
its path is walked in Rust, and its slot is reused once it finishes. Memory grows
with the ranks and the messages in flight, never with the messages in all. The
predictions are those of the DAG (same dependencies, same engine); only the order in
which flows get their ids differs.

How the run path calls it (see :func:`attach_jobs`)::

    engine = Engine(capacity, latency, sharing, tcp_gamma)
    jobs = attach_jobs(engine, topo, routing, mpi_jobs)   # MpiJob / MpiJobSpec list
    while engine.run(until, 50_000) == "budget":
        p = engine.mpi_progress()                          # messages done, now
    report = stream_report(engine, jobs)                  # op_report's shape

:func:`simulate_mpi` does all of it for a topology, a routing and a list of jobs.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
>>> job = MpiJobSpec(name="a", ranks=16, program=[{"op": "allreduce", "bytes": "1MiB",
...                                                "algorithm": "recursive_doubling"}])
>>> r = simulate_mpi(t, "dmodk", [job], sharing="cm02")
>>> r.status, r.makespan_ns, r.progress["messages_done"]
('done', 5045242, 64)

A job is an :class:`netsteer.traffic.program.MpiJobSpec` (checked by hand: a run
needs no pydantic), a dict of its fields, or a scenario's pydantic
:class:`netsteer.traffic.mpi.MpiJob`; all give the same run:

>>> from netsteer.traffic.mpi import MpiJob
>>> same = MpiJob(name="a", ranks=16, program=[{"op": "allreduce", "bytes": "1MiB",
...                                            "algorithm": "rdb"}])
>>> simulate_mpi(t, "dmodk", [same], sharing="cm02").makespan_ns
5045242
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .._core import Engine, check_mpi_steps
from ..errors import NetsteerError
from ..topology.model import CIRCUIT, HOST, Topology
from ..traffic.algorithms import MPI_ENVELOPE_BYTES, canonical, check_message_sizes, job_choices, rule_error
from ..traffic.program import _MAX_BYTES, MpiJobSpec, OpSpan, aggregate_ops, as_spec
from ..traffic.placement import error_field, place

# events handled per engine call, so progress can be shown on long runs
_CHUNK = 200_000

#: Bytes per rank (program state, matching, one cursor, its last route) and per message in flight
#: (engine flow, path, stream record), rounded up from the Rust structures.
RANK_BYTES = 460
FLOW_BYTES = 400
CHANNEL_BYTES = 120
#: The most iterations the engine runs a job for (it counts them in 32 bits).
MAX_REPEAT = 2**32 - 1


@dataclass
class StreamedJob:
    """One job as streamed: its index in the engine, hosts and program."""

    index: int
    job: MpiJobSpec
    hosts: list[int]
    steps: list
    envelope_bytes: int = MPI_ENVELOPE_BYTES


def program_totals(sj: StreamedJob) -> tuple[int, int]:
    """``(flows, bytes)`` of ``sj``'s whole program as its flow DAG would hold them:
    every message (each with its envelope) and compute step of every repetition, and a
    later start as one delay flow per rank; bytes exact. For a job that did not finish:
    the steps it never ran are counted too (:func:`netsteer._core.mpi_step_totals`
    walks each step's operations, in time that grows with its messages).

    >>> job = MpiJobSpec(ranks=2, program=[{"op": "send", "src": 0, "dst": 1, "bytes": 1000},
    ...                                {"op": "compute", "duration": "1us"}], repeat=2)
    >>> program_totals(StreamedJob(0, job, [0, 1], job_steps(job)))  # 2 x (1 message + 2 delays), 2 x 1016 B
    (6, 2032)
    """
    from .._core import mpi_step_totals

    totals = mpi_step_totals(sj.job.ranks, sj.steps, sj.envelope_bytes)
    flows = sum(n for n, _ in totals) * sj.job.repeat + (sj.job.ranks if sj.job.start else 0)
    return flows, sum(b for _, b in totals) * sj.job.repeat


@dataclass
class MpiResult:
    """What :func:`simulate_mpi` produced.

    ``report`` has the shape of :func:`netsteer.traffic.mpi.op_report`; ``spans`` the
    executed steps, with ``first`` and ``end`` standing for the release and finish
    times (there are no flow ids to index).
    """

    makespan_ns: int
    status: str
    wall_s: float
    stats: dict
    progress: dict
    report: dict
    jobs: list[dict]
    sample_times_ns: np.ndarray
    channel_bytes: np.ndarray
    final_channel_bytes: np.ndarray


# --------------------------------------------------------------------------------------
# routing
# --------------------------------------------------------------------------------------


def set_router(engine: Engine, topo: Topology, routing: Any) -> None:
    """Give ``engine`` the router of streamed messages.

    ``routing`` is a :class:`netsteer.routing.Routing` with destination tables and
    ECMP groups hashed on ``dst`` or ``src-dst`` (no class overrides, no circuit
    switch in the topology), walked in Rust; or the string ``"dmodk"`` on a PGFT,
    computed per hop without building tables (the same paths as
    :func:`netsteer.routing.dmodk`).
    """
    out = np.ascontiguousarray(topo.out_channel, dtype=np.int64)
    cdst = topo.channel_dst().astype(np.int64)
    if isinstance(routing, str):
        meta = topo.meta
        if routing != "dmodk" or meta.get("kind") != "pgft":
            raise NetsteerError(f"streamed MPI routes by name only with dmodk on a pgft, got "
                                f"{routing!r} on {meta.get('kind', 'a topology')!r}", field="routing")
        labels = np.asarray(meta["labels"], dtype=np.int64).reshape(topo.n_nodes, meta["levels"])
        level = np.zeros(topo.n_nodes, dtype=np.int64)
        for lv, (first, count) in enumerate(zip(meta["first_node"], meta["nodes_by_level"])):
            level[first:first + count] = lv
        engine.set_router_pgft(meta["levels"], list(meta["down"]), list(meta["up"]),
                               list(meta["parallel"]), labels, level, out, cdst)
        return
    why = streamable_routing(topo, routing)
    if why is not None:
        raise NetsteerError(f"streamed MPI jobs need destination tables: {why}; "
                            "run them as a flow DAG instead", field="routing")
    engine.set_router_tables(
        np.ascontiguousarray(routing.table, dtype=np.int32),
        np.asarray(routing.row_of, dtype=np.int64),
        routing._host_port().astype(np.int64),
        out, cdst, topo.node_kind == HOST, topo.node_kind == CIRCUIT,
        np.asarray(topo.hosts, dtype=np.int64), routing.group_arrays())


#: Why ECMP's ``flow`` hash keeps each message a DAG flow.
FLOW_HASH_REASON = "the ECMP hash 'flow' needs a flow id per message (hash dst or src-dst streams)"


def streamable_routing(topo: Topology, routing: Any) -> str | None:
    """Why ``routing`` cannot route streamed messages, or None if it can: the engine
    walks destination tables, and hashes ECMP groups on what a message has (its
    source and destination hosts, not a flow id).

    >>> from netsteer.topology.pgft import pgft
    >>> from netsteer.routing import build_routing
    >>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> streamable_routing(t, build_routing(t, "dmodk")) is None
    True
    """
    if isinstance(routing, str):
        return None
    if getattr(routing, "groups", None) and routing.ecmp_hash == "flow":
        return FLOW_HASH_REASON
    if getattr(routing, "overrides", None):
        return "the routing has per-class overrides"
    if (topo.node_kind == CIRCUIT).any():
        return "the topology has circuit switches"
    if not hasattr(routing, "table"):
        return f"{type(routing).__name__} has no destination tables"
    return None


# --------------------------------------------------------------------------------------
# jobs
# --------------------------------------------------------------------------------------


def job_steps(job: Any) -> list[tuple]:
    """The program of ``job`` (an :class:`MpiJobSpec`, an ``MpiJob`` or a dict) as the
    engine's step tuples, checked as :func:`netsteer.traffic.mpi.build_job` checks it
    (errors name ``program.<i>``), by the engine's own rules (``check_mpi_steps``)."""
    out = []
    job = as_spec(job)
    p = job.ranks
    choices = job_choices(job.program)
    for i, st in enumerate(job.program):
        if st.op == "compute":
            out.append(("compute", int(st.duration)))
            continue
        if st.op == "send":
            for name in ("src", "dst"):
                if getattr(st, name) >= p:
                    raise NetsteerError(
                        f"{getattr(st, name)} is not a rank of this {p}-rank job (0..{p - 1})",
                        field=f"program.{i}.{name}")
            out.append(("send", st.src, st.dst, int(st.bytes)))
            continue
        root = st.root
        if root >= p:
            raise NetsteerError(f"root {root} is not a rank of this {p}-rank job (0..{p - 1})",
                                field=f"program.{i}.root")
        algo = canonical(st.op, st.algorithm)
        nbytes = int(st.bytes)
        out.append(("collective", st.op, algo, nbytes, int(root), int(st.elem_bytes),
                    choices["reduce"], choices["bcast"]))
    check_message_sizes(job.program, p)  # the engine's messages gather blocks: their sum, too
    try:
        check_mpi_steps(p, out)
    except ValueError as e:
        # "program step i: reason": what a collective refuses is its algorithm's rule
        # (rank counts, element sizes)
        msg = str(e)
        if msg.startswith("program step "):
            i, msg = msg[len("program step "):].split(": ", 1)
            raise rule_error(job.program[int(i)], msg).located(prefix=f"program.{i}") from None
        raise NetsteerError(msg) from None
    return out


def estimate_bytes(topo: Topology, jobs: Sequence[Any], routing: Any = "dmodk", *,
                   table_bytes: int | None = None) -> int:
    """Memory a streamed run needs: ranks, the messages that can be in flight at
    once (at most one per rank: a rank blocks on one operation, which sends at most
    one message), the router and the network. The router's copy of the tables is
    ``routing.table``'s size, or ``table_bytes`` for tables not built yet.

    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> estimate_bytes(t, [MpiJobSpec(ranks=16, program=[{"op": "barrier"}])]) < 2**20
    True
    """
    # ranks and executed steps only: an estimate checks nothing else (a job may be
    # refused before it is checked)
    ranks = sum(int(j["ranks"]) if isinstance(j, dict) else int(j.ranks) for j in jobs)
    if table_bytes is None:
        table_bytes = 0 if isinstance(routing, str) else int(np.asarray(routing.table).nbytes)
    network = topo.n_channels * CHANNEL_BYTES + topo.out_channel.nbytes * 2
    return ranks * (RANK_BYTES + FLOW_BYTES) + sum(map(span_bytes, jobs)) + table_bytes + network


def span_bytes(job: Any) -> int:
    """Memory of ``job``'s records of its executed steps: the engine keeps one per
    iteration and step from the start (:data:`netsteer.limits.SPAN_BYTES` each), so
    ``repeat`` bounds a streamed job's memory as its ranks do (``repeat: 2**31`` would
    need 1.2 TiB per step).

    >>> span_bytes({"ranks": 8, "repeat": 1000, "program": [{"op": "barrier"}, {"op": "barrier"}]})
    1200000
    """
    from ..limits import SPAN_BYTES

    get = job.get if isinstance(job, dict) else (lambda k, d=None: getattr(job, k, d))
    program = get("program") or ()
    try:
        steps = len(program)
    except TypeError:  # not a list: refused when the job is checked
        steps = 1
    repeat = get("repeat", 1)
    repeat = repeat if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat > 0 else 1
    return repeat * steps * SPAN_BYTES


def least_time_ns(job: Any, rate_Bps: float, latency_ns: float = 0.0) -> float:
    """A lower bound of ``job``'s length with ranks sending at ``rate_Bps`` over paths
    of ``latency_ns``: per step, the bytes some rank must send whatever the algorithm
    (an allreduce of ``n`` bytes sends at least ``2 n (p-1)/p`` from every rank), plus
    the step's dependent rounds times the path latency
    (:func:`netsteer.traffic.collectives.counts.rounds`: a latency-bound collective, a
    small ring allreduce, lasts its rounds), plus compute, times ``repeat``.
    Sizes the scenario's counter sampling without expanding the job.

    >>> job = MpiJobSpec(ranks=4, program=[{"op": "allreduce", "bytes": 4000},
    ...                                {"op": "compute", "duration": "1us"}], repeat=2)
    >>> least_time_ns(job, 1e9)  # 2 * (6000 B at 1 GB/s + 1 us)
    14000.0
    >>> least_time_ns(job, 1e9, latency_ns=2000)  # + 2 * 6 ring rounds of 2 us
    38000.0
    """
    from ..traffic.collectives.counts import rounds

    job = as_spec(job)
    p = job.ranks
    share = (p - 1) / p
    per_step = {"allreduce": 2 * share, "reduce": share, "bcast": share,
                "alltoall": p - 1, "allgather": p - 1, "gather": p - 1, "scatter": p - 1}
    choices = job_choices(job.program) if latency_ns else None
    t = 0.0
    for st in job.program:
        if st.op == "compute":
            t += st.duration
            continue
        if st.op != "barrier":
            t += int(st.bytes) * (1.0 if st.op == "send" else per_step.get(st.op, 0.0)) / rate_Bps * 1e9
        if latency_ns:
            n = 1 if st.op == "send" else rounds(st.op, st.algorithm, p, int(st.bytes), st.elem_bytes, choices)
            t += n * latency_ns
    return t * job.repeat + job.start


def available_bytes() -> int | None:
    """:func:`netsteer.limits.available_bytes` (imported when a run asks, not at start-up)."""
    from ..limits import available_bytes as free

    return free()


def fmt_bytes(n: float) -> str:
    """:func:`netsteer.limits.fmt_bytes` (imported when a job is refused, not at start-up)."""
    from ..limits import fmt_bytes as fmt

    return fmt(n)


def check_memory(need: int, limit: int | None = None, *, field: str = "jobs") -> None:
    """Refuse a run whose estimate exceeds ``limit`` (default: the memory available).

    >>> check_memory(3 * 2**30, limit=2**30)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: jobs: the MPI jobs would need about 3 GiB, more than the 1 GiB available
    """
    limit = available_bytes() if limit is None else limit
    if limit is not None and need > limit:
        raise NetsteerError(f"the MPI jobs would need about {fmt_bytes(need)}, more than "
                            f"the {fmt_bytes(limit)} available", field=field)


def _check_int(value: Any, name: str, lo: int, hi: int) -> None:
    """Refuse an argument that is not an integer in ``lo..hi``, naming it.

    >>> _check_int(-1, "envelope_bytes", 0, 2**60)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: envelope_bytes: must be between 0 and 1,152,921,504,606,846,976, got -1
    """
    from ..errors import short_repr

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise NetsteerError(f"must be an integer, got {short_repr(value)}", field=name)
    if not lo <= value <= hi:
        raise NetsteerError(f"must be between {lo:,} and {hi:,}, got {int(value):,}", field=name)


def attach_jobs(engine: Engine, topo: Topology, routing: Any, jobs: Sequence[Any], *,
                envelope_bytes: int = MPI_ENVELOPE_BYTES,
                memory_limit: int | None = None, sls: Sequence[int] | None = None) -> list[StreamedJob]:
    """Set the router and start every job on ``engine``, at its current time; job
    ``j``'s messages travel on service level ``sls[j]`` (packet fidelity; default 0).

    A dict without ``name`` is named ``job<j>`` (its index), as :func:`netsteer.simulate`
    names it; the report is by name, so two jobs of one name (the specs' default is
    ``"job"``) are refused.

    Raises
    ------
    NetsteerError
        A program the DAG expansion would refuse (``field`` names ``jobs.<j>.program.<i>``),
        a job name used twice (``jobs.<j>.name``), ranks beyond the hosts, a routing that
        cannot be streamed, or jobs too large for the memory available (with the estimate).
    """
    _check_int(envelope_bytes, "envelope_bytes", 0, _MAX_BYTES)
    specs = []
    names: dict[str, int] = {}
    for j, job in enumerate(jobs):
        if isinstance(job, dict) and "name" not in job:
            job = {"name": f"job{j}", **job}  # as netsteer.simulate names a job without one
        try:
            specs.append(as_spec(job))
        except NetsteerError as e:
            raise e.located(prefix=f"jobs.{j}") from None
        # the report is by name: two jobs of one name would merge, so refuse, as a scenario does
        name = specs[-1].name
        if name in names:
            raise NetsteerError(f"job name {name!r} is used twice (first by jobs.{names[name]})",
                                field=f"jobs.{j}.name")
        names[name] = j
    check_memory(estimate_bytes(topo, specs, routing), memory_limit)
    set_router(engine, topo, routing)
    out = []
    for j, job in enumerate(specs):
        where = f"jobs.{j}"
        try:
            hosts = place(job.ranks, job.placement, topo.n_hosts, job.seed)
        except NetsteerError as e:
            raise e.located(prefix=f"{where}.{error_field(job.placement)}") from None
        try:
            steps = job_steps(job)
        except NetsteerError as e:
            raise e.located(prefix=where) from None
        if job.repeat > MAX_REPEAT:  # (a memory limit past the spans' terabytes let it through)
            raise NetsteerError(f"must be at most {MAX_REPEAT:,} (the engine counts iterations in 32 bits), "
                                f"got {job.repeat:,}", field=f"{where}.repeat")
        try:
            idx = engine.add_mpi_job(np.asarray(hosts, dtype=np.int64), steps, job.repeat,
                                     int(job.start), job.priority, 1.0, envelope_bytes,
                                     int(sls[j]) if sls is not None else 0)
        except ValueError as e:  # the steps passed job_steps' check: hosts, memory
            raise NetsteerError(str(e), field=where) from None
        out.append(StreamedJob(idx, job, hosts, steps, envelope_bytes))
    return out


def stream_spans(engine: Engine, jobs: Sequence[StreamedJob]) -> list[OpSpan]:
    """The executed steps as :class:`OpSpan`, ``first``/``end`` holding the release
    and finish times in ns (-1 where a step never ran or moved nothing: one rank, an
    empty reduce)."""
    cols = engine.mpi_spans()
    by_index = {sj.index: sj for sj in jobs}
    out = []
    for k in range(len(cols["job"])):
        sj = by_index.get(int(cols["job"][k]))
        if sj is None:
            continue
        st = sj.steps[int(cols["step"][k])]
        op = st[1] if st[0] == "collective" else st[0]
        algo = st[2] if st[0] == "collective" else None
        nbytes = st[3] if st[0] == "collective" else (st[3] if st[0] == "send" else 0)
        out.append(OpSpan(sj.job.name, int(cols["iteration"][k]), int(cols["step"][k]), op, algo,
                          int(nbytes), sj.job.ranks, int(cols["first_release_ns"][k]),
                          int(cols["last_done_ns"][k])))
    return out


def stream_report(engine: Engine, jobs: Sequence[StreamedJob]) -> dict:
    """Time per operation kind and bandwidth per collective, per job, as
    :func:`netsteer.traffic.mpi.op_report` gives it for a DAG: a job whose steps moved
    nothing is listed too, with no operations."""
    spans = stream_spans(engine, jobs)
    return aggregate_ops((s, s.first, s.end) if s.end >= 0 else (s, None, None) for s in spans)


def simulate_mpi(
    topo: Topology,
    routing: Any,
    jobs: Sequence[Any],
    *,
    sharing: str = "maxmin",
    tcp_gamma: float | None = None,
    sample_interval_ns: int = 0,
    envelope_bytes: int = MPI_ENVELOPE_BYTES,
    memory_limit: int | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    merge_window_ns: int | None = None,
    ticks_per_ns: int | None = None,
) -> MpiResult:
    """Run MPI jobs on ``topo`` streamed through the engine.

    Parameters
    ----------
    topo : Topology
    routing : Routing or ``"dmodk"``
        See :func:`set_router`.
    jobs : list of MpiJobSpec, MpiJob or dict
    sharing, tcp_gamma, sample_interval_ns
        As in :func:`netsteer.sim.simulate` (``sharing``: ``"maxmin"`` or ``"cm02"``;
        ``sample_interval_ns`` >= 0, 0 samples nothing).
    envelope_bytes : int
        Added to every message (SMPI's envelope), 0 to 2**60.

    Raises
    ------
    NetsteerError
        A bad argument (``field`` names it: ``sharing``, ``envelope_bytes``, ...), and
        what :func:`attach_jobs` refuses.
    memory_limit : int, optional
        Refuse jobs whose estimate exceeds it (default: the memory available).
    progress : callable(messages_done, messages_in_flight, now_ns), optional
        Called every few hundred thousand events: totals are not known up front.
    merge_window_ns, ticks_per_ns : int, optional
        As in :func:`netsteer.sim.simulate` (SimGrid's timing precision, 0 is exact;
        the engine's clock in 1/``ticks_per_ns`` ns; by default the sharing model's).
    """
    from .timing import check_sharing, engine_for, set_merge_window, timing_for
    from ..units import MAX_DURATION_NS

    # the arguments, before anything is built: input errors naming them, not the engine's
    # ValueError or OverflowError
    check_sharing(sharing)
    _check_int(envelope_bytes, "envelope_bytes", 0, _MAX_BYTES)
    _check_int(sample_interval_ns, "sample_interval_ns", 0, MAX_DURATION_NS)
    if memory_limit is not None:
        _check_int(memory_limit, "memory_limit", 0, 2**63 - 1)
    capacity = topo.channel_bandwidth() / 8.0

    window, ticks = timing_for(sharing, merge_window_ns, ticks_per_ns)
    engine = engine_for(capacity, topo.channel_latency_ns().astype(np.int64), sharing, tcp_gamma,
                        ticks_per_ns=ticks)
    set_merge_window(engine, window)
    if sample_interval_ns > 0:
        engine.set_sample_interval(int(sample_interval_ns))
    t0 = time.perf_counter()
    streamed = attach_jobs(engine, topo, routing, jobs, envelope_bytes=envelope_bytes,
                           memory_limit=memory_limit)
    while True:
        status = engine.run(None, _CHUNK)
        if progress is not None:
            p = engine.mpi_progress()
            progress(p["messages_done"], p["in_flight"], engine.now)
        if status != "budget":
            break
    wall = time.perf_counter() - t0
    if status == "stalled":
        from .run import CLOCK_RANGE_NS
        from .simulate import _past_clock_jobs

        past = _past_clock_jobs(engine, 0, topo, streamed)
        if past:  # as a scenario's run refuses it (netsteer.sim.run): nothing blocked it
            years = CLOCK_RANGE_NS / 1e9 / 86400 / 365.25
            raise NetsteerError(f"the run does not end within the simulator's clock: job "
                                f"{streamed[past[0]].job.name!r} would still be sending after {years:.0f} years "
                                "of simulated time; check its bytes and start against the link bandwidths",
                                field=f"jobs.{past[0]}")
    left = [(streamed[i].job.name, n) for i, (_, n) in enumerate(engine.mpi_jobs()) if n]
    if status == "done" and left:
        # nothing in flight, yet ranks wait: an unmatched send or receive
        raise RuntimeError(f"MPI jobs deadlock: ranks left {left}")
    completion = [c for c, _ in engine.mpi_jobs()]
    times, samples = engine.samples()
    return MpiResult(
        makespan_ns=max([c for c in completion if c >= 0], default=0),
        status=status,
        wall_s=wall,
        stats=dict(engine.stats()),
        progress=dict(engine.mpi_progress()),
        report=stream_report(engine, streamed),
        jobs=[{"name": sj.job.name, "ranks": sj.job.ranks, "completion_ns": c}
              for sj, c in zip(streamed, completion)],
        sample_times_ns=times,
        channel_bytes=samples,
        final_channel_bytes=engine.channel_bytes(),
    )

