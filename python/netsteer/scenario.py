"""Scenario files: the YAML schema, its validation, and what it builds.

Parsing stays apart from building (as faucet keeps ``conf`` apart from the checks):
:func:`load_scenario` reads and validates the file's shape and units;
:func:`build_scenario` resolves hosts, routing and workloads against the topology.
Every error names the file, the field path and the reason.

Examples
--------
>>> text = '''
... name: two-bulk-flows
... topology: {kind: pgft, levels: 1, down: [4], up: [1], parallel: [1],
...            link_bandwidth: 8Gbps, link_latency: 0us}
... routing: {engine: dmodk}
... jobs:
...   - name: bulk
...     flows:
...       - {src: 0, dst: 3, bytes: 1GB}
... '''
>>> sc = parse_scenario(text, file="demo.yaml")
>>> built = build_scenario(sc)
>>> len(built.dag), built.topology.n_hosts
(1, 4)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

import numpy as np
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError,
                      field_validator, model_validator)

from .errors import LimitError, NetsteerError, pydantic_error
from .limits import FLOW_BYTES, SAMPLE_VALUE_BYTES, check, routing_bytes, topology_bytes
from .limits import current as current_limits
from .schema import Duration, Size
from .topology.model import CIRCUIT, Topology
from .traffic.dag import FlowDag
from .units import BULK_BYTES

Int = Annotated[int, Strict()]
"""An integer: not a boolean (``true`` is not host 1), not a float."""
HostRef = Int | str
#: The weights a flow may have. The engine shares a link among its flows in
#: proportion to their weights in f64 (a channel's level is its capacity over the sum
#: of its flows' weights), so the share of the lightest flow must stay far above the
#: sum's rounding (2**-52 of it) and the solver's tolerances (1e-9 of a level): a
#: ratio of 10**16 loses the light flow altogether (it ran at the heavy one's rate).
#: Weights between 1e-3 and 1e3 keep a ratio of at most 10**6, which leaves the
#: 10**9 more that CM02 sharing (weight over path latency, a latency-free path counting
#: as 1 s) and QoS shares may add inside f64's precision.
WEIGHT_MIN, WEIGHT_MAX = 1e-3, 1e3


def _number(value):
    """A number written as a string (YAML 1.1 reads ``1e3`` as one, not a float) as a
    float; a boolean stays what it is, for the type check to refuse (``true`` is not 1).

    >>> _number("1e3"), _number(" 2.5 "), _number("abc"), _number(True)
    (1000.0, 2.5, 'abc', True)
    """
    if isinstance(value, str):
        try:
            return float(value.strip().replace("_", "!"))  # Python's 1_000 is no YAML number
        except ValueError:
            return value
    return value


def _weight_range(value: float) -> float:
    if not WEIGHT_MIN <= value <= WEIGHT_MAX:
        raise ValueError(f"must be between {WEIGHT_MIN:g} and {WEIGHT_MAX:g}, got {value!r} (the engine shares "
                         f"in floating point: a weight ratio beyond 10^6 loses the light flow's share)")
    return value


Weight = Annotated[float, BeforeValidator(_number), Strict(), Field(gt=0, allow_inf_nan=False),
                   AfterValidator(_weight_range)]
"""A positive, finite share weight between :data:`WEIGHT_MIN` and :data:`WEIGHT_MAX`
(a number, or a string that reads as one: ``1e3``)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class FlowModel(_Strict):
    """One point-to-point flow."""

    id: str | None = None
    src: HostRef
    dst: HostRef
    bytes: Size
    start: Duration | None = None
    after: list[str] = Field(default_factory=list, description="ids of flows of this job to wait for")
    delay: Duration = 0
    weight: Weight = 1.0
    traffic_class: Int = Field(0, alias="class", ge=0)
    priority: Int = Field(0, ge=0, le=255)


class BulkModel(_Strict):
    """An iperf-like flow: sends as fast as it can from ``start`` for ``duration``,
    or, without a duration, until every other flow of the scenario is done."""

    src: HostRef
    dst: HostRef
    start: Duration = 0
    duration: Duration | None = None
    weight: Weight = 1.0
    traffic_class: Int = Field(0, alias="class", ge=0)
    priority: Int = Field(0, ge=0, le=255)


class JobModel(_Strict):
    name: str = Field(min_length=1)
    flows: list[FlowModel] = Field(default_factory=list)
    bulk: list[BulkModel] = Field(default_factory=list)
    # MPI programs (netsteer.traffic.mpi): ranks placed on hosts running a program;
    # the program's steps are validated by netsteer.traffic.mpi.MpiJob
    ranks: Int | None = Field(None, gt=0)
    program: list[Any] | None = None
    placement: Any = "linear"  # (after program, for _for_program)
    repeat: Int = Field(1, ge=1)
    seed: Int = Field(0, ge=0)
    start: Duration = 0
    traffic_class: Int = Field(0, alias="class", ge=0)
    priority: Int = Field(0, ge=0, le=255)
    # run the program streamed through the engine (true) or as a flow DAG (false);
    # default: streamed when large and nothing in the scenario needs per-flow context
    stream: Annotated[bool, Strict()] | None = None

    # a field check, so that the error names the key (jobs.0.priority); declared after
    # program, so info.data holds it (absent only when the program itself is bad)
    # (a job of flows only would ignore them silently: repeat: 3 running its flows once)
    @field_validator("placement", "repeat", "seed", "start", "traffic_class", "priority")
    @classmethod
    def _for_program(cls, v, info):
        if "program" in info.data and info.data["program"] is None:
            key = "class" if info.field_name == "traffic_class" else info.field_name
            if key in ("placement", "repeat", "seed"):  # flows have no such key of their own
                raise ValueError(f"{key} applies to an MPI job's program (ranks and program); a job of flows "
                                 "has no ranks to place, repeat or seed")
            raise ValueError(f"{key} applies to an MPI job's program; give flows and bulk flows their own {key}")
        return v

    @model_validator(mode="after")
    def _has_work(self) -> "JobModel":
        if not (self.flows or self.bulk or self.program):
            raise ValueError("a job needs flows, bulk or a program")
        if (self.program is None) != (self.ranks is None):
            raise ValueError("an MPI job needs both ranks and program")
        if self.program is None and self.stream is not None:
            raise ValueError("stream applies to an MPI job's program (ranks and program)")
        return self


class RoutingModel(_Strict):
    engine: str
    hash: Literal["dst", "src-dst", "flow"] | None = None
    partitions: str | None = Field(None, description="OpenSM partitions.conf, relative to the scenario file")

    # named when the file is read (a sweep's --check sees it), not when routing starts;
    # the registry, not a Literal: register_engine adds engines at run time
    @field_validator("engine")
    @classmethod
    def _known_engine(cls, v):
        from .errors import RoutingError
        from .routing import check_engine

        try:
            check_engine(v)
        except RoutingError as exc:
            raise ValueError(exc.reason) from None
        return v


class SharingModel(_Strict):
    model: Literal["maxmin", "cm02"]
    tcp_gamma: Size | None = None
    # the engine's timing (netsteer.sim.timing.timing_for): by default the model's,
    # SimGrid's 1 ns merge on 0.1 ns ticks for cm02, exact on ns for maxmin
    merge_window: Duration | None = Field(None, description="events due less than this after one happen with it")
    ticks_per_ns: Annotated[int, Strict(), Field(ge=1, le=1000)] | None = None

    # a field check, not a model check: its error is then at sharing.tcp_gamma, deeper
    # than the sibling branch's "Input should be 'maxmin' or 'cm02'" at sharing, which
    # the message would otherwise give for {model: maxmin, tcp_gamma: 1MiB}
    @field_validator("tcp_gamma")
    @classmethod
    def _gamma_for_cm02(cls, v, info):
        model = info.data.get("model")  # absent when the model itself is bad: that error stands
        if v is not None and model is not None and model != "cm02":
            raise ValueError(f"tcp_gamma applies to the cm02 model only; {model} has no TCP window")
        return v


