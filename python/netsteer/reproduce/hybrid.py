"""The hybrid EPS/OCS source's experiments, from the model (Christodoulopoulos et al.).

Inputs are the source's documented set-up and component measurements; every
average, delay and completion time below comes out of the simulation.

1. **iperf**: two servers on two ToRs, one circuit switch, a 1 Gbit/s electrical
   network. One iperf-like flow runs over a 10 Gbit/s circuit; the controller
   reconfigures between two topologies (the circuit on one pair of circuit-switch
   ports, then on another) every 10 s, pushing 100 or 5000 rules.
   Delay-model inputs: VLAN tagging 0.6 s per ToR port, two ports per ToR per
   reconfiguration (the old one untagged, the new one tagged: the source's 1.2 s
   of tagging); 0.44 ms per rule per Open vSwitch, pushed one switch after the
   other (an assumption: it makes 5000 rules take about 2.2 s, so the 5000-rule
   delay is a calibration and the averages are the predictions); MEMS switching
   25 ms.
2. **fftw**: an FFTW-like 3D FFT (pairwise all-to-all transposes between compute
   phases) on 8 ranks, 4 servers on each of racks 1 and 2, with racks 1-3 each
   holding two optical uplinks. Fig. 2b is not in the text; we read topology 1
   as racks 1 and 2 joined through rack 3's ToR (circuits 1-3 and 3-2), where the
   background traffic between racks 2 and 3 also runs, and topology 2 as direct
   circuits 1-2 and 2-3. The compute phases are calibrated on the uncongested run
   only (its time is the source's 28.7 s); the other runs are predictions: with
   background, with background and a reconfiguration at 15 s, and with the
   congestion-triggered mode.

Every input above is a field of :class:`Reconfig` (defaults: the source's), and an
option of ``netsteer reproduce hybrid-reconfig``; :func:`scenarios` gives each run
as a scenario ``netsteer run`` reruns.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..control.core import Controller, ControllerStack, Inputs
from ..errors import NetsteerError
from ._params import check_ints, parsed
from ..units import checked_duration, checked_size, parse_bandwidth, parse_duration

GBIT = 1e9
#: The bandwidth-over-time recorders' polling intervals (ns): iperf, FFTW.
IPERF_SAMPLE_NS, FFT_SAMPLE_NS = 100_000_000, 200_000_000
#: Reconfigurations an iperf run may schedule (``duration / period``).
MAX_RECONFIGURATIONS = 10_000


@dataclass(frozen=True)
class Reconfig:
    """The experiments' parameters; the defaults are the source's (module text).

    Every field is an option of ``netsteer reproduce hybrid-reconfig`` of the same
    name (``vlan_tag_time`` is ``--vlan-tag-time``); durations, sizes and rates are
    strings with units, as in scenarios.

    Attributes
    ----------
    rules : tuple of int
        Rules pushed besides the real ones in each iperf reconfiguration, one pair
        of runs (make-before-break, break-before-make) per entry.
    period, duration : str
        The iperf runs: a reconfiguration every ``period`` over ``duration``.
    vlan_tag_time, rule_time, switching_time : str
        Delay model: per ToR port tagged, per rule per switch, per MEMS switching.
    push : str
        Rules pushed ``sequential`` (one switch after the other) or ``parallel``.
    core_bandwidth : str
        The electrical network: each ToR's uplink.
    trigger : str
        FFTW: when the scheduled reconfiguration to topology 2 starts.
    poll : str
        FFTW, congestion-triggered mode: the port counters' polling interval.
    fft_ranks, fft_bytes, fft_phases : int, str, int
        The FFT: ranks (a power of two, half on each of racks 1 and 2, so ``fft_ranks / 2`` servers
        a rack), bytes each rank sends each other rank in a phase's pairwise
        alltoall, and phases (a compute step, then the alltoall).
    fft_alone : str
        The FFT's uncongested time, the calibration target of its compute steps.
    fft_rules : int
        Rules pushed besides the real ones in each FFTW reconfiguration.

    Examples
    --------
    >>> p = Reconfig(fft_ranks=4)
    >>> data = fft_scenario("1ms", background=True, params=p)
    >>> data["topology"]["servers_per_rack"], len(data["jobs"][1]["bulk"])
    (2, 4)
    >>> Reconfig(fft_ranks=3).check()
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: fft_ranks: must be a power of two (the FFT's pairwise alltoall pairs ranks by XOR), got 3
    """

    rules: tuple[int, ...] = (100, 5000)
    period: str = "10s"
    duration: str = "60s"
    vlan_tag_time: str = "0.6s"
    rule_time: str = "0.44ms"
    switching_time: str = "25ms"
    push: str = "sequential"
    core_bandwidth: str = "1Gbps"
    trigger: str = "15s"
    poll: str = "200ms"
    fft_ranks: int = 8
    fft_bytes: str = "32MiB"
    fft_phases: int = 20
    fft_alone: str = "28.7s"
    fft_rules: int = 100

    def check(self) -> None:
        """Refuse values the experiments cannot run with, before anything is built;
        the error's field is the parameter."""
        from ..limits import FLOW_BYTES, check

        check_ints(self, {"fft_ranks": 2, "fft_phases": 1, "fft_rules": 0})
        if self.fft_ranks & (self.fft_ranks - 1):
            # the FFT's pairwise alltoall pairs ranks by XOR (and half go on each rack)
            raise NetsteerError(f"must be a power of two (the FFT's pairwise alltoall pairs ranks by XOR), "
                                f"got {self.fft_ranks}", field="fft_ranks")
        if not self.rules or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in self.rules):
            raise NetsteerError(f"must be one or more integers >= 0, got {list(self.rules)!r}", field="rules")
        if len(set(self.rules)) < len(self.rules):
            # the same runs twice, under the same name (and the same scenario file)
            raise NetsteerError(f"must not repeat a count, got {list(self.rules)!r}", field="rules")
        if self.push not in ("sequential", "parallel"):
            raise NetsteerError(f"must be sequential or parallel, got {self.push!r}", field="push")
        ns = {}
        for key in ("period", "duration", "vlan_tag_time", "rule_time", "switching_time", "trigger", "poll",
                    "fft_alone"):
            ns[key] = parsed(self, key, checked_duration)
            if key in ("period", "duration", "poll", "fft_alone") and ns[key] <= 0:
                raise NetsteerError("must be longer than 0", field=key)
        if ns["period"] >= ns["duration"]:
            raise NetsteerError(f"must be shorter than duration ({self.duration}) for a reconfiguration to happen",
                                field="period")
        if ns["duration"] // ns["period"] > MAX_RECONFIGURATIONS:
            raise NetsteerError(f"duration / period asks for {ns['duration'] // ns['period']:,} reconfigurations, "
                                f"more than {MAX_RECONFIGURATIONS:,}", field="period")
        if parsed(self, "fft_bytes", checked_size) < 1:
            raise NetsteerError("must be at least 1 byte", field="fft_bytes")
        if parsed(self, "core_bandwidth", parse_bandwidth) <= 0:
            raise NetsteerError("must be above 0", field="core_bandwidth")
        # pairwise alltoall: every rank sends every other rank in every phase
        flows = self.fft_phases * (self.fft_ranks * (self.fft_ranks - 1) + self.fft_ranks)
        check(FLOW_BYTES * flows, "the FFT's messages", detail=f"{flows:,} flows", field="fft_ranks, fft_phases")

    def delay(self) -> dict[str, str]:
        """The scenario's ``driver.delay``."""
        return {"rule_time": self.rule_time, "vlan_tag_time": self.vlan_tag_time, "push": self.push}


