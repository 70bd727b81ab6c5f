"""Routing a topology with a named engine, as a scenario's ``routing:`` does.

Examples
--------
>>> from netsteer.api.topology import pgft
>>> t = pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps")
>>> r = route(t, engine="dmodk")
>>> r.engine, [t.channel_name(c) for c in r.path(0, 15)]
('dmodk', ['h0[1]->s1_0', 's1_0[6]->s2_1', 's2_1[4]->s1_3', 's1_3[4]->h15'])
>>> route(t, engine="updn")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
netsteer.errors.RoutingError: routing.engine: unknown routing engine 'updn'; known engines: dmodk, ...
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import NetsteerError
from ..routing.table import Routing
from ..topology.model import Topology
from ._values import given, validated


def route(topo: Topology, engine: str = "dmodk", *, hash: str | None = None,
          partitions: str | os.PathLike | None = None) -> Routing:
    """Forwarding tables for ``topo``, built by ``engine`` and checked (complete,
    loop-free).

    Parameters
    ----------
    topo : Topology
    engine : {"dmodk", "minhop", "ecmp", "ftree", "pftree"}
        Any name in :data:`netsteer.routing.ENGINES`.
    hash : {"dst", "src-dst", "flow"}, optional
        What ``ecmp`` hashes.
    partitions : path, optional
        An OpenSM ``partitions.conf`` (``pftree`` isolates its partitions).

    Returns
    -------
    Routing
        With the scenario's ``routing:`` mapping in ``spec``.

    Raises
    ------
    RoutingError
        An unknown engine, a parameter it does not take, tables that are incomplete
        or loop (naming the switch and the destination).
    """
    from ..scenario import RoutingModel, _routing_factory

    if not isinstance(topo, Topology):
        raise NetsteerError(f"expected a Topology (netsteer.pgft, netsteer.hyperx, ...), got {type(topo).__name__}",
                            field="topo")
    from ..routing import check_engine

    if isinstance(engine, str):  # a RoutingError, as documented, not the schema's error
        check_engine(engine, field="routing.engine")
    spec: dict[str, Any] = {"engine": engine, **given(hash=hash)}
    if partitions is not None:
        spec["partitions"] = str(Path(partitions).resolve())
    model = validated(RoutingModel, spec, "routing")
    routing, _ = _routing_factory(topo, model, None, "routing")
    routing.spec = spec
    return routing


def is_engines(routing: Routing) -> bool:
    """Whether ``routing``'s tables are what its engine builds from its ``spec`` (not
    edited by hand since :func:`route`).

    >>> from netsteer.api.topology import pgft
    >>> t = pgft(1, [4], [1], link_bandwidth="10Gbps")
    >>> r = route(t, "minhop")
    >>> is_engines(r)
    True
    >>> r.table[0, 3] = 2
    >>> is_engines(r)
    False
    """
    spec = spec_of(routing) or {}
    fresh = route(routing.topo, **spec)
    return (np.array_equal(fresh.rows, routing.rows) and np.array_equal(fresh.table, routing.table)
            and len(fresh.groups) == len(routing.groups)
            and all(np.array_equal(a, b) for a, b in zip(fresh.groups, routing.groups))
            and fresh.overrides.keys() == routing.overrides.keys()
            and all(np.array_equal(fresh.overrides[k], routing.overrides[k]) for k in fresh.overrides)
            and fresh.ecmp_hash == routing.ecmp_hash)


def spec_of(routing: Any) -> dict[str, Any] | None:
    """The ``routing:`` mapping a routing was built from, or None."""
    spec = getattr(routing, "spec", None)
    return dict(spec) if isinstance(spec, dict) else None
