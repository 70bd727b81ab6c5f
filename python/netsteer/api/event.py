"""Scripted changes of a scenario's network (its ``events:``), at a time ``at``.

After a link change (with ``reroute_on_change``), a routing change or a circuit
re-pairing, every flow not yet done is re-routed at that moment (see
``docs/scenarios.md``). Nodes and ports are checked when the scenario is built.

Examples
--------
>>> link_down("50ms", [("s1_0", 5)])
{'at': '50ms', 'link_down': [{'node': 's1_0', 'port': 5}]}
>>> routing("200ms", "minhop")
{'at': '200ms', 'routing': {'engine': 'minhop'}}
>>> circuit("1s", "ocs0", [(1, 9), (2, 10)])["circuit"]["pairs"]
[[1, 9], [2, 10]]
"""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import NetsteerError
from ..scenario import EventModel
from ._values import given, plain, validated

Event = dict[str, Any]
"""An event as a scenario file holds it."""
Port = tuple[str, int] | dict[str, Any]
"""A link end: ``(node name, port)`` or ``{"node": ..., "port": ...}``."""


def _ports(links: Sequence[Port]) -> list[dict[str, Any]]:
    def one(k: int, l) -> dict[str, Any]:
        if isinstance(l, dict):
            return dict(l)
        if isinstance(l, (tuple, list)) and len(l) == 2:
            return {"node": l[0], "port": plain(l[1])}
        raise NetsteerError(f"expected a link end (node name, port) or {{'node': ..., 'port': ...}}, got {l!r}",
                            field=f"links.{k}")

    if isinstance(links, (str, bytes, dict)) or not isinstance(links, Sequence):
        raise NetsteerError(f"expected a list of link ends [(node name, port), ...], got {links!r}", field="links")
    return [one(k, l) for k, l in enumerate(links)]


def _event(data: Event) -> Event:
    validated(EventModel, data)
    return data


def link_down(at: str | int, links: Sequence[Port]) -> Event:
    """The links on these ports go down at ``at`` (their flows stall or re-route)."""
    return _event({"at": plain(at), "link_down": _ports(links)})


def link_up(at: str | int, links: Sequence[Port]) -> Event:
    """The links on these ports come back at ``at``."""
    return _event({"at": plain(at), "link_up": _ports(links)})


def routing(at: str | int, engine: str, *, hash: str | None = None, partitions: str | None = None) -> Event:
    """The routing is replaced at ``at`` by what ``engine`` builds."""
    return _event({"at": plain(at), "routing": {"engine": engine, **given(hash=hash, partitions=partitions)}})


def circuit(at: str | int, switch: str, pairs: Sequence[tuple[int, int]]) -> Event:
    """Circuit switch ``switch`` re-pairs its ports at ``at`` (the ports that move are
    dark for its switching time)."""
    return _event({"at": plain(at), "circuit": {"switch": switch, "pairs": plain(pairs)}})


__all__ = ["circuit", "link_down", "link_up", "routing"]
