"""Default routing of any packet-switched topology as OpenFlow tables: ECMP on
select groups.

Every switch gets, per destination host, a flow on the host's true MAC address
(``dl_dst``; the testbed's hosts have static neighbours, so the destination MAC
names the host) that outputs to the single min-hop port or to a select group
over the equal min-hop ports (Open vSwitch hashes each flow's 5-tuple onto a
bucket, so one TCP connection stays on one path, as ECMP does). Rules at a
higher priority (UnisonFlow's tag rules) override this table; packets they do
not match fall back to it.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> tabs = ecmp_tables(t)
>>> sorted(tabs[t.node("s1_0")].groups.items())[0]
(3, 'type=select,bucket=output:3,bucket=output:4')
"""

from __future__ import annotations

from ..drivers.openflow.flows import Table
from ..unisonflow.fabric import Fabric
from .testbed import host_mac

BASE_PRIORITY = 10


def ecmp_tables(topo, fabric: Fabric | None = None) -> dict[int, Table]:
    """Switch node -> its :class:`Table` (table 0, priority 10, one flow per host;
    group ``h + 1`` for host ``h`` where there are several next hops)."""
    f = fabric or Fabric(topo)
    out = {}
    for s in f.switches:
        tab = Table()
        for h in range(topo.n_hosts):
            ports = f._next[s][h]
            if not ports:
                continue
            match = f"dl_dst={host_mac(h)}"
            if len(ports) == 1:
                tab.flows[(0, BASE_PRIORITY, match)] = f"output:{ports[0]}"
            else:
                tab.groups[h + 1] = "type=select," + ",".join(f"bucket=output:{p}" for p in ports)
                tab.flows[(0, BASE_PRIORITY, match)] = f"group:{h + 1}"
        out[s] = tab
    return out


__all__ = ["ecmp_tables", "BASE_PRIORITY"]
