"""The driver protocol: how the controller core reaches a network.

A driver carries intents out and reports what it applied, when, and what failed.
It never decides. The simulator's driver is :class:`netsteer.sim.driver.SimDriver`;
the ``openflow`` driver (os-ken: flow-mods, group-mods, bundles) and the ``opensm``
driver (``partitions.conf``, QoS options, LFT files) implement the same four
members against real switches, with ``now`` read from the wall clock.

::

    now                      current time, integer ns
    advance(until) -> str    let the network run until ``until`` (the simulator runs
                             its engine; a real driver sleeps and polls)
    counters() -> Counters   what the switches' counters read now
    apply(intent) -> Applied carry one intent out, or report why not
    reports() -> list        network changes since the last call (links dark/lit)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from .intents import Intent, describe


@dataclass(frozen=True)
class Applied:
    """What a driver did with an intent.

    ``at_ns`` is when it started, ``done_ns`` when it took full effect (the delay
    model of the driver: rule pushing, VLAN tagging, circuit switching), and
    ``failed`` the reason it did not, or None. ``superseded`` says, in a driver's
    record, that a later command moved the same circuit ports before this one lit
    them (``done_ns`` is then when that happened, if none of its ports lit).
    """

    intent: Intent
    at_ns: int
    done_ns: int
    failed: str | None = None
    superseded: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed is None

    def as_dict(self, names=None, link_name=None) -> dict[str, Any]:
        out = describe(self.intent, names, link_name)
        out.update(at_s=self.at_ns / 1e9, done_s=self.done_ns / 1e9)
        if self.failed is not None:
            out["failed"] = self.failed
        if self.superseded is not None:
            out["superseded"] = self.superseded
        return out


def superseded(a: Applied, at_ns: int, links, when: str, lit_some: bool) -> Applied:
    """``a`` (a circuit command's record) once a later command moved ``links`` of it
    again at ``at_ns`` (``when``, as the driver writes times) before they lit: partly
    in effect if some of its links lit, else never (``done_ns`` is then ``at_ns``).
    One wording for every driver."""
    if lit_some:
        return replace(a, superseded=f"partly: a later circuit command moved links {sorted(links)} again at {when}, "
                                     "before they lit; the rest lit")
    return replace(a, done_ns=at_ns,
                   superseded=f"never in effect: a later circuit command moved its ports again at {when}, before they lit")


@dataclass(frozen=True)
class NetworkChanged:
    """Links went dark or came back (``cause``: ``"links"`` for link changes,
    ``"circuits"`` for circuit switches moving and lighting their ports)."""

    at_ns: int
    cause: str
    links: tuple[int, ...]
    up: bool


@dataclass(frozen=True)
class Counters:
    """Counters as switches give them when polled: cumulative, at one instant.

    ``port_bytes[c]`` is the bytes sent on channel ``c`` (a port's tx counter);
    ``pair_bytes[a, b]``, when the network has racks, the bytes rack ``a`` sent to
    rack ``b`` (what the servers' per-destination-rack rules count). A reading a
    switch did not give (its statistics request failed) is NaN: missing, never 0.
    """

    time_ns: int
    port_bytes: np.ndarray
    pair_bytes: np.ndarray | None = None


@dataclass(frozen=True)
class NetworkView:
    """The network state a controller decides on.

    ``down_links`` carry no traffic now, for whatever reason; ``failed_links``, when
    the driver can tell, are those of them that failed (not dark because their
    circuit switch is moving), or None when it cannot.
    """

    now: int
    down_links: frozenset[int]
    circuits: dict[int, np.ndarray] = field(default_factory=dict)
    failed_links: frozenset[int] | None = None


class Driver(Protocol):
    """The southbound driver protocol (see the module text)."""

    @property
    def now(self) -> int: ...

    def advance(self, until: int | None) -> str: ...

    def counters(self) -> Counters: ...

    def apply(self, intent: Intent) -> Applied: ...

    def reports(self) -> list[NetworkChanged]: ...

    def view(self) -> NetworkView: ...
