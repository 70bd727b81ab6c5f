"""Changes to the network during a run, applied by :func:`netsteer.sim.simulate`.

Each event happens at an integer time in ns. Where an event carries a routing (or a
function that builds one from the new network state), every flow not yet done is
re-routed at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

# a routing, or a function of (down_links, circuits) that builds one
RoutingSource = Any | Callable[[frozenset[int], Any], Any] | None


@dataclass(frozen=True)
class LinkChange:
    """Links go down (both directions carry nothing) or come back up."""

    at_ns: int
    links: tuple[int, ...]
    up: bool
    reroute: RoutingSource = None
    source: str | None = None  # where the scenario gave it ("events.3"), for notes


@dataclass(frozen=True)
class RoutingChange:
    """Install a new routing; flows in flight move to it."""

    at_ns: int
    routing: RoutingSource
    source: str | None = None


@dataclass(frozen=True)
class CircuitChange:
    """A circuit switch re-pairs its ports. The links on ports that move are dark
    for the switch's switching time, then carry the new circuits."""

    at_ns: int
    switch: int
    pairs: tuple[tuple[int, int], ...]
    reroute: RoutingSource = None
    source: str | None = None


@dataclass(frozen=True)
class StopFlows:
    """End flows (iperf-like bulk flows reaching their stop time)."""

    at_ns: int
    flows: tuple[int, ...] = field(default_factory=tuple)
