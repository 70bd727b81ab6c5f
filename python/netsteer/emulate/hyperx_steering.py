"""The flexible-HyperX source's experiment with real MPICH traffic on the testbed.

The source's 16-node flexible HyperX (:func:`netsteer.reproduce.hyperx.testbed`:
8 packet switches EPS1..EPS8 in two fully meshed groups of four, every cable
between the groups through one SiP circuit switch) is built as namespaces and
Open vSwitch bridges (:mod:`.testbed`); the SiP switch is a bridge that holds
port-to-port flows only. The packet switches hold minimal dimension-order tables
for the circuits in force (:func:`netsteer.routing.dor.dor`, as OpenFlow by
:func:`.fabric_routes.routing_tables`).

A ring all-reduce (``programs/ring_allreduce.c``, unmodified, compiled with MPICH,
one rank per node, ranks placed as the source's ring:
:func:`netsteer.reproduce.hyperx.placement`) runs twice on the same testbed:

1. ``standard``: the standing circuits (the plain HyperX);
2. ``steered``: the steering controller (:func:`netsteer.control.steering.plan_steering`)
   plans circuits for the ring's demand; the driver writes the new crossbar and
   the packet switches' new tables, all in one bundle per switch, through os-ken
   (or ``ovs-ofctl``), then the all-reduce runs again.

The steering happens between the two runs, as the source steers once before its
job (the SiP switching time is paid once). Each run reports the ring's bus
bandwidth, ``2 (p - 1) / p`` times the buffer over the all-reduce time, per
iteration (the slowest rank's time), and the program checks every element of
every result. The transmit counters of the EPS7-EPS8 cable (both directions) and
of the EPS1 and EPS2 circuit ports are sampled throughout (the source's Fig. 3).

The simulator's prediction is the same ring, placement and circuits on the same
topology at the testbed's rates (:func:`netsteer.reproduce.hyperx.simulate_training`).
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..control.steering import circuit_ends, pairs_of
from ..errors import NetsteerError
from ..reproduce.hyperx import LINK_GBPS, RING, eps_index, placement, simulate_training, testbed
from .counters import Sampler, sampling
from .fabric_routes import routing_tables
from .mpi import MpiHosts, compile_program
from .testbed import Testbed

RANKS = 16
#: the fastest link's emulated rate: 16 ring streams of several hops each through
#: the userspace datapath on two shared cores (see docs/openflow.md)
RATE_BPS = 16e6
MAX_RUN_S = 900.0  # both jobs, on a shared machine
SLOWEST_SHARE = 0.4  # of the model's speed: the slowest this testbed was seen to run a ring (0.6-0.88 measured)
STARTUP_S = 15.0  # MPICH's launch and wire-up across 16 namespaces


def parse(stdout: str) -> dict[str, Any]:
    """The program's output: per-iteration seconds and the result check.

    >>> parse("allreduce 0 seconds 1.5 at 100.5\\nallreduce 1 seconds 1.25 at 101.75\\ncheck ok\\n")
    {'seconds': [1.5, 1.25], 'at': [100.5, 101.75], 'check': 'ok'}
    """
    secs, at, check = [], [], None
    for line in stdout.splitlines():
        x = line.split()
        if len(x) == 6 and x[0] == "allreduce" and x[4] == "at":
            secs.append(float(x[3]))
            at.append(float(x[5]))
        elif x[:1] == ["check"]:
            check = " ".join(x[1:])
    return {"seconds": secs, "at": at, "check": check}


def bus_bps(nbytes: int, seconds: float, p: int = RANKS) -> float:
    """A ring all-reduce's bus bandwidth: each rank sends ``2 (p - 1) / p`` of the
    buffer, so this is each ring stream's rate (bit/s).

    >>> bus_bps(1_600_000, 1.0)
    24000000.0
    """
    return 2 * (p - 1) / p * nbytes * 8 / seconds


def _watched(topo) -> dict[str, tuple[int, int]]:
    """Name -> (switch node, port) whose transmit counter is sampled: the EPS7-EPS8
    cable both ways and EPS1's and EPS2's ports into the SiP switch."""
    eps = {k: int(topo.switches[eps_index(k)]) for k in (1, 2, 7, 8)}
    links = {f"EPS{a}->EPS{b}": (eps[a], eps[b]) for a, b in ((7, 8), (8, 7))}
    links.update({f"EPS{k}->SiP": (eps[k], topo.node("sip")) for k in (1, 2)})
    return {name: (s, next(p for p, n, _ in topo.neighbors(s) if n == t)) for name, (s, t) in links.items()}


def _install(switches, tabs) -> float:
    """Every switch's whole table, one bundle each; returns the seconds it took."""
    t0 = time.monotonic()
    for node, tab in tabs.items():
        switches[node].replace(tab.flow_lines(), tab.group_lines())
    return time.monotonic() - t0


