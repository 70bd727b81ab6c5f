"""What a table set does to all-to-all traffic, per channel, without listing flows.

Destination-based tables make one forest per destination, so instead of walking
every (source, destination) pair this module pushes *counts* of sources from
switch to switch, one destination per column, a chunk of columns at a time:
``[switches x chunk]`` work per hop instead of ``[hosts x chunk]``.

Two traffic sets are profiled:

- every host to every other host (``load``, ``routes``): the balance of the
  tables, as OpenSM's ftree and pFTree count it;
- every partition's own traffic, between members that may talk (``partition_mask``,
  ``partition_load``): the isolation of partitions.

``partition_mask`` packs :func:`netsteer.routing.deadlock.partition_channels`'s rows as bits
(bit ``i`` for ``partitions[i]``), and ``load`` the same as
``routing.channel_load`` of all pairs, at a fraction of the cost.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.routing import build_routing
>>> from netsteer.topology.partitions import Partition
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> r = build_routing(t, "ftree")
>>> a = Partition("a", 1, {t.host_node(0): "full", t.host_node(2): "full"})
>>> b = Partition("b", 2, {t.host_node(1): "full", t.host_node(3): "full"})
>>> p = profile(r, [a, b])
>>> p.max_switch_load, p.max_routes, p.shared_channels
(2, 1, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..topology.model import HOST
from ..topology.partitions import LIMITED, isolating
from .deadlock import host_channels, next_channels

_CHUNK = 512


@dataclass
class Profile:
    """Per-channel figures of one table set (arrays of length ``n_channels``).

    Attributes
    ----------
    load : int64, flows of the all-to-all among all hosts
    routes : int64, destinations whose all-to-all traffic crosses the channel
    partition_mask : uint64, bit ``i``: partition ``i``'s own traffic crosses it
    partition_load : int64, flows of every partition's own all-to-all
    switch_channel : bool, both ends are switches
    """

    load: np.ndarray
    routes: np.ndarray
    partition_mask: np.ndarray
    partition_load: np.ndarray
    switch_channel: np.ndarray

    @property
    def max_switch_load(self) -> int:
        """Largest all-to-all load on a switch-to-switch channel (host channels carry
        the same under any routing)."""
        return int(self.load[self.switch_channel].max(initial=0))

    @property
    def max_routes(self) -> int:
        return int(self.routes[self.switch_channel].max(initial=0))

    @property
    def max_partition_load(self) -> int:
        return int(self.partition_load[self.switch_channel].max(initial=0))

    @property
    def shared(self) -> np.ndarray:
        """Channels carrying the own traffic of two or more partitions."""
        m = self.partition_mask
        return (m & (m - np.uint64(1))) != 0

    @property
    def shared_channels(self) -> int:
        return int(self.shared.sum())


class _Pusher:
    """Pushes source counts along the tables, destination columns at a time."""

    def __init__(self, routing):
        topo = routing.topo
        self.routing = routing
        self.sw = topo.switches
        self.sidx = np.full(topo.n_nodes, -1, dtype=np.int64)
        self.sidx[self.sw] = np.arange(len(self.sw))
        self.cdst = topo.channel_dst().astype(np.int64)
        self.nC = topo.n_channels
        self.hch = host_channels(routing)
        # switch each host's traffic enters (-1: the host has no channel)
        ok = self.hch >= 0
        self.entry = np.full(topo.n_hosts, -1, dtype=np.int64)
        self.entry[ok] = self.sidx[self.cdst[self.hch[ok]]]

    def per_switch(self, hosts: np.ndarray) -> np.ndarray:
        """Count of ``hosts`` (bool over host indices) entering at each switch."""
        e = self.entry[hosts & (self.entry >= 0)]
        return np.bincount(e, minlength=len(self.sw)).astype(np.int64)

    def push(self, nc: np.ndarray, start: np.ndarray):
        """Yield ``(channels, columns, flows)`` hop by hop from ``start`` ``[S, C]``;
        ``nc[S, C]`` is the channel each switch sends each column's traffic on."""
        S, C = start.shape
        pend = start
        for _ in range(S + 1):  # loop-free tables end within S hops
            r, c = np.nonzero(pend)
            if r.size == 0:
                return
            ch, w = nc[r, c], pend[r, c]
            ok = ch >= 0  # a missing entry drops the traffic (Routing.check reports it)
            ch, c, w = ch[ok], c[ok], w[ok]
            yield ch, c, w
            nxt = self.sidx[self.cdst[ch]]
            on = nxt >= 0
            pend = np.bincount(nxt[on] * C + c[on], weights=w[on], minlength=S * C).astype(np.int64).reshape(S, C)


