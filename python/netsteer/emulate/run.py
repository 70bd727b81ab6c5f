"""Run a hybrid scenario on an emulated testbed: the controller on real switches.

The testbed (:mod:`.testbed`) is built, the scenario's hybrid controller runs
through the ``openflow`` driver on the wall clock, the scenario's flows run as
iperf3 streams between the host namespaces, the switches' real counters are read,
and everything is torn down, also after a failure.

Scenario times (flow durations, scheduled reconfigurations) are multiplied by
``time_scale`` and link rates by the testbed's rate scale; both are reported.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import NetsteerError
from ..drivers.openflow import OpenFlowDriver, run_wall_loop
from ..drivers.openflow.flows import HybridLayout
from ..drivers.openflow.osken import OskenController, OskenSwitch
from ..drivers.openflow.switch import OfctlSwitch
from .testbed import MAX_RATE_BPS, Testbed, dpid_of, iperf_json, wait_port

MAX_RUN_S = 120.0  # one emulated run on a shared machine
#: a transfer's deadline: this many times the simulator's time for it, plus SLACK_S
#: (the testbed runs below the model's rates on shared cores, and a reconfiguration
#: takes longer on real switches); the run ends when its flows do, not at a deadline
MARGIN, SLACK_S = 3.0, 2.0
TICK_NS = 100_000_000  # how often the loop looks whether every flow has ended
FIRST_PORT = 5201
#: scenario times are multiplied by this much at most and at least: below, a scaled
#: 100 ms poll would be under a millisecond, far below what a real switch answers in
TIME_SCALE = (0.01, 100.0)


def check_number(value: float, field: str, lo: float, hi: float, unit: str = "") -> float:
    """``value`` if it is a finite number in ``lo..hi``; NetsteerError naming ``field``
    otherwise (NaN fails every comparison, so each check is written to refuse it).

    >>> check_number(2.0, "--period", 0.5, 30, " s")
    2.0
    >>> check_number(float("inf"), "--time-scale", *TIME_SCALE)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: --time-scale: must be a finite number 0.01..100, not inf
    """
    import math

    if not (isinstance(value, (int, float)) and math.isfinite(value) and lo <= value <= hi):
        raise NetsteerError(f"must be a finite number {lo:g}..{hi:g}{unit}, not {value}", field=field)
    return float(value)


@dataclass
class Flow:
    src: int
    dst: int
    start_s: float
    duration_s: float  # a bulk flow's duration; a transfer's deadline (transfer_deadline)
    bytes: int | None = None  # a transfer of this size (None: bulk, for duration_s)
    job: int = 0  # the scenario's job index (jobs.N), for messages


def flows_of(built, time_scale: float, end_s: float) -> list[Flow]:
    """The scenario's bulk flows as iperf3 streams; anything else is refused."""
    if built.spans:
        raise NetsteerError("emulate runs bulk (iperf3) jobs only; this scenario has MPI programs",
                            field="jobs")
    c = built.dag.columns()
    stops = {}
    from ..sim.run import default_controller
    for at, fl in default_controller(built)[1]:
        for f in fl:
            stops[int(f)] = at
    out = []
    for i in range(len(built.dag)):
        # a transfer without a start time is released at 0 (start_ns -1 in the DAG)
        start = max(float(c.start_ns[i]), 0.0) * 1e-9 * time_scale
        job = int(built.job_of_flow[i])
        stop = stops.get(i)
        if stop is None and not built.background[i]:
            if c.dep_offsets[i + 1] > c.dep_offsets[i]:
                raise NetsteerError("emulate runs flows without dependencies only", field="jobs")
            out.append(Flow(int(c.src[i]), int(c.dst[i]), start, 0.0, int(c.bytes[i]), job))
            continue
        dur = (end_s if stop is None else stop * 1e-9 * time_scale) - start
        out.append(Flow(int(c.src[i]), int(c.dst[i]), start, max(dur, 0.5), job=job))
    return out


