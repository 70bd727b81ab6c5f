"""The ``qos:`` key of a scenario: each flow's SL, its engine priority and weight.

A flow takes the SL of the first class in ``qos.classes`` whose selectors all match
(``jobs``: its job's name; ``kind``: what made it, see :func:`flow_kind`;
``path_prefix``: the file it writes, for data-staging flows); a flow no class
matches keeps its ``class`` as its SL, as in the packet fidelity. The SL is written
into the flow's ``class`` (the packet engine reads it there) and, for the flow
engine, turned into a priority class and a weight (:mod:`netsteer.qos.flowshare`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import NetsteerError
from .config import QosConfig, check_sl_served, parse_qos
from .flowshare import flow_priority_weight


def flow_kind(label: str) -> str:
    """The traffic kind of a flow from its DAG label (``"job:op"``).

    >>> flow_kind("app:allreduce"), flow_kind("noise:bulk"), flow_kind("ckpt:staging")
    ('mpi', 'bulk', 'staging')
    """
    op = label.rpartition(":")[2]
    if op == "flow":
        return "flows"
    if op in ("bulk", "staging", "storage"):
        return op
    return "mpi"


@dataclass
class QosPlan:
    """A scenario's QoS, resolved: the config, each flow's SL, the scripted changes."""

    config: QosConfig
    sl: np.ndarray
    # (time ns, ("job" or "class", its name), flows, new SL[, hosts the flows run
    # between]); a bare name is a job's
    changes: list[tuple] = field(default_factory=list)
    paths: dict[int, str] = field(default_factory=dict)
    # index in config.classes of the class each flow took (-1: none)
    flow_class: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.changes = [(at, who if isinstance(who, tuple) else ("job", who), *rest)
                        for at, who, *rest in self.changes]

    def flows_of(self, name: str) -> np.ndarray:
        """The flows of class ``name``."""
        names = [c.name for c in self.config.classes]
        return np.flatnonzero(self.flow_class == names.index(name))

    def devices(self) -> list[tuple[int, float, tuple[str, ...]]]:
        """(host, rate in B/s, kinds) of each device (see :class:`netsteer.qos.staging.StagingDriver`)."""
        return [(d.host, d.rate, tuple(d.kinds)) for d in self.config.devices]

    def controller(self):
        """The scripted priority changes as a controller: each one a
        :class:`~netsteer.control.intents.SetQos` intent at its time (or None)."""
        if not self.changes:
            return None
        from .controller import QosChanges

        return QosChanges(self)

    def summary(self) -> dict:
        used = np.unique(self.sl).tolist() if len(self.sl) else []
        return {"sls_used": used, "classes": [c.name for c in self.config.classes],
                "changes": [{"at_s": c[0] / 1e9, "who": c[1][1], "by": c[1][0], "flows": len(c[2]), "sl": c[3]}
                            for c in self.changes]}


def apply_qos(data, dag, job_of_flow, job_names: list[str], *, file=None, paths: dict[int, str] | None = None,
              port: str = "swe", n_hosts: int | None = None) -> QosPlan:
    """Validate ``data`` (the ``qos:`` section) and set each flow's SL (its ``class``),
    priority and weight in ``dag`` in place. ``paths``: flow -> file path written;
    ``n_hosts``: the topology's hosts (checks ``devices``)."""
    q = parse_qos(data, file=file)
    for i, d in enumerate(q.devices):
        if n_hosts is not None and d.host >= n_hosts:
            raise NetsteerError(f"host {d.host} does not exist: the topology has {n_hosts} hosts", file=file,
                                field=f"qos.devices.{i}.host")
    paths = paths or {}
    for i, c in enumerate(q.classes):
        for k, name in enumerate(c.jobs or []):
            if name not in job_names:
                raise NetsteerError(f"no job named {name!r}", file=file, field=f"qos.classes.{i}.jobs.{k}")
    names = {c.name: c for c in q.classes}
    for i, ch in enumerate(q.changes):
        if ch.job is not None and ch.job not in job_names:
            raise NetsteerError(f"a priority change for job {ch.job!r}, which does not exist (jobs: "
                                f"{', '.join(job_names)})", file=file, field=f"qos.changes.{i}.job")
    cols = dag.columns()
    n = len(dag)
    jobs = np.asarray(job_of_flow, dtype=np.int64)
    kinds = np.array([flow_kind(lbl) for lbl in dag.labels], dtype=object)
    kind = kinds[cols.label] if n else np.zeros(0, dtype=object)
    sl = cols.traffic_class.copy()
    which = np.full(n, -1, dtype=np.int64)  # the class each flow took
    for i, c in enumerate(q.classes):
        m = which < 0
        if c.jobs is not None:
            m &= np.isin(jobs, [job_names.index(x) for x in c.jobs])
        if c.kind is not None:
            m &= kind == c.kind
        if c.path_prefix is not None:
            hit = np.zeros(n, dtype=bool)
            for f, p in paths.items():
                hit[f] = p.startswith(c.path_prefix)
            m &= hit
        which[m] = i
        sl[m] = c.sl
    if n and sl.max() > 15:
        f = int(np.argmax(sl > 15))
        raise NetsteerError(f"flow {f} has class {int(sl[f])}, and InfiniBand has SLs 0..15: give its job a "
                            "class 0..15 or a qos class", file=file, field="jobs")
    for s in np.unique(sl):
        check_sl_served(q, int(s), file=file, field=_sl_field(q, which, sl, int(s)))
    changes = []
    for i, ch in enumerate(q.changes):
        check_sl_served(q, ch.sl, file=file, field=f"qos.changes.{i}.sl")
        if ch.job is not None:
            m, who = jobs == job_names.index(ch.job), ("job", ch.job)
        else:
            m, who = which == list(names).index(ch.traffic_class), ("class", ch.traffic_class)
        hosts = np.unique(np.concatenate([cols.src[m], cols.dst[m]])) if m.any() else np.zeros(0, dtype=np.int64)
        changes.append((ch.at, who, tuple(np.flatnonzero(m).tolist()), ch.sl, tuple(hosts.tolist())))
    pri, w = flow_priority_weight(q.port(port), sl, base_priority=cols.priority, base_weight=cols.weight)
    if n and pri.max() > 255:
        raise NetsteerError("flow priorities above 127 leave no room for the QoS tiers (priority 2p+tier <= 255)",
                            file=file, field="jobs")
    cols.traffic_class[:] = sl
    cols.priority[:] = pri
    cols.weight[:] = w
    return QosPlan(q, sl, changes, dict(paths), which)


def _sl_field(q: QosConfig, which, sl, s: int) -> str:
    hit = np.flatnonzero((sl == s) & (which >= 0))
    return f"qos.classes.{int(which[hit[0]])}.sl" if len(hit) else "qos.sl2vl"


def reweight(config: QosConfig, sls, base_priority, base_weight, port: str = "swe"):
    """Priority and weight of flows moved to ``sls`` (the base values are the
    scenario's own, before QoS)."""
    return flow_priority_weight(config.port(port), sls, base_priority=base_priority, base_weight=base_weight)


__all__ = ["QosPlan", "apply_qos", "flow_kind", "reweight"]