def steer(switches, topo, tables: dict, old: dict, new: dict,
          settle: Callable[[], None] = lambda: None) -> tuple[dict, list[dict]]:
    """Carry out a circuit change on the switches make-before-break, move by move
    (:func:`netsteer.control.circuit_moves.moves`): the packet switches' routes off the
    move's circuits (minimal routes over the circuits that stand), the crossbar, the
    routes for the new circuits. Each step is one bundle per switch that changes
    (:func:`netsteer.drivers.openflow.flows.diff`: atomic, only what differs). Where
    the circuits that stand cannot carry every host's traffic, that move goes
    break-before-make (said in its step). After each step that changed something,
    ``settle`` puts it in force in the data plane before the next one
    (:meth:`netsteer.emulate.testbed.Testbed.settle`: a committed bundle is not yet what
    cached datapath flows forward by). Returns the new tables and the steps, timed."""
    from ..control.circuit_moves import moves
    from ..drivers.openflow.flows import diff
    from ..errors import RoutingError
    from ..routing.dor import dor

    tables = dict(tables)
    steps = []

    def push(what: str, target: dict, nodes) -> None:
        t0 = time.monotonic()
        n = 0
        for node in nodes:
            lines = diff(tables[node], target[node])
            if lines:
                switches[node].bundle(lines)
                tables[node] = target[node]
                n += len(lines)
        if n:
            settle()
        steps.append({"step": what, "changes": n, "s": round(time.monotonic() - t0, 4)})

    packet = [int(s) for s in topo.switches if int(s) not in new]
    for mv in moves(old, new):
        try:
            detour = routing_tables(dor(topo, circuits=mv.detour), mv.detour)
        except RoutingError:
            detour = None
        if detour is not None:
            push(f"routes off ports {list(mv.ports)}", detour, packet)
        else:
            steps.append({"step": f"no detour around ports {list(mv.ports)}: break-before-make", "changes": 0, "s": 0.0})
        after = routing_tables(dor(topo, circuits=mv.after), mv.after)
        push(f"circuits {list(mv.ports)}", after, [mv.switch])
        push("routes on the new circuits", after, packet)
    return tables, steps


class _Steering:
    """The plan, carried out once by :meth:`do` (:func:`steer`), timed."""

    def __init__(self, switches, topo, tables, old, new, progress, settle=lambda: None):
        self.args, self.progress = (switches, topo, tables, old, new, settle), progress
        self.steps: list[dict] = []
        self.ns: tuple[int, int] | None = None

    def do(self) -> None:
        t0 = time.time_ns()
        _, self.steps = steer(*self.args)
        self.ns = (t0, time.time_ns())
        self.progress(f"steered in {(self.ns[1] - t0) * 1e-9:.2f} s: {len(self.steps)} steps, "
                      f"{sum(x['changes'] for x in self.steps)} rule changes")


def _run_steered(m, job: list, timeout_s: float, after: int, steer_now) -> Any:
    """Run ``job`` (program, args, hosts) on ``m`` and call ``steer_now`` once
    ``after`` all-reduces have printed their lines; the job's result (its error
    raised here)."""
    ended = threading.Event()
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            box["r"] = m.run(*job, timeout=timeout_s)
        except BaseException as e:  # noqa: BLE001 -- raised below, in the caller's thread
            box["error"] = e
        finally:
            ended.set()

    th = threading.Thread(target=go, daemon=True)
    th.start()
    if _watch_lines(Path(m.dir) / "stdout", after, ended):
        steer_now()
    th.join()
    if "error" in box:
        raise box["error"]
    return box["r"]


def _watch_lines(path: Path, want: int, stop: threading.Event, poll_s: float = 0.05) -> bool:
    """Wait until ``path`` (the job's output, as Hydra forwards it) holds ``want``
    iteration lines; False when ``stop`` is set first (the job ended)."""
    while not stop.is_set():
        try:
            if len(parse(path.read_text(errors="replace"))["seconds"]) >= want:
                return True
        except FileNotFoundError:
            pass
        stop.wait(poll_s)
    return False


