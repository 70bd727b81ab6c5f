"""``reproduce --emulate hybrid-reconfig``: the hybrid source's iperf experiment on
real switches, beside the simulator's prediction for the same scenario.

The source's set-up (:data:`netsteer.reproduce.hybrid.IPERF`) is scaled to what
the userspace datapath carries on two shared cores: every rate divided by
``rate_div`` (the 10:1 circuit-to-electrical ratio is kept) and the 10 s period
shortened to ``period_s``. Each run reconfigures the circuit periodically and
pushes ``rules`` extra rules each time, make-before-break or break-before-make:

- a UDP run below the electrical rate counts lost packets by sequence number,
  per 0.1 s interval, and those in the reconfigurations' windows apart
  (make-before-break must lose none there: its detour carries the stream);
- a TCP run measures the average bandwidth;
- the driver times each bundle: the controller's share of each step's delay.

The simulator runs the same scaled scenario, its delay model's per-rule time the
one measured on the switches (a component input), and predicts the average
bandwidth and delay; the report gives both and their difference.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

MODES = ("make_before_break", "break_before_make")


def scenario(rules: int, method: str, *, period_s: float, duration_s: float, rate_div: float) -> dict[str, Any]:
    from ..reproduce.hybrid import IPERF

    d = copy.deepcopy(IPERF)
    t = d["topology"]
    for key in ("server_bandwidth", "core_bandwidth", "circuit_bandwidth"):
        gbps = float(t[key].removesuffix("Gbps"))
        t[key] = f"{gbps * 1e3 / rate_div:g}Mbps"
    d["jobs"][0]["bulk"][0]["duration"] = f"{duration_s:g}s"
    times = np.arange(period_s, duration_s - period_s / 2, period_s)
    sched = [{"at": f"{x:g}s", "circuits": [[1 if i % 2 == 0 else 0, 0, 1]]} for i, x in enumerate(times)]
    d["controller"]["hybrid"].update(method=method.replace("_", "-"), extra_rules=rules, schedule=sched)
    d.pop("driver", None)
    return d


def _built(data):
    from ..scenario import Scenario, ScenarioModel, build_scenario
    return build_scenario(Scenario(ScenarioModel.model_validate(data), None))


def emulated_run(rules: int, mode: str, *, period_s: float, duration_s: float, rate_div: float,
                 udp_fraction: float = 0.5, channel: str = "osken", progress=lambda msg: None) -> dict[str, Any]:
    from .run import controller_share, emulate

    data = scenario(rules, mode, period_s=period_s, duration_s=duration_s, rate_div=rate_div)
    core_bps = float(data["topology"]["core_bandwidth"].removesuffix("Mbps")) * 1e6
    udp = emulate(_built(data), udp_bps=udp_fraction * core_bps, channel=channel, progress=progress)
    tcp = emulate(_built(data), channel=channel, progress=progress)
    shares = (controller_share(udp["controller"], udp["pushes"], udp["decisions"])
              + controller_share(tcp["controller"], tcp["pushes"], tcp["decisions"]))
    delays = [s["delay_s"] for s in shares if s["delay_s"] is not None]
    ctl = [s["controller_delay_s"] for s in shares if s["delay_s"] is not None]
    per_rule = [p["push_s"] / p["flow_mods"] for r in (udp, tcp) for p in r["pushes"] if p["flow_mods"] >= 100]
    f_udp, f_tcp = udp["flows"][0], tcp["flows"][0]
    return {
        "rules": rules, "mode": mode,
        # at the source's rates: the scaled run's times the divisor
        "avg_gbps": None if f_tcp.get("gbps") is None else f_tcp["gbps"] * rate_div,
        "delay_s": float(np.mean(delays)) if delays else None,
        "controller_delay_s": float(np.mean(ctl)) if ctl else None,
        "lost_packets": f_udp.get("lost_packets"),
        # the ones in the reconfigurations' windows: make-before-break must lose none
        "lost_during_reconfig": f_udp.get("lost_during_reconfig"),
        "lost_at_s": f_udp.get("lost_at_s", []),
        "udp_packets": f_udp.get("packets"),
        "reconfigurations": len(shares) // 2,
        "steps": shares,
        "rule_time_s": float(np.median(per_rule)) if per_rule else None,
        "scale": udp["scale"] / rate_div,
        "errors": [f["error"] for f in (f_udp, f_tcp) if "error" in f],
        "series": {"time_s": f_tcp.get("time_s", []), "gbps": [g * rate_div for g in f_tcp.get("series_gbps", [])]},
    }


def simulated(rules: int, mode: str, rule_time_s: float | None, *, period_s: float, duration_s: float,
              rate_div: float) -> dict[str, Any]:
    """The simulator's prediction for the same scaled scenario."""
    from ..reproduce.hybrid import PairRecorder, _reconfigs, _run

    data = scenario(rules, mode, period_s=period_s, duration_s=duration_s, rate_div=rate_div)
    data["driver"] = {"delay": {"rule_time": f"{int((rule_time_s or 0) * 1e9)}ns", "push": "parallel"}}
    rec = PairRecorder(100_000_000, [(0, 1)])
    _, res = _run(data, rec)
    rc = _reconfigs(res)
    delays = [r["delay_s"] for r in rc if r["delay_s"] is not None]
    # topology rates: the scaled run's rate times rate_div
    return {"avg_gbps": rec.total_bytes * 8 / duration_s / 1e9 * rate_div,
            "delay_s": float(np.mean(delays)) if delays else None}


def run(*, rules=(100, 5000), modes=MODES, period_s: float = 2.0, duration_s: float = 6.0, rate_div: float = 100.0,
        channel: str = "osken", progress: Callable[[str], None] = lambda msg: None) -> dict[str, Any]:
    """Every (rules, mode) run, emulated and simulated: ``{"iperf": [...], ...}``."""
    out = []
    for n in rules:
        for mode in modes:
            progress(f"{n} rules, {mode}")
            e = emulated_run(n, mode, period_s=period_s, duration_s=duration_s, rate_div=rate_div, channel=channel,
                             progress=progress)
            s = simulated(n, mode, e["rule_time_s"], period_s=period_s, duration_s=duration_s, rate_div=rate_div)
            e["simulated"] = s
            e["difference"] = {k: (None if e[k] is None or s[k] is None else e[k] - s[k]) for k in ("avg_gbps", "delay_s")}
            out.append(e)
    return {"iperf": out, "channel": channel, "period_s": period_s, "duration_s": duration_s, "rate_divisor": rate_div,
            "goal_controller_delay_s": 0.1}