def transfer_deadline(nbytes: int, sim_s: float | None, time_scale: float, udp_bps: float | None = None,
                      slowest_bps: float = 1e9) -> float:
    """Seconds (on the emulated clock) a transfer of ``nbytes`` may take before it is
    stopped: :data:`MARGIN` times the simulator's time for it (``sim_s``, scenario
    seconds: its own path's rates and its sharing), plus :data:`SLACK_S`; sent as UDP,
    at least its bytes at ``udp_bps`` (iperf3 sends no faster). Without a simulated
    time, its bytes at ``slowest_bps``.

    >>> transfer_deadline(2 << 30, 3.64, 1.0)
    12.92
    >>> round(transfer_deadline(2 << 30, 3.64, 1.0, udp_bps=500e6), 2)
    43.23
    """
    t = (MARGIN * sim_s * time_scale if sim_s is not None else nbytes * 8 / slowest_bps * time_scale) + SLACK_S
    if udp_bps is not None:
        t = max(t, 1.2 * nbytes * 8 / udp_bps * time_scale + SLACK_S)
    return t


def scale_controller(hybrid, time_scale: float) -> None:
    """Scheduled reconfigurations and the controller's polls happen at scaled times."""
    hybrid.schedule = [(int(t * time_scale), c) for t, c in hybrid.schedule]
    for mode, key in ((hybrid.periodic, "period"), (hybrid.congestion, "poll")):
        if mode:
            mode[key] = int(mode[key] * time_scale)
    hybrid._next_period = hybrid.periodic["period"] if hybrid.periodic else None
    hybrid._next_poll = hybrid.congestion["poll"] if hybrid.congestion else None
    for r in hybrid.requests:
        r["at"] = int(r["at"] * time_scale)
        if r.get("until") is not None:
            r["until"] = int(r["until"] * time_scale)


CHANNELS = ("osken", "ofctl")


def _file_of(built) -> str | None:
    """The scenario's file, for messages (None: built from data)."""
    file = getattr(built.scenario, "file", None)
    return None if file is None else str(file)


def check_scenario(built) -> None:
    """Refuse what the testbed would leave out: the simulated prediction applies a
    scenario's driver faults and events, and comparing with a run that had failures
    the emulation did not have would blame the testbed for them. Link events
    (``link_down``, ``link_up``) are played on the testbed (:func:`link_actions`);
    routing and circuit events are refused."""
    file = _file_of(built)
    if (built.driver_options or {}).get("faults"):
        raise NetsteerError("emulate does not inject driver faults on real switches, and the simulated prediction "
                            "would fail where the emulation does not; remove them to emulate", file=file,
                            field="driver.faults")
    for i, ev in enumerate(built.scenario.model.events):
        if ev.link_down is None and ev.link_up is None:
            what = "routing" if ev.routing is not None else "circuit" if ev.circuit is not None else "this"
            raise NetsteerError(f"emulate does not apply {what} changes on the testbed (it plays link_down and "
                                "link_up events), and the simulated prediction would; remove it to emulate",
                                file=file, field=f"events.{i}")


def link_actions(built) -> list[tuple[float, Callable]]:
    """The scenario's link events as testbed actions ``(t_s, fn(testbed))``: each link
    of a ``link_down`` loses its carrier at its first switch end (the veth set down,
    as a cable pulled there: both ends' ports go down), and a ``link_up`` plugs it
    back; the driver sees them in the switches' port states, as it would a real
    cable's."""
    from ..sim.events import LinkChange

    out = []
    for ev in built.events:
        if isinstance(ev, LinkChange):
            for link in ev.links:
                out.append((ev.at_ns * 1e-9, lambda tb, link=link, up=ev.up: tb.set_link(link, up)))
    return out


@contextmanager
def open_switches(tb: Testbed, channel: str = "osken", switch_factory: Callable[[str], Any] | None = None):
    """The testbed's switches behind the driver's switch interface: through the
    os-ken application (default), through ``ovs-ofctl``, or made by ``switch_factory``
    (bridge name -> switch; tests)."""
    if switch_factory is not None:
        yield {n: switch_factory(br) for n, br in tb.bridges.items()}
        return
    if channel == "ofctl":
        yield {n: OfctlSwitch(br) for n, br in tb.bridges.items()}
        return
    if channel != "osken":
        raise NetsteerError(f"{channel!r} is not a channel; there is {', '.join(CHANNELS)}", field="channel")
    with OskenController() as ctl:
        tb.connect(ctl.port)
        ctl.wait_connected([dpid_of(n) for n in tb.bridges])
        yield {n: OskenSwitch(br, ctl, dpid_of(n)) for n, br in tb.bridges.items()}


