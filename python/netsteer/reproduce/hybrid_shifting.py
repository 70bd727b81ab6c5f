"""Beyond the hybrid source: its 320-rack, 10,240-server system under a shifting workload.

The source's Fig. 1 system (320 racks of 32 servers, 10 Gbit/s ToRs, an array of
320-port MEMS circuit switches, a low-rate oversubscribed electrical network) runs
several jobs at once. Each job holds a random set of racks and goes through phases;
in each phase its racks pair up (a random perfect matching, different every phase)
and every server exchanges a block of bytes with the server of the same index in the
partner rack, both ways. A phase ends when all its transfers have ended (a barrier),
so the demand between racks shifts as each job moves on, at times that come out of
the run. Jobs draw their block size from ``[bytes/2, 2*bytes]`` so they shift out of
step.

The same workload runs under four networks, every one starting from the same state:

- ``electrical``: no circuits at all (the oversubscribed packet network alone);
- ``static best``: the best static network for the whole run's demand (every phase
  of every job, known in advance), never changed. No circuits at all is a static
  network too, and a rack pair with circuits sends over them only (not over the
  electrical core as well), so the planner's circuits can lose to the core when it is
  fast: the candidates are the planner's circuits, the same kept only for the rack
  pairs that get at least ``k`` circuits (the others stay on the core), and none; each
  is simulated and the fastest (mean job time) is the static best
  (:func:`choose_static`), so it is never slower than ``electrical``;
- ``periodic``: starts from the static best; the controller samples the per-rack-pair
  counters every ``period``, estimates the demand, replans, and reconfigures
  make-before-break when the gain passes ``threshold`` for ``hold`` periods;
- ``congestion``: starts from the static best; the controller polls the port counters
  every ``poll`` and reconfigures as soon as a ToR uplink or circuit stays above
  ``utilization`` for ``hold`` polls and the replan gains more than ``threshold``.

Reported as each job's completion time (s) per network, and the reconfigurations.
The delay model takes the source's component measurements (rules per switch,
VLAN tagging per port, MEMS switching), as in :mod:`netsteer.reproduce.hybrid`.

Examples
--------
>>> from netsteer.reproduce.hybrid_shifting import Study, scenario
>>> st = Study(racks=8, servers_per_rack=2, circuit_switches=2, jobs=2, phases=2, bytes="8MiB")
>>> data = scenario(st, "static best")
>>> data["topology"]["racks"], len(data["jobs"])
(8, 2)
>>> sum(1 for f in data["jobs"][0]["flows"] if f["bytes"])  # 2 phases x 4 racks x 2 servers
16
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import NetsteerError
from ._params import check_ints, parsed
from ..units import parse_bandwidth, parse_duration, parse_size

MODES = ("electrical", "static best", "periodic", "congestion")
#: A transfer of the study: its scenario entry, validated model and DAG flow (about
#: 1.5 KiB measured for the first two at 16,392 flows).
STUDY_FLOW_BYTES = 2048


@dataclass(frozen=True)
class Study:
    """The study's named parameters (defaults: the source's Fig. 1 system).

    ``bytes`` is the mean block a server sends its partner per phase; every other
    parameter has the meaning of the ``hybrid`` topology and controller keys
    (docs/scenarios.md, docs/control.md).
    """

    racks: int = 320
    servers_per_rack: int = 32
    circuit_switches: int = 8
    server_bandwidth: str = "10Gbps"
    circuit_bandwidth: str = "10Gbps"
    core_bandwidth: str = "10Gbps"
    tor_uplinks: int = 1
    jobs: int = 8
    phases: int = 4
    bytes: str = "1GiB"
    seed: int = 1
    period: str = "1s"
    poll: str = "200ms"
    threshold: float = 0.1
    hold: int = 2
    utilization: float = 0.9
    delay: dict = field(default_factory=lambda: {"rule_time": "0.44ms", "vlan_tag_time": "0.6s",
                                                  "push": "sequential", "tag": "parallel"})

    def check(self) -> None:
        """Refuse shapes the workload cannot have, and studies too large for the memory
        limit, before anything is built; the error names the parameter (several, for a
        product of them)."""
        from ..control.planning import MAX_SWITCHES
        from ..limits import check

        check_ints(self, {k: 0 if k == "seed" else 1 for k in ("racks", "servers_per_rack", "circuit_switches",
                                                                "jobs", "phases", "hold", "seed")})
        if self.racks < 2 * self.jobs:
            raise NetsteerError(f"{self.racks} racks cannot give {self.jobs} jobs two racks each", field="racks")
        if self.circuit_switches > MAX_SWITCHES:
            raise NetsteerError(f"must be at most {MAX_SWITCHES} (one circuit uplink per ToR on each), got "
                                f"{self.circuit_switches}", field="circuit_switches")
        # the rack-by-rack demand and its copies while the circuits are planned
        check(4 * 8 * self.racks**2, "the rack-to-rack demand matrices", detail=f"{self.racks:,} x {self.racks:,}",
              field="racks")
        flows = self.jobs * self.phases * ((self.racks // self.jobs) // 2 * 2 * self.servers_per_rack + 1)
        check(STUDY_FLOW_BYTES * flows, "the study's transfers", detail=f"{flows:,} flows, one per server of "
              "every job's racks each way in every phase", field="racks, servers_per_rack, phases")
        if parsed(self, "bytes", parse_size) < 1:
            raise NetsteerError("must be at least 1 byte", field="bytes")
        for key in ("period", "poll"):
            if parsed(self, key, parse_duration) <= 0:
                raise NetsteerError("must be longer than 0", field=key)
        for key in ("server_bandwidth", "circuit_bandwidth", "core_bandwidth"):
            if parsed(self, key, parse_bandwidth) <= 0:
                raise NetsteerError("must be above 0", field=key)


def _layout(st: Study):
    """(racks of each job, block bytes of each job, matchings[job][phase] as rack pairs)."""
    rng = np.random.default_rng(st.seed)
    order = rng.permutation(st.racks)
    # jobs of near-equal even sizes; an odd rack left over stays idle
    size = (st.racks // st.jobs) // 2 * 2
    racks = [sorted(int(r) for r in order[j * size:(j + 1) * size]) for j in range(st.jobs)]
    mean = parse_size(st.bytes)
    blocks = [int(mean * 2 ** rng.uniform(-1, 1)) for _ in range(st.jobs)]
    matchings = []
    for rs in racks:
        per_job = []
        for _ in range(st.phases):
            p = rng.permutation(rs)
            per_job.append([(int(p[i]), int(p[i + 1])) for i in range(0, len(p), 2)])
        matchings.append(per_job)
    return racks, blocks, matchings


def demand_bytes(st: Study) -> np.ndarray:
    """Rack-to-rack bytes of the whole run (every phase of every job)."""
    _, blocks, matchings = _layout(st)
    d = np.zeros((st.racks, st.racks))
    for blk, per_job in zip(blocks, matchings):
        for pairs in per_job:
            for a, b in pairs:
                d[a, b] += blk * st.servers_per_rack
                d[b, a] += blk * st.servers_per_rack
    return d


def static_best(st: Study) -> list[list[int]]:
    """The planner's circuits for the whole run's demand, as ``[plane, a, b]``: the
    first candidate of the static best (:func:`choose_static` picks among them).

    The demand is scaled so each rack's total equals what its circuits can carry:
    the planner then weighs pairs by their share of the rack's bytes. It does not see
    the electrical core (a pair with circuits uses them only), which is why the plan
    is a candidate, not the answer.
    """
    from ..control.planning import plan_circuits

    d = demand_bytes(st)
    cap = parse_bandwidth(st.circuit_bandwidth) / 1e9
    per_rack = np.maximum(d.sum(axis=1), 1.0)
    gbps = d / per_rack[:, None] * cap * st.circuit_switches
    plan = plan_circuits(gbps, st.circuit_switches, cap, hops=1)
    return [[c.ocs, c.a, c.b] for c in plan.circuits]


def static_candidates(st: Study) -> list[tuple[int, list[list[int]]]]:
    """The static networks the static best is chosen from, as ``(k, circuits)``: the
    planner's circuits kept for the rack pairs that get at least ``k`` of them (``k =
    1``: the whole plan), for each count the plan gives a pair, then no circuits (``k``
    one past the largest count). Pairs left without circuits use the electrical core.

    >>> st = Study(racks=8, servers_per_rack=2, circuit_switches=2, jobs=2, phases=2, bytes="8MiB")
    >>> cands = static_candidates(st)
    >>> cands[0] == (1, static_best(st)), cands[-1][1]  # the whole plan first, no circuits last
    (True, [])
    """
    plan = static_best(st)
    count: dict[tuple[int, int], int] = {}
    for _, a, b in plan:
        key = (min(a, b), max(a, b))
        count[key] = count.get(key, 0) + 1
    out = []
    for k in sorted(set(count.values())):
        out.append((k, [c for c in plan if count[(min(c[1], c[2]), max(c[1], c[2]))] >= k]))
    out.append((max(count.values(), default=0) + 1, []))
    return out


def choose_static(st: Study, electrical: dict | None = None) -> tuple[list[list[int]], dict[str, Any]]:
    """The static best: every :func:`static_candidates` network simulated, the one with
    the lowest mean job time kept (on a tie, the one listed first). ``electrical``, a
    :func:`run_mode` result of the electrical network, stands for the no-circuit
    candidate (the same network). Returns the circuits and what was compared:
    ``{"circuits", "pairs_with_at_least", "candidates": [{"pairs_with_at_least",
    "circuits", "mean_job_s"}, ...]}``."""
    best, rows = None, []
    for k, circuits in static_candidates(st):
        r = electrical if (not circuits and electrical is not None) else run_mode(st, "static best", circuits)
        rows.append({"pairs_with_at_least": k, "circuits": len(circuits), "mean_job_s": r["mean_job_s"]})
        if best is None or r["mean_job_s"] < best[2]["mean_job_s"]:
            best = (k, circuits, r)
    assert best is not None
    k, circuits, _ = best
    return circuits, {"circuits": len(circuits), "pairs_with_at_least": k, "candidates": rows}


def scenario_topology(st: Study) -> dict[str, Any]:
    """The scenarios' ``topology`` section."""
    return {"kind": "hybrid", "racks": st.racks, "servers_per_rack": st.servers_per_rack,
            "server_bandwidth": st.server_bandwidth, "tor_uplinks": st.tor_uplinks, "core_switches": 1,
            "core_bandwidth": st.core_bandwidth, "circuit_switches": st.circuit_switches,
            "circuit_ports": st.racks, "circuit_uplinks": 1, "circuit_bandwidth": st.circuit_bandwidth,
            "switching_time": "25ms", "link_latency": "1us"}


