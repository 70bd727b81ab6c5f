"""The ``controller:`` and ``driver:`` keys of a scenario, and the controllers they build.

```yaml
controller:
  hybrid:
    method: make-before-break        # or break-before-make
    hops: 1                          # 2: paths through one other rack
    initial: [[0, 0, 1]]             # circuits [plane, rack a, rack b] at time 0
    extra_rules: 100                 # rules pushed besides the real ones in step 2
    saturation: 0.9                  # a path this busy is network-limited (demand estimation)
    memory: 2s                       # half-life of a pair's estimated demand once it stops
    schedule: [{at: 10s, circuits: [[1, 0, 1]]}]
    requests: [{at: 1s, until: 5s, src: 0, dst: 5, bandwidth: 10Gbps},
               {at: 6s, demand: [[0, 8], [8, 0]]}]     # Gbit/s, racks x racks
    periodic: {period: 1s, threshold: 0.1, hold: 2}
    congestion: {poll: 100ms, utilization: 0.9, hold: 2, threshold: 0.1}
driver:
  delay: {rule_time: 0.4ms, vlan_tag_time: 0.6s, push: sequential, tag: parallel, circuit_command: 0s}
  faults: [{kind: circuits, switch: ocs0, from: 0s, to: 30s}]
```
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from typing import Annotated

from ..errors import NetsteerError
from ..schema import Duration
from ..units import UnitError, format_seconds, parse_bandwidth


def _bandwidth(value: Any) -> float:
    try:
        v = parse_bandwidth(value)
    except (UnitError, OverflowError) as exc:
        raise ValueError(str(exc)) from None
    if not (v > 0 and np.isfinite(v)):
        raise ValueError(f"bandwidth must be positive and finite, got {value!r}")
    return v


Bandwidth = Annotated[float, BeforeValidator(_bandwidth)]


def _not_bool(what: str):
    """A before-validator refusing YAML's true/false where ``what`` is expected: they
    would pass as 1/0.

    >>> _index(1)
    1
    >>> _index(True)
    Traceback (most recent call last):
    ValueError: a plane or rack number, got true
    """

    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"{what}, got {str(value).lower()}")
        return value

    return check


_index = _not_bool("a plane or rack number")
Index = Annotated[int, BeforeValidator(_index)]
HostRef = Annotated[int | str | None, BeforeValidator(_not_bool("a host number or name"))]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScheduleModel(_Strict):
    at: Duration
    circuits: list[tuple[Index, Index, Index]]


class RequestModel(_Strict):
    """A job's request: a bandwidth between two hosts, or a rack demand matrix."""

    at: Duration
    until: Duration | None = None
    src: HostRef = None
    dst: HostRef = None
    bandwidth: Bandwidth | None = None  # bits per second
    demand: list[list[float]] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "RequestModel":
        pair = (self.src, self.dst, self.bandwidth)
        if self.demand is None and any(x is None for x in pair):
            raise ValueError("a request needs src, dst and bandwidth, or a demand matrix")
        if self.demand is not None and any(x is not None for x in pair):
            raise ValueError("a request is either src/dst/bandwidth or a demand matrix, not both")
        if self.until is not None and self.until <= self.at:
            raise ValueError("until must be after at")
        return self


class PeriodicModel(_Strict):
    period: Duration = Field(gt=0)
    threshold: float = Field(0.1, ge=0)
    hold: int = Field(2, ge=1)


class CongestionModel(_Strict):
    poll: Duration = Field(gt=0)
    utilization: float = Field(0.9, gt=0, le=1)
    hold: int = Field(2, ge=1)
    threshold: float = Field(0.1, ge=0)


class HybridModel(_Strict):
    method: Literal["make-before-break", "break-before-make"] = "make-before-break"
    hops: Literal[1, 2] = 1
    initial: list[tuple[Index, Index, Index]] = Field(default_factory=list)
    extra_rules: int = Field(0, ge=0)
    saturation: float = Field(0.9, gt=0, le=1, description="utilisation from which a path counts as network-limited")
    memory: Duration = Field(2_000_000_000, ge=0, description="half-life of the estimated demand once a pair stops")
    schedule: list[ScheduleModel] = Field(default_factory=list)
    requests: list[RequestModel] = Field(default_factory=list)
    periodic: PeriodicModel | None = None
    congestion: CongestionModel | None = None


class SteeringModel(_Strict):
    """Bandwidth steering (netsteer.control.steering) for the scenario's own traffic."""

    at: list[Duration] = Field(default_factory=lambda: [0], min_length=1)
    jobs: list[str] | None = Field(None, description="plan for these jobs' traffic (default: every job)")
    method: Literal["auto", "exhaustive", "local-search"] = "auto"
    max_configs: int = Field(20_000, ge=1)
    candidates: int = Field(24, ge=1)


