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


def smpi_program_binary() -> Path:
    """Compile the SMPI program peer (benchmarks/peers/smpi_program.c) once."""
    src = HERE / "peers" / "smpi_program.c"
    exe = BUILD / "smpi_program"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run(["smpicc", "-O2", str(src), "-o", str(exe)], check=True, capture_output=True)
    return exe


def run_smpi_program(program: list[tuple[str, str | None, int, int]], hosts: list[int],
                     platform_xml: str, cfg: dict[str, str]) -> dict:
    """Run ``program`` (``(op, algorithm, bytes, root)`` per step) on SMPI, ranks on
    ``hosts``; returns the simulated ``seconds`` and the whole process's ``wall_s`` and
    ``peak_rss_bytes``."""
    import os
    import time

    from netsteer.validation.simgrid import parse_output, smpi_algorithm

    exe = smpi_program_binary()
    cfg = dict(cfg)
    args = []
    for op, algo, nbytes, root in program:
        name = smpi_algorithm(op, algo)
        if cfg.get(f"smpi/{op}", name) != name:
            raise ValueError(f"{op} appears twice with different algorithms")
        cfg[f"smpi/{op}"] = name
        args += [op, str(int(nbytes)), str(int(root))]
    with tempfile.TemporaryDirectory(prefix="netsteer-smpi-") as tmp:
        (Path(tmp) / "platform.xml").write_text(platform_xml)
        (Path(tmp) / "hostfile").write_text("".join(f"h{h}\n" for h in hosts))
        cmd = ["smpirun", "-np", str(len(hosts)), "-platform", "platform.xml", "-hostfile", "hostfile",
               *(f"--cfg={k}:{v}" for k, v in cfg.items()), "--log=root.thres:warning", str(exe), *args]
        t0 = time.perf_counter()
        with open(Path(tmp) / "out", "w+") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=tmp)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            out.seek(0)
            text = out.read()
    if status != 0:
        raise RuntimeError(f"smpirun failed ({status}):\n{text[-3000:]}")
    start, end = parse_output(text)
    return {"seconds": end - start, "wall_s": wall, "peak_rss_bytes": usage.ru_maxrss * 1024}
