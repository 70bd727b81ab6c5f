"""Benchmark: UnisonFlow controller decisions per second.

A 1024-rank job on a 3-level fat-tree (PGFT levels=3 down=[8,8,16] up=[1,8,8],
1,024 hosts, 320 switches), one rank per host. Packet-ins are handled end to end:
decode of the 48-bit tag (with the communicator's size check), dispatch to the
job's module, rule generation and the rules' check against the fabric. Each case
handles distinct tags (every packet-in is a table miss, as on a cold network):

- ``send`` (no module: the default ``ecmp`` module), random rank pairs;
- ``reduce`` pinned through one top switch (``pin``), random rank pairs;
- ``allreduce`` recursive doubling pairs (``allreduce-disjoint``; its plan for the
  communicator is made at the first packet-in and counted in the time);
- ``bcast`` multicast trees (``bcast-multicast``), one per root: each a tree over
  the whole fabric.

Also the same packet-ins through the controller core's ``decide`` (``PacketIn``
reports in, ``InstallTagRules`` intents out).

The peer (``--peer-python`` an interpreter with os-ken, e.g. a venv with
``pip install os-ken``): ``peers/osken_packet_in.py`` does what an os-ken app's
packet-in handler does with the OpenFlow library (parse the PACKET_IN from its wire
bytes, parse the frame, build and serialize one FLOW_MOD per switch) for the routes
netsteer's ``ecmp`` module chose, so it does no routing at all; netsteer makes the
decision and its rules but serializes no OpenFlow (the openflow driver would).
Rates are per second of the process's CPU time (one core;
the machine is shared, so wall-clock rates are printed beside them), the median of
5 runs after a warm-up.

``--json`` prints one JSON object; record the figures in RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from netsteer.control.core import Inputs
from netsteer.control.driver import NetworkView
from netsteer.topology.pgft import pgft
from netsteer.unisonflow.controller import InterconnectController, PacketIn
from netsteer.unisonflow.fabric import Fabric
from netsteer.unisonflow.modules import JobView
from netsteer.unisonflow.modules.allreduce import rounds
from netsteer.unisonflow.tags import Tag

RANKS = 1024


def controller(fabric):
    mods = [{"module": "pin", "primitive": "reduce", "via": "s3_0"},
            {"module": "allreduce-disjoint", "algorithm": "recursive_doubling"},
            {"module": "bcast-multicast"}]
    return InterconnectController(fabric, {0: (JobView(0, {0: list(range(RANKS))}), mods)})


def cases(rng):
    pairs = rng.choice(RANKS, size=(20000, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = np.unique(pairs, axis=0)[:10000]
    rng.shuffle(pairs)
    return {
        "send (ecmp default)": [Tag("send", 0, 0, int(s), int(d)).value() for s, d in pairs],
        "reduce (pin)": [Tag("reduce", 0, 0, int(s), int(d)).value() for s, d in pairs],
        "allreduce (disjoint)": [Tag("allreduce", 0, 0, s, d).value()
                                 for rnd in rounds("recursive_doubling", RANKS) for s, d in rnd],
        "bcast (multicast tree)": [Tag("bcast", 0, 0, r, r).value() for r in range(0, RANKS, 4)],
    }


def measure(fabric, tags, runs=5):
    rates = []
    for _ in range(runs + 1):
        c = controller(fabric)
        w0, t0 = time.perf_counter(), time.process_time()
        n_rules = 0
        for i, t in enumerate(tags):
            n_rules += len(c.handle(t, i).rules)
        dt, wall = time.process_time() - t0, time.perf_counter() - w0
        rates.append((len(tags) / dt, n_rules / dt, n_rules / len(tags), len(tags) / wall))
    rates = rates[1:]  # the first run warms caches
    return {"decisions_per_s": statistics.median(r[0] for r in rates),
            "decisions_per_wall_s": statistics.median(r[3] for r in rates),
            "rules_per_s": statistics.median(r[1] for r in rates), "rules_per_decision": rates[0][2],
            "packet_ins": len(tags)}


def measure_decide(fabric, tags, runs=5):
    rates = []
    for _ in range(runs + 1):
        c = controller(fabric)
        evs = [PacketIn(i, 0, t) for i, t in enumerate(tags)]
        t0 = time.process_time()
        out = c.decide(Inputs(0, NetworkView(0, frozenset()), evs))
        dt = time.process_time() - t0
        assert len(out) == len(tags)
        rates.append(len(tags) / dt)
    return statistics.median(rates[1:])


def peer(python: str, fabric, tags) -> dict:
    """os-ken's per-packet-in work for the routes netsteer chose (see the module text)."""
    c = controller(fabric)
    spec = []
    for t in tags:
        rules = c.handle(t).rules
        spec.append([t, [[r.switch, r.outputs[0][0]] for r in rules], rules[-1].outputs[0][1]])
    script = Path(__file__).parent / "peers" / "osken_packet_in.py"
    p = subprocess.run([python, str(script)], input=json.dumps({"decisions": spec}), capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"the os-ken peer failed: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--peer-python", help="a Python with os-ken, for the peer (default: skip it)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    topo = pgft(3, [8, 8, 16], [1, 8, 8], link_bandwidth=100e9, link_latency_ns=1000)
    fabric = Fabric(topo)
    setup = time.perf_counter() - t0
    rng = np.random.default_rng(1)
    res = {"machine": platform.node(), "python": platform.python_version(), "hosts": topo.n_hosts,
           "switches": topo.n_switches, "fabric_setup_s": round(setup, 3), "cases": {}}
    all_tags = []
    for name, tags in cases(rng).items():
        res["cases"][name] = measure(fabric, tags)
        all_tags += tags
    res["decide_loop_decisions_per_s"] = measure_decide(fabric, cases(np.random.default_rng(2))["reduce (pin)"])
    if args.peer_python:
        res["peer"] = peer(args.peer_python, fabric, cases(np.random.default_rng(1))["send (ecmp default)"][:2000])
        res["peer"]["ratio"] = res["cases"]["send (ecmp default)"]["decisions_per_s"] / res["peer"]["decisions_per_s"]
    if args.json:
        print(json.dumps(res))
        return
    print(f"fat-tree: {res['hosts']} hosts, {res['switches']} switches (fabric set-up {setup:.2f} s)")
    print(f"{'case':<26}{'packet-ins':>11}{'decisions/s':>14}{'rules/s':>14}{'rules each':>12}{'wall dec/s':>12}")
    for name, r in res["cases"].items():
        print(f"{name:<26}{r['packet_ins']:>11}{r['decisions_per_s']:>14,.0f}{r['rules_per_s']:>14,.0f}"
              f"{r['rules_per_decision']:>12.1f}{r['decisions_per_wall_s']:>12,.0f}")
    print(f"through decide() (PacketIn -> InstallTagRules), reduce (pin): {res['decide_loop_decisions_per_s']:,.0f} decisions/s")
    if "peer" in res:
        pr = res["peer"]
        print(f"os-ken peer (parse PACKET_IN, build + serialize FLOW_MODs, routes given): "
              f"{pr['decisions_per_s']:,.0f} packet-ins/s, {pr['flow_mods_per_s']:,.0f} flow-mods/s; "
              f"netsteer send (ecmp) is {pr['ratio']:.1f}x")


if __name__ == "__main__":
    main()