def scenario(st: Study, mode: str, initial: list | None = None) -> dict[str, Any]:
    """The scenario (as a dict, ready for YAML) of the study under ``mode``; ``initial``
    the circuits the modes but ``electrical`` start from (default: the planner's,
    :func:`static_best`; :func:`run` passes the static best it chose)."""
    if mode not in MODES:
        raise NetsteerError(f"unknown mode {mode!r}; one of {', '.join(MODES)}", field="mode")
    st.check()
    racks, blocks, matchings = _layout(st)
    S = st.servers_per_rack
    jobs = []
    for j, (rs, blk, per_job) in enumerate(zip(racks, blocks, matchings)):
        flows: list[dict] = []
        gate: list[str] = []
        for p, pairs in enumerate(per_job):
            ids = []
            for a, b in pairs:
                for s in range(S):
                    for x, y in ((a, b), (b, a)):
                        fid = f"p{p}.{x}.{y}.{s}"
                        flows.append({"id": fid, "src": x * S + s, "dst": y * S + s, "bytes": blk, "after": gate})
                        ids.append(fid)
            # the phase barrier: an empty message that waits for every transfer of the phase
            bar = f"p{p}.barrier"
            flows.append({"id": bar, "src": rs[0] * S, "dst": rs[0] * S, "bytes": 0, "after": ids})
            gate = [bar]
        jobs.append({"name": f"job{j}", "flows": flows})
    hybrid: dict[str, Any] = {"initial": [] if mode == "electrical" else (initial if initial is not None else static_best(st))}
    if mode == "periodic":
        hybrid["periodic"] = {"period": st.period, "threshold": st.threshold, "hold": st.hold}
    if mode == "congestion":
        hybrid["congestion"] = {"poll": st.poll, "utilization": st.utilization, "hold": st.hold,
                                "threshold": st.threshold}
    return {
        "name": f"hybrid-shifting-{mode.replace(' ', '-')}",
        "description": f"{st.jobs} jobs x {st.phases} shifting phases on {st.racks} racks ({mode})",
        "topology": scenario_topology(st),
        "routing": {"engine": "minhop"},
        "jobs": jobs,
        "controller": {"hybrid": hybrid},
        "driver": {"delay": copy.deepcopy(st.delay)},
    }


