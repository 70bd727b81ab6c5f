"""D-mod-K routing for PGFTs: the route SimGrid's FatTreeZone takes.

Going up from a node at level ``L`` towards host position ``p``, the node takes parent
slot ``s = (p // prod_{i<L}(up[i]*parallel[i])) mod (up[L]*parallel[L])`` (slot
``u + j*up[L]`` is cable ``j`` to parent ``u``), which the generator puts on port
``down[L-1]*parallel[L-1] + 1 + s`` (hosts: ``1 + s``). It turns down at the first
switch whose labels agree with the destination's on every digit ``>= level``, and
goes down to the child whose digit ``level-1`` is the destination's, on port
``1 + dst.label[l-1] + j*down[l-1]``.

Difference from SimGrid: going *down* over parallel cables, SimGrid picks cable
``j = src.position mod parallel[l-1]``, a function of the source that no
destination-indexed table can hold. Here ``j = (p // prod_{i<l-1}(up[i]*parallel[i]))
mod parallel[l-1]``, the D-mod-K digit of the destination. Paths are identical when
every ``parallel`` is 1 (and the up part always is).

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> r = dmodk(t)
>>> [r.describe(0, d) for d in (1, 4, 5)]
['h0 -> s1_0 -> h1', 'h0 -> s1_0 -> s2_0 -> s1_1 -> h4', 'h0 -> s1_0 -> s2_1 -> s1_1 -> h5']
"""

from __future__ import annotations

from math import prod

import numpy as np

from ..errors import RoutingError
from ..topology.model import Topology
from .table import Routing


def dmodk(topo: Topology, circuits: dict | None = None) -> Routing:
    """Destination-mod-K tables for a topology built by :func:`netsteer.topology.pgft.pgft`.

    Parameters
    ----------
    topo : Topology
        ``topo.meta["kind"] == "pgft"``.
    circuits : None
        Accepted for a uniform engine signature; a PGFT has no circuit switches.

    Returns
    -------
    Routing
        Rows for every switch, and for hosts with more than one up port.
    """
    meta = topo.meta
    if meta.get("kind") != "pgft":
        raise RoutingError(
            f"dmodk routes PGFT topologies only; {topo.name} is {meta.get('kind', 'not a PGFT')!r}"
        )
    if circuits:
        raise RoutingError("dmodk routes PGFTs, which have no circuit switches")
    levels, down, up, par = meta["levels"], meta["down"], meta["up"], meta["parallel"]
    first, counts = meta["first_node"], meta["nodes_by_level"]
    labels = np.asarray(meta["labels"], dtype=np.int64)
    hosts = topo.hosts
    hl = labels[hosts]  # (H, levels)
    p = np.asarray(meta["position"], dtype=np.int64)[hosts]
    # cum[l] = prod_{i<l} up[i]*parallel[i]: the D-mod-K divisor at level l
    cum = [prod(up[i] * par[i] for i in range(lv)) for lv in range(levels + 1)]
    lft = np.full((topo.n_nodes, topo.n_hosts), -1, dtype=np.int32)

    def up_port(lv):
        below = down[lv - 1] * par[lv - 1] if lv > 0 else 0
        return below + 1 + (p // cum[lv]) % (up[lv] * par[lv])

    for lv in range(1, levels + 1):
        ids = np.arange(first[lv], first[lv] + counts[lv])
        j = (p // cum[lv - 1]) % par[lv - 1]
        down_port = 1 + hl[:, lv - 1] + j * down[lv - 1]
        if lv == levels:  # the roots hold every host
            lft[ids] = down_port[None, :]
            continue
        # subtree key: the digits >= lv, which a switch shares with the hosts below it
        stride = np.cumprod([1] + [down[i] for i in range(lv, levels - 1)])
        key_sw = labels[ids][:, lv:] @ stride
        key_h = hl[:, lv:] @ stride
        lft[ids] = np.where(key_sw[:, None] == key_h[None, :], down_port[None, :], up_port(lv)[None, :])
    if up[0] * par[0] > 1:  # multi-homed hosts pick their up port the same way
        lft[hosts] = up_port(0)[None, :]
        lft[hosts, topo.host_index[hosts]] = -1
    return Routing(topo, lft, engine="dmodk")