class ControllerModel(_Strict):
    hybrid: HybridModel | None = None
    steering: SteeringModel | None = None
    unisonflow: dict[str, Any] | None = None  # checked by netsteer.unisonflow.scenario


class DelayModelSpec(_Strict):
    rule_time: Duration = 0
    vlan_tag_time: Duration = 0
    push: Literal["sequential", "parallel"] = "sequential"
    tag: Literal["sequential", "parallel"] = "parallel"
    circuit_command: Duration = 0


class FaultModel(_Strict):
    kind: Literal["circuits", "rules", "tags"]
    switch: str | None = None
    from_: Duration = Field(0, alias="from")
    to: Duration | None = None


class DriverModel(_Strict):
    delay: DelayModelSpec = Field(default_factory=DelayModelSpec)
    faults: list[FaultModel] = Field(default_factory=list)


def _validate(model, data, file, key):
    from ..scenario import _pydantic_error

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = _pydantic_error(exc, file, model)
        raise NetsteerError(err.reason, file=file, field=f"{key}.{err.field}" if err.field else key) from None


def build_driver_options(data: dict | None, topo, file=None) -> dict[str, Any]:
    """``delay`` and ``faults`` for :class:`netsteer.sim.driver.SimDriver`."""
    from ..sim.delay import DelayModel
    from ..sim.driver import Fault
    from ..topology.model import CIRCUIT

    m = _validate(DriverModel, data or {}, file, "driver")
    d = m.delay
    faults = []
    for i, f in enumerate(m.faults):
        sw = None
        if f.switch is not None:
            try:
                sw = topo.node(f.switch)
            except KeyError:
                raise NetsteerError(f"no node named {f.switch!r}", file=file, field=f"driver.faults.{i}.switch") from None
            # a fault aimed at a node that never gets intents of its kind would never fire
            if f.kind == "circuits" and int(topo.node_kind[sw]) != CIRCUIT:
                raise NetsteerError(f"{f.switch} is not a circuit switch: no circuits intent goes to it",
                                    file=file, field=f"driver.faults.{i}.switch")
            tors = [int(t) for t in topo.meta.get("tors", [])] if topo.meta.get("kind") == "hybrid" else []
            if f.kind in ("rules", "tags") and sw not in tors:
                raise NetsteerError(f"{f.switch} is not a ToR of a hybrid network: no {f.kind} intent goes to it",
                                    file=file, field=f"driver.faults.{i}.switch")
        if f.to is not None and int(f.to) <= int(f.from_):
            from ..units import format_duration

            raise NetsteerError(f"the fault window ends ({format_duration(int(f.to))}) before it starts "
                                f"({format_duration(int(f.from_))}): it would never fire",
                                file=file, field=f"driver.faults.{i}.to")
        faults.append(Fault(f.kind, sw, int(f.from_), int(f.to) if f.to is not None else 2**62))
    delay = DelayModel(int(d.rule_time), int(d.vlan_tag_time), d.push, int(d.circuit_command), d.tag)
    return {"delay": delay, "faults": faults}


