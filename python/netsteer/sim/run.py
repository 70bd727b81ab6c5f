"""One way to run a built scenario, for the CLI, the golden tests and sweeps alike:
the simulator driver with the scenario's controllers in the loop."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..control.core import Controller, ControllerStack, ReroutePolicy
from .driver import SimDriver
from .network import CircuitState
from ..errors import LimitError
from ..units import BULK_BYTES
from .simulate import SimResult, legacy_controller, run_driver


def default_controller(built) -> tuple[ControllerStack, list]:
    """The scenario's controllers: its scripted events (a replay controller), the
    re-route policy, and the hybrid controller if it has one. Returns
    ``(controller, stops)``: the timed ends of iperf-like flows belong to the
    workload, not to a controller."""
    hybrid = built.hybrid
    on_links = built.reroute if built.reroute_on_change else None
    if hybrid is not None and on_links is not None:
        on_links = _electrical_only(on_links)
    policy = ReroutePolicy(
        on_links=on_links,
        # under the hybrid controller, circuits carry traffic through its VLAN rules only
        on_circuits=None if hybrid is not None else built.reroute,
    )
    # the policy follows the scripted routing changes: the engine in force handles link changes
    scripted, stops = legacy_controller(built.events, policy=policy, topo=built.topology)
    qos = built.qos.controller() if getattr(built, "qos", None) is not None else None
    return ControllerStack([*scripted.controllers, hybrid, getattr(built, "steering", None), qos]), stops


def _electrical_only(make):
    """``make`` building tables over the electrical network only, as the hybrid
    controller's base routing is built: tables over the circuits of the moment would
    have no way out once the controller moves them."""
    def electrical(down=frozenset(), circuits=None):
        return make(down)

    electrical.static_engine = getattr(make, "static_engine", None)
    return electrical


def run_scenario(
    built,
    controller: Controller | None = None,
    *,
    sample: bool = True,
    progress: Callable[[int, int, int], None] | None = None,
) -> SimResult:
    """Simulate ``built`` (a :class:`netsteer.scenario.BuiltScenario`).

    Parameters
    ----------
    controller : Controller, optional
        Decides during the run; default :func:`default_controller`. A controller
        given here runs instead of the scenario's own.
    sample : bool
        Sample the port counters at the scenario's interval (for reports and plots).
    progress : callable(done, total, now_ns), optional
        ``total`` is None when MPI jobs stream (see :class:`SimDriver`).
    """
    default, stops = default_controller(built)
    controller = controller or default
    circuits, forwarding = None, None
    hybrid = built.hybrid if controller is default else None
    if hybrid is not None:
        pairings, rules, tags = hybrid.initial_state()
        circuits = CircuitState.empty(built.topology)
        for switch, pairs in pairings.items():
            circuits.pair(switch, list(pairs))
        forwarding = (rules, tags)
    opts = dict(built.driver_options or {})
    params = getattr(built, "packet", None)
    if params is not None:
        from .packet import flow_sls

        opts.update(packet=params.engine_dict(), sls=flow_sls(built, params))
    streamed = getattr(built, "streamed", None)
    if streamed:
        # MPI jobs run streamed in the engine (netsteer.sim.stream), started after the DAG
        opts = {**opts, "mpi_jobs": [mpi for _, mpi in streamed], "stream_router": built.stream_router}
        if params is not None:
            from .packet import streamed_sls

            opts["mpi_sls"] = streamed_sls(built, params)
    cls = SimDriver
    qos = getattr(built, "qos", None)
    if qos is not None and qos.config.devices:
        # storage devices behind hosts (netsteer.qos.staging): rate limits the I/O crosses
        from ..qos.staging import StagingDriver

        cls, opts = StagingDriver, {**opts, "devices": qos.devices()}
    uf = built.unisonflow if controller is default else None
    if uf is not None:
        # UnisonFlow: flows carry their tags, the switches' tag tables miss to its controller
        from ..unisonflow.dataplane import TagSimDriver

        fabric, ufc = uf.controller(built.topology)
        controller = ControllerStack([*default.controllers, ufc])
        cls = TagSimDriver
        opts = {**opts, "fabric": fabric, "flow_tags": uf.flow_tags, "tables": uf.tables}
    driver = cls(
        built.topology, built.routing, built.dag, sharing=built.sharing, tcp_gamma=built.tcp_gamma,
        merge_window_ns=built.merge_window_ns, ticks_per_ns=built.ticks_per_ns,
        sample_interval_ns=built.sample_interval_ns if sample else 0, circuits=circuits,
        sample_cap=getattr(built, "sample_cap", None),
        background=built.background, stops=stops, forwarding=forwarding, progress=progress, **opts,
    )
    if uf is not None:
        ufc.dataplane = driver
    if qos is not None:
        driver.qos_config = qos.config  # what a priority change re-weights flows by (netsteer.qos.simapply)
    try:
        res = run_driver(driver, controller)
    except LimitError as exc:
        raise exc.located(built.scenario.file) from None
    res.sample_interval_ns = driver.sample_interval_ns  # sample_interval: auto may have doubled it
    if params is not None and res.status == "stalled":
        from .packet import credit_loop

        res.credit_loop = credit_loop(driver, params)
    if res.past_clock is not None:
        # background (iperf-like) flows send until the others end: stalled, they just go on
        res.past_clock = res.past_clock[~np.asarray(built.background, dtype=bool)[res.past_clock]]
        if len(res.past_clock):
            raise _past_clock_error(built, res)
        _endless_bulk_never_ended(built, res)
    if res.past_clock_jobs:
        raise _past_clock_error(built, res)
    return res


def _endless_bulk_never_ended(built, res) -> None:
    """In a stalled run the flows an endless bulk flow waits for never end, so neither
    does it: one that "finished" did so only by running out its nominal size, decades of
    simulated time later (a makespan of 25 years). It is reported as never done, and the
    makespan is the last completion of the others."""
    nbytes = np.asarray(built.dag.columns().bytes, dtype=np.float64)
    sent = res.sent_bytes if res.sent_bytes is not None else np.zeros_like(nbytes)
    ran_out = (np.asarray(built.background, dtype=bool) & (nbytes >= BULK_BYTES) & (res.completion_ns >= 0)
               & (np.asarray(sent) >= nbytes * (1 - 1e-9)))  # a timed one stops well short of it
    if ran_out.any():
        res.completion_ns = np.where(ran_out, -1, res.completion_ns)
        res.makespan_ns = int(res.completion_ns.max())


#: The engine's clock range: finishes are scheduled up to half of int64 nanoseconds.
CLOCK_RANGE_NS = (2**63 - 1) // 2


def _past_clock_error(built, res):
    """A run that cannot end within the simulator's clock is refused, not reported as
    stalled (nothing blocked it) with a made-up makespan: it names the first such flow."""
    from ..errors import NetsteerError

    years = CLOCK_RANGE_NS / 1e9 / 86400 / 365.25
    if res.past_clock is not None and len(res.past_clock):
        f = int(res.past_clock[0])
        j = int(built.job_of_flow[f])
        more = f", and {len(res.past_clock) - 1} more flows" if len(res.past_clock) > 1 else ""
        what = f"flow {f}{more}"
    else:  # a streamed MPI job: its messages are no flows of the DAG
        jobs = [built.streamed[k][0] for k in res.past_clock_jobs]
        j = jobs[0]
        what = "a streamed message" + (f"; job{'s' if len(jobs) > 2 else ''} "
                                       f"{', '.join(repr(built.job_names[i]) for i in jobs[1:])} too"
                                       if len(jobs) > 1 else "")
    return NetsteerError(
        f"the run does not end within the simulator's clock: job {built.job_names[j]!r} ({what}) "
        f"would still be sending after {years:.0f} years of simulated time; check its bytes, start and "
        "delay against the link bandwidths and latencies", file=built.scenario.file, field=f"jobs.{j}")
