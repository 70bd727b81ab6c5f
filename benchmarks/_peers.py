"""The SimGrid peer for benchmarks: build and run benchmarks/peers/simgrid_flows.cpp."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE.parent / "target" / "peers"


def simgrid_flows_binary() -> Path:
    """Compile the s4u peer once (needs Debian libsimgrid-dev)."""
    src = HERE / "peers" / "simgrid_flows.cpp"
    exe = BUILD / "simgrid_flows"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        BUILD.mkdir(parents=True, exist_ok=True)
        cxx = shutil.which("g++") or "c++"
        subprocess.run([cxx, "-O2", "-std=c++17", str(src), "-o", str(exe), "-lsimgrid"], check=True)
    return exe


def run_simgrid_flows(platform_xml: str, flows: list[tuple[str, str, int]], cfg: list[str]) -> dict:
    """Start every flow at t=0 in SimGrid; returns makespan_s and wall_s."""
    exe = simgrid_flows_binary()
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "platform.xml"
        p.write_text(platform_xml)
        f = Path(d) / "flows.txt"
        f.write_text("".join(f"{s} {t} {b}\n" for s, t, b in flows))
        out = subprocess.run(
            [str(exe), str(p), str(f), *cfg, "--log=root.thres:critical"],
            check=True, capture_output=True, text=True,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])
