"""The flexible-HyperX source's experiment, from the model (Hung et al., SiP bandwidth steering).

Documented inputs (the source's text):

- 8 packet switches (EPS1..EPS8), 2 servers each, 10 Gbit/s everywhere;
- two fully meshed groups of four; the links between the groups through one SiP switch;
- MobileNetV2 trained data-parallel with ring all-reduce on the 16 servers;
- the EPS7-EPS8 link carries EPS2->EPS8, EPS1->EPS7 and EPS7<->EPS8 traffic under
  minimal routing; steering adds circuits EPS2-EPS8 and EPS1-EPS7;
- the standard run takes 2105 s (the calibration target).

Inferred (Fig. 3 is not in the text; see docs/hyperx.md): the HyperX is ``S=[2, 4]``
(dimension 0: the group, through the SiP switch; dimension 1: the mesh), group A is
EPS1..EPS4 at mesh positions 0..3, group B is EPS8, EPS7, EPS6, EPS5 at positions
0..3, so the standard circuits are EPS1-EPS8, EPS2-EPS7, EPS3-EPS6, EPS4-EPS5, and
dimension-order routing (the group first) sends EPS2->EPS8 through EPS7 and
EPS1->EPS7 through EPS8. The ring visits the switches in the order :data:`RING`.

Assumptions (not in the text): MobileNetV2's 3.4 M float32 parameters (13.6 MB)
all-reduced per iteration; ``iterations`` (default 10,000: about 100 epochs
of a CIFAR-10-sized set, 50,000 images, at 32 per worker; the report shows the steered
time for other counts); 1 us per cable; 10 us SiP switching time (only paid
once, at the start).

Computed: the compute phase (calibrated so that the standard run takes 2105 s), then
both runs' ring bandwidth (bus bandwidth: ``2 (p-1)/p`` times the model size over
the all-reduce time, the rate of each ring stream), the EPS7-EPS8 link's peak load per
direction, and the job times (the simulated iterations extrapolated: every iteration
is the same).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..control.core import ControllerStack, ReplayController, ReroutePolicy
from ..control.intents import SetCircuits
from ..control.steering import SteeringController, plan_steering, switch_demand
from ..routing.dor import MinimalRoutes, dor
from ..sim.driver import SimDriver
from ..sim.simulate import run_driver
from ..topology.hyperx import CircuitSpec, hyperx, paired_lines
from ..traffic.dag import FlowDag
from ..traffic.training import MOBILENETV2_BYTES, expand_training, iteration_demand, training_job

STANDARD_JOB_S = 2105.0  # the source's standard run: the calibration target
SOURCE = {"standard": {"ring_gbps": 5.0, "job_s": 2105.0}, "steered": {"ring_gbps": 6.0, "job_s": 1665.0}}
RING = [1, 7, 8, 6, 4, 3, 3, 2, 1, 4, 6, 5, 5, 2, 8, 7]  # EPS of rank 0..15
STEERED = [(1, 7), (2, 8)]  # the source's steering circuits
LINK_GBPS = 10e9
STEPS = 7
#: The longest compute phase simulated (ns); see :func:`run`. 25 times the standard
#: all-reduce (~42 ms), and more than the default's 170 ms, which runs whole.
SIM_COMPUTE_NS = 1_000_000_000


def eps_index(k: int) -> int:
    """Switch index (lattice order) of EPS ``k`` (1..8) in the inferred numbering."""
    if not 1 <= k <= 8:
        raise ValueError(f"EPS{k} does not exist")
    return 2 * (k - 1) if k <= 4 else 2 * (8 - k) + 1


def testbed(switching_time_ns: int = 10_000, link_bandwidth: float = LINK_GBPS):
    """The flexible HyperX of the source, inferred numbering (module text); every
    cable at ``link_bandwidth`` bit/s (the source: 10 Gbit/s)."""
    return hyperx([2, 4], 1, 2, link_bandwidth=link_bandwidth, link_latency_ns=1_000,
                  circuits=[CircuitSpec(dim=0, switching_time_ns=switching_time_ns, name="sip")],
                  name="flexible-hyperx-testbed")


def placement(ring=RING) -> list[int]:
    """Host of each rank: the ring's EPS, its first server then its second."""
    seen: dict[int, int] = {}
    hosts = []
    for k in ring:
        j = seen.get(k, 0)
        seen[k] = j + 1
        hosts.append(2 * eps_index(k) + j)
    return hosts


