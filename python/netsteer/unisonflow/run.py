"""Run a tagged workload under the UnisonFlow controller, or under plain ECMP.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.unisonflow.workload import TaggedWorkload
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=1000)
>>> w = TaggedWorkload()
>>> _ = w.collective("bcast", "binomial", hosts=[0, 1, 2, 3], nbytes=10_000, repeat=3)
>>> mods = {0: [{"module": "pin", "primitive": "bcast", "via": "s2_1"}]}
>>> r = simulate(t, w, mods, tables=TableModel(controller_rtt_ns=100_000))
>>> r.status, r.driver["packet_ins"], r.controller["by_module"]
('done', 3, {'pin': 3})
>>> e = simulate(t, w, None)  # ECMP, no controller: no first-packet delay
>>> e.makespan_ns < r.makespan_ns
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..control.loop import run_loop
from ..routing.ecmp import ecmp
from ..sim.driver import SimDriver
from .controller import InterconnectController
from .dataplane import TableModel, TagSimDriver
from .fabric import Fabric
from .modules import JobView
from .workload import TaggedWorkload


@dataclass
class Outcome:
    status: str
    makespan_ns: int
    completion_ns: np.ndarray
    release_ns: np.ndarray
    channel_bytes: np.ndarray
    paths: list  # per flow, its channels at the end
    samples: tuple
    controller: dict[str, Any] | None
    driver: dict[str, Any] | None
    first_packet_ns: list
    engine: Any = None  # the engine after the run (flow paths, counters)


def job_views(workload: TaggedWorkload, hosts_of: dict[int, dict[int, list[int]]] | None = None) -> dict[int, JobView]:
    """Job views from the workload's phases (communicator 0: the hosts of the phase)."""
    views: dict[int, JobView] = {}
    for job, comms in (hosts_of or {}).items():
        views[job] = JobView(job, {int(c): list(h) for c, h in comms.items()})
    return views


def simulate(topo, workload: TaggedWorkload, modules: dict[int, list[dict]] | None, *,
             comms: dict[int, dict[int, list[int]]] | None = None, tables: TableModel = TableModel(),
             ecmp_hash: str = "src-dst", sample_interval_ns: int = 0, background=None,
             default: str = "ecmp", on_failure: str = "fallback", fabric: Fabric | None = None) -> Outcome:
    """Run ``workload`` on ``topo``.

    ``modules`` maps each job to its module specs (``None``: no controller, every
    flow by ECMP with ``ecmp_hash``, the baseline). ``comms`` gives each job's
    communicators (``job -> comm -> hosts by rank``); by default a job's
    communicator 0 is the hosts of its first phase.
    """
    routing = ecmp(topo, hash=ecmp_hash)
    dag = workload.dag
    if modules is None:
        drv = SimDriver(topo, routing, dag, sample_interval_ns=sample_interval_ns, background=background)
        status = drv.advance(None)
        ctrl = None
    else:
        fabric = fabric or Fabric(topo)
        if comms is None:
            comms = {j: {0: list(h)} for j, h in workload.hosts_by_job.items()}
        views = job_views(workload, comms)
        ctrl = InterconnectController(fabric, {j: (views[j], modules.get(j, [])) for j in views},
                                      default=default, on_failure=on_failure)
        drv = TagSimDriver(topo, routing, dag, fabric=fabric, flow_tags=workload.tags, tables=tables,
                           tag_dests=workload.tag_dests, sample_interval_ns=sample_interval_ns,
                           background=background)
        status = run_loop(drv, ctrl)
    done = drv.engine.completion_ns()
    paths = [np.asarray(drv.engine.flow_path(f)) for f in range(len(dag))] if len(dag) <= 20_000 else []
    return Outcome(status, int(done.max()) if len(done) else 0, done, drv.engine.release_ns(),
                   drv.engine.channel_bytes()[: topo.n_channels], paths, drv.engine.samples(),
                   ctrl.report() if ctrl else None, dict(drv.stats) if ctrl else None,
                   list(getattr(drv, "first_packet_ns", [])), drv.engine)