def emulate(built, *, time_scale: float = 1.0, udp_bps: float | None = None, controller=None,
            channel: str = "osken", switch_factory: Callable[[str], Any] | None = None,
            max_rate_bps: float = MAX_RATE_BPS, actions=(), progress=lambda msg: None) -> dict[str, Any]:
    """Run ``built`` (a hybrid :class:`netsteer.scenario.BuiltScenario`) for real.

    Parameters
    ----------
    time_scale : float
        Multiplies every scenario time.
    udp_bps : float, optional
        Send UDP at this (topology) rate instead of TCP: iperf3 counts lost packets
        by their sequence numbers.
    controller : Controller, optional
        Default: the scenario's hybrid controller.
    channel : {"osken", "ofctl"}
        How the driver reaches the switches (:func:`open_switches`).
    max_rate_bps : float
        The fastest link's emulated rate; every rate is scaled alike
        (:func:`~netsteer.emulate.testbed.check_machine`). Lower it on a busy
        machine, so the userspace datapath carries every flow at its rate.
    actions : sequence of (float, callable)
        ``(t_s, fn)``: ``fn(testbed)`` is called at scenario time ``t_s`` (scaled by
        ``time_scale``) while the run goes on, e.g. ``lambda tb: tb.set_link(3, False)``
        (a cable pulled: the driver sees it in the switches' port states). The report's
        ``actions`` gives when each ran and what it returned.

    Returns
    -------
    dict with ``scale``, ``time_scale``, ``flows`` (iperf3 results), ``controller``
    (its report), ``pushes`` (the driver's bundles), ``counters``, ``link_changes``
    (the link failures and repairs the driver saw in the switches' port states) and,
    when the controller has any, ``notes`` (as a simulated run's).
    """
    hybrid = built.hybrid
    check_scenario(built)
    file = _file_of(built)
    if hybrid is None:
        raise NetsteerError("emulate needs a scenario with a hybrid controller (controller.hybrid)", file=file,
                            field="controller")
    check_number(time_scale, "time_scale", *TIME_SCALE)
    topo = built.topology
    from ..scenario import build_scenario
    from .testbed import check_machine

    try:
        scale = check_machine(topo, max_rate_bps=max_rate_bps)  # refused here, before anything starts
        flows_of(built, time_scale, 0.0)  # (its refusals: what the scenario's jobs hold)
    except NetsteerError as exc:
        # what this scenario holds (its hosts, its rates, its jobs) is in its file
        raise (exc.located(file) if exc.field in ("topology", "jobs") else exc) from None

    # the simulator's prediction, from a fresh build (the run changes the controller):
    # each transfer's deadline follows from its simulated time, and the report has it
    simulated = predict(build_scenario(built.scenario), udp_bps=udp_bps)
    scale_controller(hybrid, time_scale)
    ends = [t for t, _ in hybrid.schedule]
    check_events_length(built, time_scale)
    actions = [*actions, *link_actions(built)]
    acts = [int(t * time_scale * 1e9) for t, _ in actions]  # (the schedule is scaled already)
    flows = flows_of(built, time_scale, 0.0)
    for f, s in zip(flows, simulated["flows"]):
        if f.bytes is not None:
            f.duration_s = transfer_deadline(f.bytes, s.get("duration_s"), time_scale, udp_bps,
                                             float(topo.link_bandwidth.min()))
    check_length(built, flows, [e * 1e-9 for e in ends], time_scale)
    end_s = max([f.start_s + f.duration_s for f in flows] + [e * 1e-9 for e in ends + acts] + [1.0])
    layout = HybridLayout.of(topo, built.routing)
    if channel not in CHANNELS:
        raise NetsteerError(f"{channel!r} is not a channel; there is {', '.join(CHANNELS)}", field="channel")
    # the hybrid controller's planning imports scipy.optimize at its first plan (lazily:
    # `netsteer run` starts fast); on the wall clock that import, about a second, would
    # count in the first reconfiguration's deciding time and delay
    import scipy.optimize  # noqa: F401
    with Testbed(topo, progress=progress, max_rate_bps=max_rate_bps) as tb, \
            open_switches(tb, channel, switch_factory) as switches:
        progress(f"rates x {tb.scale:g}, times x {time_scale:g}, switches through {channel}")
        # counters back at the topology's rates: the controller's utilisation thresholds
        # compare them with the topology's bandwidths
        drv = OpenFlowDriver(topo, layout, switches, hybrid.initial_state(), end_s=end_s + 0.5,
                             byte_scale=1 / tb.scale, settle=tb.settle)
        try:
            servers, clients = [], []
            for k, f in enumerate(flows):
                port = FIRST_PORT + k
                servers.append(tb.start(f.dst, "iperf3", "-s", "-1", "-B", tb.ips[f.dst], "-p", str(port), "--json", "-i", "0.1"))
                wait_port(tb, f.dst, port)
            for k, f in enumerate(flows):
                args = ["iperf3", "-c", tb.ips[f.dst], "-B", tb.ips[f.src], "-p", str(FIRST_PORT + k), "--json", "-i", "0.1"]
                # a transfer: its bytes scaled with the rates, so it lasts as long as in the scenario
                args += ["-t", f"{f.duration_s:.2f}"] if f.bytes is None else ["-n", str(max(int(f.bytes * scale * time_scale), 1500))]
                if udp_bps is not None:
                    args += ["-u", "-b", f"{int(udp_bps * tb.scale)}", "-l", "1200"]
                clients.append((f, args))
            # iperf3 has no start time: flows that start later are started by the loop's clock
            started = [tb.start(f.src, *a) if f.start_s <= 0 else None for f, a in clients]
            drv._t0 = drv.clock()  # scenario time 0: the first flows start now
            ctl = _Timed(controller or hybrid, drv)
            starter = _Starter(drv, tb, clients, started, max(ends + acts + [0]),
                               lambda: getattr(hybrid, "current", None) is not None,
                               actions=[(t * time_scale, fn) for t, fn in actions])
            status = run_wall_loop(starter, ctl)
            ran_s = drv.now / 1e9
            counters = drv.counters()
            results = []
            for (f, _), p, s in zip(clients, started, servers):
                cj = starter.report(p)
                sj = iperf_json(s, timeout=5)
                results.append(_summary(f, cj, sj, udp_bps is not None, tb.scale))
            report = hybrid.report()
            # what the run's notes say (switches that stayed silent to counter readings...)
            notes = hybrid.unplayed(drv.now)
            if udp_bps is not None:
                for r in results:
                    r["lost_during_reconfig"] = lost_during(r, report["reconfigurations"])
        finally:
            drv.close()
        return {
            "status": status, "channel": "custom" if switch_factory else channel, "testbed": tb.prefix,
            "scale": tb.scale, "time_scale": time_scale, "duration_s": ran_s, "deadline_s": end_s,
            "flows": results, "controller": report, "pushes": drv.pushes, "decisions": ctl.calls,
            "counters": {"bytes_at": "topology rates (emulated bytes / scale); null: the switch did not answer",
                         "port_bytes": _json_counts(counters.port_bytes),
                         "pair_bytes": None if counters.pair_bytes is None else _json_counts(counters.pair_bytes)},
            "stale_switches": [topo.node_names[n] for n in sorted(drv.stale)],
            "link_changes": [{**c, "links": [topo.link_name(x) for x in c["links"]], "link_ids": c["links"]}
                             for c in drv.link_changes],
            **({"actions": starter.done_actions} if actions else {}),
            "failed_effects": [a.as_dict(topo.node_names) for a in drv.failed_effects],
            **({"notes": notes} if notes else {}), "simulated": simulated,
        }


