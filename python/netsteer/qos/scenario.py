"""The ``qos:`` key of a scenario: each flow's SL, its engine priority and weight.

A flow takes the SL of the first class in ``qos.classes`` whose selectors all match
(``jobs``: its job's name; ``kind``: what made it, see :func:`flow_kind`;
``path_prefix``: the file it writes, for data-staging flows). A flow no class
matches takes its partition's SL under a routing that gives partitions SLs (pFTree's
``partition_sl``), else keeps its ``class`` as its SL. This is OpenSM's order: a path
record carries the SL of the P_Key's partition (``sl=``) unless a QoS policy level
that sets an SL matches the request (``qos-policy.conf``; OpenSM only logs that the two
differ), and the classes are netsteer's policy levels. Both fidelities take these SLs,
and a run notes the flows whose class overrides their partition's SL. The SL is written
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
    # each flow's SL from its partition (pFTree), None without partition SLs
    partition_sl: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    # every QoS note a run says (shared VLs, these notes, run_notes), set by build_scenario
    run_notes: list[str] = field(default_factory=list)

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

    def in_force(self, port: str = "swe", unplayed=()) -> dict:
        """The run's QoS as simulated, for a result's ``qos`` key (``netsteer run
        --json``; the text's QoS table): the tables of port type ``port`` (both
        fidelities arbitrate every port with the switch external ports'), per SL in use
        and per class its VL and that VL's arbitration weights, the priority changes with
        theirs, and the QoS notes the run says (``unplayed``: the run's notes on changes
        it ended before).

        >>> from netsteer.qos.config import parse_qos
        >>> q = parse_qos({"max_vls": 2, "high_limit": 255, "vlarb_high": "0:64", "vlarb_low": "1:32",
        ...                "sl2vl": [0, 1] * 8, "classes": [{"name": "mpi", "sl": 0}, {"name": "io", "sl": 1}]})
        >>> plan = QosPlan(q, np.array([0, 0, 1]), flow_class=np.array([0, 0, 1]))
        >>> s = plan.in_force()
        >>> s["classes"][1]
        {'name': 'io', 'sl': 1, 'vl': 1, 'table': 'low', 'vlarb_high_weight': 0, 'vlarb_low_weight': 32, 'flows': 1}
        >>> [(x["sl"], x["vl"], x["flows"], x["classes"]) for x in s["sls"]], s["vlarb_high"]
        ([(0, 0, 2, ['mpi']), (1, 1, 1, ['io'])], [[0, 64]])
        """
        p = self.config.port(port)
        served = p.served()

        def lane(sl: int) -> dict:
            vl = p.sl2vl[sl]
            return {"vl": vl, "table": served.get(vl),
                    "vlarb_high_weight": sum(w for v, w in p.vlarb_high if v == vl),
                    "vlarb_low_weight": sum(w for v, w in p.vlarb_low if v == vl)}

        which = self.flow_class if self.flow_class is not None else np.full(len(self.sl), -1)
        classes = [{"name": c.name, "sl": c.sl, **lane(c.sl), "flows": int((which == i).sum())}
                   for i, c in enumerate(self.config.classes)]
        sls = []
        for sl in (np.unique(self.sl).tolist() if len(self.sl) else []):
            on = self.sl == sl
            names = [self.config.classes[int(i)].name for i in np.unique(which[on]) if i >= 0]
            sls.append({"sl": int(sl), **lane(int(sl)), "flows": int(on.sum()), "classes": names,
                        "unclassed_flows": int((on & (which < 0)).sum())})
        changes = [{"at_s": at / 1e9, by: who, "sl": int(sl), **lane(int(sl)), "flows": len(flows)}
                   for at, (by, who), flows, sl, *_ in self.changes]
        return {"port": port, "max_vls": p.max_vls, "high_limit": p.high_limit,
                "vlarb_high": [[v, w] for v, w in p.vlarb_high], "vlarb_low": [[v, w] for v, w in p.vlarb_low],
                "sl2vl": list(p.sl2vl), "sls": sls, "classes": classes, "changes": changes,
                "notes": list(self.run_notes) + [n for n in unplayed if n.startswith("qos")]}

    def summary(self) -> dict:
        used = np.unique(self.sl).tolist() if len(self.sl) else []
        return {"sls_used": used, "classes": [c.name for c in self.config.classes],
                "changes": [{"at_s": c[0] / 1e9, "who": c[1][1], "by": c[1][0], "flows": len(c[2]), "sl": c[3]}
                            for c in self.changes]}


def partition_flow_sls(routing, src, dst) -> np.ndarray | None:
    """Each flow's SL from its partition under a routing that gives partitions SLs
    (pFTree's ``partition_sl``): the SL of the first partition that lets its hosts talk
    (OpenSM's rule, :class:`~netsteer.routing.deadlock.PairPolicy`); None otherwise."""
    part_sl = getattr(routing, "partition_sl", None) if routing is not None else None
    if not part_sl:
        return None
    from ..routing.deadlock import PairPolicy

    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    sl = np.zeros(len(src), dtype=np.int64)
    policy = PairPolicy(routing.topo, getattr(routing, "partitions", None), part_sl)
    for d in np.unique(dst):
        m = dst == d
        _, vl = policy.columns(np.array([d]))
        sl[m] = vl[src[m], 0]
    return sl


def job_pair_sls(routing, hosts) -> set[int] | None:
    """The SLs the pairs of distinct ``hosts`` (a job's) take from their partitions
    under a routing that gives partitions SLs, as :func:`partition_flow_sls` gives
    them to flows; None without partition SLs.

    A pair's SL depends only on which partitions each host is in, and how, so one
    host of each kind stands for the others: the cost grows with the kinds, not with
    the pairs.
    """
    part_sl = getattr(routing, "partition_sl", None) if routing is not None else None
    if not part_sl:
        return None
    from ..routing.deadlock import PairPolicy

    policy = PairPolicy(routing.topo, getattr(routing, "partitions", None), part_sl)
    h = np.unique(np.asarray(hosts, dtype=np.int64))
    if not policy.partitions or len(h) < 2:
        return {0} if len(h) > 1 else set()
    kinds, first, count = np.unique(np.concatenate([policy.member[:, h], policy.full[:, h]]).T, axis=0,
                                    return_index=True, return_counts=True)
    reps = h[first]
    _, sl = policy.columns(reps)  # sl[src, c]: as if src were another host of its kind when src is reps[c]
    out = set()
    for a in range(len(reps)):
        for c in range(len(reps)):
            if a != c or count[a] > 1:
                out.add(int(sl[reps[a], c]))
    return out


def class_field(jobs, j: int, cls: int) -> str:
    """Where job ``j`` of the scenario's ``jobs`` gives a flow class ``cls``:
    ``jobs.J.flows.K.class``, ``jobs.J.bulk.K.class`` or an MPI job's ``jobs.J.class``."""
    for key in ("flows", "bulk"):
        for k, f in enumerate(getattr(jobs[j], key, None) or []):
            if f.traffic_class == cls:
                return f"jobs.{j}.{key}.{k}.class"
    return f"jobs.{j}.class"


def apply_qos(data, dag, job_of_flow, job_names: list[str], *, file=None, paths: dict[int, str] | None = None,
              port: str = "swe", n_hosts: int | None = None, routing=None, jobs=None) -> QosPlan:
    """Validate ``data`` (the ``qos:`` section) and set each flow's SL (its ``class``),
    priority and weight in ``dag`` in place.

    Parameters
    ----------
    paths : dict, optional
        Flow -> file path written.
    n_hosts : int, optional
        The topology's hosts (checks ``devices``).
    routing : Routing, optional
        Its ``partition_sl`` (pFTree) gives the flows no class matches their SLs.
    jobs : list of JobModel, optional
        The scenario's jobs, for errors naming a flow's ``class`` field.
    """
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
    jobs_of = np.asarray(job_of_flow, dtype=np.int64)
    kinds = np.array([flow_kind(lbl) for lbl in dag.labels], dtype=object)
    kind = kinds[cols.label] if n else np.zeros(0, dtype=object)
    own = cols.traffic_class.copy()  # the flows' own classes
    part = partition_flow_sls(routing, cols.src, cols.dst) if n else None
    if part is not None:
        from .config import check_partition_sls

        # OpenSM hands each partition's SL out whether or not a class overrides it: it must be served
        check_partition_sls(q, getattr(routing, "partitions", None), routing.partition_sl, file=file)
    sl = own.copy() if part is None else part.copy()
    which = np.full(n, -1, dtype=np.int64)  # the class each flow took
    for i, c in enumerate(q.classes):
        m = which < 0
        if c.jobs is not None:
            m &= np.isin(jobs_of, [job_names.index(x) for x in c.jobs])
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
        field = class_field(jobs, int(jobs_of[f]), int(sl[f])) if jobs is not None else "jobs"
        raise NetsteerError(f"class {int(sl[f])} is not an InfiniBand SL (0..15): a flow no qos class matches "
                            "takes its class as its SL; give it a class 0..15 or a qos class", file=file, field=field)
    for s in np.unique(sl):
        check_sl_served(q, int(s), file=file, field=_sl_field(q, which, sl, int(s), jobs, jobs_of))
    notes = _override_notes(q, which, sl, own, part, job_names, jobs_of) + _unmatched_notes(q, which, paths)
    changes = []
    for i, ch in enumerate(q.changes):
        check_sl_served(q, ch.sl, file=file, field=f"qos.changes.{i}.sl")
        if ch.job is not None:
            m, who = jobs_of == job_names.index(ch.job), ("job", ch.job)
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
    return QosPlan(q, sl, changes, dict(paths), which, part, notes)


def _sl_field(q: QosConfig, which, sl, s: int, jobs=None, jobs_of=None) -> str:
    """The field that puts flows on SL ``s``: a qos class's ``sl``, else the flow's own
    ``class`` (a partition's SL was checked, naming the partition, before)."""
    hit = np.flatnonzero((sl == s) & (which >= 0))
    if len(hit):
        return f"qos.classes.{int(which[hit[0]])}.sl"
    if jobs is not None and jobs_of is not None and len(jobs_of):
        f = int(np.argmax(sl == s))
        return class_field(jobs, int(jobs_of[f]), s)
    return "jobs"


def _override_notes(q: QosConfig, which, sl, own, part, job_names, jobs_of) -> list[str]:
    """Notes on the SLs a flow was not put on: a class over its partition's SL, a
    partition's SL over the flow's own class."""
    if part is None:
        return []
    out = []
    for i, c in enumerate(q.classes):
        m = (which == i) & (part != c.sl)
        if m.any():
            sls = ", ".join(str(x) for x in np.unique(part[m]).tolist())
            out.append(f"qos class {c.name!r} (qos.classes.{i}.sl: SL {c.sl}) overrides the SL its "
                       f"{int(m.sum())} flows get from their partition (SL {sls}, the routing's lane), as a "
                       "qos-policy.conf level that sets an SL overrides a partition's sl= in OpenSM; both "
                       "fidelities put them on SL " + str(c.sl))
    m = (which < 0) & (own != part) & (own != 0)
    if m.any():
        jobs = sorted({job_names[int(j)] for j in jobs_of[m]})
        out.append(f"{int(m.sum())} flows (jobs: {', '.join(jobs)}) take their partition's SL, not their class: "
                   "OpenSM hands the partition's sl= out in path records; a qos class would override it")
    return out


def _unmatched_notes(q: QosConfig, which, paths) -> list[str]:
    """Notes on classes that match no flow: their SL serves nothing (``qos tune`` refuses
    such a class; a run and ``opensm-conf`` go on and say so)."""
    out = []
    for i, c in enumerate(q.classes):
        if (which == i).any():
            continue
        if c.path_prefix is not None and not paths:
            why = ("path_prefix matches the file a data-staging flow writes, and this scenario's flows carry no "
                   "paths, so it can match none")
        else:
            sel = ", ".join(k for k in ("jobs", "kind", "path_prefix") if getattr(c, k) is not None) or "none"
            why = f"no flow has what its selectors ({sel}) ask, or an earlier class took them"
        out.append(f"qos class {c.name!r} (qos.classes.{i}) matches no flow: {why}; its SL {c.sl} carries "
                   "nothing in this run")
    return out


def run_notes(plan: QosPlan, fidelity: str, packet=None) -> list[str]:
    """Notes on where a run's model differs from the ``qos:`` section as OpenSM would
    apply it: port types' own tables that are not simulated, the flow level's packet
    size against a configured MTU, and the flow approximation's error with a finite
    ``high_limit`` and traffic in both tables.

    Parameters
    ----------
    plan : QosPlan
    fidelity : str
        ``"flow"`` or ``"packet"``.
    packet : mapping or PacketParams, optional
        The scenario's ``packet:`` section (its ``mtu`` and ``header``).
    """
    from .flowshare import DEFAULT_PACKET

    q, out = plan.config, []
    swe = q.port("swe")
    keys = ("max_vls", "high_limit", "vlarb_high", "vlarb_low", "sl2vl")
    other = [k for k in q.ports if k != "swe" and any(getattr(q.port(k), x) != getattr(swe, x) for x in keys)]
    if other:
        out.append(f"qos.ports: the {', '.join(other)} ports' own tables are written to opensm.conf but not "
                   "simulated: both fidelities arbitrate every port (HCAs included) with the switch external "
                   "ports' (swe) tables")
    get = packet.get if isinstance(packet, dict) else (lambda k, d=None: getattr(packet, k, d))
    if fidelity == "flow" and packet is not None:
        from ..units import parse_size

        try:
            mtu, header = (int(parse_size(str(get(k, d)))) for k, d in (("mtu", 2048), ("header", 26)))
        except (TypeError, ValueError):
            mtu, header = 2048, 26  # the packet section's own check names a bad value at packet level
        wire = -(-(mtu + header) // 64) * 64
        if wire != DEFAULT_PACKET:
            out.append(f"qos: the flow level shares VLs in packets of {DEFAULT_PACKET} B on the wire (a 2 KiB MTU), "
                       f"not the {wire} B of packet.mtu {mtu} B: a weight sends a different number of packets per "
                       "turn, so QoS shares can differ from the packet fidelity's")
    if fidelity == "flow" and swe.high_limit < 255 and len(plan.sl):
        served = swe.served()
        vls = {swe.sl2vl[int(x)] for x in np.unique(plan.sl)}
        # with two busy VLs a port carries both or one (then the weights do not matter);
        # with three, a port with two of them is split as if the third were busy there too
        if {"high", "low"} <= {served.get(v) for v in vls} and len(vls) >= 3:
            out.append(f"qos: high_limit {swe.high_limit} with traffic in both tables on {len(vls)} VLs: the flow "
                       "approximation counts every VL with traffic in the run as busy on every port, which can be "
                       "25% off the packet fidelity (docs/qos.md, The flow approximation)")
    return out


def reweight(config: QosConfig, sls, base_priority, base_weight, port: str = "swe"):
    """Priority and weight of flows moved to ``sls`` (the base values are the
    scenario's own, before QoS)."""
    return flow_priority_weight(config.port(port), sls, base_priority=base_priority, base_weight=base_weight)


__all__ = ["QosPlan", "apply_qos", "class_field", "flow_kind", "partition_flow_sls", "reweight", "run_notes"]
