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
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from ..control.core import Controller, ControllerStack, Inputs

GBIT = 1e9

IPERF = {
    "name": "hybrid-iperf",
    "topology": {"kind": "hybrid", "racks": 2, "servers_per_rack": 1, "server_bandwidth": "10Gbps",
                 "tor_uplinks": 1, "core_bandwidth": "1Gbps", "circuit_switches": 1, "circuit_ports": 4,
                 "circuit_uplinks": 2, "circuit_bandwidth": "10Gbps", "switching_time": "25ms",
                 "link_latency": "1us"},
    "routing": {"engine": "minhop"},
    "jobs": [{"name": "iperf", "bulk": [{"src": 0, "dst": 1, "duration": "60s"}]}],
    "controller": {"hybrid": {"initial": [[0, 0, 1]]}},
    "driver": {"delay": {"rule_time": "0.44ms", "vlan_tag_time": "0.6s", "push": "sequential"}},
}

# measured uncongested FFT time of the source: the calibration target
FFT_ALONE_S = 28.7


def fft_scenario(compute: str, *, background: bool) -> dict[str, Any]:
    """The FFTW-like run on racks 1 and 2 (indices 0, 1); background 2 <-> 3."""
    program = [{"op": "compute", "duration": compute}, {"op": "alltoall", "bytes": "32MiB", "algorithm": "pairwise"}]
    jobs = [{"name": "fftw", "ranks": 8, "placement": "linear", "program": program, "repeat": 20}]
    if background:
        # rack 3's servers and rack 2's exchange iperf traffic (4 streams each way)
        bulk = [{"src": 8 + i, "dst": 4 + i} for i in range(4)] + [{"src": 4 + i, "dst": 8 + i} for i in range(4)]
        jobs.append({"name": "background", "bulk": bulk})
    return {
        "name": "hybrid-fftw",
        "topology": {"kind": "hybrid", "racks": 3, "servers_per_rack": 4, "server_bandwidth": "10Gbps",
                     "tor_uplinks": 1, "core_bandwidth": "1Gbps", "circuit_switches": 2, "circuit_ports": 3,
                     "circuit_uplinks": 1, "circuit_bandwidth": "10Gbps", "switching_time": "25ms",
                     "link_latency": "1us"},
        "routing": {"engine": "minhop"},
        "jobs": jobs,
        # topology 1: 0 - 2 on plane 0, 2 - 1 on plane 1; rack 0 reaches rack 1 through 2
        "controller": {"hybrid": {"hops": 2, "initial": [[0, 0, 2], [1, 2, 1]], "extra_rules": 100}},
        "driver": {"delay": {"rule_time": "0.44ms", "vlan_tag_time": "0.6s", "push": "sequential"}},
    }


TOPOLOGY_2 = [[0, 0, 1], [1, 1, 2]]


class PairRecorder(Controller):
    """Polls the per-rack-pair counters every ``interval`` ns and keeps the rates
    (Gbit/s) of ``pairs`` summed: the bandwidth-over-time curve of a run."""

    name = "recorder"

    def __init__(self, interval: int, pairs):
        super().__init__()
        self.interval, self.pairs = interval, list(pairs)
        self.times: list[float] = []
        self.gbps: list[float] = []
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
        sent = float(sum(c.pair_bytes[a, b] for a, b in self.pairs))
        if self._last is not None and c.time_ns > self._last[0]:
            self.times.append(inp.now / 1e9)
            self.gbps.append((sent - self._last[1]) * 8 / ((c.time_ns - self._last[0]) * 1e-9) / GBIT)
        self._last = (c.time_ns, sent)
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