def run_mode(st: Study, mode: str, initial: list | None = None) -> dict[str, Any]:
    """Run one network of the study; job times (s), makespan and reconfigurations."""
    import time

    from ..scenario import Scenario, ScenarioModel, build_scenario
    from ..sim.run import run_scenario

    data = scenario(st, mode, initial)
    t0 = time.perf_counter()
    built = build_scenario(Scenario(ScenarioModel.model_validate(data), None))
    res = run_scenario(built, sample=False)
    wall = time.perf_counter() - t0
    if res.status != "done":
        raise NetsteerError(f"the {mode} run ended {res.status}", field="study")
    jobs = {}
    for j, name in enumerate(built.job_names):
        jobs[name] = float(res.completion_ns[built.job_of_flow == j].max()) * 1e-9
    rc = (res.controller or {}).get("hybrid", {}).get("reconfigurations", [])
    delays = [r["delay_s"] for r in rc if r.get("delay_s") is not None]
    return {
        "mode": mode, "jobs": jobs, "mean_job_s": float(np.mean(list(jobs.values()))),
        "makespan_s": res.makespan_ns * 1e-9, "reconfigurations": len(rc),
        "failed_reconfigurations": sum(1 for r in rc if r.get("status") not in (None, "done")),
        "mean_reconfig_delay_s": float(np.mean(delays)) if delays else None,
        "windows": [[r["start_s"], r["end_s"]] for r in rc], "wall_s": wall, "flows": len(built.dag),
    }


