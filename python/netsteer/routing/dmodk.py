"""D-mod-K routing for PGFTs: the route SimGrid 3.32's FatTreeZone takes.

Going up from a node at level ``L`` towards host position ``p``, the node takes parent
slot ``s = (p // prod_{i<L} up[i]) mod (up[L]*parallel[L])`` (slot ``u + j*up[L]`` is
cable ``j`` to parent ``u``), which the generator puts on port
``down[L-1]*parallel[L-1] + 1 + s`` (hosts: ``1 + s``). The divisor has no
``parallel`` factor: that is SimGrid 3.32's ``get_local_route`` (``d /=
num_parents_per_node_[i]``; a commit multiplying by the cable count was reverted
before the release). It turns down at the first switch whose labels agree with the
destination's on every digit ``>= level``, and goes down to the child whose digit
``level-1`` is the destination's, on port ``1 + dst.label[l-1] + j*down[l-1]``.

Going *down* a bundle of ``parallel[l-1] > 1`` cables, SimGrid picks cable
``src.position mod parallel[l-1]`` (and, below the first down hop, a cable that
depends on the index its scan stopped at one level up): a function of the source,
which no destination-indexed table (this one, OpenSM's LFTs) can hold. Here the cable
is ``j = (p // prod_{i<l} up[i]) mod parallel[l-1]``: the cable the child would take
*up* towards this switch for the same destination (the up slot's ``s // up[l-1]``),
so every down path is the mirror of an up path. Among the destinations below a child
that reach a given parent, that digit is free, so they spread over the whole bundle
(the digit that picked the parent is a different one). A bundle down to a *host*
carries a single destination, so there one cable serves every source, where SimGrid
spreads sources over all of them. Paths are identical to SimGrid's, cable for cable,
whenever the bundles on the way down have one cable; the nodes visited are always
SimGrid's.

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
    # cum[l] = prod_{i<l} up[i]: SimGrid's D-mod-K divisor at level l (no parallel factor)
    cum = [prod(up[:lv]) for lv in range(levels + 1)]
    r = Routing.blank(topo, engine="dmodk")  # rows: the switches and multi-homed hosts

    def up_port(lv):
        below = down[lv - 1] * par[lv - 1] if lv > 0 else 0
        return below + 1 + (p // cum[lv]) % (up[lv] * par[lv])

    for lv in range(1, levels + 1):
        ids = np.arange(first[lv], first[lv] + counts[lv])
        # down cable: the one the child takes up to this level for the same destination
        j = (p // cum[lv]) % par[lv - 1]
        down_port = 1 + hl[:, lv - 1] + j * down[lv - 1]
        if lv == levels:  # the roots hold every host
            r.set_rows(ids, down_port[None, :])
            continue
        # subtree key: the digits >= lv, which a switch shares with the hosts below it
        stride = np.cumprod([1] + [down[i] for i in range(lv, levels - 1)])
        key_sw = labels[ids][:, lv:] @ stride
        key_h = hl[:, lv:] @ stride
        r.set_rows(ids, np.where(key_sw[:, None] == key_h[None, :], down_port[None, :], up_port(lv)[None, :]))
    if up[0] * par[0] > 1:  # multi-homed hosts pick their up port the same way
        r.set_rows(hosts, up_port(0)[None, :])
        r.set_entry(hosts, topo.host_index[hosts], -1)
    return r


class SimGridFatTreeRoutes:
    """SimGrid 3.32's FatTreeZone route for every (source, destination), per flow.

    Not a forwarding table: going down a bundle of parallel cables SimGrid's cable
    depends on the source, which :func:`dmodk` cannot express. This object resolves
    each flow's path the way ``FatTreeZone::get_local_route`` does, so that a
    comparison with SimGrid can take route choice out of the question. It has the
    ``paths`` method :func:`netsteer.sim.simulate` needs, not the rest of
    :class:`Routing` (no tables, no drivers).

    The walk: up as :func:`dmodk`; down from the turning switch at level ``T``, the
    first hop takes child slot ``i = (src mod parallel[T-1]) * down[T-1] + dst.label[T-1]``.
    SimGrid's scan has no ``break``: having moved to the child, it goes on with
    ``i + 1`` and takes the first slot ``i' >= i + 1`` of the child with ``i' mod
    down[l-1] == dst.label[l-1]``; only if there is none does it start over at
    ``(src mod parallel[l-1]) * down[l-1]``. With one cable per bundle both give the
    single slot ``dst.label[l-1]``.

    Examples
    --------
    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(2, [4, 4], [1, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> sg = SimGridFatTreeRoutes(t)
    >>> [t.channel_name(c) for c in sg.path(1, 4)]  # down cable 1 mod 2 = 1 of s2_0's bundle
    ['h1[1]->s1_0', 's1_0[5]->s2_0', 's2_0[6]->s1_1', 's1_1[1]->h4']
    >>> [t.channel_name(c) for c in dmodk(t).path(1, 4)]  # cable (4 // 2) mod 2 = 0
    ['h1[1]->s1_0', 's1_0[5]->s2_0', 's2_0[2]->s1_1', 's1_1[1]->h4']
    """

    engine = "simgrid-fattree"

    def __init__(self, topo: Topology):
        meta = topo.meta
        if meta.get("kind") != "pgft":
            raise RoutingError(f"SimGrid's fat-tree route needs a PGFT; {topo.name} is not one")
        self.topo = topo

    def path(self, src: int, dst: int) -> list[int]:
        off, ch = self.paths([src], [dst])
        return [int(c) for c in ch[off[0] : off[1]]]

    def paths(self, src_hosts, dst_hosts, classes=None, flow_ids=None, circuits=None):
        """Channels of every flow as CSR ``(offsets, channels)``, like :meth:`Routing.paths`."""
        topo, meta = self.topo, self.topo.meta
        levels, down, up, par = meta["levels"], meta["down"], meta["up"], meta["parallel"]
        src = np.asarray(src_hosts, dtype=np.int64).ravel()
        dst = np.asarray(dst_hosts, dtype=np.int64).ravel()
        if len(src) != len(dst):
            raise RoutingError(f"{len(src)} sources but {len(dst)} destinations")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_hosts):
            raise RoutingError(f"host index out of range 0..{topo.n_hosts - 1}")
        hosts = topo.hosts
        labels = np.asarray(meta["labels"], dtype=np.int64)[hosts]
        pos = np.asarray(meta["position"], dtype=np.int64)[hosts]
        ls, ld = labels[src], labels[dst]
        ps, pd = pos[src], pos[dst]
        # turning level: the lowest T whose digits >= T agree (0 for src == dst)
        turn = np.zeros(len(src), dtype=np.int64)
        for lv in range(levels - 1, -1, -1):
            differs = ls[:, lv] != ld[:, lv]
            turn = np.where((turn == 0) & differs, lv + 1, turn)
        n_hops = 2 * turn
        offsets = np.zeros(len(src) + 1, dtype=np.int64)
        np.cumsum(n_hops, out=offsets[1:])
        channels = np.zeros(int(offsets[-1]), dtype=np.int32)
        out_ch, ch_dst = topo.out_channel, topo.channel_dst()
        node = np.asarray(topo.hosts, dtype=np.int64)[src]
        for lv in range(levels):  # up: hop lv leaves level lv
            m = turn > lv
            below = down[lv - 1] * par[lv - 1] if lv > 0 else 0
            port = below + 1 + (pd[m] // prod(up[:lv])) % (up[lv] * par[lv])
            ch = out_ch[node[m], port]
            channels[offsets[:-1][m] + lv] = ch
            node[m] = ch_dst[ch]
        slot = np.full(len(src), -1, dtype=np.int64)  # the scan's last slot, -1: none yet
        for lv in range(levels, 0, -1):  # down: leaves level lv
            m = turn >= lv
            k, lab = down[lv - 1], ld[m, lv - 1]
            st = slot[m] + 1
            cont = st + (lab - st) % k  # the scan going on from the slot above
            fresh = (ps[m] % par[lv - 1]) * k + lab  # ... or starting over
            i = np.where((slot[m] >= 0) & (cont < k * par[lv - 1]), cont, fresh)
            ch = out_ch[node[m], 1 + i]
            channels[offsets[:-1][m] + turn[m] + (turn[m] - lv)] = ch
            node[m] = ch_dst[ch]
            slot[m] = i
        return offsets, channels
