"""What modules know of the network: switches, ports, min-hop next hops, paths.

Built once per topology with plain Python containers, so a module's decision is a
few dictionary and list lookups (the controller handles 100,000s of packet-ins
per second).

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> f = Fabric(t)
>>> f.name(f.switch_of_host[0]), f.up_ports(f.switch_of_host[0], 3)
('s1_0', (3, 4))
>>> [f.name(n) for n, _ in f.walk(0, 3, lambda node, ports: ports[-1])]
['s1_0', 's2_1', 's1_1']
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..routing.ecmp import ecmp
from ..topology.model import HOST, Topology

#: chooser(node, ports) -> port: how a module picks among equal next hops
Chooser = Callable[[int, tuple], int]


class Fabric:
    """Switches, cabling and min-hop next hops of ``topo`` (packet switches only)."""

    def __init__(self, topo: Topology):
        self.topo = topo
        r = ecmp(topo)
        self.switches = [int(s) for s in r.rows if topo.node_kind[s] != HOST]
        groups = [tuple(int(p) for p in g) for g in r.groups]
        hosts = np.arange(topo.n_hosts)
        #: switch -> per destination host, its min-hop ports (``next_ports`` as a table)
        self.next_table: dict[int, list[tuple]] = {}
        for s in self.switches:
            row = r.entry(np.full(len(hosts), s), hosts)
            self.next_table[s] = [groups[-2 - e] if e <= -2 else ((int(e),) if e >= 0 else ()) for e in row.tolist()]
        dst, dport = topo.channel_dst(), topo.channel_dst_port()
        oc = topo.out_channel
        self.peer: dict[int, dict[int, tuple[int, int, int]]] = {}  # node -> port -> (node, port, channel)
        for n in range(topo.n_nodes):
            self.peer[n] = {int(p): (int(dst[oc[n, p]]), int(dport[oc[n, p]]), int(oc[n, p]))
                            for p in np.flatnonzero(oc[n] >= 0)}
        self.switch_of_host: list[int] = []
        self.host_channel: list[int] = []  # host -> its switch (first cabled port)
        for h in topo.hosts.tolist():
            port = min(self.peer[h])
            node, _, ch = self.peer[h][port]
            self.switch_of_host.append(node)
            self.host_channel.append(ch)
        self.levels = {s: int(topo.node_level[s]) for s in self.switches}
        self.top = max(self.levels.values()) if self.levels else 0
        self.switch_set = frozenset(self.switches)
        self.host_nodes = [int(h) for h in topo.hosts]
        #: channel -> (switch, out port) for every switch port
        self.hop_of_channel = {ch: (n, p) for n in self.switches for p, (_, _, ch) in self.peer[n].items()}
        #: set by a data plane that knows the run's base routing: tag -> the engine
        #: channels that routing gives the tag's flows, or None where it gives them
        #: different paths (the ``ecmp`` module follows it)
        self.base_path = None

    def name(self, node: int) -> str:
        return self.topo.node_names[node]

    def next_ports(self, node: int, dst_host: int) -> tuple:
        """Min-hop ports of switch ``node`` towards host ``dst_host``."""
        return self.next_table[node][dst_host]

    def up_ports(self, node: int, dst_host: int) -> tuple:
        """The min-hop ports of ``node`` towards ``dst_host`` that lead up a level."""
        lv = self.levels[node]
        return tuple(p for p in self.next_table[node][dst_host] if self.levels.get(self.peer[node][p][0], -1) > lv)

    def walk(self, src_host: int, dst_host: int, choose: Chooser) -> list[tuple[int, int]]:
        """Switch hops ``(node, out_port)`` from ``src_host`` to ``dst_host``, picking
        among equal next hops with ``choose``."""
        node = self.switch_of_host[src_host]
        hops = []
        dst_node = self.host_nodes[dst_host]
        nxt_of, peer = self.next_table, self.peer
        for _ in range(64):
            ports = nxt_of[node][dst_host]
            port = ports[0] if len(ports) == 1 else choose(node, ports)
            hops.append((node, port))
            node = peer[node][port][0]
            if node == dst_node:
                return hops
        raise RuntimeError(f"no path from host {src_host} to host {dst_host}")

    def channels(self, src_host: int, hops: list[tuple[int, int]]) -> list[int]:
        """Engine channels of a walk: the host's uplink, then each hop's port."""
        return [self.host_channel[src_host]] + [self.peer[n][p][2] for n, p in hops]