#: The parameters the source gives (its Fig. 1 system and delay measurements): (value, where).
SOURCE_PARAMS: dict[str, tuple[Any, str]] = {
    "racks": (320, "Fig. 1: 320 racks"),
    "servers_per_rack": (32, "Fig. 1: 10,240 servers in 320 racks"),
    "server_bandwidth": ("10Gbps", "10 Gbit/s Ethernet ToRs"),
    "circuit_bandwidth": ("10Gbps", "the 10 Gbit/s optical network"),
    "delay.vlan_tag_time": ("0.6s", "1.2 s measured to tag the ToR ports, two per ToR"),
    "delay.push": ("sequential", "rules pushed to each OVS one after the other"),
}
#: The parameters the source does not give, and why these values.
ASSUMPTIONS: dict[str, str] = {
    "circuit_switches": "the size of the MEMS array is not given",
    "core_bandwidth": "'a lower-rate, highly over-subscribed' electrical network, no rate given",
    "tor_uplinks": "electrical uplinks per ToR, not given",
    "jobs": "the shifting workload is beyond the source",
    "phases": "the shifting workload is beyond the source",
    "bytes": "the shifting workload is beyond the source",
    "seed": "the shifting workload is beyond the source",
    "period": "the source reconfigures 'periodically or upon request', no figures",
    "poll": "congestion detection is not in the source",
    "threshold": "the controller's gain threshold, not in the source",
    "hold": "the controller's hold, not in the source",
    "utilization": "congestion detection is not in the source",
    "delay.rule_time": "calibrated in hybrid-reconfig so that 5000 rules take the source's 2.2 s",
    "delay.tag": "the ports of a ToR tagged in parallel, not given",
    "switching_time": "MEMS switching; the source: tens to hundreds of ms",
    "link_latency": "per cable",
}


def parameters(st: Study) -> dict[str, Any]:
    """The study's inputs (``delay.*`` flattened, plus the scenarios' fixed switching
    time and cable latency) with where each comes from
    (:func:`netsteer.reproduce._params.provenance`).

    >>> p = parameters(Study(racks=32))
    >>> p["changed"]["racks"], p["source"]["servers_per_rack"], "jobs" in p["assumptions"]
    ({'value': 32, 'source': 320}, 'Fig. 1: 10,240 servers in 320 racks', True)
    """
    from ._params import provenance

    values = {k: v for k, v in asdict(st).items() if k != "delay"}
    values.update({f"delay.{k}": v for k, v in st.delay.items()})
    topo = scenario_topology(st)
    values.update(switching_time=topo["switching_time"], link_latency=topo["link_latency"])
    return provenance(values, SOURCE_PARAMS, ASSUMPTIONS)


def run(st: Study, modes=MODES, progress: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Every network of the study: ``{"study": params, "static_circuits": n,
    "static_best": what choose_static compared, "runs": [...]}``; the adaptive modes
    start from the static best chosen."""
    st.check()
    electrical = run_mode(st, "electrical") if "electrical" in modes else None
    initial, choice = choose_static(st, electrical)
    runs = []
    for m in modes:
        if m == "electrical":
            runs.append(electrical)
        else:
            runs.append(run_mode(st, m, initial))
        progress()
    return {"study": asdict(st), "parameters": parameters(st), "static_circuits": len(initial),
            "static_best": choice, "runs": runs}


def static_initial(st: Study, rep: dict) -> list[list[int]]:
    """The circuits of the static best ``rep`` (a :func:`run` report) chose, rebuilt."""
    k = rep["static_best"]["pairs_with_at_least"]
    return next(c for kk, c in static_candidates(st) if kk == k)


def plot(rep: dict, path) -> None:
    """Job completion times per network, one group of bars per job."""
    from ..report.figures import legend_outside
    from ..report.plots import plt

    runs = rep["runs"]
    names = list(runs[0]["jobs"])
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(names) + 3), 4))
    w = 0.8 / len(runs)
    colors = ["tab:gray", "tab:blue", "tab:green", "tab:red"]
    for i, r in enumerate(runs):
        xs = [k + (i - (len(runs) - 1) / 2) * w for k in range(len(names))]
        ax.bar(xs, [r["jobs"][n] for n in names], w, label=f"{r['mode']} (mean {r['mean_job_s']:.1f} s)",
               color=colors[i % len(colors)])
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("job completion (s)")
    s = rep["study"]
    ax.set_title(f"{s['racks']} racks x {s['servers_per_rack']} servers, {s['circuit_switches']} circuit switches, "
                 f"{s['jobs']} jobs x {s['phases']} phases")
    legend_outside(ax, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