def profile(routing, partitions: Sequence | None = None, *, balance: bool = True,
            isolation: bool = True) -> Profile:
    """All-to-all loads and partition isolation of ``routing``.

    Parameters
    ----------
    routing : Routing
        Single-port tables (no ECMP groups).
    partitions : list of Partition, optional
        Default: ``routing.partitions``. The default partition (0x7fff) is left out.
    balance, isolation : bool
        Profile the all-hosts traffic (``load``, ``routes``), the partitions'
        (``partition_mask``, ``partition_load``); what is skipped stays zero.
    """
    topo = routing.topo
    parts = isolating(partitions if partitions is not None else getattr(routing, "partitions", None))
    if len(parts) > 64:
        raise ValueError(f"at most 64 partitions can be profiled, got {len(parts)}")
    H, nC = topo.n_hosts, topo.n_channels
    pu = _Pusher(routing)
    load = np.zeros(nC, dtype=np.int64)
    routes = np.zeros(nC, dtype=np.int64)
    every = np.ones(H, dtype=bool)
    base = pu.per_switch(every)
    sources = pu.hch >= 0
    if balance:
        np.add.at(load, pu.hch[sources], H - 1)
    mask = np.zeros(nC, dtype=np.uint64)
    pload = np.zeros(nC, dtype=np.int64)
    # per partition: members, full members, and where their traffic enters
    member = np.zeros((len(parts), H), dtype=bool)
    full = np.zeros((len(parts), H), dtype=bool)
    for i, p in enumerate(parts if isolation else []):
        for node, m in p.members.items():
            h = topo.host_index[node]
            if h >= 0:
                member[i, h] = True
                full[i, h] = m != LIMITED
        if member[i].sum() < 2 or not full[i].any():
            member[i] = False  # nobody may talk
            continue
        # a member sends when another member may hear it (one of the two full)
        n_full = int(full[i].sum())
        talks = member[i] & (full[i] | (n_full - full[i] > 0)) & sources
        mask[pu.hch[talks]] |= np.uint64(1) << np.uint64(i)
        hears = np.where(full[i], int(member[i].sum()) - 1, n_full)  # destinations each member sends to
        np.add.at(pload, pu.hch[talks], hears[talks])
    base_all = np.stack([pu.per_switch(m) for m in member], axis=1) if parts else None
    base_full = np.stack([pu.per_switch(m & f) for m, f in zip(member, full)], axis=1) if parts else None
    bits = np.uint64(1) << np.arange(len(parts), dtype=np.uint64)
    for a in range(0, H, _CHUNK):
        d = np.arange(a, min(a + _CHUNK, H))
        pi, pc = np.nonzero(member[:, d]) if isolation and parts else (np.zeros(0, int), np.zeros(0, int))
        if not balance and pi.size == 0:
            continue
        nc = next_channels(routing, d)[pu.sw]  # shared by both traffic sets
        if balance:
            start = np.repeat(base[:, None], len(d), axis=1)
            own = pu.entry[d] >= 0
            start[pu.entry[d][own], np.flatnonzero(own)] -= 1  # a host does not send to itself
            for ch, _, w in pu.push(nc, start):
                load += np.bincount(ch, weights=w, minlength=nC).astype(np.int64)
                routes += np.bincount(ch, minlength=nC)
        if pi.size:
            # one column per (partition, member destination)
            dfull = full[pi, d[pc]]
            start = np.where(dfull[None, :], base_all[:, pi], base_full[:, pi]).astype(np.int64)
            # d is among its own sources only when full (a limited d hears full members)
            cols = np.flatnonzero((pu.entry[d[pc]] >= 0) & dfull)
            start[pu.entry[d[pc]][cols], cols] -= 1
            for ch, c, w in pu.push(nc[:, pc], start):
                np.bitwise_or.at(mask, ch, bits[pi[c]])
                pload += np.bincount(ch, weights=w, minlength=nC).astype(np.int64)
    return Profile(load=load, routes=routes, partition_mask=mask, partition_load=pload,
                   switch_channel=_switch_channels(topo))


def _switch_channels(topo) -> np.ndarray:
    kind = topo.node_kind
    return (kind[topo.channel_src()] != HOST) & (kind[topo.channel_dst()] != HOST)
