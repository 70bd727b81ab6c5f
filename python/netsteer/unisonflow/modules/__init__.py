"""MPI primitive modules: one small class per primitive, registered by one file.

A module is a subclass of :class:`PrimitiveModule` decorated with :func:`register`
in any file of this package (or a file a scenario names in ``module_files``):
importing the package imports every file in it, so adding a module changes nothing
elsewhere. A module gets the decoded context (:class:`~..tags.Tag`) and the
network state (:class:`NetState`) and returns :class:`~..rules.FlowRule` s.

Examples
--------
>>> sorted(REGISTRY)[:3]
['allreduce-disjoint', 'bcast-multicast', 'ecmp']
>>> REGISTRY["bcast-multicast"].primitive
'bcast'
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ...errors import NetsteerError
from ..fabric import Fabric
from ..rules import FlowRule, path_rules
from ..tags import PRIMITIVES, Tag, host_mac

#: module name -> class
REGISTRY: dict[str, type["PrimitiveModule"]] = {}


@dataclass
class JobView:
    """A job as its modules see it: ``comms[c][r]`` is the host of rank ``r`` of
    communicator ``c``."""

    job: int
    comms: dict[int, list[int]]


@dataclass
class NetState:
    """The network as the controller knows it: ``load[channel]`` counts the tags
    whose installed rules cross the channel; ``util[channel]`` is the share of the
    channel's capacity its port counters measured busy since the last reading
    (empty until the controller reads counters)."""

    fabric: Fabric
    now: int = 0
    load: dict[int, int] = field(default_factory=dict)
    util: Any = None

    def busy(self, ch: int) -> float:
        """How busy a channel is: installed tags crossing it plus measured utilization."""
        u = self.util
        return self.load.get(ch, 0) + (float(u[ch]) if u is not None else 0.0)


class PrimitiveModule:
    """Base class. Subclasses set ``name`` and, when they serve one primitive only,
    ``primitive``; ``params`` are the module's options from the configuration."""

    name: ClassVar[str] = ""
    primitive: ClassVar[str | None] = None
    #: True: the module installs no rules; its tags go by the switches' base routing
    #: (the run's ``routing``), as ``ecmp`` does
    base_routing: ClassVar[bool] = False

    def __init__(self, fabric: Fabric, job: JobView, primitive: str, **params: Any):
        self.fabric, self.job, self.for_primitive = fabric, job, primitive
        self.setup(**params)

    def setup(self, **params: Any) -> None:
        """Read the options; the base class takes none."""
        if params:
            raise NetsteerError(f"module {self.name} takes no option {sorted(params)[0]!r}", field=sorted(params)[0])

    def rules(self, tag: Tag, state: NetState) -> list[FlowRule]:
        raise NotImplementedError

    # helpers for unicast modules
    def hosts(self, tag: Tag) -> tuple[int, int]:
        comm = self.job.comms[tag.comm]
        return comm[tag.src], comm[tag.dst]

    def unicast(self, tag: Tag, value: int, choose) -> list[FlowRule]:
        """Rules along the min-hop path picked by ``choose(node, ports)``."""
        s, d = self.hosts(tag)
        return path_rules(value, self.fabric.walk(s, d, choose), host_mac(d))


def register(cls: type[PrimitiveModule]) -> type[PrimitiveModule]:
    """Class decorator: make ``cls`` available by its ``name``."""
    if not cls.name:
        raise NetsteerError(f"module class {cls.__name__} has no name", field="modules")
    if cls.primitive is not None and cls.primitive not in PRIMITIVES:
        raise NetsteerError(f"module {cls.name} claims unknown primitive {cls.primitive!r}", field="modules")
    old = REGISTRY.get(cls.name)
    if old is not None and old.__qualname__ != cls.__qualname__:
        raise NetsteerError(f"two modules are named {cls.name!r} ({old.__module__}, {cls.__module__})", field="modules")
    REGISTRY[cls.name] = cls
    return cls


def load_file(path: str | Path) -> None:
    """Import a module file outside the package (``module_files`` in a scenario)."""
    p = Path(path)
    if not p.is_file():
        raise NetsteerError("module file does not exist", file=str(p), field="module_files")
    spec = importlib.util.spec_from_file_location(f"netsteer_unisonflow_user_{p.stem}", p)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except NetsteerError as exc:
        raise exc.located(str(p)) from None
    except Exception as exc:  # a user's file: say what broke, in one line
        raise NetsteerError(f"importing it failed: {type(exc).__name__}: {exc}", file=str(p), field="module_files") from None


def build(specs: list[dict], fabric: Fabric, job: JobView) -> dict[str, PrimitiveModule]:
    """Module instances of one job, by primitive, from ``[{module, primitive?, ...}]``.

    Refuses unknown modules and two modules claiming the same primitive.

    >>> from netsteer.topology.pgft import pgft
    >>> f = Fabric(pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0))
    >>> j = JobView(0, {0: [0, 1, 2, 3]})
    >>> build([{"module": "pin", "primitive": "bcast", "via": "s2_0"},
    ...        {"module": "bcast-multicast"}], f, j)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: modules.1: two modules claim primitive bcast: pin (modules.0) and bcast-multicast
    """
    out: dict[str, PrimitiveModule] = {}
    where: dict[str, int] = {}
    for i, spec in enumerate(specs):
        spec = dict(spec)
        name = spec.pop("module", None)
        cls = REGISTRY.get(name)
        if name is None:
            raise NetsteerError(f"no module given (module: NAME); known: {', '.join(sorted(REGISTRY))}",
                                field=f"modules.{i}.module")
        if cls is None:
            raise NetsteerError(f"unknown module {name!r}; known: {', '.join(sorted(REGISTRY))}", field=f"modules.{i}.module")
        prim = spec.pop("primitive", None) or cls.primitive
        if prim is None:
            raise NetsteerError(f"module {name} serves any primitive: say which one (primitive: ...)", field=f"modules.{i}")
        if prim not in PRIMITIVES:
            raise NetsteerError(f"unknown primitive {prim!r}", field=f"modules.{i}.primitive")
        if cls.primitive is not None and prim != cls.primitive:
            raise NetsteerError(f"module {name} serves {cls.primitive} only, not {prim}", field=f"modules.{i}.primitive")
        if prim in out:
            raise NetsteerError(f"two modules claim primitive {prim}: {out[prim].name} (modules.{where[prim]}) and {name}",
                                field=f"modules.{i}")
        try:
            out[prim] = cls(fabric, job, prim, **spec)
            out[prim].spec_index = i  # where its spec is (errors at run time name it)
        except NetsteerError as exc:
            raise exc.located(prefix=f"modules.{i}") from None
        where[prim] = i
    return out


def _discover() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()
