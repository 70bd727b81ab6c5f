"""A scenario as a Python object: built from the API's pieces or read from a file,
written back as YAML, and run.

A :class:`Scenario` holds exactly what a scenario file holds (the user's values and
units, checked by the same schema), so ``Scenario.from_yaml(p).to_yaml()`` is a file
that runs to the same result, and a notebook experiment becomes a reproducible file.
``netsteer run`` runs scenarios through this class too, so both always agree.

Examples
--------
>>> import netsteer as ns
>>> topo = ns.pgft(levels=1, down=[4], up=[1], link_bandwidth="8Gbps", link_latency="0us")
>>> sc = ns.Scenario(topo, "dmodk", [ns.job([ns.flow(0, 3, "1GB")], name="bulk")], name="demo")
>>> print(sc.to_yaml(), end="")
name: demo
topology:
  kind: pgft
  levels: 1
  down:
  - 4
  up:
  - 1
  link_bandwidth: 8Gbps
  link_latency: 0us
routing:
  engine: dmodk
jobs:
- name: bulk
  flows:
  - src: 0
    dst: 3
    bytes: 1GB
>>> sc.run().makespan_s  # 1 GB at 1 GB/s
1.0
>>> ns.Scenario(topo, "dmodk", [ns.job([ns.flow(0, 9, "1GB")])]).build()
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: jobs.0.flows.0.dst: host 9 does not exist: the topology has hosts 0..3
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import yaml

from ..control.core import Controller
from ..errors import NetsteerError
from ..topology.model import Topology
from ._values import plain
from .result import Result

Progress = bool | Callable[[int, int, int], None] | None
"""``True`` for a progress bar on stderr, or a function called as ``progress(done, total, time_ns)``
(flows finished, flows in all, the simulated time in ns)."""


class Scenario:
    """A scenario: a topology, a routing, jobs, and optionally events, a controller
    and a driver, as in a scenario file (``docs/scenarios.md``).

    Parameters
    ----------
    topology : Topology, dict or str
        A topology from :func:`netsteer.pgft` and friends, a spec mapping
        (``{"kind": "pgft", ...}``), a file or an inline spec (:func:`netsteer.read_topology`).
    routing : str, Routing or dict, default "dmodk"
        An engine name (default ``"dmodk"``; a scenario file has no default and must
        say ``routing:``), a ``routing:`` mapping, or a routing from :func:`netsteer.route`:
        its tables run as they are (edits included, checked complete and loop-free
        when the scenario is built), on a topology wired as ``topology`` (else a
        ``NetsteerError`` naming ``routing``). A re-route (a link change under
        ``reroute_on_change``, a circuit event) builds its engine's tables for the
        changed network; the result's notes say so. ``to_yaml`` writes its engine,
        and refuses tables that are no longer the engine's.
    jobs : list of job
        From :func:`netsteer.job` and :func:`netsteer.mpi_job`; unnamed jobs are
        named ``job<i>`` by position.
    name, description : str
    sharing : {"maxmin", "cm02"} or dict, optional
        The model, or the scenario's ``sharing:`` mapping, e.g. ``{"model": "cm02",
        "merge_window": "0ns", "ticks_per_ns": 1}`` (CM02 on the exact ns clock
        instead of SimGrid's timing; ``docs/scenarios.md``).
    tcp_gamma : str, optional
        The TCP window of ``cm02`` (default 4 MiB; ``0``: no window bound, as SimGrid's
        ``network/TCP-gamma:0``).
    fidelity : {"flow", "packet"}, optional
        Flow level (max-min, the default) or packet level (credits, VLs,
        arbitration; ``docs/model.md``, Fidelities).
    packet : dict, optional
        The ``packet:`` mapping of the packet fidelity, e.g. ``{"mtu": "2KiB",
        "buffer": "16KiB"}``; checked when the scenario is built, as a file's is.
    sample_interval : str, optional
        Port-counter interval; default ``auto`` (about 200 samples).
    reroute_on_change : bool, optional
    events : list of event
        From :mod:`netsteer.event`.
    controller, driver : dict, optional
        The ``controller:`` and ``driver:`` mappings (``docs/control.md``). A
        :class:`netsteer.Controller` object runs through :meth:`run` (or
        :func:`simulate`) instead.
    qos : dict, optional
        The ``qos:`` mapping: InfiniBand service levels, SL2VL, VL arbitration and
        traffic classes (``docs/qos.md``).

    Raises
    ------
    NetsteerError
        Any value a scenario file could not hold, with its field.

    Examples
    --------
    Two jobs into one host, at packet level, with job ``b`` on a VL of its own that
    the arbitration serves second:

    >>> import netsteer as ns
    >>> topo = ns.pgft(levels=1, down=[4], up=[1], link_bandwidth="10Gbps", link_latency="1us")
    >>> jobs = [ns.job([ns.flow(0, 2, "1MB")], name="a"), ns.job([ns.flow(1, 2, "1MB")], name="b")]
    >>> qos = {"max_vls": 2, "vlarb_low": "0:255,1:34", "sl2vl": [0, 1] * 8,
    ...        "classes": [{"name": "ca", "sl": 0, "jobs": ["a"]}, {"name": "cb", "sl": 1, "jobs": ["b"]}]}
    >>> sc = ns.Scenario(topo, "dmodk", jobs, fidelity="packet", packet={"mtu": "2KiB"}, qos=qos)
    >>> r = sc.run(sample=False)
    >>> r.status, bool(r.jobs.completion_s.iloc[0] < r.jobs.completion_s.iloc[1])
    ('done', True)
    >>> ns.Scenario(topo, "dmodk", jobs, fidelity="packets")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: fidelity: must be 'flow' or 'packet', got 'packets'
    """

    def __init__(
        self,
        topology: Topology | dict[str, Any] | str | os.PathLike,
        routing: str | dict[str, Any] | Any = "dmodk",
        jobs: Sequence[dict[str, Any]] = (),
        *,
        name: str = "scenario",
        description: str | None = None,
        sharing: str | dict[str, Any] | None = None,
        tcp_gamma: str | int | None = None,
        fidelity: str | None = None,
        packet: dict[str, Any] | None = None,
        sample_interval: str | int | None = None,
        reroute_on_change: bool | None = None,
        events: Sequence[dict[str, Any]] = (),
        controller: dict[str, Any] | None = None,
        driver: dict[str, Any] | None = None,
        qos: dict[str, Any] | None = None,
    ) -> None:
        from ..routing.table import Routing
        from . import routing as api_routing
        from . import topology as api_topology

        topo: Topology | None = None
        if isinstance(topology, Topology):
            topo = topology
            spec = api_topology.spec_of(topology) or {"kind": "custom", "name": topology.name}
        elif isinstance(topology, dict):
            spec = plain(topology)
        elif isinstance(topology, (str, os.PathLike)):
            topo = api_topology.read_topology(topology)
            spec = api_topology.spec_of(topo) or {}
        else:
            raise NetsteerError(f"expected a Topology, a spec mapping or a file, got {type(topology).__name__}",
                                field="topology")
        given = None
        if isinstance(routing, str):
            rspec: Any = {"engine": routing}
        elif isinstance(routing, Routing):
            rspec = api_routing.spec_of(routing)
            if rspec is None:
                raise NetsteerError("this routing does not say how it was built; pass the engine name "
                                    "or a routing from netsteer.route()", field="routing")
            given = routing  # run its tables, not new ones from its engine
            if topo is not None:  # (else when built: a spec's topology is built then)
                from ..scenario import check_routing_topology

                check_routing_topology(routing, topo)
        else:
            rspec = plain(routing)
        data: dict[str, Any] = {"name": name}
        if description:
            data["description"] = description
        data["topology"] = spec
        data["routing"] = rspec
        if isinstance(sharing, dict):
            data["sharing"] = plain({**sharing, **({"tcp_gamma": tcp_gamma} if tcp_gamma is not None else {})})
        elif tcp_gamma is not None:
            data["sharing"] = {"model": sharing or "cm02", "tcp_gamma": plain(tcp_gamma)}
        elif sharing is not None:
            data["sharing"] = sharing
        # in a file's order (ScenarioModel's), so to_yaml reads as one
        for key, value in (("fidelity", fidelity), ("packet", packet), ("sample_interval", sample_interval),
                           ("reroute_on_change", reroute_on_change)):
            if value is not None:
                data[key] = plain(value)
        data["jobs"] = []
        if isinstance(jobs, (dict, str)) or not isinstance(jobs, Iterable):
            raise NetsteerError("expected a list of jobs ([netsteer.job(...), netsteer.mpi_job(...)]), got "
                                + ("one job" if isinstance(jobs, dict) else type(jobs).__name__), field="jobs")
        for i, j in enumerate(jobs):
            if not isinstance(j, dict):
                raise NetsteerError(f"expected a job (netsteer.job, netsteer.mpi_job), got {type(j).__name__}",
                                    field=f"jobs.{i}")
            j = plain(j)
            data["jobs"].append({"name": j.pop("name", f"job{i}"), **j})  # name first, as a file reads
        if events:
            data["events"] = plain(list(events))
        if isinstance(controller, Controller):
            raise NetsteerError("a Controller object runs with Scenario.run(controller=...) or "
                                "netsteer.simulate(controller=...); Scenario's controller= is a scenario file's "
                                "controller: mapping", field="controller")
        if controller is not None:
            data["controller"] = plain(controller)
        if driver is not None:
            data["driver"] = plain(driver)
        if qos is not None:
            data["qos"] = plain(qos)
        self._init(data, file=None, topology=topo, routing=given)

    def _init(self, data: dict[str, Any], *, file: str | None, topology: Topology | None,
              routing: Any = None) -> None:
        from ..scenario import ScenarioModel
        from ._values import validated

        self._data = data
        self._file = file
        self._topology = topology
        self._routing = routing
        try:
            self._model = validated(ScenarioModel, data)
        except NetsteerError as exc:
            raise exc.located(file) from None

    # -- files ---------------------------------------------------------------------
    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> "Scenario":
        """Read a scenario file (YAML or JSON), with the checks of ``netsteer run``.

        Examples
        --------
        >>> import netsteer as ns
        >>> ns.Scenario.from_yaml("no/such.yaml")
        Traceback (most recent call last):
        ...
        netsteer.errors.NetsteerError: no/such.yaml: no such file
        """
        from ..inputs import load_yaml, read_text
        from ..scenario import parse_scenario

        file = os.fspath(path)
        if not os.path.isfile(file):
            raise NetsteerError("no such file", file=file)
        text = read_text(file)
        parse_scenario(text, file=file)  # the file's own errors, with their lines
        return cls.from_dict(load_yaml(text, file=file), file=file)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, file: str | os.PathLike | None = None) -> "Scenario":
        """A scenario from the mapping a scenario file holds; relative paths in it are
        relative to ``file``'s directory (default: the current directory)."""
        if not isinstance(data, dict):
            raise NetsteerError("a scenario is a mapping with name, topology, routing and jobs",
                                file=os.fspath(file) if file else None)
        sc = cls.__new__(cls)
        sc._init(copy.deepcopy(plain(data)), file=os.fspath(file) if file else None, topology=None)
        return sc

    def to_dict(self) -> dict[str, Any]:
        """The scenario as a file holds it, with file references made absolute."""
        return _rebase(copy.deepcopy(self._data), self._base(), None)

    def to_yaml(self, path: str | os.PathLike | None = None) -> str:
        """The scenario as YAML; with ``path``, also written there (atomically), file
        references made relative to its directory.

        Raises
        ------
        NetsteerError
            The topology was built by hand (no spec a file could hold), or the
            routing's tables were edited (a file names the engine only).
        """
        if self._data["topology"].get("kind") == "custom":
            raise NetsteerError("the topology was built by hand, not from a spec a scenario file can hold; "
                                "build it with netsteer.pgft/hyperx/hybrid/read_topology", field="topology")
        if self._routing is not None:
            from .routing import is_engines

            if not is_engines(self._routing):
                raise NetsteerError(f"the routing's tables were edited: they are not what routing engine "
                                    f"{self._model.routing.engine!r} builds, and a scenario file names the engine "
                                    "only", field="routing")
        dest = Path(path).resolve().parent if path is not None else None
        text = yaml.safe_dump(_rebase(copy.deepcopy(self._data), self._base(), dest),
                              sort_keys=False, default_flow_style=False, allow_unicode=True)
        if path is not None:
            from ..report.atomic import atomic_write

            with atomic_write(Path(path), field="path") as f:
                f.write(text)
        return text

    def _base(self) -> Path:
        return Path(self._file).resolve().parent if self._file else Path.cwd()

    # -- running -------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._model.name

    @property
    def file(self) -> str | None:
        """The file the scenario was read from, if any."""
        return self._file

    def build(self):
        """Resolve hosts, routing and workload against the topology
        (a :class:`netsteer.scenario.BuiltScenario`)."""
        from ..scenario import Scenario as _Parsed
        from ..scenario import build_scenario

        return build_scenario(_Parsed(model=self._model, file=self._file), topology=self._topology,
                              routing=self._routing)

    def run(self, *, controller: Controller | None = None, sample: bool = True,
            progress: Progress = None) -> Result:
        """Simulate the scenario.

        Parameters
        ----------
        controller : Controller, optional
            Decides during the run instead of the scenario's own controllers (its
            events, the re-route policy, the hybrid controller); combine them with
            :class:`netsteer.ControllerStack`.
        sample : bool
            Sample the port counters (for ``Result.counters`` and ``Result.plot``).
        progress : bool or callable, optional
            ``True`` shows a progress bar on stderr; a function is called as
            ``progress(done, total, time_ns)`` (flows finished, flows in all, the
            simulated time in ns, three ints, positionally) as the run goes.
            Anything else, or a function that cannot take those three arguments,
            is refused before the run.
        """
        from ..sim.run import run_scenario

        if controller is not None and not isinstance(controller, Controller):
            raise NetsteerError(f"expected a netsteer.Controller (a scenario's controller: mapping goes to "
                                f"Scenario(controller=...)), got {type(controller).__name__}", field="controller")
        if not isinstance(sample, bool):
            raise NetsteerError(f"expected True or False, got {sample!r}", field="sample")
        _check_progress(progress)
        built = self.build()
        with _progress(progress) as update:
            res = run_scenario(built, controller, sample=sample, progress=update)
        return Result(self, built, res, sampled=sample)

    def __repr__(self) -> str:
        m = self._model
        return (f"Scenario({m.name!r}, topology={m.topology.get('kind')!r}, routing={m.routing.engine!r}, "
                f"jobs={[j.name for j in m.jobs]!r})")


def simulate(
    topology: Topology | dict[str, Any] | str,
    routing: str | dict[str, Any] | Any = "dmodk",
    jobs: Sequence[dict[str, Any]] = (),
    *,
    name: str = "scenario",
    description: str | None = None,
    sharing: str | dict[str, Any] | None = None,
    tcp_gamma: str | int | None = None,
    fidelity: str | None = None,
    packet: dict[str, Any] | None = None,
    sample_interval: str | int | None = None,
    reroute_on_change: bool | None = None,
    events: Sequence[dict[str, Any]] = (),
    controller: Controller | dict[str, Any] | None = None,
    driver: dict[str, Any] | None = None,
    qos: dict[str, Any] | None = None,
    sample: bool = True,
    progress: Progress = None,
) -> Result:
    """Simulate ``jobs`` on ``topology`` routed by ``routing``: a :class:`Scenario`
    made and run at once (``result.scenario.to_yaml()`` writes it as a file).

    Parameters
    ----------
    topology, routing, jobs, name, description, sharing, tcp_gamma, fidelity, packet, \
sample_interval, reroute_on_change, events, driver, qos
        As :class:`Scenario`'s.
    controller : dict or Controller, optional
        A mapping is the scenario's ``controller:`` (as :class:`Scenario`'s); a
        :class:`netsteer.Controller` runs instead of the scenario's own controllers
        (as :meth:`Scenario.run`'s).
    sample, progress
        As :meth:`Scenario.run`'s.

    Raises
    ------
    NetsteerError
        As :class:`Scenario` and :meth:`Scenario.run`; a ``controller`` that is
        neither a mapping nor a Controller.

    Examples
    --------
    >>> import netsteer as ns
    >>> topo = ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")
    >>> job = ns.mpi_job(16, [ns.op.allreduce("1MiB", algorithm="ring")])
    >>> r = ns.simulate(topo, "dmodk", [job], sharing="cm02")
    >>> r.status, list(r.operations[["job", "op", "count"]].itertuples(index=False, name=None))
    ('done', [('job0', 'allreduce', 1)])
    >>> ns.simulate(topo, "dmodk", [ns.job([ns.flow(0, 5, "64KiB")])], fidelity="packet").status
    'done'
    >>> ns.simulate(topo, "dmodk", [job], controller="hybrid")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: controller: expected a controller: mapping (as in a scenario file) or a netsteer.Controller, got str
    """
    run_controller = None
    if isinstance(controller, Controller):
        run_controller, controller = controller, None
    elif controller is not None and not isinstance(controller, dict):
        raise NetsteerError("expected a controller: mapping (as in a scenario file) or a netsteer.Controller, got "
                            f"{type(controller).__name__}", field="controller")
    sc = Scenario(topology, routing, jobs, name=name, description=description, sharing=sharing,
                  tcp_gamma=tcp_gamma, fidelity=fidelity, packet=packet, sample_interval=sample_interval,
                  reroute_on_change=reroute_on_change, events=events, controller=controller, driver=driver,
                  qos=qos)
    return sc.run(controller=run_controller, sample=sample, progress=progress)


_PATHS = (("topology", "path"), ("routing", "partitions"))


def _rebase(data: dict[str, Any], base: Path, dest: Path | None) -> dict[str, Any]:
    """File references (``topology.path``, ``routing.partitions``, an event's
    ``routing.partitions``), relative to ``base``, made absolute (``dest`` None) or
    relative to ``dest``."""
    holders = [(data.get(a), b) for a, b in _PATHS]
    holders += [(ev.get("routing"), "partitions") for ev in data.get("events") or [] if isinstance(ev, dict)]
    for holder, key in holders:
        if isinstance(holder, dict) and isinstance(holder.get(key), str):
            p = (base / holder[key]).resolve()
            holder[key] = str(p) if dest is None else os.path.relpath(p, dest)
    return data


def _check_progress(progress: Any) -> None:
    """Refuse a ``progress`` that is neither None, a bool, nor a function of
    ``(done, total, time_ns)``, before the run rather than inside it.

    >>> _check_progress(lambda done, total, time_ns: None)
    >>> _check_progress(lambda *args: None)
    >>> _check_progress("yes")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: progress: expected True, False, None or a function of (done, total, time_ns), got 'yes'
    >>> _check_progress(lambda done: None)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: progress: the function cannot be called as progress(done, total, time_ns): too many positional arguments
    """
    if progress is None or isinstance(progress, bool):
        return
    if not callable(progress):
        got = repr(progress) if isinstance(progress, (str, int, float)) else type(progress).__name__
        raise NetsteerError(f"expected True, False, None or a function of (done, total, time_ns), got {got}",
                            field="progress")
    import inspect

    try:
        sig = inspect.signature(progress)
    except (TypeError, ValueError):  # a builtin without a signature: taken on trust
        return
    try:
        sig.bind(0, 0, 0)
    except TypeError as e:
        raise NetsteerError(f"the function cannot be called as progress(done, total, time_ns): {e}",
                            field="progress") from None


class _progress:
    """A progress callback for :meth:`Scenario.run`: a rich bar, the user's function, or none."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.bar: Any = None

    def __enter__(self) -> Callable[[int, int, int], None] | None:
        if callable(self.progress):
            return self.progress
        if not self.progress:
            return None
        from rich.console import Console

        from ..report.progress import simulation_progress

        self.bar, update = simulation_progress(Console(stderr=True))
        self.bar.start()
        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()