class LinkRef(_Strict):
    node: str
    port: Int = Field(ge=0)


class CircuitModel(_Strict):
    switch: str
    pairs: list[tuple[int, int]]


class EventModel(_Strict):
    """A change at time ``at``: exactly one of the keys below."""

    at: Duration
    # an empty list changes nothing: refused, as a typo more likely than a no-op
    link_down: list[LinkRef] | None = Field(None, min_length=1)
    link_up: list[LinkRef] | None = Field(None, min_length=1)
    routing: RoutingModel | None = None
    circuit: CircuitModel | None = None

    @model_validator(mode="after")
    def _one(self) -> "EventModel":
        given = [k for k in ("link_down", "link_up", "routing", "circuit") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("an event needs exactly one of link_down, link_up, routing, circuit")
        return self


class ScenarioModel(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    topology: dict[str, Any]
    routing: RoutingModel
    sharing: Literal["maxmin", "cm02"] | SharingModel = "maxmin"
    # flow (max-min, the default) or packet (netsteer.sim.packet checks `packet`)
    fidelity: Literal["flow", "packet"] = "flow"
    packet: Any = None
    sample_interval: Duration | Literal["auto"] = "auto"
    reroute_on_change: Annotated[bool, Strict()] = Field(True, description="recompute routes when links change")
    jobs: list[JobModel] = Field(min_length=1)
    events: list[EventModel] = Field(default_factory=list)
    # checked by netsteer.control.scenario when the scenario is built
    controller: dict[str, Any] | None = None
    driver: dict[str, Any] | None = None
    # InfiniBand QoS: SL2VL, VL arbitration, traffic classes (checked by netsteer.qos)
    qos: dict[str, Any] | None = None

    @field_validator("sample_interval")
    @classmethod
    def _positive_interval(cls, v):
        if v == 0:
            raise ValueError("sample_interval must be positive (or auto); 0 would sample nothing")
        return v


@dataclass
class Scenario:
    model: ScenarioModel
    file: str | None


@dataclass
class BuiltScenario:
    """Everything the simulator needs, resolved against the topology."""

    scenario: Scenario
    topology: Topology
    routing: Any
    dag: FlowDag
    job_of_flow: np.ndarray
    job_names: list[str]
    background: np.ndarray
    events: list
    spans: list  # MPI steps executed (netsteer.traffic.mpi.OpSpan), for per-op reports
    sharing: str
    tcp_gamma: float | None
    sample_interval_ns: int
    # sample_interval: auto: a streamed run past this many samples halves their resolution
    sample_cap: int | None = None
    merge_window_ns: int | None = None  # None: the sharing model's (netsteer.sim.timing.timing_for)
    ticks_per_ns: int | None = None
    # the default controller's re-route policy: builds a routing for a changed network
    reroute: Any = None
    reroute_on_change: bool = True
    hybrid: Any = None  # the hybrid controller (netsteer.control.hybrid), if the scenario has one
    driver_options: dict | None = None  # delay model and faults of the sim driver
    unisonflow: Any = None  # tags and controller set-up (netsteer.unisonflow.scenario), if any
    # MPI jobs streamed through the engine (netsteer.sim.stream): (job index, MpiJob)
    streamed: list = dc_field(default_factory=list)
    stream_router: Any = None  # what routes their messages: the routing, or "dmodk" on a PGFT
    qos: Any = None  # the QoS plan (netsteer.qos.scenario.QosPlan): SLs, tables, priority changes
    steering: Any = None  # the bandwidth-steering controller (netsteer.control.steering), if any
    fidelity: str = "flow"
    packet: Any = None  # the packet fidelity's parameters (netsteer.sim.packet.PacketParams)
    notes: list = dc_field(default_factory=list)  # what the run leaves out of the file, and why

    @property
    def name(self) -> str:
        return self.scenario.model.name


def _pydantic_error(exc: ValidationError, file: str | None, model=None) -> NetsteerError:
    """``exc`` as a :class:`NetsteerError` naming ``file`` (:func:`netsteer.errors.pydantic_error`;
    ``model``, the one validated, gives a misspelt key's hint)."""
    from .traffic.program import with_integer_hint

    errors = exc.errors()
    return with_integer_hint(pydantic_error(errors, file=file, model=model), errors)


def parse_scenario(text: str, *, file: str | None = None) -> Scenario:
    """Validate scenario text (YAML or JSON)."""
    from .inputs import load_yaml

    return validate_scenario(load_yaml(text, file=file), file=file)


def validate_scenario(data: Any, *, file: str | None = None) -> Scenario:
    """Validate a scenario already parsed from YAML (a mapping)."""
    if not isinstance(data, dict):
        raise NetsteerError("a scenario is a mapping with name, topology, routing and jobs", file=file)
    try:
        model = ScenarioModel.model_validate(data)
    except ValidationError as exc:
        raise _pydantic_error(exc, file, ScenarioModel) from None
    return Scenario(model=model, file=file)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    from .inputs import read_text

    return parse_scenario(read_text(path), file=str(path))


def _host(topo: Topology, ref: HostRef, file, field) -> int:
    if isinstance(ref, bool):
        raise NetsteerError(f"{ref!r} is not a host", file=file, field=field)
    if isinstance(ref, int):
        if not 0 <= ref < topo.n_hosts:
            raise NetsteerError(
                f"host {ref} does not exist: the topology has hosts 0..{topo.n_hosts - 1}", file=file, field=field
            )
        return ref
    try:
        node = topo.node(ref)
    except KeyError:
        raise NetsteerError(f"no host named {ref!r}", file=file, field=field) from None
    if topo.host_index[node] < 0:
        raise NetsteerError(f"{ref!r} is a switch, not a host", file=file, field=field)
    return int(topo.host_index[node])


def _link(topo: Topology, ref: LinkRef, file, field) -> int:
    try:
        node = topo.node(ref.node)
    except KeyError:
        raise NetsteerError(f"no node named {ref.node!r}", file=file, field=field) from None
    if ref.port >= topo.out_channel.shape[1] or topo.out_channel[node, ref.port] < 0:
        raise NetsteerError(f"{ref.node} has no port {ref.port}", file=file, field=field)
    return int(topo.out_channel[node, ref.port]) // 2


def _job_flows(topo, job: JobModel, j: int, dag: FlowDag, file) -> tuple[list[int], list[tuple[int, int]]]:
    """Append a job's flows and bulk flows.

    Returns the bulk flows that end with the others, and (flow, stop time) of those
    that run for a duration."""
    base = f"jobs.{j}"
    ids: dict[str, int] = {}
    first = len(dag)
    for i, f in enumerate(job.flows):
        if f.id is not None:
            if f.id in ids:
                raise NetsteerError(f"flow id {f.id!r} is used twice", file=file, field=f"{base}.flows.{i}.id")
            ids[f.id] = first + i
    for i, f in enumerate(job.flows):
        fld = f"{base}.flows.{i}"
        deps = []
        for k, a in enumerate(f.after):
            if a not in ids:
                raise NetsteerError(f"no flow with id {a!r} in job {job.name!r}", file=file, field=f"{fld}.after.{k}")
            deps.append(ids[a])
        dag.add(
            _host(topo, f.src, file, f"{fld}.src"),
            _host(topo, f.dst, file, f"{fld}.dst"),
            f.bytes,
            deps=deps,
            start_ns=f.start,
            delay_ns=f.delay,
            weight=f.weight,
            traffic_class=f.traffic_class,
            priority=f.priority,
            label=f"{job.name}:flow",
        )
    _check_acyclic(job, first, dag, file, base)
    background, timed = [], []
    for i, b in enumerate(job.bulk):
        fld = f"{base}.bulk.{i}"
        src, dst = _host(topo, b.src, file, f"{fld}.src"), _host(topo, b.dst, file, f"{fld}.dst")
        if src == dst:
            # a sized flow to its own host ends at once; a bulk flow has no size to end on
            raise NetsteerError(f"src and dst are the same host ({b.src}): a bulk flow must cross the network",
                                file=file, field=f"{fld}.dst")
        idx = dag.add(
            src,
            dst,
            # an iperf-like flow: effectively unlimited, ended by time or by the others
            BULK_BYTES,
            start_ns=b.start,
            weight=b.weight,
            traffic_class=b.traffic_class,
            priority=b.priority,
            label=f"{job.name}:bulk",
        )
        if b.duration is None:
            background.append(idx)
        else:
            timed.append((idx, b.start + b.duration))
    return background, timed


def _mpi_model(job: JobModel, j: int, file):
    """The job's :class:`netsteer.traffic.mpi.MpiJob`, its program checked."""
    from .traffic.mpi import MpiJob, validation_error

    try:
        return MpiJob(
            name=job.name, ranks=job.ranks, placement=job.placement, seed=job.seed,
            program=job.program, repeat=job.repeat,
            start=f"{job.start}ns",  # parsed already: integer ns
            traffic_class=job.traffic_class, priority=job.priority,
        )
    except ValidationError as exc:
        raise validation_error(exc, f"jobs.{j}").located(file) from None


def _mpi_job(mpi, j: int, topo: Topology, dag: FlowDag, file) -> list:
    """Expand an MPI job into ``dag``; returns its executed steps."""
    from .traffic.mpi import expand_mpi_job

    try:
        return expand_mpi_job(mpi, topo.n_hosts, dag=dag).spans
    except NetsteerError as exc:
        raise exc.located(file, f"jobs.{j}") from None


#: MPI jobs of at least this many ranks stream by default. Below it the DAG is small
#: (an alltoall of 127 ranks is 16,002 messages, under 0.1 s to expand) and keeps
#: per-flow detail (sent bytes, stalled flow ids); above it the DAG grows with the
#: messages (ranks squared for an alltoall, about 5 us each in Python) while the
#: stream grows with the ranks: a 256-rank job's run took twice as long as a DAG.
STREAM_MIN_RANKS = 128


def _why_not_stream(m: ScenarioModel, topo: Topology, routing, given: bool = False) -> str | None:
    """What in the scenario needs every MPI message as a flow of its own, if anything.

    Streamed messages are routed once, in the engine, when both ends have posted:
    nothing may re-route, re-tag or re-forward a flow in flight. ``given``: the
    routing's tables were given (:func:`build_scenario`'s ``routing``)."""
    why = _why_not_stream_model(m, topo)
    if why is not None:
        return why
    from .sim.stream import streamable_routing

    # D-mod-K on a PGFT streams computed per hop, whatever its tables (not built yet)
    return streamable_routing(topo, _stream_router(m, topo, routing, given))


def _reroutes_on_links(engine: str) -> bool:
    """Whether a link change re-routes under ``reroute_on_change``: only an engine
    that routes around down links builds new tables (a static one, such as D-mod-K,
    builds the same tables whatever is down: :class:`netsteer.control.core.ReroutePolicy`
    keeps them, see :func:`_routing_factory`'s ``static_engine``).

    >>> _reroutes_on_links("dmodk"), _reroutes_on_links("minhop")
    (False, True)
    """
    from .routing import accepts_down_links

    return accepts_down_links(engine)


def _why_not_stream_model(m: ScenarioModel, topo: Topology | None) -> str | None:
    """:func:`_why_not_stream` as far as the scenario tells, before any table is built
    (the tables' own reasons, class overrides, cannot come from a routing engine);
    ``topo`` None: before the topology is built, from its spec."""
    kind = topo.meta.get("kind") if topo is not None else m.topology.get("kind")
    if m.controller:
        return "the scenario's controller steers individual flows"
    if m.qos is not None:
        return "qos gives each flow its service level, priority and weight"
    if kind == "hybrid":
        return "a hybrid topology forwards flows through VLAN rules"
    for i, ev in enumerate(m.events):
        if ev.routing is not None:
            return f"events.{i} changes the routing of flows in flight"
        if ev.circuit is not None:
            return f"events.{i} re-pairs a circuit switch"
        if m.reroute_on_change and _reroutes_on_links(m.routing.engine):
            return (f"events.{i} changes links and reroute_on_change re-routes flows in flight "
                    f"(routing engine {m.routing.engine!r} routes around down links)")
    circuits = ((topo.node_kind == CIRCUIT).any() if topo is not None
                else kind == "hyperx" and bool(m.topology.get("circuits")))
    if circuits:
        return "the topology has circuit switches"
    if m.routing.engine == "ecmp" and m.routing.hash == "flow":
        from .sim.stream import FLOW_HASH_REASON

        return FLOW_HASH_REASON
    return None


def _check_jobs_early(m: ScenarioModel, topo: Topology, file) -> None:
    """Refuse MPI jobs that cannot fit beside the routing tables before the tables are
    built (a minute or more at tens of thousands of hosts): a streamed job's engine
    walks a copy of them, a DAG job's flows take what they leave."""
    from .limits import check_routing, table_bytes
    from .sim.stream import estimate_bytes
    from .traffic.mpi import check_job_size

    why_not = _why_not_stream_model(m, topo)
    mpi = [(j, job, _streams(job, why_not)) for j, job in enumerate(m.jobs) if job.program is not None]
    if not mpi:
        return
    build = check_routing(topo, file=file, field="routing")  # the tables alone first
    table = table_bytes(topo)
    used = build - routing_bytes(topo) + table  # once built, without their temporaries
    streamed = [job for _, job, stream in mpi if stream]
    _check_streamed_steps([(j, job) for j, job, stream in mpi if stream], used, file)
    if streamed:
        check(used + estimate_bytes(topo, streamed, table_bytes=table), "the streamed MPI jobs",
              detail=f"{sum(j.ranks for j in streamed):,} ranks", file=file, field="jobs")
    budget = FlowDag()
    budget.max_flows = current_limits().max_flows(build)
    for j, job, stream in mpi:
        if not stream:
            mpi_job = _mpi_model(job, j, file)  # (its errors are located already)
            try:
                check_job_size(mpi_job, budget)
            except NetsteerError as exc:  # a size limit, or a message larger than a flow may carry
                raise _not_streamed(exc, job, why_not).located(file, f"jobs.{j}") from None


def _dmodk_per_hop(m: ScenarioModel, topo: Topology | None) -> bool:
    """Whether the engine computes the scenario's routes per hop: plain D-mod-K on a PGFT
    (``topo`` None: before it is built, from its spec)."""
    r = m.routing
    kind = topo.meta.get("kind") if topo is not None else m.topology.get("kind")
    return r.engine == "dmodk" and kind == "pgft" and not r.hash and r.partitions is None


def _check_jobs_before_topology(m: ScenarioModel, est: tuple[int, int, int, int], packet, file) -> None:
    """Refuse, from the topology's parameters (``est``: nodes, hosts, links, max port)
    before it is built (tens of seconds and gigabytes at a million hosts), what is
    certain to be refused once it is: MPI jobs with more ranks than hosts, and jobs
    whose memory, beside the topology's and the routing tables' (switches x hosts at
    least), exceeds the memory limit or the memory available. The checks after the
    build stay, with the exact figures."""
    from .limits import ROUTE_ENTRY_BYTES, TABLE_ENTRY_BYTES
    from .sim.stream import CHANNEL_BYTES, FLOW_BYTES as STREAM_FLOW_BYTES, RANK_BYTES, check_memory, span_bytes
    from .traffic.mpi import check_job_size
    from .traffic.placement import explicit

    nodes, hosts, links, max_port = est
    mpi = [(j, job) for j, job in enumerate(m.jobs) if job.program is not None]
    if not mpi:
        return
    for j, job in mpi:
        pl = job.placement
        if pl in ("linear", "random") and job.ranks > hosts:
            raise NetsteerError(f"{job.ranks} ranks do not fit on {hosts} hosts with {pl} placement",
                                file=file, field=f"jobs.{j}.ranks")
        if isinstance(pl, list) and all(isinstance(h, int) and not isinstance(h, bool) for h in pl):
            try:
                explicit(job.ranks, pl, hosts)
            except NetsteerError as exc:
                raise exc.located(file, f"jobs.{j}.placement") from None
    topo_bytes = topology_bytes(nodes, links, max_port)
    why_not = _why_not_stream_model(m, None)
    tables = not _routes_in_engine(m, None, packet)  # (as build_scenario decides it)
    entries = (nodes - hosts) * hosts  # a row per switch at least
    table = entries * TABLE_ENTRY_BYTES
    build = topo_bytes + (entries * ROUTE_ENTRY_BYTES if tables else 0)
    check(build, "the topology and its routing tables" if tables else "the topology",
          detail=f"{hosts:,} hosts, {nodes - hosts:,} switches, {links:,} links"
                 + (f", at least {nodes - hosts:,} x {hosts:,} table entries" if tables else ""),
          file=file, field="topology", available=True)
    used = topo_bytes + (table if tables else 0)
    why = {j: _why_not_stream_job(job, why_not, packet) for j, job in mpi}  # (no routing yet: no partitions)
    streamed = [(j, job) for j, job in mpi if _streams(job, why[j])]
    for j, job in streamed:
        if why[j] is not None:  # (as build_scenario refuses it)
            raise NetsteerError(f"this job cannot run streamed: {why[j]}; set stream: false",
                                file=file, field=f"jobs.{j}.stream")
    if streamed:
        _check_streamed_steps(streamed, used, file)
        jobs = [job for _, job in streamed]
        network = 2 * links * CHANNEL_BYTES + nodes * (max_port + 1) * 8 * 2
        copy = 0 if _dmodk_per_hop(m, None) else table  # the engine walks a copy of the tables
        need = (sum(job.ranks for job in jobs) * (RANK_BYTES + STREAM_FLOW_BYTES) + sum(map(span_bytes, jobs))
                + copy + network)
        check(used + need, "the streamed MPI jobs", detail=f"{sum(job.ranks for job in jobs):,} ranks",
              file=file, field="jobs", available=True)
        try:
            check_memory(need, field="jobs")
        except NetsteerError as exc:
            raise exc.located(file) from None
    budget = FlowDag()
    budget.max_flows = current_limits().max_flows(build)
    for j, job in mpi:
        if not _streams(job, why[j]):
            mpi_job = _mpi_model(job, j, file)
            try:
                check_job_size(mpi_job, budget)
            except NetsteerError as exc:
                raise _not_streamed(exc, job, why[j]).located(file, f"jobs.{j}") from None


def _streams(job: JobModel, why_not: str | None) -> bool:
    """Whether an MPI job streams: its ``stream``, else from :data:`STREAM_MIN_RANKS`
    ranks when nothing in the scenario needs its flows (``why_not`` None)."""
    return job.stream if job.stream is not None else why_not is None and job.ranks >= STREAM_MIN_RANKS


def _why_not_stream_job(job: JobModel, why_not: str | None, packet, routing=None, topo=None) -> str | None:
    """``why_not`` (the scenario's reason), else what in ``job`` needs its messages as
    flows of their own: at packet level, pairs of its hosts whose partitions give them
    different SLs (a streamed job sends all its messages on one SL: its partition's, or
    its class). ``packet``: the packet fidelity's parameters, None at flow level;
    ``routing``: the built routing, whose ``partition_sl`` gives partitions their SLs
    (pFTree), and ``topo`` its topology (None before either is built)."""
    if why_not is not None or packet is None or topo is None:
        return why_not
    from .qos.scenario import job_pair_sls
    from .traffic.placement import place

    try:
        hosts = place(job.ranks, job.placement, topo.n_hosts, job.seed)
    except NetsteerError:
        return None  # (the job's own checks name the field)
    sls = job_pair_sls(routing, hosts)
    if sls is not None and len(sls) > 1:
        return (f"at packet level its ranks' partitions give its messages SLs {sorted(sls)}, and a streamed "
                "job's messages all travel on one SL")
    return None


def _falls_back(job: JobModel, why_not: str | None) -> bool:
    """Whether ``job`` would stream by default (no ``stream``, :data:`STREAM_MIN_RANKS`
    ranks or more) but runs as a DAG because of ``why_not``."""
    return job.stream is None and why_not is not None and job.ranks >= STREAM_MIN_RANKS


def _not_streamed(exc: NetsteerError, job: JobModel, why_not: str | None) -> NetsteerError:
    """A DAG job's size refusal, saying why the job is not streamed when it would be by
    default (a streamed job's memory grows with its ranks, not its messages)."""
    if not isinstance(exc, LimitError) or not _falls_back(job, why_not):
        return exc
    return type(exc)(f"{exc.reason} (the job runs as a flow DAG rather than streamed because {why_not})",
                     file=exc.file, field=exc.field)


def _stream_router(m: ScenarioModel, topo: Topology, routing, given: bool = False):
    """dmodk on a PGFT is computed per hop in the engine (no tables); else the tables,
    and always tables that were given (they may not be the engine's)."""
    return "dmodk" if not given and _dmodk_per_hop(m, topo) else routing


def _check_stream(topo: Topology, routing, streamed: list, used: int, file) -> None:
    """Refuse streamed jobs that would not fit, before anything runs: their placement and
    program as the DAG expansion checks them, and their memory (estimate named)."""
    from .sim.stream import check_memory, estimate_bytes, job_steps
    from .traffic.placement import error_field, place

    for j, mpi in streamed:
        try:
            place(mpi.ranks, mpi.placement, topo.n_hosts, mpi.seed)
        except NetsteerError as exc:
            raise exc.located(file, f"jobs.{j}.{error_field(mpi.placement)}") from None
        try:
            job_steps(mpi)
        except NetsteerError as exc:
            raise exc.located(file, f"jobs.{j}") from None
    _check_streamed_steps(streamed, used, file)
    jobs = [mpi for _, mpi in streamed]
    need = estimate_bytes(topo, jobs, routing)
    check(used + need, "the streamed MPI jobs", detail=f"{sum(x.ranks for x in jobs):,} ranks",
          file=file, field="jobs")
    try:
        check_memory(need, field="jobs")
    except NetsteerError as exc:
        raise exc.located(file) from None


def _check_streamed_steps(jobs: list, used: int, file) -> None:
    """Refuse a streamed job whose records of its executed steps (one per iteration and
    step, :func:`netsteer.sim.stream.span_bytes`) alone exceed the memory limit,
    naming its ``repeat``, as a DAG job's flows are refused (a streamed job's memory
    grows with its ranks and its iterations, not its messages)."""
    from .limits import SPAN_BYTES
    from .sim.stream import check_memory, span_bytes

    for j, job in jobs:
        steps = len(job.program or ())
        field = f"jobs.{j}.repeat" if job.repeat > 1 else f"jobs.{j}.program"
        check(used + span_bytes(job), f"the streamed job {job.name!r}",
              detail=f"{job.repeat:,} iterations x {steps} step{'s' if steps != 1 else ''}, a record of "
                     f"{SPAN_BYTES} B per step run", file=file, field=field)
        try:
            check_memory(span_bytes(job), field=field)
        except NetsteerError as exc:
            raise exc.located(file) from None


def _check_acyclic(job: JobModel, first: int, dag: FlowDag, file, base: str) -> None:
    n = len(job.flows)
    indeg = [len(dag.deps[first + i]) for i in range(n)]
    out: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for d in dag.deps[first + i]:
            out[d - first].append(i)
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        i = stack.pop()
        seen += 1
        for k in out[i]:
            indeg[k] -= 1
            if indeg[k] == 0:
                stack.append(k)
    if seen < n:
        i = next(i for i in range(n) if indeg[i] > 0)
        name = job.flows[i].id or f"#{i}"
        raise NetsteerError(
            f"flow {name!r} is part of a dependency cycle", file=file, field=f"{base}.flows.{i}.after"
        )


class DeferredRouting:
    """A scenario's routing, built (and checked) the first time something reads it.

    When every message is routed by the engine itself (streamed MPI jobs under D-mod-K
    on a PGFT, :func:`_routes_in_engine`), nothing may ever read the tables: at 65,536
    hosts they would take about 10 GiB and minutes to build and check. Whatever does
    read them (a report, a script) gets them whole, built on that first read, and the
    errors name the scenario's file and field as an upfront build would.

    >>> from netsteer.topology.pgft import pgft
    >>> from netsteer.routing import build_routing
    >>> t = pgft(2, [2, 2], [1, 1], link_bandwidth=1e9, link_latency_ns=0)
    >>> r = DeferredRouting(lambda: build_routing(t, "dmodk"))
    >>> r.built
    False
    >>> r.table.shape, r.built  # a row per switch, a column per host
    ((3, 4), True)
    """

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._routing = None

    @property
    def built(self) -> bool:
        return self._routing is not None

    def __getattr__(self, name: str) -> Any:
        # only for names the proxy lacks: everything the routing has
        if name.startswith("__"):
            raise AttributeError(name)
        if self._routing is None:
            self._routing = self._build()
        return getattr(self._routing, name)


def _routes_in_engine(m: ScenarioModel, topo: Topology | None, packet) -> bool:
    """Whether the engine routes every message itself, so the scenario never needs
    routing tables: only MPI programs that stream (no flows, no bulk flows), D-mod-K
    on a PGFT (computed per hop, :func:`netsteer.sim.stream.set_router`), and
    nothing that re-routes or re-forwards (events, controllers, qos, packets)."""
    if not _dmodk_per_hop(m, topo) or packet is not None or m.events or m.controller or m.qos is not None:
        return False
    # (none of what makes _why_not_stream refuse is left: the jobs stream as they say)
    return bool(m.jobs) and all(
        job.program is not None and not job.flows and not job.bulk and _streams(job, None) for job in m.jobs)


def _check_electrical(m: ScenarioModel, topo: Topology, file) -> None:
    """Refuse a hybrid network of several racks without electrical uplinks: routing
    forwards over the electrical network alone, so it would find no route between
    racks (circuits carry traffic once made, by the hybrid controller's VLAN rules on
    top of that routing, or by a circuit event that re-routes)."""
    if topo.meta.get("kind") != "hybrid" or int(topo.meta["racks"]) < 2:
        return
    if np.isin(topo.channel_dst(), np.asarray(topo.meta["cores"], dtype=np.int64)).any():
        return
    hybrid = (m.controller or {}).get("hybrid")
    if isinstance(hybrid, dict) and hybrid.get("initial"):
        why = ("the controller.hybrid.initial circuits are made by the controller after routing, and the rack "
               "pairs without a circuit, and each reconfiguration's detour, need the electrical network")
    else:
        why = "circuits carry traffic only once made, so at time 0 no rack reaches another"
    raise NetsteerError(f"the racks have no electrical uplinks (tor_uplinks: 0) and routing ({m.routing.engine}) "
                        f"routes over the electrical network only: {why}; give tor_uplinks >= 1",
                        file=file, field="topology.tor_uplinks" if "tor_uplinks" in m.topology else "topology")


def _routing_factory(topo, model: RoutingModel, file, field, *, defer: bool = False, given=None):
    """The routing now (a :class:`DeferredRouting` with ``defer``: built on first
    read; ``given``, checked, when given), and a function that rebuilds it with the
    engine for a changed network."""
    from .limits import check_routing
    from .routing import accepts_down_links, build_routing

    @functools.cache  # a partitions file is read once, when first needed
    def params() -> dict[str, Any]:
        out: dict[str, Any] = {"hash": model.hash} if model.hash else {}
        if model.partitions is not None:
            from .drivers.opensm.partitions import read_partitions_conf

            conf = Path(model.partitions)
            if file is not None and not conf.is_absolute():
                conf = Path(file).parent / conf
            if not conf.is_file():  # the errors inside a partitions file name their own place
                raise NetsteerError(f"no such partitions file {str(conf)!r}", file=file,
                                    field=f"{field}.partitions" if field else "partitions")
            out["partitions"] = read_partitions_conf(conf, topo)
        return out
    avoids_failures = accepts_down_links(model.engine)

    def make(down=frozenset(), circuits=None):
        kwargs = dict(params())
        if down and avoids_failures:
            kwargs["down_links"] = down
        return build_routing(topo, model.engine, circuits=circuits, **kwargs)

    make.params = params  # type: ignore[attr-defined]  # the partitions, for _partition_notes
    # a static engine builds the same tables whatever is down: ReroutePolicy keeps them
    make.static_engine = None if avoids_failures else model.engine  # type: ignore[attr-defined]

    def first():
        if given is None:
            check_routing(topo, file=file, field=field)  # before any table is built
        params()  # (outside the try: a partitions file's errors name their own place)
        try:
            routing = make() if given is None else given
            routing.check()  # complete and loop-free (a hand edit too), before anything runs on it
            return routing
        except NetsteerError as exc:
            raise exc.located(file, field) from None

    return (DeferredRouting(first) if defer else first()), make


def check_routing_topology(routing, topo: Topology) -> None:
    """Refuse a given routing made for another topology: its ports and host columns
    would mean other cables and hosts."""
    from .routing.table import Routing

    if not isinstance(routing, Routing):
        raise NetsteerError(f"expected a Routing (netsteer.route), got {type(routing).__name__}", field="routing")
    if not routing.topo.same_wiring(topo):
        other = routing.topo
        raise NetsteerError(
            f"this routing was built for topology {other.name!r} ({other.n_hosts} hosts, {other.n_links} links), "
            f"not for the scenario's {topo.name!r} ({topo.n_hosts} hosts, {topo.n_links} links); "
            "route the scenario's topology", field="routing")


def _shared_hosts_note(m: ScenarioModel, topo: Topology) -> list[str]:
    """A note per pair of MPI jobs whose placements share hosts (two ``placement:
    linear`` jobs both start at host 0): their ranks share those hosts' links, which
    a scenario rarely means. Not refused: jobs may share nodes on purpose.

    >>> from netsteer.topology.pgft import pgft
    >>> sc = parse_scenario('''
    ... name: s
    ... topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 1Gbps, link_latency: 1us}
    ... routing: {engine: dmodk}
    ... jobs:
    ...   - {name: a, ranks: 8, program: [{op: barrier}]}
    ...   - {name: b, ranks: 4, program: [{op: barrier}]}
    ...   - {name: c, ranks: 2, placement: [12, 13], program: [{op: barrier}]}
    ... ''')
    >>> _shared_hosts_note(sc.model, pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=1000))
    ["jobs.0 ('a') and jobs.1 ('b') place ranks on 4 of the same hosts (placement linear puts every job on hosts 0, 1, ...): their ranks share those hosts' links; give each job its own hosts with a list of host indices"]
    """
    from .traffic.placement import place

    placed = []
    for j, job in enumerate(m.jobs):
        if job.program is None:
            continue
        try:
            placed.append((j, job, set(place(job.ranks, job.placement, topo.n_hosts, job.seed))))
        except NetsteerError:
            continue  # refused, naming its field, when the job is checked (_check_stream)
    out = []
    for k, (a, ja, ha) in enumerate(placed):
        for b, jb, hb in placed[k + 1:]:
            shared = len(ha & hb)
            if not shared:
                continue
            why = (" (placement linear puts every job on hosts 0, 1, ...)"
                   if ja.placement == "linear" and jb.placement == "linear" else "")
            out.append(f"jobs.{a} ({ja.name!r}) and jobs.{b} ({jb.name!r}) place ranks on {shared:,} of the same "
                       f"host{'s' if shared > 1 else ''}{why}: their ranks share those hosts' links; give each job "
                       "its own hosts with a list of host indices")
    return out


def _rerouted_note(m: ScenarioModel) -> list[str]:
    """The note that the engine's tables replace given ones at the first re-route."""
    rerouting = [i for i, ev in enumerate(m.events)
                 if ev.circuit is not None
                 or (m.reroute_on_change and _reroutes_on_links(m.routing.engine)
                     and (ev.link_down is not None or ev.link_up is not None))]
    if not rerouting:
        return []
    return [f"routing: the given tables run until events.{rerouting[0]} re-routes; from then on the tables are "
            f"the ones routing engine {m.routing.engine!r} builds for the changed network (edits to the given "
            "tables do not carry over)"]


#: Counter samples ``sample_interval: auto`` aims at over the expected run.
AUTO_SAMPLES = 200
#: A run sampling at ``auto`` past this many samples keeps every other one and doubles
#: the interval (:class:`netsteer.sim.driver.SimDriver` for streamed runs, the engine's
#: sample cap for the others), so it ends with 500 to 1,000 however long it lasts.
AUTO_SAMPLE_CAP = 1000


def _critical_path_ns(cols, flows: np.ndarray, host_cap: np.ndarray, path_ns: float) -> float:
    """The longest chain of ``flows`` (indices of sized flows whose dependencies are
    among them: a job's explicit flows), each flow alone on the fabric: it ends at
    the later of its start and its dependencies' ends, plus its ``delay``, plus, when
    it crosses the network, ``path_ns`` and its bytes at the slower of its two host
    links (its path's bottleneck is no faster). Longest path in topological order
    (Kahn's), so ``after`` may name a later flow.

    >>> from types import SimpleNamespace as NS
    >>> c = NS(src=np.array([0, 1, 2]), dst=np.array([1, 1, 0]), bytes=np.array([1000, 0, 500]),
    ...        start_ns=np.array([-1, 50, -1]), delay_ns=np.array([0, 10_000, 0]),
    ...        dep_offsets=np.array([0, 0, 1, 2]), deps=np.array([0, 1]))
    >>> _critical_path_ns(c, np.arange(3), np.array([1e9, 1e9, 0.5e9]), 100.0)  # 1100, +10000, +100+1000
    12200.0
    """
    n = len(flows)
    if n == 0:
        return 0.0
    src, dst = cols.src[flows], cols.dst[flows]
    rate = np.minimum(host_cap[src], host_cap[dst]) / 1e9  # bytes per ns
    own = cols.delay_ns[flows].astype(float) + np.where(src != dst, path_ns + cols.bytes[flows] / rate, 0.0)
    ready = np.maximum(cols.start_ns[flows], 0).astype(float)
    pos = {int(f): k for k, f in enumerate(flows)}
    off, deps = cols.dep_offsets, cols.deps
    preds = [[pos[int(d)] for d in deps[off[f]:off[f + 1]] if int(d) in pos] for f in flows.tolist()]
    indeg = [len(p) for p in preds]
    succ: list[list[int]] = [[] for _ in range(n)]
    for k, p in enumerate(preds):
        for d in p:
            succ[d].append(k)
    end = np.zeros(n)
    stack = [k for k in range(n) if indeg[k] == 0]
    while stack:
        k = stack.pop()
        end[k] = ready[k] + own[k]
        for q in succ[k]:
            ready[q] = max(ready[q], end[k])
            indeg[q] -= 1
            if indeg[q] == 0:
                stack.append(q)
    return float(end.max())  # (a cycle is refused before: every flow was reached)


def _mpi_sent(topo: Topology, jobs) -> np.ndarray:
    """Bytes each host sends for the MPI ``jobs`` ((index, MpiJob) pairs, their
    placement and program checked): every message of the job's program (each with
    its envelope, :func:`netsteer._core.mpi_step_totals`, without expanding it) times
    ``repeat``, shared evenly by its ranks, added up on the hosts the placement gives
    them. The same for a streamed job and for one expanded into the DAG, so both
    pick the same sampling interval.

    >>> from netsteer.topology.pgft import pgft
    >>> from netsteer.traffic.mpi import MpiJob
    >>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> job = MpiJob(name="a", ranks=2, program=[{"op": "send", "src": 0, "dst": 1, "bytes": 984}], repeat=3)
    >>> _mpi_sent(t, [(0, job)])[:3].tolist()  # 3 x (984 + 16 B envelope), half per rank
    [1500.0, 1500.0, 0.0]
    """
    from ._core import mpi_step_totals
    from .sim.stream import job_steps
    from .traffic.algorithms import MPI_ENVELOPE_BYTES
    from .traffic.placement import place

    sent = np.zeros(topo.n_hosts)
    for _, job in jobs:
        hosts = np.asarray(place(job.ranks, job.placement, topo.n_hosts, job.seed), dtype=np.int64)
        total = sum(b for _, b in mpi_step_totals(job.ranks, job_steps(job), MPI_ENVELOPE_BYTES))
        np.add.at(sent, hosts, float(total) * job.repeat / job.ranks)
    return sent


def _expected_ns(topo: Topology, dag: FlowDag, streamed=(), stops=(), mpi=(), explicit=(),
                 mpi_flows=()) -> float:
    """A lower bound of the run's length: the busiest host sending at its link's rate
    after the last start (the run may well last longer under contention; an MPI
    job's bytes counted by :func:`_mpi_sent` from its program and placement, streamed
    or not: ``mpi_flows``, the (first, end) flow ranges of the jobs expanded into
    the DAG, are left out of the DAG's count); the
    critical path of the explicit flows (``explicit``: (first, end) flow ranges, a
    job's flows), their starts, ``delay`` and chains of ``after`` included
    (:func:`_critical_path_ns`), so a compute phase of a second is not taken for a
    microsecond; an MPI job (``streamed``, and ``mpi``: those expanded into the DAG)
    counts as its least time per rank (:func:`netsteer.sim.stream.least_time_ns`):
    its bytes at the host rate plus its dependent rounds, each at least a path's
    latency (two host links), so a latency-bound job is not taken for a microsecond
    one; and bulk flows that run for a duration until they stop (``stops``, in ns)."""
    nic = topo.channel_bandwidth() / 8.0
    cols = dag.columns()
    weights = np.minimum(cols.bytes, 1e15).astype(float)
    for a, b in mpi_flows:
        weights[a:b] = 0.0
    sent = np.bincount(cols.src, weights=weights, minlength=topo.n_hosts) + _mpi_sent(topo, [*streamed, *mpi])
    up = np.array([topo.out_channel[topo.host_node(h)].max() for h in range(topo.n_hosts)], dtype=np.int64)
    host_cap = nic[up]
    finite = sent < 1e14  # (a host with an endless bulk flow: its other bytes are not a bound)
    guess_s = float((sent[finite] / host_cap[finite]).max()) if finite.any() else (0.0 if streamed else 1.0)
    starts = cols.start_ns[cols.start_ns >= 0]
    guess = guess_s * 1e9 + (float(starts.max()) if len(starts) else 0.0)
    # a message crosses at least the sender's and the receiver's host links
    path_ns = 2.0 * float(topo.channel_latency_ns()[up].min()) if len(up) else 0.0
    if explicit:
        flows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in explicit])
        flows = flows[cols.bytes[flows] < 1e14]  # bulk flows end with the others, or at their stop
        guess = max(guess, _critical_path_ns(cols, flows, host_cap, path_ns))
    jobs = [*streamed, *mpi]
    if jobs:
        from .sim.stream import least_time_ns

        guess = max(guess, max(least_time_ns(job, float(host_cap.min()), path_ns) for _, job in jobs))
    return max(1_000.0, guess, *(float(t) for t in stops))