def run(iterations: int = 4, nbytes: int = 1 << 20, rate_bps: float = RATE_BPS, channel: str = "osken",
        timeout_s: float | None = None, nice: int = 19, poll_us: int = 200, during: bool = False,
        progress=lambda m: None) -> dict[str, Any]:
    """Both runs on one testbed (module text). Returns the emulated and simulated
    ring bandwidths (bit/s at the testbed's rates, and Gbit/s at the topology's),
    the steering plan and its steps, the sampled link counters and the comparison.

    ``during``: one job of ``2 * iterations`` all-reduces, steered make-before-break
    (:func:`steer`) once ``iterations`` have finished, while the ring runs; the
    all-reduces that ended before the first step are the ``standard`` run, those that
    began after the last the ``steered`` one, and the others ``during``.

    A run this testbed could not finish in :data:`MAX_RUN_S` (the simulator's
    all-reduce times at the testbed's rates, at :data:`SLOWEST_SHARE` of the model's
    speed) is refused before anything starts; each job's timeout follows from the
    same estimate unless ``timeout_s`` is given."""
    from ..control.steering import plan_steering, switch_demand
    from ..routing.dor import dor
    from ..traffic.training import iteration_demand, training_job
    from .run import CHANNELS, open_switches

    if channel not in CHANNELS:
        raise NetsteerError(f"{channel!r} is not a channel; there is {', '.join(CHANNELS)}", field="channel")
    if iterations < 1:
        raise NetsteerError(f"iterations must be at least 1, not {iterations}", field="iterations")
    if during and iterations < 2:
        # steered after the first all-reduce, the second has begun already: none runs
        # wholly after the steering, and the job would run only to be refused
        raise NetsteerError("steering during the job needs at least 2: it steers once that many all-reduces have "
                            "ended, and the one after has begun already", field="iterations")
    if nbytes < 4 * RANKS or nbytes % (4 * RANKS):
        raise NetsteerError(f"the ring splits the buffer in {RANKS} chunks of 32-bit floats: {nbytes} bytes is not "
                            f"a positive multiple of {4 * RANKS}", field="bytes")
    from .mpi import check_management_net

    check_management_net()  # before the testbed: a busy or stale management net refuses the run
    topo = testbed()
    hosts = placement()
    sip = topo.node("sip")
    job = training_job(RANKS, model_bytes=nbytes, compute_ns=0, iterations=1, placement=hosts)
    demand = switch_demand(topo, *iteration_demand(job, topo.n_hosts))
    plan = plan_steering(topo, demand)
    standard = {sip: np.asarray(topo.meta["initial_circuits"][sip])}
    steered = plan.arrays(topo)
    from .testbed import check_machine

    sim = predict(nbytes, iterations, check_machine(topo, max_rate_bps=rate_bps), steered)
    jobs_s = _estimate(sim, iterations, during)
    if sum(jobs_s) > MAX_RUN_S:
        raise NetsteerError(f"{nbytes} B x {iterations} all-reduces would take about {sum(jobs_s):.0f} s on this testbed "
                            f"(the model's all-reduce: {sim['standard']['allreduce_s'][-1]:.2f} s at its rates); at most "
                            f"{MAX_RUN_S:.0f} s: fewer bytes or iterations", field="bytes")
    timeout_s = timeout_s or 2 * max(jobs_s)
    watched = _watched(topo)
    names = {int(topo.switches[eps_index(k)]): f"EPS{k}" for k in range(1, 9)}  # node -> the source's name
    args = [str(2 * iterations if during else iterations), str(nbytes), str(poll_us)]
    runs: dict[str, Any] = {}

    def record(r, parts: dict[str, tuple[int, int]], steer_ns=None) -> None:
        """The job's all-reduces, whole or split at the steering, as runs."""
        out = parse(r.stdout)
        if out["check"] != "ok" or len(out["seconds"]) != int(args[0]):
            raise NetsteerError(f"ring_allreduce gave a wrong result or no times: {r.stdout.strip()[-300:]}",
                                field="program")
        times = _split(out, steer_ns) if steer_ns else {k: out["seconds"] for k in parts}
        for part, (t0, t1) in parts.items():
            secs = times[part]
            if not secs and part != "during":
                raise NetsteerError(f"no all-reduce ran wholly {'before' if part == 'standard' else 'after'} "
                                    "the steering; raise the iterations", field="iterations")
            bps = bus_bps(nbytes, float(np.median(secs))) if secs else None
            runs[part] = {"circuits": _named(names, _circuit_ends(topo, steered if part == "steered" else standard)),
                          "allreduce_s": secs, "check": out["check"], "ring_bps": bps,
                          "ring_gbps_topology": bps and bps * 1e-9 / tb.scale, "start_ns": t0, "end_ns": t1}

    with tempfile.TemporaryDirectory(prefix="netsteer-hx-") as d:
        exe = compile_program("ring_allreduce", d)
        with Testbed(topo, progress=progress, max_rate_bps=rate_bps) as tb, \
                open_switches(tb, channel) as switches, MpiHosts(tb, nice=nice) as m:
            ofctl = {n: _ofctl(tb, n) for n in {s for s, _ in watched.values()}}
            # one sampler per watched counter (each on a switch of its own): each read
            # is an ovs-ofctl process, and read one after another under one stamp the
            # later switches' counters are late
            samplers = {k: Sampler(lambda k=k, s=s, p=p: {k: ofctl[s].port_bytes().get(p, (0, 0))[1]})
                        for k, (s, p) in watched.items()}
            with sampling(samplers.values()):
                tables = routing_tables(dor(topo, circuits=standard), standard)
                push_s = _install(switches, tables)
                progress(f"standard: {sum(len(t.flows) for t in tables.values())} rules in {push_s:.2f} s; "
                         f"ring all-reduce of {nbytes} B x {args[0]}")
                steering = _Steering(switches, topo, tables, standard, steered, progress, tb.settle)
                t0 = time.time_ns()
                if during:
                    r = _run_steered(m, [str(exe), args, hosts], timeout_s, iterations, steering.do)
                    a, b = steering.ns or (None, None)
                    if a is None:
                        raise NetsteerError("the job ended before it could be steered", field="iterations")
                    t1 = time.time_ns()
                    record(r, {"standard": (t0, a), "during": (a, b), "steered": (b, t1)}, steering.ns)
                else:
                    record(m.run(str(exe), args, hosts, timeout=timeout_s), {"standard": (t0, time.time_ns())})
                    steering.do()
                    t0 = time.time_ns()
                    record(m.run(str(exe), args, hosts, timeout=timeout_s), {"steered": (t0, time.time_ns())})
    scale = tb.scale
    out: dict[str, Any] = {
        "inputs": {"ranks": RANKS, "bytes": nbytes, "iterations": iterations, "placement_eps": RING,
                   "placement_hosts": hosts, "link_gbps": LINK_GBPS / 1e9, "channel": channel,
                   "steered": "during the job" if during else "between two jobs"},
        "scale": scale, "link_bps_emulated": LINK_GBPS * scale, "testbed": tb.prefix,
        "steering": {"method": plan.method, "circuits": _named(names, _circuit_ends(topo, steered)),
                     "before_max_channel_busy_s": plan.before["max_channel_busy_s"],
                     "after_max_channel_busy_s": plan.after["max_channel_busy_s"],
                     "steps": steering.steps, "seconds": (steering.ns[1] - steering.ns[0]) * 1e-9,
                     # on the job's clock (between two jobs: the steered one's, so negative)
                     "at_s": [(t - t0) * 1e-9 for t in steering.ns]},
        "simulated": sim, **runs,
    }
    out["compare"] = compare(out)
    out["links"] = _series(samplers, out)
    return out