def _at(ns: int) -> str:
    """A schedule time in the largest unit that keeps it exact (``10s``, ``250ms``)."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


def iperf_base(params: Reconfig = Reconfig()) -> dict[str, Any]:
    """The iperf set-up: two servers on two ToRs, one circuit switch, one bulk flow
    over ``params.duration``, no reconfiguration."""
    return {
        "name": "hybrid-iperf",
        "topology": {"kind": "hybrid", "racks": 2, "servers_per_rack": 1, "server_bandwidth": "10Gbps",
                     "tor_uplinks": 1, "core_bandwidth": params.core_bandwidth, "circuit_switches": 1,
                     "circuit_ports": 4, "circuit_uplinks": 2, "circuit_bandwidth": "10Gbps",
                     "switching_time": params.switching_time, "link_latency": "1us"},
        "routing": {"engine": "minhop"},
        "jobs": [{"name": "iperf", "bulk": [{"src": 0, "dst": 1, "duration": params.duration}]}],
        "controller": {"hybrid": {"initial": [[0, 0, 1]]}},
        "driver": {"delay": params.delay()},
    }


IPERF = iperf_base()


def iperf_scenarios(params: Reconfig = Reconfig()) -> list[tuple[str, int, str, dict[str, Any]]]:
    """The iperf runs as ``(label, rules, method, scenario)``: no reconfiguration,
    then each of ``params.rules`` make-before-break and break-before-make, the
    circuit moved between two circuit-switch port pairs every ``params.period``."""
    period, duration = parse_duration(params.period), parse_duration(params.duration)
    schedule = [{"at": _at(t), "circuits": [[1 if i % 2 == 0 else 0, 0, 1]]}
                for i, t in enumerate(range(period, duration, period))]
    runs = [("no reconfiguration", None, 0, "make-before-break")]
    runs += [(f"{n} rules, {m}", schedule, n, m) for n in params.rules
             for m in ("make-before-break", "break-before-make")]
    out = []
    for label, sched, rules, method in runs:
        data = iperf_base(params)
        h = data["controller"]["hybrid"]
        h.update(method=method, extra_rules=rules)
        if sched:
            h["schedule"] = copy.deepcopy(sched)
        out.append((label, rules, method, data))
    return out


def fft_scenario(compute: str, *, background: bool, params: Reconfig = Reconfig()) -> dict[str, Any]:
    """The FFTW-like run on racks 1 and 2 (indices 0, 1); background 2 <-> 3."""
    program = [{"op": "compute", "duration": compute},
               {"op": "alltoall", "bytes": params.fft_bytes, "algorithm": "pairwise"}]
    ranks, per_rack = params.fft_ranks, params.fft_ranks // 2
    jobs = [{"name": "fftw", "ranks": ranks, "placement": "linear", "program": program, "repeat": params.fft_phases}]
    if background:
        # rack 3's servers and rack 2's exchange iperf traffic (one stream per server each way)
        bulk = ([{"src": 2 * per_rack + i, "dst": per_rack + i} for i in range(per_rack)]
                + [{"src": per_rack + i, "dst": 2 * per_rack + i} for i in range(per_rack)])
        jobs.append({"name": "background", "bulk": bulk})
    return {
        "name": "hybrid-fftw",
        "topology": {"kind": "hybrid", "racks": 3, "servers_per_rack": per_rack, "server_bandwidth": "10Gbps",
                     "tor_uplinks": 1, "core_bandwidth": params.core_bandwidth, "circuit_switches": 2,
                     "circuit_ports": 3, "circuit_uplinks": 1, "circuit_bandwidth": "10Gbps",
                     "switching_time": params.switching_time, "link_latency": "1us"},
        "routing": {"engine": "minhop"},
        "jobs": jobs,
        # topology 1: 0 - 2 on plane 0, 2 - 1 on plane 1; rack 0 reaches rack 1 through 2
        "controller": {"hybrid": {"hops": 2, "initial": [[0, 0, 2], [1, 2, 1]], "extra_rules": params.fft_rules}},
        "driver": {"delay": params.delay()},
    }


TOPOLOGY_2 = [[0, 0, 1], [1, 1, 2]]


class PairRecorder(Controller):
    """Polls the per-rack-pair counters every ``interval`` ns and keeps the rates
    (Gbit/s) of ``pairs`` summed (``gbps``: the bandwidth-over-time curve of a run)
    and of each pair alone (``by_pair``: each direction's)."""

    name = "recorder"

    def __init__(self, interval: int, pairs):
        super().__init__()
        self.interval, self.pairs = interval, list(pairs)
        self.times: list[float] = []
        self.gbps: list[float] = []
        self.by_pair: dict[tuple[int, int], list[float]] = {p: [] for p in self.pairs}
        self._last = None
        self._next = interval
        self.total_bytes = 0.0

    def next_wakeup(self, now: int) -> int | None:
        return self._next if self._next > now else now + self.interval

    def next_scheduled(self, now: int) -> int | None:
        return None  # polling: never keeps a finished or stalled run going

    def decide(self, inp: Inputs) -> list:
        if inp.now < self._next:
            return []
        self._next = inp.now + self.interval
        c = inp.counters()
        each = [float(c.pair_bytes[a, b]) for a, b in self.pairs]
        sent = float(sum(each))
        if self._last is not None and c.time_ns > self._last[0]:
            self.times.append(inp.now / 1e9)
            per_s = 8 / ((c.time_ns - self._last[0]) * 1e-9) / GBIT
            self.gbps.append((sent - self._last[1]) * per_s)
            for p, now_b, last_b in zip(self.pairs, each, self._last[2]):
                self.by_pair[p].append((now_b - last_b) * per_s)
        self._last = (c.time_ns, sent, each)
        self.total_bytes = sent
        return []


def _run(data: dict, recorder: PairRecorder | None = None):
    from ..scenario import Scenario, ScenarioModel, build_scenario
    from ..sim.run import default_controller, run_scenario

    built = build_scenario(Scenario(ScenarioModel.model_validate(data), None))
    ctl, _ = default_controller(built)
    if recorder is not None:
        ctl = ControllerStack([*ctl.controllers, recorder])
        # run_scenario uses the scenario's initial circuits only for its own controller
        ctl_hybrid = built.hybrid
        res = _run_with(built, ctl, ctl_hybrid)
    else:
        res = run_scenario(built, sample=False)
    return built, res


def _run_with(built, controller, hybrid):
    from ..sim.driver import SimDriver
    from ..sim.network import CircuitState
    from ..sim.run import default_controller
    from ..sim.simulate import run_driver

    _, stops = default_controller(built)
    pairings, rules, tags = hybrid.initial_state()
    circuits = CircuitState.empty(built.topology)
    for sw, pairs in pairings.items():
        circuits.pair(sw, list(pairs))
    driver = SimDriver(built.topology, built.routing, built.dag, sharing=built.sharing, tcp_gamma=built.tcp_gamma,
                       merge_window_ns=built.merge_window_ns, ticks_per_ns=built.ticks_per_ns, circuits=circuits,
                       background=built.background, stops=stops, forwarding=(rules, tags),
                       **(built.driver_options or {}))
    return run_driver(driver, controller)


def _reconfigs(res) -> list[dict]:
    return (res.controller or {}).get("hybrid", {}).get("reconfigurations", [])


def iperf_runs(progress: Callable[[], None] = lambda: None, params: Reconfig = Reconfig()) -> list[dict[str, Any]]:
    """The iperf experiment: no reconfiguration, then each rule count of ``params``,
    each make-before-break and break-before-make."""
    duration = parse_duration(params.duration)
    # the recorder's last poll must fall at the end of a short run (100 ms: 600 polls in the source's 60 s)
    interval = min(IPERF_SAMPLE_NS, max(1, duration // 100))
    out = []
    for label, rules, method, data in iperf_scenarios(params):
        rec = PairRecorder(interval, [(0, 1)])
        built, res = _run(data, rec)
        sent = rec.total_bytes * 8 / GBIT  # Gbit over the run
        rc = _reconfigs(res)
        delays = [r["delay_s"] for r in rc if r["delay_s"] is not None]
        out.append({
            "run": label, "rules": rules, "method": method, "reconfigurations": len(rc),
            "avg_gbps": sent / (duration / 1e9),
            "reconfig_delay_s": float(np.mean(delays)) if delays else None,
            "windows": [[r["start_s"], r["end_s"]] for r in rc],
            "time_s": rec.times, "gbps": rec.gbps,
        })
        progress()
    return out


def _comm_time(progress, params: Reconfig) -> float:
    built, res = _run(fft_scenario("0s", background=False, params=params))
    progress()
    return res.makespan_ns * 1e-9


def compute_duration(compute_s: float) -> str:
    """A calibrated compute step as the scenarios write it."""
    return f"{compute_s * 1e9:.0f}ns"


def fftw_scenarios(compute: str, params: Reconfig = Reconfig()) -> list[tuple[str, dict[str, Any]]]:
    """The FFTW runs as ``(label, scenario)`` for a calibrated ``compute`` step: alone,
    with background, with background and a reconfiguration to topology 2 at
    ``params.trigger``, and with background under the congestion-triggered mode."""
    variants = [
        ("alone", False, {}),
        ("background", True, {}),
        (f"background, reconfiguration at {parse_duration(params.trigger) / 1e9:g} s", True,
         {"schedule": [{"at": params.trigger, "circuits": TOPOLOGY_2}]}),
        ("background, congestion-triggered", True,
         {"congestion": {"poll": params.poll, "utilization": 0.9, "hold": 2, "threshold": 0.1}}),
    ]
    out = []
    for label, bg, extra in variants:
        data = fft_scenario(compute, background=bg, params=params)
        data["controller"]["hybrid"].update(copy.deepcopy(extra))
        out.append((label, data))
    return out


def fftw_runs(progress: Callable[[], None] = lambda: None,
              params: Reconfig = Reconfig()) -> tuple[list[dict[str, Any]], dict]:
    """The FFTW experiment; returns (runs, calibration)."""
    comm = _comm_time(progress, params)
    phases = params.fft_phases
    target = parse_duration(params.fft_alone) / 1e9
    compute_s = (target - comm) / phases
    if compute_s <= 0:
        raise NetsteerError(f"the FFT's communication alone takes {comm:.2f} s, not below this calibration target "
                            "of its whole run (lower the FFT's bytes or raise this target)", field="fft_alone")
    out = []
    for label, data in fftw_scenarios(compute_duration(compute_s), params):
        rec = PairRecorder(FFT_SAMPLE_NS, [(0, 1), (1, 0)])
        built, res = _run(data, rec)
        fft = built.job_names.index("fftw")
        mask = built.job_of_flow == fft
        rc = _reconfigs(res)
        out.append({
            "run": label, "completion_s": float(res.completion_ns[mask].max()) * 1e-9,
            "reconfigurations": [{"trigger": r["trigger"], "start_s": r["start_s"], "end_s": r["end_s"],
                                  "circuits_after": r["circuits_after"], "status": r["status"]} for r in rc],
            "peak_gbps": max(rec.gbps) if rec.gbps else 0.0,
            "peak_gbps_one_direction": max((max(v) for v in rec.by_pair.values() if v), default=0.0),
            "windows": [[r["start_s"], r["end_s"]] for r in rc],
            "time_s": rec.times, "gbps": rec.gbps,
            "gbps_rack1_to_rack2": rec.by_pair[(0, 1)], "gbps_rack2_to_rack1": rec.by_pair[(1, 0)],
            # a trigger past the run's end: the run is the plain background run, say so
            **({"notes": res.notes} if res.notes else {}),
        })
        progress()
    return out, {"communication_s": comm, "compute_per_phase_s": compute_s, "phases": phases,
                 "target_s": target}


#: The parameters the source gives: (its value, where it says so).
SOURCE_PARAMS: dict[str, tuple[Any, str]] = {
    "rules": ((100, 5000), "100 and 5000 OF rules pushed"),
    "period": ("10s", "reconfigured every 10 s"),
    "vlan_tag_time": ("0.6s", "1.2 s measured to tag the ToR ports, two per ToR"),
    "push": ("sequential", "rules pushed to each OVS one after the other"),
    "core_bandwidth": ("1Gbps", "the 1 Gbit/s electrical network"),
    "trigger": ("15s", "FFTW reconfigured to topology 2 after 15 s"),
    "fft_ranks": (8, "FFTW on racks 1 and 2, 4 servers a rack, one rank a server"),
    "fft_alone": ("28.7s", "FFTW alone finished at 28.7 s: the calibration target"),
}
#: The parameters the source does not give, and why these values.
ASSUMPTIONS: dict[str, str] = {
    "duration": "the length of an iperf run, read from Fig. 3a, which is not in the text",
    "rule_time": "per rule per switch, calibrated so that 5000 rules take the source's 2.2 s",
    "switching_time": "MEMS switching; the source: tens to hundreds of ms",
    "poll": "the congestion-triggered mode is not in the source",
    "fft_bytes": "the FFT's size is not in the source",
    "fft_phases": "the FFT's phases are not in the source",
    "fft_rules": "the rules pushed in the FFTW runs are not in the source",
}


def parameters(params: Reconfig) -> dict[str, Any]:
    """``params`` with where each comes from (:func:`netsteer.reproduce._params.provenance`).

    >>> p = parameters(Reconfig(rules=(100,)))
    >>> p["changed"]["rules"], sorted(p["assumptions"])[:2]
    ({'value': [100], 'source': [100, 5000]}, ['duration', 'fft_bytes'])
    """
    from dataclasses import asdict

    from ._params import provenance

    values = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(params).items()}
    source = {k: (list(v) if isinstance(v, tuple) else v, note) for k, (v, note) in SOURCE_PARAMS.items()}
    return provenance(values, source, ASSUMPTIONS)


def run(progress: Callable[[], None] = lambda: None, params: Reconfig = Reconfig()) -> dict[str, Any]:
    """Both experiments: ``{"parameters": {...}, "iperf": [...], "fftw": [...],
    "calibration": {...}}``; ``parameters`` says which come from the source."""
    params.check()
    iperf = iperf_runs(progress, params)
    fftw, cal = fftw_runs(progress, params)
    return {"parameters": parameters(params), "iperf": iperf, "fftw": fftw, "calibration": cal}


def steps(params: Reconfig = Reconfig()) -> int:
    """The runs of :func:`run`, for progress bars."""
    return 1 + 2 * len(params.rules) + 1 + 4


STEPS = steps()


def scenarios(rep: dict, params: Reconfig = Reconfig()) -> dict[str, dict[str, Any]]:
    """Every run of a report of :func:`run` as a scenario ``netsteer run`` reruns (with
    the FFT's compute step calibrated in ``rep``), by file name stem."""
    out = {}
    for label, rules, method, data in iperf_scenarios(params):
        name = "none" if not rules and "schedule" not in data["controller"]["hybrid"] else f"{rules}-rules-{method}"
        out[f"scenario-iperf-{name}"] = data
    compute = compute_duration(rep["calibration"]["compute_per_phase_s"])
    for (label, data), name in zip(fftw_scenarios(compute, params), ("alone", "background", "reconfiguration",
                                                                        "congestion")):
        out[f"scenario-fftw-{name}"] = data
    return out


def plot(rep: dict, path_iperf, path_fftw) -> None:
    """Bandwidth over time like the source's Fig. 3, reconfiguration windows shaded,
    throughput axes from 0. Fig. 3a: iperf's one direction, rack 1 to rack 2, the run
    without reconfiguration dashed in black on top (it lies under the others between
    reconfigurations). Fig. 3b: the FFT's throughput per direction, one panel each
    (the source's "bw" of the FFT between the racks peaks at 3.54 Gbit/s on its
    10 Gbit/s circuit: one direction's rate, not the two summed)."""
    from ..report.figures import legend_outside
    from ..report.plots import plt

    colors = ["tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange"]

    def shade(ax, r, col):
        for a, b in r["windows"]:
            if b is not None:
                ax.axvspan(a, b, color=col, alpha=0.12)

    fig, ax = plt.subplots(figsize=(8, 4))
    runs = [r for r in rep["iperf"] if r["method"] == "make-before-break"]
    for r, col in zip(runs, colors):
        if r["reconfigurations"]:
            ax.plot(r["time_s"], r["gbps"], color=col, label=r["run"], lw=1.2, zorder=2)
            shade(ax, r, col)
    for r in runs:  # drawn last: on top of the lines it coincides with
        if not r["reconfigurations"]:
            ax.plot(r["time_s"], r["gbps"], color="black", ls="--", label=r["run"], lw=1.4, zorder=3)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("throughput rack 1 -> rack 2 (Gbit/s)")
    ax.set_ylim(bottom=0)
    ax.set_title("iperf over the circuit (Fig. 3a)")
    legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3)
    _settle_and_save(fig, path_iperf, plt)

    fig, axes = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True, sharey=True)
    for ax, key, what in ((axes[0], "gbps_rack1_to_rack2", "rack 1 -> rack 2"),
                          (axes[1], "gbps_rack2_to_rack1", "rack 2 -> rack 1")):
        # a style each: runs that coincide (with background, before a reconfiguration) stay visible
        for r, col, ls in zip(rep["fftw"], colors, ["-", "--", "-", ":"]):
            ax.plot(r["time_s"], r.get(key, []), color=col, ls=ls, label=r["run"], lw=1.4 if ls != "-" else 1.2,
                    zorder=3 if ls != "-" else 2)
            shade(ax, r, col)
        ax.set_ylabel(f"{what}\n(Gbit/s, one direction)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[1].set_xlabel("time (s)")
    axes[0].set_title("FFTW between racks 1 and 2, throughput per direction (Fig. 3b)")
    legend_outside(axes[0], fontsize=8)
    _settle_and_save(fig, path_fftw, plt)


def _settle_and_save(fig, path, plt) -> None:
    from ..report.figures import settle_layout

    settle_layout(fig)
    fig.savefig(path, dpi=110)
    plt.close(fig)