def iperf_runs(progress: Callable[[], None] = lambda: None) -> list[dict[str, Any]]:
    """The iperf experiment: no reconfiguration, then 100 and 5000 rules, each
    make-before-break and break-before-make."""
    schedule = [{"at": f"{t}s", "circuits": [[1 if i % 2 == 0 else 0, 0, 1]]} for i, t in enumerate(range(10, 60, 10))]
    runs = [("no reconfiguration", None, 0, "make-before-break")]
    runs += [(f"{n} rules, {m}", schedule, n, m) for n in (100, 5000) for m in ("make-before-break", "break-before-make")]
    out = []
    for label, sched, rules, method in runs:
        data = copy.deepcopy(IPERF)
        h = data["controller"]["hybrid"]
        h.update(method=method, extra_rules=rules)
        if sched:
            h["schedule"] = sched
        rec = PairRecorder(100_000_000, [(0, 1)])
        built, res = _run(data, rec)
        duration = 60.0
        sent = rec.total_bytes * 8 / GBIT  # Gbit over the run
        rc = _reconfigs(res)
        delays = [r["delay_s"] for r in rc if r["delay_s"] is not None]
        out.append({
            "run": label, "rules": rules, "method": method, "reconfigurations": len(rc),
            "avg_gbps": sent / duration,
            "reconfig_delay_s": float(np.mean(delays)) if delays else None,
            "windows": [[r["start_s"], r["end_s"]] for r in rc],
            "time_s": rec.times, "gbps": rec.gbps,
        })
        progress()
    return out


def _comm_time(progress) -> float:
    built, res = _run(fft_scenario("0s", background=False))
    progress()
    return res.makespan_ns * 1e-9


def fftw_runs(progress: Callable[[], None] = lambda: None) -> tuple[list[dict[str, Any]], dict]:
    """The FFTW experiment; returns (runs, calibration)."""
    comm = _comm_time(progress)
    phases = 20
    compute_s = (FFT_ALONE_S - comm) / phases
    if compute_s <= 0:
        raise RuntimeError(f"the FFT's communication alone takes {comm:.2f} s, above the calibration target")
    compute = f"{compute_s * 1e9:.0f}ns"
    variants = [
        ("alone", False, {}),
        ("background", True, {}),
        ("background, reconfiguration at 15 s", True, {"schedule": [{"at": "15s", "circuits": TOPOLOGY_2}]}),
        ("background, congestion-triggered", True, {"congestion": {"poll": "200ms", "utilization": 0.9, "hold": 2, "threshold": 0.1}}),
    ]
    out = []
    for label, bg, extra in variants:
        data = fft_scenario(compute, background=bg)
        data["controller"]["hybrid"].update(extra)
        rec = PairRecorder(200_000_000, [(0, 1), (1, 0)])
        built, res = _run(data, rec)
        fft = built.job_names.index("fftw")
        mask = built.job_of_flow == fft
        rc = _reconfigs(res)
        out.append({
            "run": label, "completion_s": float(res.completion_ns[mask].max()) * 1e-9,
            "reconfigurations": [{"trigger": r["trigger"], "start_s": r["start_s"], "end_s": r["end_s"],
                                  "circuits_after": r["circuits_after"], "status": r["status"]} for r in rc],
            "peak_gbps": max(rec.gbps) if rec.gbps else 0.0,
            "windows": [[r["start_s"], r["end_s"]] for r in rc],
            "time_s": rec.times, "gbps": rec.gbps,
        })
        progress()
    return out, {"communication_s": comm, "compute_per_phase_s": compute_s, "phases": phases,
                 "target_s": FFT_ALONE_S}


def run(progress: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """Both experiments: ``{"iperf": [...], "fftw": [...], "calibration": {...}}``."""
    iperf = iperf_runs(progress)
    fftw, cal = fftw_runs(progress)
    return {"iperf": iperf, "fftw": fftw, "calibration": cal}


STEPS = 5 + 5  # runs, for progress bars


def plot(rep: dict, path_iperf, path_fftw) -> None:
    """Bandwidth over time like the source's Fig. 3, reconfiguration windows shaded."""
    from ..report.plots import plt
    for key, path, title in (("iperf", path_iperf, "iperf over the circuit (Fig. 3a)"),
                             ("fftw", path_fftw, "FFTW, rack 1 <-> rack 2 (Fig. 3b)")):
        fig, ax = plt.subplots(figsize=(8, 4))
        colors = ["tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange"]
        runs = [r for r in rep[key] if key == "fftw" or r["method"] == "make-before-break"]
        for r, col in zip(runs, colors):
            ax.plot(r["time_s"], r["gbps"], color=col, label=r["run"], lw=1.2)
            for a, b in r["windows"]:
                if b is not None:
                    ax.axvspan(a, b, color=col, alpha=0.12)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("bandwidth (Gbit/s)")
        ax.set_title(title)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