def build_hybrid_controller(data: dict | None, topo, file=None, host_ref=None):
    """The :class:`~netsteer.control.hybrid.HybridController` of a scenario's
    ``controller.hybrid``, or None."""
    m = _validate(ControllerModel, data or {}, file, "controller")
    h = m.hybrid
    if h is None:
        return None
    from .hybrid import HybridController  # planning needs scipy: only when asked for
    key = "controller.hybrid"
    if topo.meta.get("kind") != "hybrid":
        raise NetsteerError("the hybrid controller needs a hybrid topology (topology.kind: hybrid)",
                            file=file, field=key)
    racks = int(topo.meta["racks"])
    spr = int(topo.meta["servers_per_rack"])
    requests = []
    for i, r in enumerate(h.requests):
        fld = f"{key}.requests.{i}"
        if r.demand is not None:
            # rows of unequal length make np.asarray raise (an "inhomogeneous" array, an
            # internal error): name the first row that is not one entry per rack
            if len({len(row) for row in r.demand}) > 1:
                k, row = next((k, row) for k, row in enumerate(r.demand) if len(row) != racks)
                raise NetsteerError(f"demand row {k} has {len(row)} {'entry' if len(row) == 1 else 'entries'}, "
                                    f"the network has {racks} racks (demand is racks x racks)",
                                    file=file, field=f"{fld}.demand.{k}")
            d = np.asarray(r.demand, dtype=float)
            if d.shape != (racks, racks):
                raise NetsteerError(f"demand is {d.shape[0]} x {d.shape[1] if d.ndim > 1 else 0}, "
                                    f"the network has {racks} racks", file=file, field=f"{fld}.demand")
            if not np.isfinite(d).all() or (d < 0).any():
                raise NetsteerError("demand entries must be finite and >= 0", file=file, field=f"{fld}.demand")
        else:
            a = host_ref(topo, r.src, file, f"{fld}.src") // spr
            b = host_ref(topo, r.dst, file, f"{fld}.dst") // spr
            if a == b:
                raise NetsteerError("src and dst are in the same rack: no circuit can serve them",
                                    file=file, field=fld)
            d = np.zeros((racks, racks))
            d[a, b] = float(r.bandwidth) / 1e9
        requests.append({"at": int(r.at), "until": int(r.until) if r.until is not None else None, "demand": d})
    try:
        ctl = HybridController(
            topo, method=h.method, hops=h.hops, initial=h.initial, extra_rules=h.extra_rules,
            saturation=h.saturation, memory=int(h.memory),
            schedule=[(int(s.at), s.circuits) for s in h.schedule], requests=requests,
            periodic=h.periodic.model_dump() if h.periodic else None,
            congestion=h.congestion.model_dump() if h.congestion else None,
        )
    except NetsteerError as exc:
        # the constructor's only input check is configure(initial), whose errors name
        # the whole controller ("controller.hybrid"): name the field itself, once
        raise NetsteerError(exc.reason, file=file, field=f"{key}.initial") from None
    for i, s in enumerate(h.schedule):
        # a scheduled configuration is known now: refuse it now, not as a failed
        # reconfiguration in the middle of the run
        try:
            ctl.check_circuits(s.circuits)
        except NetsteerError as exc:
            raise NetsteerError(exc.reason, file=file, field=f"{key}.schedule.{i}.circuits") from None
    return ctl


def build_steering_controller(data: dict | None, topo, dag, job_of_flow, job_names, file=None, *,
                              engine: str = "dor", make_routing=None, hash: str | None = None):
    """The :class:`~netsteer.control.steering.SteeringController` of a scenario's
    ``controller.steering``, or None: at each ``at``, it steers the circuit switches
    for the bytes the scenario's jobs (or the ``jobs`` named) send, host to host.

    The plans are scored with the routing the run re-routes with once the circuits
    move: ``engine``, built by ``make_routing(down_links, circuits)`` (the scenario's
    routing factory); ``dor`` is scored by its own fast model, which routes as its tables do."""
    m = _validate(ControllerModel, data or {}, file, "controller")
    st = m.steering
    if st is None:
        return None
    key = "controller.steering"
    first: dict[int, int] = {}
    for i, t in enumerate(st.at):
        if int(t) in first:  # two plans at one instant: the second would steer the same bytes again
            raise NetsteerError(f"{format_seconds(int(t) / 1e9)} is given twice (at.{first[int(t)]} and at.{i}); "
                                "give each steering time once", file=file, field=f"{key}.at.{i}")
        first[int(t)] = i
    if not topo.meta.get("initial_circuits"):
        raise NetsteerError("steering needs circuit switches in the topology (topology.circuits)",
                            file=file, field=key)
    names = list(job_names)
    wanted = names if st.jobs is None else st.jobs
    for n in wanted:
        if n not in names:
            raise NetsteerError(f"no job named {n!r}; jobs: {', '.join(names)}", file=file, field=f"{key}.jobs")
    from .steering import RoutedLoad, SteeringController, configuration_count, switch_demand

    if st.method == "exhaustive":
        # known now: refuse it before the run, not when the controller first plans
        total = configuration_count(topo)
        if total > st.max_configs:
            raise NetsteerError(f"{total:,} configurations are more than max_configs={st.max_configs:,}; "
                                "use method local-search (or auto)", file=file, field=f"{key}.method")

    c = dag.columns()
    pick = np.isin(np.asarray(job_of_flow), [names.index(n) for n in wanted]) & (c.src != c.dst)
    demand = switch_demand(topo, c.src[pick], c.dst[pick], c.bytes[pick].astype(np.float64))
    if not demand.any():
        raise NetsteerError("the jobs steered for send no bytes between hosts", file=file, field=key)
    load = None
    if engine != "dor" and make_routing is not None:
        flows = np.flatnonzero(pick)
        load = RoutedLoad(topo, make_routing, c.src[flows], c.dst[flows], c.bytes[flows].astype(np.float64),
                          c.traffic_class[flows], flows, engine=engine, per_flow=hash == "flow")
    return SteeringController(topo, [(int(t), demand) for t in st.at], method=st.method,
                              max_configs=st.max_configs, candidates=st.candidates, load=load)