def _json_counts(a) -> list:
    """Counters for JSON: a missing reading (NaN) as null."""
    return np.where(np.isnan(a), None, a).tolist()


class _Timed:
    """The controller, with the wall time of each ``decide`` that returned intents
    kept (its computation is part of a reconfiguration's delay on real switches;
    the simulator counts none)."""

    def __init__(self, ctl, drv):
        self.ctl, self.drv, self.calls = ctl, drv, []

    def __getattr__(self, name):
        return getattr(self.ctl, name)

    def decide(self, inp):
        at, t0 = self.drv.now, time.perf_counter()
        out = self.ctl.decide(inp)
        if out:
            self.calls.append({"at_s": at / 1e9, "decide_s": time.perf_counter() - t0, "intents": len(out)})
        return out


def check_length(built, flows: list[Flow], schedule_s: list[float], time_scale: float) -> None:
    """Refuse a run longer than :data:`MAX_RUN_S`, naming the job (or the schedule)
    that makes it so, in the scenario file."""
    file = _file_of(built)
    worst = max(flows, key=lambda f: f.start_s + f.duration_s, default=None)
    end = -1.0 if worst is None else worst.start_s + worst.duration_s
    last = max(schedule_s, default=0.0)
    if not end <= MAX_RUN_S and not end < last:  # NaN too
        what = (f"its transfer {worst.src} -> {worst.dst} could take until {end:.0f} s (the simulator's time for it "
                f"x {MARGIN:g} + {SLACK_S:g} s" + (")" if time_scale == 1 else f", times x {time_scale:g})")
                if worst.bytes is not None else
                f"its flow {worst.src} -> {worst.dst} runs until {end:.0f} s"
                + ("" if time_scale == 1 else f" (times x {time_scale:g})"))
        raise NetsteerError(f"job {built.job_names[worst.job]!r}: {what}; an emulated run lasts at most "
                            f"{MAX_RUN_S:.0f} s here", file=file, field=f"jobs.{worst.job}")
    if not last <= MAX_RUN_S:
        raise NetsteerError(f"a scheduled reconfiguration comes at {last:.0f} s"
                            + ("" if time_scale == 1 else f" (times x {time_scale:g})")
                            + f"; an emulated run lasts at most {MAX_RUN_S:.0f} s here", file=file,
                            field="controller.hybrid.schedule")


