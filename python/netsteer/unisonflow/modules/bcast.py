"""``bcast-multicast``: a broadcast as one multicast tree (OpenFlow group tables of
type ALL), the SDN-enhanced MPI_Bcast.

A broadcast the MPI library sends as multicast carries a tag whose destination
rank is the root itself (``src == dst``). The module grows a breadth-first tree
from the root's switch over the least loaded ports and keeps the branches that lead
to the communicator's hosts: every switch and host is reached once, so no frame is
delivered twice. Switches with more than one branch get a group; the ports towards
hosts restore each host's true MAC. Unicast bcast messages (an algorithm such as
binomial, where multicast is not used) take the least loaded min-hop path.
"""

from __future__ import annotations

from collections import deque

from ..rules import FlowRule
from ..tags import host_mac
from . import PrimitiveModule, register


@register
class BcastMulticast(PrimitiveModule):
    name = "bcast-multicast"
    primitive = "bcast"

    def rules(self, tag, state):
        f = self.fabric
        if tag.src != tag.dst:
            return self.unicast(tag, tag.value(),
                                lambda node, ports: min(ports, key=lambda p: (state.busy(f.peer[node][p][2]), p)))
        hosts = self.job.comms[tag.comm]
        root = hosts[tag.src]
        want = {int(f.topo.hosts[h]): h for h in set(hosts) if h != root}
        start = f.switch_of_host[root]
        parent: dict[int, tuple[int, int]] = {start: (-1, -1)}  # node -> (parent switch, its port)
        queue = deque([start])
        while queue:
            node = queue.popleft()
            ports = sorted(f.peer[node], key=lambda p: (state.busy(f.peer[node][p][2]), p))
            for p in ports:
                nxt = f.peer[node][p][0]
                if nxt in parent:
                    continue
                if nxt in f.switch_set:
                    parent[nxt] = (node, p)
                    queue.append(nxt)
                elif nxt in want:
                    parent[nxt] = (node, p)
        outputs: dict[int, dict[int, int | None]] = {}
        for hnode, h in want.items():
            child, mac = hnode, host_mac(h)
            while child != start:
                par, port = parent[child]
                if port in outputs.setdefault(par, {}):
                    break
                outputs[par][port] = mac
                child, mac = par, None
        value = tag.value()
        return [FlowRule(n, value, tuple(sorted(o.items()))) for n, o in outputs.items()]
