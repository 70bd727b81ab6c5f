"""Benchmark: the controller's share of a reconfiguration with 5000 rules, on real OVS.

The hybrid-reconfig testbed (2 racks, 2 ToRs, a core switch and a circuit switch as
Open vSwitch bridges with the userspace datapath, no traffic) gets the same intents
through the ``openflow`` driver over each channel in the same run:

- ``osken``: netsteer's os-ken application (its own process; bundles encoded with
  os-ken, matches and instructions kept once serialized);
- ``ofctl`` (the peer): one ``ovs-ofctl --bundle`` process per switch and change,
  as the driver did before.

Each change is a ``PushRules`` with ``--rules`` extra rules (a larger fabric's rule
count, rewritten every time, so the switch does the work), pushed as one bundle to
the ToR it touches; the figure is the driver's push time for the change (what the
hybrid reconfiguration's steps wait for: the controller's share of the delay). The
first change with a new set of matches is reported apart (``cold``: os-ken encodes
every match once); the median of ``--repeat`` further changes is the figure. For
os-ken the app also splits it: its encoding, and the wait from sending the bundle to
the switch's commit reply (the switch's own work).
The channels alternate, so both see the same machine load.

Needs root and Open vSwitch (scripts/setup.sh). ``--json`` prints one JSON object;
record the figures in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)

    from netsteer.control.intents import PairRule, PushRules
    from netsteer.drivers.openflow.driver import OpenFlowDriver
    from netsteer.drivers.openflow.flows import HybridLayout
    from netsteer.emulate.hybrid_reconfig import _built, scenario
    from netsteer.emulate.run import open_switches
    from netsteer.emulate.testbed import Testbed

    b = _built(scenario(a.rules, "make_before_break", period_s=1.0, duration_s=2.0, rate_div=100))
    lay = HybridLayout.of(b.topology, b.routing)
    times: dict[str, list[float]] = {"osken": [], "ofctl": []}
    cold: dict[str, float] = {}
    split: list[dict] = []  # os-ken: the app's encoding and the wait for the switch
    with Testbed(b.topology) as tb, open_switches(tb, "osken") as osk, open_switches(tb, "ofctl") as ofc:
        drivers = {name: OpenFlowDriver(b.topology, lay, sw, b.hybrid.initial_state(), end_s=600)
                   for name, sw in (("osken", osk), ("ofctl", ofc))}
        try:
            for i in range(a.repeat + 1):
                for name, drv in drivers.items():
                    # both drivers hold the same switches: each starts from its own tables
                    drv.install_all()
                    t0 = time.perf_counter()
                    ok = drv.apply(PushRules(2, (PairRule(0, 1),), extra=a.rules)).ok
                    wall = time.perf_counter() - t0
                    if not ok:
                        raise SystemExit(f"{name}: the change failed: {drv.applied[-1].failed}")
                    assert drv.pushes[-1]["flow_mods"] >= a.rules
                    if i == 0:
                        cold[name] = drv.pushes[-1]["push_s"]
                    else:
                        times[name].append(drv.pushes[-1]["push_s"])
                        if name == "osken":
                            split.append(osk[lay.tors[0]].last)
                    print(f"  {name} change {i}: {drv.pushes[-1]['push_s'] * 1e3:.1f} ms "
                          f"({drv.pushes[-1]['flow_mods']} flow-mods, apply {wall * 1e3:.1f} ms)", file=sys.stderr)
        finally:
            for drv in drivers.values():
                drv.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"rules": a.rules, "repeat": a.repeat, "median_s": med, "cold_s": cold,
           "min_s": {k: min(v) for k, v in times.items()}, "max_s": {k: max(v) for k, v in times.items()},
           "speedup_vs_ofctl": med["ofctl"] / med["osken"], "goal_s": 0.1,
           "osken_encode_s": statistics.median(x["encode_s"] for x in split),
           "osken_switch_s": statistics.median(x["switch_s"] for x in split)}
    if a.json:
        print(json.dumps(out))
    else:
        for k in ("osken", "ofctl"):
            print(f"{k:6s} {a.rules} rules: median {med[k] * 1e3:.1f} ms (min {out['min_s'][k] * 1e3:.1f}, "
                  f"max {out['max_s'][k] * 1e3:.1f}; first change {cold[k] * 1e3:.1f} ms)")
        print(f"os-ken: encoding {out['osken_encode_s'] * 1e3:.1f} ms, send to commit reply "
              f"{out['osken_switch_s'] * 1e3:.1f} ms (medians)")
        print(f"os-ken channel / ovs-ofctl: {out['speedup_vs_ofctl']:.2f}x faster (goal: under 100 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