def steered_pairs(topo, pairs=STEERED) -> tuple[tuple[int, int], ...]:
    """The SiP pairing with the given EPS pairs re-paired (their old partners together)."""
    sip = topo.node("sip")
    arr = topo.meta["initial_circuits"][sip].copy()
    for a, b in pairs:
        pa, pb = eps_index(a) + 1, eps_index(b) + 1  # SiP port of an EPS: its index + 1
        oa, ob = int(arr[pa]), int(arr[pb])
        arr[pa], arr[pb], arr[oa], arr[ob] = pb, pa, ob, oa
    return tuple(sorted((int(p), int(q)) for p, q in enumerate(arr) if q > p))


def _factory(topo):
    return lambda down, circuits: dor(topo, circuits=circuits, down_links=down)


def simulate_training(topo, job, steer=None, *, sample_ns: int = 1_000_000) -> dict[str, Any]:
    """Run ``job`` on ``topo`` (the standing circuits), with ``steer``: None, a tuple
    of SiP pairs (applied at time 0 through the controller core), or ``"plan"``
    (the steering controller plans for the job's demand at time 0)."""
    dag = FlowDag()
    x = expand_training(job, topo.n_hosts, dag=dag)
    controllers = []
    if steer == "plan":
        s, d, b = iteration_demand(job, topo.n_hosts)
        controllers.append(SteeringController(topo, [(0, switch_demand(topo, s, d, b))]))
    elif steer is not None:
        controllers.append(ReplayController([(0, SetCircuits(topo.node("sip"), tuple(steer)))]))
    controllers.append(ReroutePolicy(on_links=_factory(topo), on_circuits=_factory(topo)))
    drv = SimDriver(topo, dor(topo), dag, sample_interval_ns=sample_ns)
    res = run_driver(drv, ControllerStack(controllers))
    ar = [sp for sp in x.spans if sp.op == "allreduce"]
    comp = res.completion_ns
    rel = res.release_ns
    ar_ns = [int(comp[sp.first:sp.end].max() - rel[sp.first:sp.end].min()) for sp in ar]
    p = job.ranks
    nbytes = ar[0].nbytes
    return {"result": res, "spans": x.spans, "allreduce_ns": ar_ns,
            "ring_gbps": 2 * (p - 1) / p * nbytes * 8 / np.median(ar_ns),  # bits per ns: Gbit/s
            "makespan_ns": res.makespan_ns, "controller": res.controller}


def link_rates(topo, res, a: int, b: int) -> dict[str, Any]:
    """Gbit/s over time on the EPS a <-> EPS b cable, both directions (from counters;
    bytes times 8 over ns is Gbit/s)."""
    sa, sb = topo.switches[eps_index(a)], topo.switches[eps_index(b)]
    out = {}
    t = res.sample_times_ns
    for x, y in ((sa, sb), (sb, sa)):
        ports = [p for p, n, _ in topo.neighbors(int(x)) if n == y]
        name = f"EPS{a if x == sa else b}->EPS{b if x == sa else a}"
        if not ports:
            out[name] = None
            continue
        c = int(topo.out_channel[x, ports[0]])
        cum = res.channel_bytes[:, c]
        rate = np.diff(cum, prepend=0.0) * 8 / np.diff(t, prepend=0).clip(min=1)
        out[name] = rate
    return out


