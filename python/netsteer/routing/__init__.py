"""Routing: forwarding tables apart from the topology, and the engines that fill them.

An engine is a function ``engine(topo, *, circuits=None, **params) -> Routing``.
:func:`build_routing` picks one by name from :data:`ENGINES`; a new engine plugs in
with one :func:`register_engine` line.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> r = build_routing(t, "minhop")
>>> r.engine, r.path(0, 1) == build_routing(t, "dmodk").path(0, 1)
('minhop', True)
>>> build_routing(t, "updn")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
netsteer.errors.RoutingError: unknown routing engine 'updn'; known engines: dmodk, dor, ecmp, ...
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from ..errors import RoutingError
from ..topology.model import Topology
from .dmodk import dmodk
from .dor import dor
from .ecmp import ecmp
from .ftree import ftree
from .minhop import minhop
from .pftree import pftree
from .table import HASHES, Routing, flow_hash

ENGINES: dict[str, Callable[..., Routing]] = {}


def register_engine(name: str, func: Callable[..., Routing]) -> None:
    """Make ``func`` available to :func:`build_routing` as ``name``."""
    ENGINES[name] = func


def check_engine(engine: str, *, field: str | None = None) -> None:
    """Raise :class:`RoutingError` (at ``field``) unless ``engine`` is a key of
    :data:`ENGINES`: the one wording of an unknown engine, wherever it is named
    (a scenario, ``ns.route``, ``netsteer route --engine``)."""
    if engine not in ENGINES:
        raise RoutingError(f"unknown routing engine {engine!r}; known engines: {', '.join(sorted(ENGINES))}",
                           field=field)


def build_routing(topo: Topology, engine: str, *, circuits=None, **params) -> Routing:
    """Route ``topo`` with the engine called ``engine``.

    Parameters
    ----------
    topo : Topology
    engine : str
        A key of :data:`ENGINES`.
    circuits : dict of int to array_like, optional
        Circuit switch pairings the engine may route across.
    **params
        Engine parameters (``hash=`` for ``ecmp``).

    Raises
    ------
    RoutingError
        Unknown engine, or a parameter the engine does not take.
    """
    check_engine(engine)
    func = ENGINES[engine]
    accepted = [
        n for n, p in inspect.signature(func).parameters.items()
        if n not in ("topo", "circuits") and p.kind is not p.VAR_KEYWORD
    ]
    for name in params:
        if name not in accepted:
            # down_links is the scenario's own (links down at a re-route), not a routing: key
            takes = ", ".join(n for n in accepted if n != "down_links") or "no parameters"
            raise RoutingError(f"routing engine {engine!r} takes {takes}, not {name!r}")
    return func(topo, circuits=circuits, **params)


def accepts_down_links(engine: str) -> bool:
    """Whether ``engine`` can route around links that are down (static engines such
    as D-mod-K cannot: their flows wait for the link to come back)."""
    func = ENGINES.get(engine)
    return func is not None and "down_links" in inspect.signature(func).parameters


register_engine("dmodk", dmodk)
register_engine("minhop", minhop)
register_engine("ecmp", ecmp)
register_engine("ftree", ftree)
register_engine("pftree", pftree)
register_engine("dor", dor)

__all__ = [
    "ENGINES",
    "HASHES",
    "Routing",
    "accepts_down_links",
    "build_routing",
    "check_engine",
    "dmodk",
    "dor",
    "ecmp",
    "flow_hash",
    "ftree",
    "minhop",
    "pftree",
    "register_engine",
]

