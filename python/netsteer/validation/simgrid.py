"""Run an MPI operation under SimGrid's SMPI on netsteer's fat tree, and compare.

SimGrid is a reference peer, never a runtime dependency: this module needs Debian's
``libsimgrid-dev`` (``smpicc``, ``smpirun``) only when it is called.

What makes the two comparable
-----------------------------
The platform is a SimGrid ``<cluster topology="FAT_TREE">`` with the parameters of
:func:`netsteer.topology.pgft.pgft` (same node order, so host ``i`` is ``h<i>``), and
``sharing_policy="SPLITDUPLEX"`` (SimGrid's default for clusters, written out anyway):
each cable is two independent directions, as netsteer's channels are. SMPI runs
with the options of :data:`SMPI_CONFIG`, which switch off everything netsteer does not
model (each is explained there). The collective algorithm is pinned with
``--cfg=smpi/<op>:<name>``, using the SMPI name of the netsteer algorithm.

Examples
--------
>>> print(platform_xml(2, [4, 4], [1, 2], [1, 1], 10e9, 1000).splitlines()[3].strip())
<cluster id="ft" prefix="h" suffix="" radical="0-15" speed="1Gf"
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import Callable, Sequence

from ..errors import NetsteerError
from ..traffic import collectives as coll

BENCH_SOURCE = Path(__file__).with_name("smpi") / "collbench.c"

#: Options given to every smpirun, and why.
SMPI_CONFIG: dict[str, str] = {
    # the fluid max-min model whose weighting netsteer's "cm02" sharing reproduces
    # (no bandwidth or latency factors: those belong to LV08 and SMPI's model)
    "network/model": "CM02",
    # CM02 adds, for every flow, a reverse flow at 5% on the way back (TCP acks);
    # netsteer does not model acks
    "network/crosstraffic": "0",
    # SMPI's piecewise factors only apply under network/model:SMPI; pinned to 1 so that
    # a future default cannot creep in
    "smpi/bw-factor": "65472:1",
    "smpi/lat-factor": "65472:1",
    # per-message software overheads (send, isend, recv): none in netsteer
    "smpi/os": "0:0:0:0:0",
    "smpi/ois": "0:0:0:0:0",
    "smpi/or": "0:0:0:0:0",
    # every message is a rendezvous that the sender waits for, as netsteer's
    # rendezvous DAG assumes (SMPI's default detaches sends below 64 KiB)
    "smpi/async-small-thresh": "0",
    "smpi/send-is-detached-thresh": "0",
    # no simulated time from MPI_Wtime itself (10 ns by default) or from user code
    "smpi/wtime": "0",
    "smpi/simulate-computation": "no",
    "smpi/host-speed": "1Gf",
    "smpi/init": "0",
    # shared buffers are mapped block by block: big blocks keep the mappings under the
    # kernel's vm.max_map_count with 256 ranks and 16 MiB buffers
    "smpi/shared-malloc-blocksize": str(1 << 26),
}


# --------------------------------------------------------------------------------------
# platform
# --------------------------------------------------------------------------------------


def platform_xml(
    levels: int,
    down: Sequence[int],
    up: Sequence[int],
    parallel: Sequence[int] | None,
    bandwidth_bps: float,
    latency_ns: int,
    *,
    loopback_bps: float = 1e15,
) -> str:
    """A SimGrid platform: one FAT_TREE cluster with netsteer's PGFT parameters.

    Parameters
    ----------
    levels, down, up, parallel
        As in :func:`netsteer.topology.pgft.pgft` (and SimGrid's ``topo_parameters``).
    bandwidth_bps : float
        Every cable, each direction, bits per second.
    latency_ns : int
        Every cable.
    loopback_bps : float
        Bandwidth of a host to itself. Without a loopback SimGrid routes a rank's
        message to itself up to the leaf switch and back, loading the host's cable;
        several SMPI algorithms copy buffers that way (``rdb``, ``lr``). netsteer moves
        nothing for them, so the loopback is made free: huge bandwidth, no latency.
    """
    parallel = list(parallel) if parallel is not None else [1] * len(down)  # not levels: it may be huge
    for name, v in (("down", down), ("up", up), ("parallel", parallel)):
        if len(v) != levels:
            raise NetsteerError(f"{name} has {len(v)} entries for {levels} levels", field=name)
    n_hosts = prod(down)
    topo = f"{levels};{_csv(down)};{_csv(up)};{_csv(parallel)}"
    return (
        "<?xml version='1.0'?>\n"
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
        '<platform version="4.1">\n'
        f'  <cluster id="ft" prefix="h" suffix="" radical="0-{n_hosts - 1}" speed="1Gf"\n'
        f'           bw="{bandwidth_bps:.17g}bps" lat="{int(latency_ns)}ns"\n'
        f'           topology="FAT_TREE" topo_parameters="{topo}" sharing_policy="SPLITDUPLEX"\n'
        f'           loopback_bw="{loopback_bps:.17g}bps" loopback_lat="0ns"/>\n'
        "</platform>\n"
    )


def platform_from_topology(topo) -> str:
    """:func:`platform_xml` for a topology built by :func:`netsteer.topology.pgft.pgft`.

    SimGrid's cluster has one bandwidth and one latency for every cable, so the
    topology must too.
    """
    meta = topo.meta
    if meta.get("kind") != "pgft":
        raise NetsteerError(f"SimGrid comparison needs a pgft topology, got {meta.get('kind')!r}")
    bws = set(topo.link_bandwidth.tolist())
    lats = set(topo.link_latency_ns.tolist())
    if len(bws) != 1 or len(lats) != 1:
        raise NetsteerError(
            "SimGrid's FAT_TREE cluster has one bandwidth and latency for all cables; "
            f"this topology has {len(bws)} bandwidths and {len(lats)} latencies"
        )
    return platform_xml(meta["levels"], meta["down"], meta["up"], meta["parallel"],
                        bws.pop(), lats.pop())


def _csv(v: Sequence[int]) -> str:
    return ",".join(str(int(x)) for x in v)


# --------------------------------------------------------------------------------------
# running smpirun
# --------------------------------------------------------------------------------------


def available() -> bool:
    """Whether ``smpicc`` and ``smpirun`` are on the PATH."""
    return shutil.which("smpicc") is not None and shutil.which("smpirun") is not None


def compile_bench(cache_dir: str | os.PathLike | None = None) -> Path:
    """Compile ``smpi/collbench.c`` with ``smpicc`` once per source version."""
    src = BENCH_SOURCE.read_bytes()
    tag = hashlib.sha256(src).hexdigest()[:12]
    cache = Path(cache_dir or Path(tempfile.gettempdir()) / "netsteer-smpi")
    cache.mkdir(parents=True, exist_ok=True)
    exe = cache / f"collbench-{tag}"
    if exe.exists():
        return exe
    if not available():
        raise NetsteerError("smpicc/smpirun not found; install Debian's libsimgrid-dev")
    tmp = cache / f"collbench-{tag}.{os.getpid()}.tmp"
    proc = subprocess.run(["smpicc", "-O2", str(BENCH_SOURCE), "-o", str(tmp)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"smpicc failed:\n{proc.stderr}")
    tmp.replace(exe)  # atomic: concurrent test workers may compile at once
    return exe


@dataclass
class SmpiRun:
    """One smpirun: the simulated time and how it was obtained."""

    seconds: float
    start: float
    end: float
    wall_s: float
    command: list[str]
    output: str = field(repr=False, default="")


_LINE = re.compile(r"netsteer-bench op=(\S+) bytes=(\d+) ranks=(\d+)")
_RANK = re.compile(r"netsteer-rank (\d+) start=(\S+) end=(\S+)")


def parse_output(text: str) -> tuple[float, float]:
    """(start, end) simulated seconds: the earliest rank's start and the latest
    rank's end, from collbench's per-rank lines.

    >>> parse_output("netsteer-rank 0 start=0 end=1.5e-06\\nnetsteer-rank 1 start=1e-07 end=2e-06\\n"
    ...              "netsteer-bench op=bcast bytes=8 ranks=2\\n")
    (0.0, 2e-06)
    """
    head = _LINE.search(text)
    ranks = _RANK.findall(text)
    if not head or not ranks:
        raise RuntimeError(f"no netsteer-bench lines in smpirun output:\n{text[-2000:]}")
    if len({int(r) for r, _, _ in ranks}) != int(head.group(3)):
        raise RuntimeError(f"expected {head.group(3)} rank lines, got {len(ranks)}:\n{text[-2000:]}")
    return min(float(s) for _, s, _ in ranks), max(float(e) for _, _, e in ranks)


def smpi_algorithm(op: str, algorithm: str | None) -> str | None:
    """SMPI's name for netsteer's algorithm (None for a point-to-point send).

    >>> smpi_algorithm("allreduce", "recursive_doubling")
    'rdb'
    """
    if op == "send":
        return None
    return coll.lookup(op, algorithm).smpi


def run_smpi(
    op: str,
    nbytes: int,
    ranks: int,
    *,
    levels: int,
    down: Sequence[int],
    up: Sequence[int],
    parallel: Sequence[int] | None = None,
    bandwidth_bps: float,
    latency_ns: int,
    algorithm: str | None = None,
    root: int = 0,
    hosts: Sequence[int] | None = None,
    extra_cfg: dict[str, str] | None = None,
    timeout_s: float = 1800,
    workdir: str | os.PathLike | None = None,
    details: bool = False,
) -> float | SmpiRun:
    """Simulate one MPI operation with smpirun; return its time in seconds.

    The time runs from the earliest rank entering the operation to the last one
    leaving it (all ranks enter at simulated time 0).

    Parameters
    ----------
    op, nbytes, algorithm, root
        As in :func:`netsteer.traffic.collectives.expand`; ``op="send"`` sends from
        rank 0 to rank ``root`` (1 if 0).
    ranks : int
    levels, down, up, parallel, bandwidth_bps, latency_ns
        The fat tree, as in :func:`platform_xml`.
    hosts : sequence of int, optional
        Host of each rank (linear placement by default).
    extra_cfg : dict, optional
        More ``--cfg`` options; they override :data:`SMPI_CONFIG`.
    details : bool
        Return a :class:`SmpiRun` instead of the seconds.
    """
    exe = compile_bench()
    hosts = list(hosts) if hosts is not None else list(range(ranks))
    if len(hosts) != ranks:
        raise NetsteerError(f"{len(hosts)} hosts for {ranks} ranks")
    n_hosts = prod(down)
    if max(hosts) >= n_hosts or min(hosts) < 0:
        raise NetsteerError(f"hosts must be in 0..{n_hosts - 1}")
    cfg = dict(SMPI_CONFIG)
    algo = smpi_algorithm(op, algorithm)
    if algo is not None:
        cfg[f"smpi/{op}"] = algo
    cfg.update(extra_cfg or {})
    if op == "send" and root == 0:
        root = 1
    with tempfile.TemporaryDirectory(dir=workdir, prefix="netsteer-smpi-") as tmp:
        plat = Path(tmp) / "platform.xml"
        plat.write_text(platform_xml(levels, down, up, parallel, bandwidth_bps, latency_ns))
        hostfile = Path(tmp) / "hostfile"
        hostfile.write_text("".join(f"h{h}\n" for h in hosts))
        cmd = ["smpirun", "-np", str(ranks), "-platform", str(plat), "-hostfile", str(hostfile)]
        cmd += [f"--cfg={k}:{v}" for k, v in cfg.items()]
        cmd += ["--log=root.thres:warning", str(exe), op, str(int(nbytes)), str(int(root))]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
        wall = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"smpirun failed ({proc.returncode}):\n{out[-3000:]}")
    start, end = parse_output(out)
    run = SmpiRun(end - start, start, end, wall, cmd, out)
    return run if details else run.seconds


# --------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One comparison: an operation on a fat tree.

    ``bandwidth_bps`` and ``latency_ns`` apply to every cable.
    """

    op: str
    algorithm: str | None
    ranks: int
    nbytes: int
    levels: int
    down: tuple[int, ...]
    up: tuple[int, ...]
    parallel: tuple[int, ...] | None = None
    bandwidth_bps: float = 10e9
    latency_ns: int = 1000
    root: int = 0

    def tree(self) -> dict:
        """Keyword arguments of :func:`run_smpi` and :func:`netsteer.topology.pgft.pgft`."""
        return dict(levels=self.levels, down=list(self.down), up=list(self.up),
                    parallel=list(self.parallel) if self.parallel else [1] * self.levels)

    @property
    def name(self) -> str:
        up = ",".join(map(str, self.up))
        return f"{self.op}/{self.algorithm or 'default'} p={self.ranks} {self.nbytes}B up=[{up}]"


@dataclass
class Comparison:
    """SimGrid's time next to netsteer's, for one case."""

    case: Case
    smpi_s: float
    netsteer_s: float
    smpi_wall_s: float = float("nan")
    netsteer_wall_s: float = float("nan")

    @property
    def error(self) -> float:
        """Relative difference of netsteer to SimGrid (0.01 is 1%)."""
        return (self.netsteer_s - self.smpi_s) / self.smpi_s

    def row(self) -> str:
        return (f"{self.case.name:<48} smpi {self.smpi_s * 1e3:10.4f} ms  "
                f"netsteer {self.netsteer_s * 1e3:10.4f} ms  err {self.error * 100:+7.3f}%  "
                f"wall {self.smpi_wall_s:7.2f}s / {self.netsteer_wall_s:6.3f}s")


Predictor = Callable[[Case], float]
"""``predictor(case) -> seconds``: netsteer's (or any model's) time for a case."""


def netsteer_predictor(sharing: str = "cm02", routing: str = "dmodk", *,
                       rendezvous: bool = True,
                       envelope_bytes: int = coll.MPI_ENVELOPE_BYTES) -> Predictor:
    """A predictor that expands the case into a DAG and runs netsteer's simulator.

    Messages carry SMPI's 16-byte envelope unless ``envelope_bytes`` says otherwise.
    """

    def predict(case: Case) -> float:
        from ..routing import build_routing
        from ..sim import simulate
        from ..topology.pgft import pgft
        from ..traffic.dag import FlowDag

        t = case.tree()
        topo = pgft(t["levels"], t["down"], t["up"], t["parallel"],
                    link_bandwidth=case.bandwidth_bps, link_latency_ns=case.latency_ns)
        dag = FlowDag()
        hosts = list(range(case.ranks))
        if case.op == "send":
            coll.point_to_point(dag, hosts, 0, case.root or 1, case.nbytes,
                                rendezvous=rendezvous, envelope_bytes=envelope_bytes)
        else:
            coll.expand(dag, case.op, case.algorithm, hosts, case.nbytes, root=case.root,
                        rendezvous=rendezvous, envelope_bytes=envelope_bytes)
        res = simulate(topo, build_routing(topo, routing), dag, sharing=sharing)
        return res.makespan_ns * 1e-9

    return predict


def compare(cases: Sequence[Case], predictor: Predictor | None = None,
            **smpi_kw) -> list[Comparison]:
    """Run every case under SimGrid and under ``predictor`` (netsteer's by default)."""
    predictor = predictor or netsteer_predictor()
    out = []
    for c in cases:
        run = run_smpi(c.op, c.nbytes, c.ranks, algorithm=c.algorithm, root=c.root,
                       bandwidth_bps=c.bandwidth_bps, latency_ns=c.latency_ns,
                       details=True, **c.tree(), **smpi_kw)
        t0 = time.perf_counter()
        mine = predictor(c)
        wall = time.perf_counter() - t0
        out.append(Comparison(c, run.seconds, mine, run.wall_s, wall))
    return out