def check_events_length(built, time_scale: float) -> None:
    """Refuse a link event past :data:`MAX_RUN_S` (times x ``time_scale``), naming it."""
    from ..sim.events import LinkChange

    for ev in built.events:
        at = ev.at_ns * 1e-9 * time_scale
        if isinstance(ev, LinkChange) and not at <= MAX_RUN_S:
            raise NetsteerError(f"it comes at {at:.0f} s" + ("" if time_scale == 1 else f" (times x {time_scale:g})")
                                + f"; an emulated run lasts at most {MAX_RUN_S:.0f} s here", file=_file_of(built),
                                field=ev.source or "events")


class _Starter:
    """The driver, with flows that start later started when the clock gets there, and
    the run ended once every flow has (and the last scheduled reconfiguration came,
    and none is under way), not at the deadline."""

    def __init__(self, drv, tb, clients, started, last_scheduled_ns: int = 0, busy=lambda: False, actions=()):
        self.drv, self.tb, self.clients, self.started = drv, tb, clients, started
        self.last_scheduled_ns, self.busy = last_scheduled_ns, busy
        self.actions = sorted(actions, key=lambda x: x[0])  # (t_s, fn(testbed)) still to run
        self.done_actions: list[dict] = []
        self.readers: dict[int, tuple[threading.Thread, dict]] = {}
        for (f, _), p in zip(clients, started):
            if p is not None:
                self._read(f, p)

    def _read(self, f: Flow, p) -> None:
        """Read ``p``'s report as it comes: iperf3 writes its ``--json`` report at its
        end, and a long run's outgrows the pipe, so an unread client never exits."""
        box: dict = {}
        th = threading.Thread(target=lambda: box.update(r=iperf_json(p, timeout=f.duration_s + 10)), daemon=True)
        th.start()
        self.readers[id(p)] = (th, box)

    def report(self, p) -> dict:
        """The client ``p``'s iperf3 report (waiting for it)."""
        if p is None or id(p) not in self.readers:
            return {"error": "not started"}
        th, box = self.readers[id(p)]
        th.join()
        return box.get("r", {"error": "no report"})

    def _done(self, p) -> bool:
        r = self.readers.get(id(p))
        return p.poll() is not None if r is None else not r[0].is_alive()

    def __getattr__(self, name):
        return getattr(self.drv, name)

    @property
    def now(self):
        return self.drv.now

    def advance(self, until):
        waiting = [f.start_s for (f, _), p in zip(self.clients, self.started) if p is None]
        if self.actions:
            waiting.append(self.actions[0][0])
        if waiting:
            nxt = int(min(waiting) * 1e9)
            until = nxt if until is None else min(until, nxt)
        tick = self.drv.now + TICK_NS  # a wait with no end would last to the deadline
        until = tick if until is None else min(until, tick)
        status = self.drv.advance(until)
        for i, ((f, args), p) in enumerate(zip(self.clients, self.started)):
            if p is None and f.start_s * 1e9 <= self.drv.now:
                self.started[i] = self.tb.start(f.src, *args)
                self._read(f, self.started[i])
        while self.actions and self.actions[0][0] * 1e9 <= self.drv.now:
            at, fn = self.actions.pop(0)
            ran = self.drv.now
            out = fn(self.tb)
            self.done_actions.append({"at_s": at, "ran_s": ran / 1e9, "result": out})
        return "done" if status != "done" and self.finished() else status

    def finished(self) -> bool:
        """Every flow's iperf3 client has exited, nothing scheduled is to come, and no
        reconfiguration or circuit is under way."""
        return (all(p is not None and self._done(p) for p in self.started) and not self.actions
                and self.drv.now >= self.last_scheduled_ns and not self.busy() and not self.drv._pending)


