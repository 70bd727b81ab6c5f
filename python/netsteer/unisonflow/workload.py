"""MPI workloads whose flows carry their MPI context (the tag of every message).

:class:`TaggedWorkload` appends repeated collectives (and point-to-point messages)
to a :class:`~netsteer.traffic.dag.FlowDag`, expanding each with the same
algorithms as :mod:`netsteer.traffic.collectives`, and keeps a tag per flow (0 for
untagged flows such as background traffic). An iteration is expanded once on ranks
and replicated with numpy, so 10,000 iterations cost little.

Examples
--------
>>> w = TaggedWorkload()
>>> ph = w.collective("bcast", "binomial", hosts=[0, 1, 2, 3], nbytes=1000, repeat=2, job=1)
>>> len(w.dag), ph.flows, len(set(w.tags.tolist()))
(6, (0, 6), 3)
>>> from netsteer.unisonflow.tags import decode
>>> decode(int(w.tags[0]))
Tag(primitive='bcast', job=1, comm=0, src=0, dst=2)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import NetsteerError
from ..traffic import collectives as coll
from ..traffic.collectives.reduce import reduce_rabenseifner
from ..traffic.dag import FlowDag
from .tags import MAX_RANKS, Tag, encode


@dataclass(frozen=True)
class Phase:
    """Flows ``flows[0]:flows[1]`` of the DAG are ``repeat`` runs of ``op``."""

    op: str
    algorithm: str
    job: int
    flows: tuple[int, int]
    repeat: int


@dataclass
class TaggedWorkload:
    dag: FlowDag = field(default_factory=FlowDag)
    phases: list[Phase] = field(default_factory=list)
    tag_dests: dict[int, list[int]] = field(default_factory=dict)
    _tags: list[np.ndarray] = field(default_factory=list)
    fronts: dict[int, list[list[int]]] = field(default_factory=dict)  # job -> per rank frontier
    hosts_by_job: dict[int, list[int]] = field(default_factory=dict)  # job -> host of each rank

    _count: int = 0  # flows with a tag recorded

    def _close(self) -> None:
        """Flows added to the DAG directly are untagged."""
        n = len(self.dag) - self._count
        if n:
            self._add_tags(np.zeros(n, dtype=np.int64))

    def _add_tags(self, t: np.ndarray) -> None:
        self._tags.append(t)
        self._count += len(t)

    @property
    def tags(self) -> np.ndarray:
        """Per flow, its tag (0: untagged)."""
        self._close()
        if len(self._tags) > 1:
            self._tags = [np.concatenate(self._tags)]
        return self._tags[0] if self._tags else np.zeros(0, dtype=np.int64)

    def untagged(self, src, dst, nbytes, **kw) -> int:
        """An untagged flow (background traffic): forwarded by the base routing."""
        self._close()
        i = self.dag.add(src, dst, nbytes, **kw)
        self._add_tags(np.zeros(1, dtype=np.int64))
        return i

    def message(self, src_host: int, dst_host: int, nbytes: int, tag: int, **kw) -> int:
        """One tagged message (point-to-point, as a benchmark builds them)."""
        self._close()
        i = self.dag.add(src_host, dst_host, nbytes, **kw)
        self._add_tags(np.array([tag], dtype=np.int64))
        return i

    def collective(self, op: str, algorithm: str, *, hosts, nbytes: int, repeat: int = 1, root: int = 0,
                   job: int = 0, comm: int = 0, overhead_ns: int = 0, multicast: bool = False,
                   label: str | None = None) -> Phase:
        """Append ``repeat`` runs of ``op`` on ranks placed on ``hosts``; each message
        pays ``overhead_ns`` (the MPI library's per-message software time) before it
        moves. ``multicast=True`` sends a bcast as one multicast frame stream from
        the root (tag with ``dst == src``), the SDN-enhanced MPI_Bcast."""
        hosts = [int(h) for h in hosts]
        p = len(hosts)
        known = self.hosts_by_job.setdefault(job, hosts)
        if known != hosts:
            raise NetsteerError(f"job {job} already runs on other hosts: one communicator per job here", field="hosts")
        if p > MAX_RANKS:
            raise NetsteerError(f"{p} ranks do not fit the tag ({MAX_RANKS} at most)", field="hosts")
        if repeat < 1:
            raise NetsteerError("must be at least 1", field="repeat")
        self._close()
        # one iteration on ranks: flows 0..p-1 are anchors (what each rank waited for)
        tmp = FlowDag()
        for r in range(p):
            tmp.add(r, r, 0)
        if multicast:
            if op != "bcast":
                raise NetsteerError("multicast is for bcast only", field="multicast")
            far = max((r for r in range(p) if hosts[r] != hosts[root]), default=root)
            tmp.add(root, far, nbytes, deps=list(range(p)))
            out = [[p] for _ in range(p)]
            algorithm = "multicast"
        elif op == "reduce" and algorithm == "rabenseifner":
            progs = reduce_rabenseifner(p, nbytes, root)  # folds non-powers of two, as MPICH
            out = coll.run_programs(tmp, progs, list(range(p)), [[r] for r in range(p)])
        else:
            algorithm = coll.lookup(op, algorithm).name
            out = coll.expand(tmp, op, algorithm, list(range(p)), nbytes, [[r] for r in range(p)], root=root)
        c = tmp.columns()
        n = len(tmp) - p
        src, dst, nb = c.src[p:], c.dst[p:], c.bytes[p:]
        deps, offs = c.deps, c.dep_offsets[p:] - c.dep_offsets[p]
        deps = deps[c.dep_offsets[p]:]
        front_in = self.fronts.get(job) or [[] for _ in range(p)]
        out = [[f - p for f in fl if f >= p] for fl in out]
        first = len(self.dag)
        base = encode(Tag(op, job, comm, 0, 0))
        if multicast:
            tag = base | (root << 15) | root
            self.tag_dests[tag] = sorted({h for h in hosts if h != hosts[root]})
            tags_it = np.array([tag], dtype=np.int64)
        else:
            tags_it = base | (src << 15) | dst
            same_host = np.asarray(hosts)[src] == np.asarray(hosts)[dst]
            tags_it[same_host] = 0  # a message within one host never reaches a switch
        prev_front = front_in
        src_h, dst_h = np.asarray(hosts)[src], np.asarray(hosts)[dst]
        shiftable = all(out)  # every rank ends the iteration on its own flows
        flat1 = off1 = None
        for it in range(repeat):
            start = len(self.dag)
            if it >= 2 and shiftable:
                # later iterations have the second's shape, shifted
                off, flat = off1, flat1 + (it - 1) * n
            else:
                lists = []
                for k in range(n):
                    row = []
                    for d in deps[offs[k]:offs[k + 1]].tolist():
                        row.extend(prev_front[d] if d < p else [start + d - p])
                    lists.append(row)
                off = np.zeros(n + 1, dtype=np.int64)
                off[1:] = np.cumsum([len(x) for x in lists])
                flat = np.fromiter((d for x in lists for d in x), dtype=np.int64, count=int(off[-1]))
                if it == 1:
                    off1, flat1 = off, flat
            self.dag.add_block(src_h, dst_h, nb, dep_offsets=off, deps=flat,
                               delay_ns=overhead_ns, label=label or f"job{job}:{op}")
            self._add_tags(tags_it)
            prev_front = [[start + f for f in fl] if fl else pf for fl, pf in zip(out, prev_front)]
        self.fronts[job] = prev_front
        ph = Phase(op, algorithm, job, (first, len(self.dag)), repeat)
        self.phases.append(ph)
        return ph
