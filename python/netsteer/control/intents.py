"""Intents: what the controller core wants the network to look like.

Plain frozen dataclasses, never functions, so that every driver (the simulator,
OpenFlow switches, OpenSM files) can carry them out, log them and compare them.
Nodes, ports and links are the topology's integer ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SetLinks:
    """Links go down (both directions carry nothing) or come back up."""

    links: tuple[int, ...]
    up: bool


@dataclass(frozen=True)
class InstallRouting:
    """Replace the base routing; flows in flight move to it.

    ``routing`` is a routing table object (data: next hops per switch), built by
    the controller; the driver checks it before installing it.
    """

    routing: Any
    reason: str = ""


@dataclass(frozen=True)
class SetCircuits:
    """A circuit switch re-pairs its ports: ``pairs`` is its whole new pairing.
    The ports that move are dark for the switch's switching time."""

    switch: int
    pairs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class VlanPath:
    """One rack-to-rack circuit path, tagged ``vlan``: ``racks[0] -> ... -> racks[-1]``,
    hop ``i`` over optical plane ``planes[i]``; ``weight`` splits a pair's traffic."""

    vlan: int
    racks: tuple[int, ...]
    planes: tuple[int, ...]
    weight: float = 1.0


@dataclass(frozen=True)
class PairRule:
    """Forwarding of rack ``src`` to rack ``dst``: over ``paths`` (split by weight),
    or, with no paths, over the electrical network."""

    src: int
    dst: int
    paths: tuple[VlanPath, ...] = ()


@dataclass(frozen=True)
class PushRules:
    """Install ``rules`` at ``priority`` in the server switches of each rule's
    source rack; a rule of higher priority shadows lower ones for its pair.
    ``extra`` rules are pushed too (to emulate a larger fabric's rule count)."""

    priority: int
    rules: tuple[PairRule, ...]
    extra: int = 0


@dataclass(frozen=True)
class RemoveRules:
    """Remove the rules of these rack pairs at ``priority``."""

    priority: int
    pairs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class TagPorts:
    """Tag ToR ports with VLAN ids: ``ports`` is ``((tor_node, port, vlans), ...)``;
    a port's VLAN set is replaced by the one given."""

    ports: tuple[tuple[int, int, frozenset[int]], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class SetQos:
    """InfiniBand QoS: the traffic of ``job`` or of the QoS class ``traffic_class``
    (its ``flows`` in the simulator, its ``hosts`` for a subnet manager) moves to
    service level ``sl``; ``config`` (a :class:`netsteer.qos.config.QosConfig`), if
    given, replaces the SL2VL maps and VL arbitration tables. The source's dynamic
    priority selection."""

    sl: int | None = None
    job: str = ""
    traffic_class: str = ""
    flows: tuple[int, ...] = ()
    hosts: tuple[int, ...] = ()
    config: Any = None


Intent = SetLinks | InstallRouting | SetCircuits | PushRules | RemoveRules | TagPorts | SetQos


def describe(intent: Intent, names=None, link_name=None) -> dict[str, Any]:
    """A JSON-able summary of ``intent`` for reports.

    ``names`` gives node names by index; ``link_name(link)`` a link's name (its two
    ends, :meth:`netsteer.topology.Topology.link_name`): the links are then named, and
    their indices kept under ``link_indices``.

    >>> describe(SetLinks((3, 4), up=False))
    {'intent': 'links', 'links': [3, 4], 'up': False}
    >>> describe(SetLinks((3,), up=True), link_name=lambda l: f"s:{l} <-> t:1")
    {'intent': 'links', 'links': ['s:3 <-> t:1'], 'link_indices': [3], 'up': True}
    """
    name = (lambda n: names[n]) if names is not None else (lambda n: n)
    if isinstance(intent, SetLinks):
        if link_name is not None:
            return {"intent": "links", "links": [link_name(int(x)) for x in intent.links],
                    "link_indices": [int(x) for x in intent.links], "up": intent.up}
        return {"intent": "links", "links": list(intent.links), "up": intent.up}
    if isinstance(intent, InstallRouting):
        out = {"intent": "routing"}
        engine = getattr(intent.routing, "engine", None)
        if isinstance(engine, str):  # which tables went in (a scripted change names its engine)
            out["engine"] = engine
        if intent.reason:
            out["reason"] = intent.reason
        return out
    if isinstance(intent, SetCircuits):
        return {"intent": "circuits", "switch": name(intent.switch), "pairs": [list(p) for p in intent.pairs]}
    if isinstance(intent, PushRules):
        return {"intent": "push_rules", "priority": intent.priority, "rules": len(intent.rules), "extra": intent.extra}
    if isinstance(intent, RemoveRules):
        return {"intent": "remove_rules", "priority": intent.priority, "rules": len(intent.pairs)}
    if isinstance(intent, TagPorts):
        return {"intent": "tag_ports", "ports": len(intent.ports)}
    if isinstance(intent, SetQos):
        who = {"class": intent.traffic_class} if intent.traffic_class else {"job": intent.job}
        return {"intent": "qos", **who, "sl": intent.sl, "flows": len(intent.flows),
                "hosts": len(intent.hosts), "tables": intent.config is not None}
    raise TypeError(f"not an intent: {intent!r}")