def _estimate(sim: dict, iterations: int, during: bool) -> list[float]:
    """Seconds each job may take: its all-reduces (and the warm-up) at
    :data:`SLOWEST_SHARE` of the model's speed, plus MPI's start-up.

    >>> _estimate({"standard": {"allreduce_s": [2.0]}, "steered": {"allreduce_s": [1.0]}}, 4, False)
    [40.0, 27.5]
    """
    t = {k: max(sim[k]["allreduce_s"]) / SLOWEST_SHARE for k in ("standard", "steered")}
    if during:
        return [STARTUP_S + (iterations + 1) * t["standard"] + iterations * t["steered"]]
    return [STARTUP_S + (iterations + 1) * t[k] for k in ("standard", "steered")]


def _split(out: dict, steer_ns: tuple[int, int]) -> dict[str, list[float]]:
    """One job's all-reduce times by when they ran against the steering's window
    (each line's end time ``at``, its start that minus its seconds)."""
    parts: dict[str, list[float]] = {"standard": [], "during": [], "steered": []}
    a, b = steer_ns[0] * 1e-9, steer_ns[1] * 1e-9
    for secs, end in zip(out["seconds"], out["at"]):
        parts["standard" if end <= a else "steered" if end - secs >= b else "during"].append(secs)
    return parts