def _auto_interval(topo: Topology, dag: FlowDag, streamed=(), stops=(), mpi=(), explicit=(),
                   mpi_flows=()) -> int:
    """A sampling interval that gives about 200 samples over the expected run
    (:func:`_expected_ns`; a run that samples more halves its resolution as it goes,
    :class:`netsteer.sim.driver.SimDriver` for streamed runs, the engine's sample cap
    for the others)."""
    from .limits import current
    from .units import MAX_DURATION_NS

    guess_ns = _expected_ns(topo, dag, streamed, stops, mpi, explicit, mpi_flows)
    raw = guess_ns / AUTO_SAMPLES
    # keep channels x samples well inside the memory limit, even for a run 8x longer than expected
    raw = max(raw, guess_ns * topo.n_channels / max(current().max_sample_values // 8, 1))
    mag = 10 ** np.floor(np.log10(raw))
    step = next(m for m in (1, 2, 5, 10) if m * mag >= raw)
    # a run longer than the clock is refused when it runs; the interval must still
    # fit the engine's int64 clock until then
    return int(min(step * mag, MAX_DURATION_NS // 2))


def build_scenario(sc: Scenario, *, topology: Topology | None = None, fidelity: str | None = None,
                   routing: Any = None) -> BuiltScenario:
    """Resolve a validated scenario into topology, routing, DAG and events.

    ``topology``, when given, is the one ``sc.model.topology`` describes, already
    built (the Python API keeps the object it made instead of building it again).
    ``fidelity`` overrides the scenario's, as ``netsteer run --fidelity`` does.
    ``routing``, when given, is a :class:`netsteer.routing.Routing` whose tables run
    as they are (hand edits included; checked complete and loop-free), on a topology
    wired as the scenario's; ``sc.model.routing`` says the engine that built them,
    which re-routes build new tables with (a link change under ``reroute_on_change``,
    a circuit event: ``notes`` says so).
    """
    from .sim.events import CircuitChange, LinkChange, RoutingChange, StopFlows
    from .sim.packet import check_fidelity
    from .topology.spec import build_topology

    m, file = sc.model, sc.file
    fid = fidelity or m.fidelity
    sharing_name = m.sharing if isinstance(m.sharing, str) else m.sharing.model
    notes: list[str] = []
    packet = check_fidelity(fid, m.packet, "sharing" in m.model_fields_set, sharing_name, file=file,
                            override=fidelity is not None, notes=notes, jobs=m.jobs)
    if topology is None:
        from .topology.spec import estimate_topology

        est = estimate_topology(m.topology, file=file)  # None: read from a file, sized as it is read
        if est is not None:
            _check_jobs_before_topology(m, est, packet, file)
    topo = topology if topology is not None else build_topology(m.topology, file=file)
    if packet is not None:
        from .sim.packet import check_packet_latencies

        check_packet_latencies(topo, file=file)
    given = routing is not None
    if given:
        check_routing_topology(routing, topo)
        notes += _rerouted_note(m)
    _check_electrical(m, topo, file)
    # given tables are the ones to run: never swapped for routes the engine computes per hop
    in_engine = not given and _routes_in_engine(m, topo, packet)
    if not in_engine:
        _check_jobs_early(m, topo, file)
    routing, make_routing = _routing_factory(topo, m.routing, file, "routing", defer=in_engine,
                                             given=routing)
    # the engine's own notes (pftree: common partitions left out, sl= replaced), as route says them
    if not isinstance(routing, DeferredRouting):  # (D-mod-K in the engine: no tables, no notes)
        notes += list(getattr(routing, "notes", None) or [])
    names: dict[str, int] = {}
    for j, job in enumerate(m.jobs):
        if job.name in names:
            raise NetsteerError(f"job name {job.name!r} is used twice (first by jobs.{names[job.name]})",
                                file=file, field=f"jobs.{j}.name")
        names[job.name] = j
    dag = FlowDag()
    used = topology_bytes(topo.n_nodes, topo.n_links, int(topo.out_channel.shape[1]) - 1)
    if not in_engine:
        used += routing_bytes(topo)
    dag.max_flows = current_limits().max_flows(used)
    job_of_flow: list[int] = []
    spans: list = []
    background: list[int] = []
    events: list = []
    streamed: list = []
    dag_mpi: list = []  # (job index, MpiJob) of the MPI jobs expanded into the DAG
    explicit: list = []  # (first, end) of each job's explicit flows in the DAG
    mpi_flows: list = []  # (first, end) of the flows of each MPI job expanded into the DAG
    why_not = None
    if any(job.program is not None for job in m.jobs):
        why_not = _why_not_stream(m, topo, routing, given)
    for j, job in enumerate(m.jobs):
        before = len(dag)
        if job.program is not None:
            mpi = _mpi_model(job, j, file)
            if job.seed and not (isinstance(job.placement, str) and job.placement == "random"):
                # refused it would break sweeps, whose repeat_seeds set every MPI job's seed
                how = (f"placement {job.placement}" if isinstance(job.placement, str)
                       else "an explicit placement")
                notes.append(f"jobs.{j}.seed ({job.seed}) is not used: {how} places the ranks without a draw; "
                             "seed applies to placement: random")
            why_job = _why_not_stream_job(job, why_not, packet, routing, topo)
            stream = _streams(job, why_job)
            if stream and why_job is not None:
                raise NetsteerError(f"this job cannot run streamed: {why_job}; set stream: false",
                                    file=file, field=f"jobs.{j}.stream")
            if stream:
                streamed.append((j, mpi))
            else:
                try:
                    spans += _mpi_job(mpi, j, topo, dag, file)
                except LimitError as exc:
                    raise _not_streamed(exc, job, why_job) from None
                dag_mpi.append((j, mpi))
                mpi_flows.append((before, len(dag)))
                if _falls_back(job, why_job):
                    notes.append(f"jobs.{j} ({job.name!r}, {job.ranks:,} ranks) runs as a flow DAG, not streamed "
                                 f"as a job of {STREAM_MIN_RANKS} ranks or more is by default: {why_job}")
        first_flow = len(dag)
        try:
            bg, timed = _job_flows(topo, job, j, dag, file)
        except LimitError as exc:
            raise exc.located(file, f"jobs.{j}") from None
        background += bg
        explicit.append((first_flow, first_flow + len(job.flows)))
        events += [StopFlows(at, (idx,)) for idx, at in timed]
        job_of_flow += [j] * (len(dag) - before)
    notes += _shared_hosts_note(m, topo)
    # re-routing is the default controller's policy (netsteer.sim.run), not the events'
    reroute = None
    for i, ev in enumerate(m.events):
        fld = f"events.{i}"
        if ev.link_down is not None or ev.link_up is not None:
            refs = ev.link_down if ev.link_down is not None else ev.link_up
            key = "link_down" if ev.link_down is not None else "link_up"
            links = tuple(_link(topo, r, file, f"{fld}.{key}.{k}") for k, r in enumerate(refs))
            events.append(LinkChange(ev.at, links, up=ev.link_up is not None, reroute=reroute, source=fld))
        elif ev.routing is not None:
            _, make = _routing_factory(topo, ev.routing, file, f"{fld}.routing")
            events.append(RoutingChange(ev.at, make, source=fld))
        elif ev.circuit is not None:
            try:
                sw = topo.node(ev.circuit.switch)
            except KeyError:
                raise NetsteerError(f"no node named {ev.circuit.switch!r}", file=file, field=f"{fld}.circuit.switch") from None
            if sw not in topo.switching_time_ns:
                raise NetsteerError(f"{ev.circuit.switch} is not a circuit switch", file=file, field=f"{fld}.circuit.switch")
            seen: set[int] = set()
            for k, pair in enumerate(ev.circuit.pairs):
                if pair[0] == pair[1]:  # else the loop below calls it "paired twice"
                    raise NetsteerError(f"port {pair[0]} cannot be paired with itself", file=file,
                                        field=f"{fld}.circuit.pairs.{k}")
                for port in pair:
                    if not 0 < port < topo.out_channel.shape[1] or topo.out_channel[sw, port] < 0:
                        raise NetsteerError(f"{ev.circuit.switch} has no cabled port {port}", file=file,
                                            field=f"{fld}.circuit.pairs.{k}")
                    if port in seen:
                        raise NetsteerError(f"port {port} is paired twice", file=file, field=f"{fld}.circuit.pairs.{k}")
                    seen.add(port)
            events.append(CircuitChange(ev.at, sw, tuple(ev.circuit.pairs), source=fld))
    sharing = m.sharing if isinstance(m.sharing, str) else m.sharing.model
    gamma = None if isinstance(m.sharing, str) else m.sharing.tcp_gamma
    bg = np.zeros(len(dag), dtype=bool)
    bg[background] = True
    stream_router = None
    if streamed:
        stream_router = _stream_router(m, topo, routing, given)
        from .limits import table_bytes

        # the tables are built by now: their temporaries are gone
        built = used - (0 if in_engine else routing_bytes(topo) - table_bytes(topo))
        _check_stream(topo, stream_router, streamed, built + len(dag) * FLOW_BYTES, file)
    notes += _partition_notes(topo, make_routing.params().get("partitions"), dag, job_of_flow,
                              [j.name for j in m.jobs])
    if len(dag) and bg.all() and not streamed:
        raise NetsteerError("every flow is an endless bulk flow (no duration), so nothing would end the run; "
                            "give one a duration, or add flows or a program", file=file, field="jobs")
    stops = [ev.at_ns for ev in events if isinstance(ev, StopFlows)]  # timed bulk flows run until then
    if m.sample_interval != "auto":
        interval = m.sample_interval
        values = _expected_ns(topo, dag, streamed, stops, dag_mpi, explicit, mpi_flows) / interval * topo.n_channels
        check(used + len(dag) * FLOW_BYTES + values * SAMPLE_VALUE_BYTES, "the port counters",
              detail=f"at least {values:.3g} samples x channels at this interval", file=file, field="sample_interval")
    else:
        interval = _auto_interval(topo, dag, streamed, stops, dag_mpi, explicit, mpi_flows)
    built = BuiltScenario(
        scenario=sc,
        topology=topo,
        routing=routing,
        dag=dag,
        job_of_flow=np.asarray(job_of_flow, dtype=np.int32),
        job_names=[j.name for j in m.jobs],
        background=bg,
        events=events,
        sharing=sharing,
        tcp_gamma=float(gamma) if gamma is not None else None,
        sample_interval_ns=int(interval),
        sample_cap=AUTO_SAMPLE_CAP if m.sample_interval == "auto" else None,
        merge_window_ns=None if isinstance(m.sharing, str) else m.sharing.merge_window,
        ticks_per_ns=None if isinstance(m.sharing, str) else m.sharing.ticks_per_ns,
        spans=spans,
        reroute=make_routing,
        reroute_on_change=m.reroute_on_change,
        hybrid=_hybrid(m, topo, file),
        driver_options=_driver_options(m, topo, file),
        unisonflow=_unisonflow(m, topo, dag, spans, file),
        steering=_steering(m, topo, dag, job_of_flow, file, make_routing),
        streamed=streamed,
        stream_router=stream_router,
        qos=_qos(m, topo, dag, job_of_flow, file, routing),
        fidelity=fid,
        packet=packet,
        notes=notes,
    )
    if built.qos is not None:
        from .qos.config import shared_vls

        from .qos.scenario import run_notes

        built.qos.run_notes = shared_vls(built.qos.config) + built.qos.notes + run_notes(built.qos, fid, m.packet)
        notes += built.qos.run_notes  # and in the result's qos (report.result)
    if packet is not None and built.qos is not None:
        from .sim.packet import with_qos

        # the qos section's SL2VL and VL arbitration drive the packet fabric's ports
        built.packet = with_qos(packet, m.packet, built.qos, file=file)
    return built


def _partition_notes(topo, parts, dag, job_of_flow, job_names) -> list[str]:
    """A note on flows between hosts the partitions do not let talk.

    ``routing.partitions`` shapes the routing only: the run does not check P_Keys,
    so such flows run as if allowed, where a real fabric would drop them.
    """
    if not parts or not len(dag):
        return []
    from .drivers.opensm.partitions import with_default
    from .topology.partitions import LIMITED

    # a file without a 0x7fff rule: OpenSM adds Default=0x7fff : ALL=limited, SELF=full;
    # SELF (there or in the file) is the SM's port, on the fabric's first node as ibsim
    # attaches it (route's default --sm-node)
    sm = 0
    parts = with_default(list(parts), topo)
    cols = dag.columns()
    src, dst = cols.src, cols.dst
    ok = (src == dst) | (cols.bytes == 0)  # pure delays move nothing
    for p in parts:  # per partition, not the hosts x hosts matrix: no memory in hosts squared
        member = np.zeros(topo.n_hosts, dtype=bool)
        full = np.zeros(topo.n_hosts, dtype=bool)
        members = dict(p.members)
        if p.self_membership and (sm not in members or sm not in p.after_self):
            members[sm] = p.self_membership
        for node, m in members.items():
            h = topo.host_index[node]
            if h >= 0:
                member[h], full[h] = True, m != LIMITED
        ok |= member[src] & member[dst] & (full[src] | full[dst])
    bad = np.flatnonzero(~ok)
    if not bad.size:
        return []
    jobs = sorted({job_names[job_of_flow[i]] for i in bad})
    a, b = (topo.node_names[topo.host_node(int(h))] for h in (src[bad[0]], dst[bad[0]]))
    flows = f"{bad.size} flow{'s' if bad.size > 1 else ''}"
    return [f"{flows} (jobs: {', '.join(jobs)}) between hosts that routing.partitions does not let talk "
            f"(e.g. {a} -> {b}: no partition has both, one a full member); the run routes by the partitions "
            "but does not enforce P_Keys, so they run as if allowed"]


def _qos(m: ScenarioModel, topo, dag, job_of_flow, file, routing=None):
    if m.qos is None:
        return None
    from .qos.scenario import apply_qos

    if isinstance(routing, DeferredRouting) and not routing.built:
        routing = None  # deferred only without partitions (_routes_in_engine): no partition SLs to read
    return apply_qos(m.qos, dag, job_of_flow, [j.name for j in m.jobs], file=file, n_hosts=topo.n_hosts,
                     routing=routing, jobs=m.jobs)


def _hybrid(m: ScenarioModel, topo, file):
    from .control.scenario import build_hybrid_controller

    ctl = build_hybrid_controller(m.controller, topo, file, host_ref=_host)
    for i, ev in enumerate(m.events if ctl is not None else ()):
        # the controller forwards over the circuits it made and reads no circuit
        # change it did not make: a scripted one would strand its VLAN paths
        if ev.circuit is not None and topo.node(ev.circuit.switch) in ctl.ocs_nodes:
            raise NetsteerError(f"{ev.circuit.switch} is driven by controller.hybrid, which does not re-plan "
                                "for circuit changes it did not make (its VLAN paths would lead nowhere); "
                                "give the change as controller.hybrid.schedule [plane, rack, rack] circuits instead",
                                file=file, field=f"events.{i}.circuit")
    return ctl


def _steering(m: ScenarioModel, topo, dag, job_of_flow, file, make_routing):
    if not m.controller or m.controller.get("steering") is None:
        return None
    from .control.scenario import build_steering_controller

    # scored with the engine the re-route policy rebuilds over the new circuits
    return build_steering_controller(m.controller, topo, dag, job_of_flow, [j.name for j in m.jobs], file,
                                     engine=m.routing.engine, make_routing=make_routing, hash=m.routing.hash)


def _unisonflow(m: ScenarioModel, topo, dag, spans, file):
    if not m.controller or m.controller.get("unisonflow") is None:
        return None  # no import of the controller's modules for other scenarios
    from .unisonflow.scenario import build

    return build(m.controller, m, topo, dag, spans, file)


def _driver_options(m: ScenarioModel, topo, file):
    from .control.scenario import build_driver_options

    return build_driver_options(m.driver, topo, file)
