"""Benchmark: pFTree on a ~11,000-host 3-level fat-tree vs OpenSM's ftree on ibsim.

Routes pgft(3, [18, 18, 36], [1, 18, 18]) (11,664 hosts, 1,620 36-port switches)
with netsteer's pftree and 8 partitions of random hosts, and with ftree; then
runs OpenSM 3.3's ftree on the same fabric simulated by ibsim (it holds it) and
reads OpenSM's own log for its routing time: from ``fabric_dump_general_info``
(fabric built, routing starts) to ``ftree tables configured``. OpenSM's time
includes building its LID matrices; netsteer's routing time includes ranking
and indexing the fabric. The checks (completeness, loops, deadlock per VL) are
timed separately, and so is the all-to-all profile of ftree's tables that pftree's
figures are set against (pftree profiles its own tables as part of routing). Prints figures (``--json`` for one JSON object); records
nothing by itself: copy the output into benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/bench_pftree.py [--json] [--no-opensm] [--small]
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from netsteer.routing import build_routing
from netsteer.routing.deadlock import PairPolicy, check_deadlock
from netsteer.routing.traffic_profile import profile
from netsteer.topology.ibsim_net import ibsim_args, read_ibsim_net, write_ibsim_net
from netsteer.topology.partitions import Partition
from netsteer.topology.pgft import pgft

_STAMP = re.compile(r"^(\w+ +\d+ [\d:]+) (\d+) ")


def stamp(line: str) -> float:
    m = _STAMP.match(line)
    t = datetime.strptime(f"2000 {m.group(1)}", "%Y %b %d %H:%M:%S")
    return t.timestamp() + int(m.group(2)) / 1e6


def opensm_ftree_time(log: str) -> float:
    """Seconds from OpenSM's fabric summary (routing starts) to ``tables configured``."""
    lines = log.splitlines()
    start = next(l for l in lines if "fabric_dump_general_info" in l)
    end = next(l for l in lines if "tables configured on all switches" in l)
    return stamp(end) - stamp(start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-opensm", action="store_true", help="netsteer only")
    ap.add_argument("--small", action="store_true", help="pgft(3, [8, 8, 16], [1, 8, 8]) (1,024 hosts), for a quick look")
    ap.add_argument("--partitions", type=int, default=8)
    a = ap.parse_args()
    shape = (3, [8, 8, 16], [1, 8, 8]) if a.small else (3, [18, 18, 36], [1, 18, 18])
    out: dict = {"machine": f"{platform.node()} {platform.machine()} {platform.processor() or ''}".strip(),
                 "date": datetime.now().isoformat(timespec="seconds"), "tree": f"pgft{shape}"}
    with tempfile.TemporaryDirectory() as d:
        net = Path(d) / "fabric.net"
        write_ibsim_net(pgft(*shape, link_bandwidth=32e9, link_latency_ns=100), net)
        topo = read_ibsim_net(net)  # the fabric as ibsim numbers it (GUIDs for OpenSM)
        out.update(hosts=topo.n_hosts, switches=topo.n_switches, partitions=a.partitions)
        perm = np.random.default_rng(0).permutation(topo.n_hosts)
        parts = [Partition(f"job{i}", 0x100 + i, {topo.host_node(int(h)): "full" for h in g})
                 for i, g in enumerate(np.array_split(perm, a.partitions))]
        t0 = time.perf_counter()
        ft = build_routing(topo, "ftree")
        out["netsteer_ftree_s"] = round(time.perf_counter() - t0, 3)
        ft_prof = profile(ft, parts)
        del ft
        t0 = time.perf_counter()
        pf = build_routing(topo, "pftree", partitions=parts)
        out["netsteer_pftree_s"] = round(time.perf_counter() - t0, 3)
        out["pftree_vls_used"] = len(set(pf.partition_vl.values()))
        out["pftree_tables"] = pf.choice
        # balance and isolation against ftree's (all-to-all over all hosts; partitions' own traffic)
        out["max_channel_load_ftree_pftree"] = [ft_prof.max_switch_load, pf.profile.max_switch_load]
        out["max_destinations_per_channel_ftree_pftree"] = [ft_prof.max_routes, pf.profile.max_routes]
        out["shared_channels_ftree_pftree"] = [ft_prof.shared_channels, pf.profile.shared_channels]
        t0 = time.perf_counter()
        pf.check()
        out["check_complete_loops_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        check_deadlock(pf, PairPolicy(topo, parts, pf.partition_vl))
        out["check_deadlock_s"] = round(time.perf_counter() - t0, 3)
        del pf
        if not a.no_opensm:
            from netsteer.drivers.opensm.runner import IbFabric

            t0 = time.perf_counter()
            with IbFabric(net, Path(d) / "osm", engine="ftree", ibsim_args=ibsim_args(topo), timeout=3600) as fab:
                out["opensm_subnet_up_s"] = round(time.perf_counter() - t0, 1)
                out["opensm_ftree_s"] = round(opensm_ftree_time(fab.opensm_log.read_text(errors="replace")), 3)
            out["opensm_fabric"] = out["tree"]
            out["ratio_pftree_over_opensm_ftree"] = round(out["netsteer_pftree_s"] / out["opensm_ftree_s"], 3)
            out["ratio_ftree_over_opensm_ftree"] = round(out["netsteer_ftree_s"] / out["opensm_ftree_s"], 3)
    if a.json:
        print(json.dumps(out))
        return
    w = max(len(k) for k in out)
    for k, v in out.items():
        print(f"{k:<{w}}  {v}")


if __name__ == "__main__":
    main()
