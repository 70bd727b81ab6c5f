"""The ``controller.unisonflow`` key of a scenario: tags for the scenario's MPI jobs
and the interconnect controller that routes them.

```yaml
routing: {engine: ecmp}            # untagged traffic and fallbacks (the baseline)
controller:
  unisonflow:
    jobs:                          # by job name: that job's modules
      app: [{module: pin, primitive: bcast, via: s2_0},
            {module: allreduce-disjoint, algorithm: recursive_doubling}]
    default: ecmp                  # primitives without a module, and failures
    on_failure: fallback           # or fail: a failing module stops the run (exit 2)
    module_files: [my_modules.py]  # more modules, one class per file
    controller_rtt: 1ms            # packet-in round trip
    rule_time: 1ms                 # one rule into one switch (default 1ms; 0: no cost)
    push: parallel                 # or sequential
    table_capacity: 4000           # tag rules per switch (default: unlimited)
    idle_timeout: 10s              # (default: never)
```

Every MPI job of the scenario is tagged (job number = its index in ``jobs``;
communicator 0 = its ranks); its messages carry primitive, source and destination
rank. Bulk and explicit flows stay untagged and follow ``routing``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import NetsteerError
from ..schema import Duration
from .tags import MAX_JOBS, MAX_RANKS, PRIMITIVES, Tag, encode


class UnisonFlowModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # its jobs map job names to module lists, unlike the scenario's list of jobs
    mapping_examples: ClassVar[dict[str, str]] = {"jobs": "{app: [{module: pin, primitive: bcast, via: s2_0}]}"}

    jobs: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    default: str = "ecmp"
    on_failure: Literal["fallback", "fail"] = "fallback"
    module_files: list[str] = Field(default_factory=list)
    controller_rtt: Duration = 1_000_000
    rule_time: Duration = 1_000_000  # documented default (docs/unisonflow.md); 0: rules cost nothing
    push: Literal["parallel", "sequential"] = "parallel"
    table_capacity: int | None = Field(None, ge=1)
    idle_timeout: Duration | None = None


@dataclass
class UnisonFlowSetup:
    """What :func:`netsteer.sim.run.run_scenario` needs: the tags of the flows, the
    tables, and a factory for the controller (one per run)."""

    flow_tags: np.ndarray
    tables: Any
    comms: dict[int, dict[int, list[int]]]
    modules: dict[int, list[dict]]
    default: str
    on_failure: str
    file: str | None = None
    job_names: list[str] | None = None
    settings: dict | None = None  # the table model as run, and the keys left to their defaults
    notes: list = field(default_factory=list)

    def locate(self, exc: NetsteerError) -> NetsteerError:
        """``exc`` named as the scenario file writes it: the file, and the field under
        ``controller.unisonflow`` (a job's modules are its list itself there:
        ``jobs.NAME.0``, not ``jobs.J.modules.0``)."""
        key = "controller.unisonflow"
        f = exc.field or ""
        if f == "default" or f == "on_failure":
            field = f"{key}.{f}"
        elif f.startswith("jobs.") and f.split(".")[1].isdigit() and self.job_names:
            name = self.job_names[int(f.split(".")[1])]
            rest = f.split(".", 2)[2] if f.count(".") >= 2 else ""
            rest = rest.removeprefix("modules").lstrip(".")
            field = f"{key}.jobs.{name}.{rest}".rstrip(".")
        else:
            field = key
        return type(exc)(exc.reason, file=self.file, field=field)

    def controller(self, topo):
        from .controller import InterconnectController
        from .fabric import Fabric
        from .modules import JobView

        fabric = Fabric(topo)
        jobs = {j: (JobView(j, self.comms[j]), self.modules.get(j, [])) for j in self.comms}
        ctrl = InterconnectController(fabric, jobs, default=self.default, on_failure=self.on_failure)
        ctrl.locate = self.locate
        ctrl.settings, ctrl.notes = self.settings, list(self.notes)
        return fabric, ctrl


def build(data: dict | None, model, topo, dag, spans, file=None) -> UnisonFlowSetup | None:
    """The setup of ``controller.unisonflow``, or None when the scenario has none."""
    if not data or data.get("unisonflow") is None:
        return None
    from ..control.scenario import _validate
    from ..traffic.placement import place
    from . import modules as mods
    from .dataplane import TableModel

    key = "controller.unisonflow"
    m = _validate(UnisonFlowModel, data["unisonflow"], file, key)
    if data.get("hybrid") is not None:
        raise NetsteerError("unisonflow and hybrid controllers do not run together", file=file, field="controller")
    base = Path(file).parent if file else Path(".")
    for i, f in enumerate(m.module_files):
        p = Path(f) if Path(f).is_absolute() else base / f
        try:
            mods.load_file(p)
        except NetsteerError as exc:
            raise NetsteerError(exc.reason, file=str(p), field=f"{key}.module_files.{i}") from None
    if m.default not in mods.REGISTRY:
        raise NetsteerError(f"unknown module {m.default!r}; known: {', '.join(sorted(mods.REGISTRY))}",
                            file=file, field=f"{key}.default")
    names = {job.name: j for j, job in enumerate(model.jobs)}
    hosts_of: dict[int, list[int]] = {}
    for j, job in enumerate(model.jobs):
        if job.program is None:
            continue
        if j >= MAX_JOBS:
            raise NetsteerError(f"job {job.name!r} is job {j}: tags hold {MAX_JOBS} jobs", file=file, field=f"jobs.{j}")
        if job.ranks > MAX_RANKS:
            raise NetsteerError(f"{job.ranks} ranks do not fit the tag ({MAX_RANKS} at most)", file=file, field=f"jobs.{j}.ranks")
        hosts_of[j] = [int(h) for h in place(job.ranks, job.placement, topo.n_hosts, job.seed)]
    modules: dict[int, list[dict]] = {}
    notes: list[str] = []
    for name, specs in m.jobs.items():
        if name not in names:
            raise NetsteerError(f"no job named {name!r}", file=file, field=f"{key}.jobs.{name}")
        if names[name] not in hosts_of:
            raise NetsteerError(f"job {name!r} runs no MPI program: nothing to tag", file=file, field=f"{key}.jobs.{name}")
        modules[names[name]] = specs
        for i, spec in enumerate(specs):
            if isinstance(spec, dict) and spec.get("module") == "bcast-multicast":
                # a scenario's bcast is binomial or scatter_allgather: unicast messages only
                notes.append(f"{key}.jobs.{name}.{i}: bcast-multicast gets the job's bcasts as unicast "
                             "messages (a scenario has no multicast bcast), so it routes each over the least "
                             "loaded min-hop path and builds no multicast tree")
    tags = np.zeros(len(dag), dtype=np.int64)
    c = dag.columns()
    job_index = {job.name: j for j, job in enumerate(model.jobs)}
    rank_of: dict[int, np.ndarray] = {}
    for j, hosts in hosts_of.items():
        r = np.full(topo.n_hosts, -1, dtype=np.int64)
        for rank in range(len(hosts) - 1, -1, -1):  # a host with several ranks: its first
            r[hosts[rank]] = rank
        rank_of[j] = r
    for sp in spans:
        j = job_index[sp.job]
        if sp.op not in PRIMITIVES:
            continue
        lo, hi = sp.first, sp.end
        s, d = rank_of[j][c.src[lo:hi]], rank_of[j][c.dst[lo:hi]]
        t = encode(Tag(sp.op, j, 0, 0, 0)) | (s << 15) | d
        t[(c.src[lo:hi] == c.dst[lo:hi]) | (s < 0) | (d < 0)] = 0
        tags[lo:hi] = t
    # the modules are checked now (unknown names, two claiming a primitive), not mid-run
    try:
        tables = TableModel(controller_rtt_ns=int(m.controller_rtt), rule_time_ns=int(m.rule_time), push=m.push,
                            capacity=m.table_capacity,
                            idle_timeout_ns=None if m.idle_timeout is None else int(m.idle_timeout))
    except NetsteerError as exc:
        raise exc.located(file, key) from None
    setup = UnisonFlowSetup(tags, tables, {j: {0: h} for j, h in hosts_of.items()}, modules, m.default, m.on_failure)
    setup.file, setup.job_names = file, [job.name for job in model.jobs]
    setup.notes.extend(notes)
    setup.settings = {"controller_rtt_s": int(m.controller_rtt) / 1e9, "rule_time_s": int(m.rule_time) / 1e9,
                      "push": m.push, "table_capacity": m.table_capacity,
                      "idle_timeout_s": None if m.idle_timeout is None else int(m.idle_timeout) / 1e9,
                      "defaults": sorted({"controller_rtt", "rule_time", "push", "default", "on_failure"}
                                         - m.model_fields_set)}
    if "rule_time" not in m.model_fields_set:
        setup.notes.append(f"{key}.rule_time not given: {int(m.rule_time) / 1e6:g} ms per rule per switch "
                           "(the default; rule_time: 0s makes installation free)")
    try:
        setup.controller(topo)
    except NetsteerError as exc:
        raise setup.locate(exc) from None
    return setup
