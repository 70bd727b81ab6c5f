"""Partitions: which hosts may talk to which, as a model type.

A partition is a set of member nodes, each a *full* or *limited* member (InfiniBand
P_Key semantics; ``both`` counts as full). Two hosts may talk when some partition
has both as members and at least one of them is full. The default partition
(P_Key ``0x7fff``) is the "everyone" partition and never isolates anything.

Routing, evaluation and QoS use this module; file formats (OpenSM's
``partitions.conf``) live in :mod:`netsteer.drivers.opensm.partitions`.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(1, [4], [1], link_bandwidth=1e9, link_latency_ns=0)
>>> a = Partition("a", 1, {t.host_node(0): FULL, t.host_node(1): LIMITED})
>>> b = Partition("b", 2, {t.host_node(1): FULL, t.host_node(2): FULL})
>>> host_partitions(t, [a, b]).tolist()
[0, 0, 1, -1]
>>> can_communicate([a, b], t).astype(int)[1].tolist()
[1, 1, 1, 0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .model import Topology

DEFAULT_PKEY = 0x7FFF
FULL, LIMITED, BOTH = "full", "limited", "both"

__all__ = ["BOTH", "DEFAULT_PKEY", "FULL", "LIMITED", "Partition", "can_communicate", "host_partitions",
           "isolating", "pkey_text"]


def pkey_text(pkey: int) -> str:
    """A partition's PKey as outputs name it: as ``partitions.conf`` headers write it,
    the low 15 bits (the full-member bit belongs to a port's membership, not to the
    partition).

    >>> pkey_text(0x8001), pkey_text(0x7fff)
    ('0x0001', '0x7fff')
    """
    return f"{pkey & 0x7FFF:#06x}"


@dataclass
class Partition:
    """One partition (definitions with the same PKey merged).

    Attributes
    ----------
    name : str
    pkey : int, low 15 bits
    members : dict, node -> ``"full"``, ``"limited"`` or ``"both"``
        Membership of the node's *endpoint* port (a switch's port 0, a host's lowest
        cabled port: the one netsteer routes and counts in :func:`can_communicate`).
    flags : dict, multicast flags given (``mtu``, ``rate``, ``sl``, ``Q_Key``,
        ``TClass``, ``FlowLabel``: int; ``scope``: list of int)
    ipoib, indx0 : bool
    self_membership : str or None
        ``SELF`` membership when the SM node was not known while reading.
    mgroups : list of str, ``mgid=...`` entries, as written
    line : int, line of the first definition (0 when built in code)
    after_self : set of int
        Members mentioned (last) after the last ``SELF``. OpenSM keeps a port's
        last mention, so should the SM be one of these it keeps ``members[n]``;
        any other SM port gets ``self_membership``. Empty: ``SELF`` comes last.
    other_ports : dict, ``(node, port)`` -> membership
        The other CA ports that are members (a dual-port HCA's second port):
        membership is per port, as P_Key tables are; routing and
        :func:`can_communicate` look at the endpoints only.
    """

    name: str
    pkey: int
    members: dict[int, str] = field(default_factory=dict)
    flags: dict[str, object] = field(default_factory=dict)
    ipoib: bool = False
    indx0: bool = False
    self_membership: str | None = None
    mgroups: list[str] = field(default_factory=list)
    line: int = field(default=0, compare=False)
    after_self: set[int] = field(default_factory=set)
    other_ports: dict[tuple[int, int], str] = field(default_factory=dict)

    def full_members(self) -> list[int]:
        return sorted(n for n, m in self.members.items() if m != LIMITED)


def isolating(partitions: Sequence[Partition] | None) -> list[Partition]:
    """The partitions that isolate anything: all but the default (0x7fff)."""
    return [p for p in partitions or [] if p.pkey != DEFAULT_PKEY]


def host_partitions(topo: Topology, partitions: Sequence[Partition]) -> np.ndarray:
    """Per host index: position in ``partitions`` of its partition, -1 for none.

    The first partition that lists the host wins; the default partition (PKey
    0x7fff) never counts.
    """
    part = np.full(topo.n_hosts, -1, dtype=np.int64)
    for i, p in enumerate(partitions):
        if p.pkey == DEFAULT_PKEY:
            continue
        for node in p.members:
            hi = topo.host_index[node]
            if hi >= 0 and part[hi] < 0:
                part[hi] = i
    return part


def can_communicate(parts: Sequence[Partition], topo: Topology) -> np.ndarray:
    """``[n_hosts, n_hosts]`` bool: may host ``a`` send to host ``b``?

    True when some partition has both as members and one of them full; every host
    may talk to itself.
    """
    n = topo.n_hosts
    ok = np.eye(n, dtype=bool)
    for p in parts:
        full = np.zeros(n, dtype=bool)
        member = np.zeros(n, dtype=bool)
        for node, m in p.members.items():
            h = topo.host_index[node]
            if h >= 0:
                member[h] = True
                full[h] = m != LIMITED
        ok |= (full[:, None] & member[None, :]) | (member[:, None] & full[None, :])
    return ok