def _ofctl(tb, node):
    from ..drivers.openflow.switch import OfctlSwitch

    return OfctlSwitch(tb.bridges[node])


def _named(names: dict[int, str], ends) -> list[list[str]]:
    """Circuits as the source's switch names, each pair and the list in EPS order."""
    return sorted([*sorted((names[a], names[b]))] for a, b in ends)


def _circuit_ends(topo, circuits) -> list[tuple[int, int]]:
    """The packet switches each circuit of ``circuits`` (node -> port array) joins."""
    return circuit_ends(topo, {n: pairs_of(a) for n, a in circuits.items()})


def predict(nbytes: int, iterations: int, scale: float, steered: dict) -> dict[str, Any]:
    """The simulator's ring bandwidth for both runs on the same topology at the
    testbed's rates (bit/s; ``ring_gbps_topology`` at the topology's rates)."""
    from ..traffic.training import training_job

    topo = testbed(link_bandwidth=LINK_GBPS * scale)
    job = training_job(RANKS, model_bytes=nbytes, compute_ns=0, iterations=max(iterations, 2), placement=placement())
    out = {}
    for key, steer in (("standard", None), ("steered", tuple(p for arr in steered.values() for p in pairs_of(arr)))):
        r = simulate_training(topo, job, steer, sample_ns=1_000_000_000)  # times only: coarse counters
        bps = float(r["ring_gbps"]) * 1e9
        out[key] = {"ring_bps": bps, "ring_gbps_topology": bps * 1e-9 / scale,
                    "allreduce_s": [ns * 1e-9 for ns in r["allreduce_ns"]]}
    return out


def compare(rep: dict) -> dict[str, Any]:
    """Emulated / simulated ring bandwidth per run, and steered / standard both ways."""
    e, s = rep, rep["simulated"]
    return {"standard_emulated_over_simulated": e["standard"]["ring_bps"] / s["standard"]["ring_bps"],
            "steered_emulated_over_simulated": e["steered"]["ring_bps"] / s["steered"]["ring_bps"],
            "speedup_emulated": e["steered"]["ring_bps"] / e["standard"]["ring_bps"],
            "speedup_simulated": s["steered"]["ring_bps"] / s["standard"]["ring_bps"]}


def _series(samplers: dict[str, Sampler], rep: dict) -> dict[str, Any]:
    """The sampled transmit counters as rates (bit/s at the testbed's rates) over
    seconds since the first sample, each run's span on that clock, and each counter's
    failed reads (``gaps``: a rate there is the average across the gap). The first
    sampler's instants are the clock; the other counters are read there, linear
    between their own samples."""
    first = next(iter(samplers.values()))
    stamps = [x[0] for x in first.samples]
    t = np.array(stamps, dtype=np.float64)
    out = {"t_s": ((t[1:] - t[0]) * 1e-9).round(3).tolist(), "bps": {}, "runs": {}}
    for name, sampler in samplers.items():
        v = np.array([sampler.at(ts, name) for ts in stamps], dtype=np.float64)
        out["bps"][name] = (np.diff(v) * 8 / np.maximum(np.diff(t) * 1e-9, 1e-9)).round(0).tolist()
    for key in ("standard", "steered"):
        out["runs"][key] = [(rep[key]["start_ns"] - t[0]) * 1e-9, (rep[key]["end_ns"] - t[0]) * 1e-9]
    # failed reads (seconds on the same clock, why): the rates there span the gap
    out["gaps"] = {name: [[round((g - t[0]) * 1e-9, 3), why] for g, why in sampler.gaps]
                   for name, sampler in samplers.items() if sampler.gaps}
    return out


__all__ = ["bus_bps", "compare", "parse", "predict", "run"]