def circuit_rates(topo, res, a: int, b: int) -> np.ndarray | None:
    """Gbit/s over time from EPS a into the SiP switch when its port is paired with EPS b's."""
    sa = topo.switches[eps_index(a)]
    c = int(topo.out_channel[sa, topo.meta["circuit_cables"][0][eps_index(a) // 2][1 if a <= 4 else 3]])
    t = res.sample_times_ns
    return np.diff(res.channel_bytes[:, c], prepend=0.0) * 8 / np.diff(t, prepend=0).clip(min=1)


def run(iterations: int = 10_000, sim_iterations: int | None = None, *, beyond: bool = True,
        progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Both runs, calibrated on the standard one; see the module text.

    ``sim_iterations`` (default: 3, or ``iterations`` if fewer) are simulated and the
    rest extrapolated. A compute phase longer than :data:`SIM_COMPUTE_NS` is simulated
    that long and the difference added back per iteration (``calibration.compute_simulated_ms``)."""
    tick = progress or (lambda n=1: None)
    topo = testbed()
    hosts = placement()
    model_bytes = MOBILENETV2_BYTES
    if sim_iterations is None:
        sim_iterations = min(3, iterations)
    if sim_iterations < 2 or iterations < sim_iterations:
        raise ValueError("sim_iterations must be >= 2 and at most iterations")

    def job(compute_ns: int):
        return training_job(16, model_bytes=model_bytes, compute_ns=compute_ns,
                            iterations=sim_iterations, placement=hosts, name="mobilenetv2")

    # calibration: the standard run's all-reduce time, then the compute that fills 2105 s
    probe = simulate_training(topo, job(0))
    tick()
    comm_ns = probe["makespan_ns"] / sim_iterations
    per_iter_ns = STANDARD_JOB_S * 1e9 / iterations
    compute_ns = int(round(per_iter_ns - comm_ns))
    if compute_ns < 0:
        raise ValueError(f"{iterations} iterations of the all-reduce alone take longer than {STANDARD_JOB_S} s")
    # the compute only delays each rank's next all-reduce by the same time: past the
    # all-reduce's length it changes no transfer, and simulating it whole (700 s an
    # iteration at 3 iterations) would take ~10^6 counter samples; it is added back
    sim_compute_ns = min(compute_ns, SIM_COMPUTE_NS)
    extra_ns = compute_ns - sim_compute_ns
    runs = {}
    for key, steer in (("standard", None), ("steered", steered_pairs(topo)), ("planned", "plan")):
        r = simulate_training(topo, job(sim_compute_ns), steer)
        tick()
        m = r["makespan_ns"]
        # every iteration is the same: the first sim_iterations - 1 give the period
        ends = _iteration_ends(r)
        period = (ends[-1] - ends[0]) / (len(ends) - 1) + extra_ns
        job_ns = ends[-1] + sim_iterations * extra_ns + (iterations - sim_iterations) * period
        rates = link_rates(topo, r["result"], 7, 8)
        runs[key] = {
            "ring_gbps": round(r["ring_gbps"], 3),
            "job_s": round(job_ns / 1e9, 1),
            "iteration_ms": round(period / 1e6, 3),
            "allreduce_ms": round(float(np.median(r["allreduce_ns"])) / 1e6, 3),
            "link_eps7_eps8_peak_gbps": {k: (round(float(v.max()), 3) if v is not None else None)
                                        for k, v in rates.items()},
            "simulated_s": m / 1e9,
            "_result": r,
        }
    std, st = runs["standard"], runs["steered"]
    planned = runs.pop("planned")
    plan = (planned["_result"]["controller"] or {}).get("steering", {}).get("plans", [{}])[0]
    names = {topo.node_names[topo.switches[eps_index(k)]]: f"EPS{k}" for k in range(1, 9)}
    report: dict[str, Any] = {
        "inputs": {"model_bytes": model_bytes, "ranks": 16, "iterations": iterations,
                   "sim_iterations": sim_iterations, "link_gbps": LINK_GBPS / 1e9,
                   "placement_eps": RING, "placement_hosts": hosts, "steered_circuits": STEERED},
        "calibration": {"standard_job_s": STANDARD_JOB_S, "compute_ms": round(compute_ns / 1e6, 3),
                        "compute_simulated_ms": round(sim_compute_ns / 1e6, 3),
                        "comm_fraction_standard": round(1 - compute_ns / per_iter_ns, 4)},
        "standard": {k: v for k, v in std.items() if not k.startswith("_")},
        "steered": {k: v for k, v in st.items() if not k.startswith("_")},
        "improvement": round(1 - st["job_s"] / std["job_s"], 4),
        "controller_plan": {
            "circuits": [[names.get(a, a), names.get(b, b)] for a, b in plan.get("circuits", [])],
            "before_max_channel_busy_s": plan.get("before", {}).get("max_channel_busy_s"),
            "after_max_channel_busy_s": plan.get("after", {}).get("max_channel_busy_s"),
            "ring_gbps": planned["ring_gbps"], "job_s": planned["job_s"],
        },
        "source": SOURCE,
    }
    # the steered time for other iteration counts (the calibration moves with them):
    # an iteration is compute plus the all-reduce, so only the compute changes
    sens = []
    comm_std = std["iteration_ms"] * 1e6 - compute_ns
    comm_st = st["iteration_ms"] * 1e6 - compute_ns
    for n in (2_000, 5_000, 10_000, 20_000, 40_000):
        per = STANDARD_JOB_S * 1e9 / n
        if per < comm_std:
            continue
        sens.append({"iterations": n, "steered_job_s": round(n * (per - comm_std + comm_st) / 1e9, 1)})
    report["sensitivity"] = sens
    report["_series"] = {k: runs[k]["_result"] for k in ("standard", "steered")}
    if beyond:
        report["beyond"] = beyond_source(progress=tick)
    return report


def _iteration_ends(r) -> list[int]:
    comp = r["result"].completion_ns
    return [int(comp[sp.first:sp.end].max()) for sp in r["spans"] if sp.op == "allreduce"]


def beyond_source(S=(8, 8), T=4, jobs=4, ranks=64, model_bytes=MOBILENETV2_BYTES, compute_ns=20_000_000,
                  iterations=2, seed=7, progress=None) -> dict[str, Any]:
    """Several training jobs at once on a larger flexible HyperX, under minimal
    routing, minimal routing with steering, Valiant and UGAL.

    Circuit switches: :func:`netsteer.topology.hyperx.paired_lines`, 8 cables (16
    ports) each. Jobs are placed at random (disjoint hosts, ``seed``).
    """
    from ..routing.nonminimal import UgalRouting, ValiantRouting, flow_waves, mean_hops
    from ..traffic.training import training_job as tj

    tick = progress or (lambda n=1: None)
    sx, sy = S
    specs = paired_lines(list(S), 8, 10_000)
    topo = hyperx(list(S), 1, T, link_bandwidth=LINK_GBPS, link_latency_ns=1_000, circuits=specs,
                  name=f"flexible-hyperx-{sx}x{sy}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(topo.n_hosts)
    job_list = [tj(ranks, model_bytes=model_bytes, compute_ns=compute_ns, iterations=iterations,
                   placement=[int(h) for h in perm[j * ranks:(j + 1) * ranks]], name=f"job{j}")
                for j in range(jobs)]
    dag = FlowDag()
    job_of = []
    for j, jb in enumerate(job_list):
        before = len(dag)
        expand_training(jb, topo.n_hosts, dag=dag)
        job_of += [j] * (len(dag) - before)
    job_of = np.asarray(job_of)
    c = dag.columns()
    demand = sum(switch_demand(topo, *iteration_demand(jb, topo.n_hosts)) for jb in job_list)
    plan = plan_steering(topo, demand)
    steered = plan.arrays(topo)
    waves = flow_waves(dag)
    variants = {
        "minimal": (dor(topo), None),
        "minimal+steering": (dor(topo, circuits=steered), steered),
        "valiant": (ValiantRouting(topo, seed=seed), None),
        "ugal": (UgalRouting(topo, waves, seed=seed), None),
    }
    from ..sim.network import CircuitState

    out = {"topology": {"S": list(S), "T": T, "circuit_switches": len(specs), "hosts": topo.n_hosts},
           "jobs": jobs, "ranks": ranks, "iterations": iterations, "compute_ms": compute_ns / 1e6,
           "steering": {"method": plan.method, "evaluated": plan.evaluated,
                        "max_channel_busy_s_before": plan.before["max_channel_busy_s"],
                        "max_channel_busy_s_after": plan.after["max_channel_busy_s"]},
           "runs": {}}
    for name, (routing, circ) in variants.items():
        state = CircuitState.initial(topo)
        if circ is not None:
            for n, a in circ.items():
                state.pairing[n] = a.copy()
        moving = np.flatnonzero(c.src != c.dst)
        paths = routing.paths(c.src[moving], c.dst[moving], flow_ids=moving, circuits=state.as_dict())
        hops = mean_hops(paths, topo)
        drv = SimDriver(topo, routing, dag, circuits=state)
        res = run_driver(drv, ControllerStack([]))
        tick()
        comp = res.completion_ns
        times = [round(float(comp[job_of == j].max()) / 1e9, 4) for j in range(jobs)]
        out["runs"][name] = {"makespan_s": round(res.makespan_ns / 1e9, 4), "job_s": times,
                             "mean_hops": round(hops, 3), "status": res.status}
    return out


def plot(rep: dict, path_c, path_d) -> None:
    """Throughput over time of the Fig. 3(c) and 3(d) links."""
    from ..report.figures import legend_outside
    from ..report.plots import plt

    topo = testbed()
    for key, path, title, extra in (
        ("standard", path_c, "standard HyperX (Fig. 3c)", [("EPS2->EPS7", 2, 7), ("EPS1->EPS8", 1, 8)]),
        ("steered", path_d, "bandwidth-steered HyperX (Fig. 3d)", [("EPS2->EPS8 (circuit)", 2, 8), ("EPS1->EPS7 (circuit)", 1, 7)]),
    ):
        res = rep["_series"][key]["result"]
        t = res.sample_times_ns / 1e9
        fig, ax = plt.subplots(figsize=(8, 4))
        for name, rate in link_rates(topo, res, 7, 8).items():
            if rate is not None:
                ax.plot(t, rate, lw=1.2, label=name)
        for label, a, _b in extra:
            ax.plot(t, circuit_rates(topo, res, a, _b), lw=1.0, ls="--", label=f"EPS{a} -> SiP ({label})")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("throughput (Gbit/s)")
        ax.set_ylim(0, 10.5)
        ax.set_title(f"{title}: {rep[key]['ring_gbps']:.2f} Gbit/s ring")
        legend_outside(ax)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


def public(rep: dict) -> dict:
    """The report without the simulation objects (what ``--json`` prints)."""
    return {k: v for k, v in rep.items() if not k.startswith("_")}
