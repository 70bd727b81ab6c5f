"""Equal-cost multipath: every min-hop port, chosen per flow by a hash.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [4, 4], [1, 4], link_bandwidth=1e9, link_latency_ns=0)
>>> r = ecmp(t, hash="flow")
>>> len(r.groups), r.groups[0].tolist()
(1, [5, 6, 7, 8])
>>> loads = r.channel_load([0] * 400, [5] * 400)  # one pair, 400 flows
>>> up = [int(t.out_channel[t.node("s1_0"), p]) for p in (5, 6, 7, 8)]
>>> sorted(int(loads[c]) for c in up)  # every up port is used
[95, 96, 103, 106]
"""

from __future__ import annotations

from ..topology.model import Topology
from ._hops import MinHop
from .table import Routing


def ecmp(topo: Topology, hash: str = "src-dst", circuits: dict | None = None, down_links=()) -> Routing:
    """Tables whose entries are groups of all min-hop ports.

    Parameters
    ----------
    topo : Topology
    hash : {"dst", "src-dst", "flow"}
        Fields of :func:`netsteer.routing.table.flow_hash` used to pick a member.
    circuits : dict of int to array_like, optional
        Circuit switch pairings to route across.
    down_links : iterable of int, optional
        Links that are down: routes avoid them.

    Returns
    -------
    Routing
        Single-port sets are plain entries; larger sets are ``groups``.
    """
    sources, entry, groups = MinHop(topo, circuits, down_links).candidates()
    return Routing(topo, entry, rows=sources, groups=groups, ecmp_hash=hash, engine="ecmp",
                   down_links=down_links)