def _summary(f: Flow, client: dict, server: dict, udp: bool, scale: float) -> dict[str, Any]:
    out: dict[str, Any] = {"src": f.src, "dst": f.dst, "start_s": f.start_s}
    if f.bytes is not None:
        out["deadline_s"] = f.duration_s
    # how long it ran: the sender's own measure (a transfer's time, not its deadline)
    sent = client.get("end", {}).get("sum_sent") or client.get("end", {}).get("sum") or {}
    out["duration_s"] = float(sent["seconds"]) if "seconds" in sent else (f.duration_s if f.bytes is None else None)
    err = client.get("error") or server.get("error")
    if err:
        out["error"] = err
        return out
    end = server.get("end", {})
    if udp:
        s = client.get("end", {}).get("sum", {})
        out.update(lost_packets=int(s.get("lost_packets", 0)), packets=int(s.get("packets", 0)))
        # iperf3 (3.12) leaves the receiving server's end.sum at 0 bytes for UDP: what
        # it received is in end.sum_received (older versions have only end.sum)
        rx = end.get("sum_received") or end.get("sum", {})
        bps = float(rx.get("bits_per_second", 0.0))
        out["received_bytes"] = int(rx.get("bytes", 0))
    else:
        bps = float(client.get("end", {}).get("sum_received", {}).get("bits_per_second", 0.0))
    out["emulated_mbps"] = bps / 1e6
    out["gbps"] = bps / scale / 1e9  # back at the topology's rates
    series = [(float(i["sum"]["end"]), float(i["sum"]["bits_per_second"])) for i in server.get("intervals", [])]
    out["time_s"] = [f.start_s + t for t, _ in series]
    out["series_gbps"] = [b / scale / 1e9 for _, b in series]
    if udp:
        # the receiver's sequence gaps per 0.1 s interval: (interval start, end, lost).
        # A late (reordered) packet takes one back from its interval: iperf3 counts a
        # gap as lost and un-counts it when the packet comes, so an interval may be
        # negative; a path change reorders (the new path is shorter than the old
        # one's queue) without losing anything
        out["lost_intervals"] = [(round(f.start_s + float(i["sum"]["start"]), 3), round(f.start_s + float(i["sum"]["end"]), 3),
                                  int(i["sum"]["lost_packets"])) for i in server.get("intervals", [])
                                 if int(i["sum"].get("lost_packets", 0)) != 0]
        out["lost_at_s"] = [round(e, 2) for _, e, n in out["lost_intervals"] if n > 0]
        out["out_of_order"] = sum(int(st.get("udp", {}).get("out_of_order", 0)) for st in end.get("streams", []))
    return out


def lost_during(flow: dict, reconfigurations: list[dict], margin_s: float = 0.25) -> int:
    """UDP packets ``flow`` lost in the intervals that overlap a reconfiguration
    (from its start to its end, widened by ``margin_s`` for the clocks of iperf3 and
    the driver, which start apart). Losses elsewhere (a stall of the emulating
    machine) are not the reconfiguration's; ``lost_packets`` keeps them all. Net of
    the packets that came late in those intervals (negative entries: reordered, not
    lost)."""
    windows = [(r["start_s"] - margin_s, (r["end_s"] if r.get("end_s") is not None else r["start_s"]) + margin_s)
               for r in reconfigurations if r.get("start_s") is not None]
    return max(0, sum(n for a, b, n in flow.get("lost_intervals", []) if any(a < hi and b > lo for lo, hi in windows)))


def controller_share(report: dict, pushes: list[dict], decisions: list[dict] = ()) -> list[dict]:
    """Per reconfiguration and step: its duration and the controller's share of it:
    the time spent pushing bundles to switches in it (``push_s``) plus the time the
    controller took to decide what to send (``decide_s``, its planning); the rest is
    the circuit switch's dark period and waiting."""
    out = []
    for r in report.get("reconfigurations", []):
        steps = []
        for s in r["steps"]:
            a, b = s["start_s"], s["end_s"] if s["end_s"] is not None else s["start_s"]
            push = sum(p["push_s"] for p in pushes if a - 1e-9 <= p["at_s"] <= b + 1e-9)
            # a decision made at a step's start (the one that began it) counts in it
            dec = sum(d["decide_s"] for d in decisions if a - 1e-9 <= d["at_s"] < b - 1e-9)
            steps.append({"step": s["step"], "what": s["what"], "duration_s": b - a, "push_s": push,
                          "decide_s": dec, "controller_s": push + dec})
        out.append({"id": r["id"], "status": r["status"], "delay_s": r["delay_s"],
                    "controller_delay_s": sum(s["controller_s"] for s in steps),
                    "decide_s": sum(s["decide_s"] for s in steps), "steps": steps})
    return out


__all__ = ["emulate", "controller_share", "flows_of", "predict", "compare"]


def predict(built, udp_bps: float | None = None) -> dict[str, Any]:
    """The simulator's prediction for the scenario ``built`` (a fresh build: the run
    changes its controller): every flow's average rate at the topology's rates, and
    the controller's reconfigurations.

    Parameters
    ----------
    udp_bps : float, optional
        The emulation sends UDP at this (topology) rate: each flow's predicted rate is
        capped there (``capped_at_udp``), and ``note`` says that the simulator models the
        scenario's own flows, so its reconfigurations are those of flows at full rate.
    """
    from ..sim.run import run_scenario

    res = run_scenario(built, sample=False)
    c = built.dag.columns()
    flows = []
    for i in range(len(built.dag)):
        sent = float(res.sent_bytes[i]) if res.sent_bytes is not None else float(c.bytes[i])
        dt = (int(res.completion_ns[i]) - int(res.release_ns[i])) * 1e-9
        g = sent * 8 / dt / 1e9 if dt > 0 else None
        flow = {"src": int(c.src[i]), "dst": int(c.dst[i]), "gbps": g, "duration_s": dt if dt > 0 else None}
        if udp_bps is not None and g is not None and g > udp_bps / 1e9:
            flow.update(gbps=udp_bps / 1e9, capped_at_udp=True)
        flows.append(flow)
    rc = (res.controller or {}).get("hybrid", {}).get("reconfigurations", [])
    out = {"flows": flows, "reconfigurations": [
        {k: r.get(k) for k in ("trigger", "status", "start_s", "delay_s", "circuits_after")} for r in rc]}
    if udp_bps is not None:
        out["note"] = (f"the emulation sent UDP at {udp_bps / 1e9:g} Gbit/s: each flow's simulated rate is capped "
                       "there; the simulated reconfigurations are those of the scenario's flows at full rate")
    return out


def compare(emulated: dict[str, Any], simulated: dict[str, Any]) -> dict[str, Any]:
    """Emulated minus simulated, flow by flow (Gbit/s) and reconfiguration by
    reconfiguration: its start in scenario seconds (the emulated one divided by the
    time scale) and its delay in seconds as it is, not divided: the delay is bundle
    pushes, settling and the switching time, none of which ``--time-scale`` scales."""
    ts = emulated["time_scale"]
    flows = []
    for e, s in zip(emulated["flows"], simulated["flows"]):
        g = e.get("gbps")
        flows.append(None if g is None or s["gbps"] is None else g - s["gbps"])
    er = (emulated.get("controller") or {}).get("reconfigurations", [])
    sr = simulated["reconfigurations"]
    recs = []
    for i in range(max(len(er), len(sr))):
        e, s = (er[i] if i < len(er) else None), (sr[i] if i < len(sr) else None)
        if e is None or s is None:
            recs.append({"only": "emulated" if s is None else "simulated"})
            continue
        d = {"same_circuits": sorted(map(tuple, e["circuits_after"])) == sorted(map(tuple, s["circuits_after"]))}
        for k, div in (("start_s", ts), ("delay_s", 1.0)):
            d[k] = None if e[k] is None or s[k] is None else e[k] / div - s[k]
        recs.append(d)
    return {"flow_gbps": flows, "reconfigurations": recs}
