"""Which topology node (and port) an InfiniBand GUID names.

OpenSM files name end ports by *port* GUID: a switch's management port 0 has the
switch's node GUID, and a channel adapter (host) port has its own GUID. ibsim gives
a CA port ``node_guid + port`` (``ibsim/sim_net.c``), which is also what ConnectX
HCAs do, so that is the rule used here unless the topology carries explicit port
GUIDs in ``topo.meta["port_guids"]`` (``{node: {port: guid}}``, as an
ibnetdiscover importer can record them).

A host's *endpoint* is its lowest-numbered connected port: netsteer routes one
destination per host, so that port's LID is the host's LID.

Examples
--------
>>> from netsteer.topology.model import TopologyBuilder
>>> b = TopologyBuilder("t")
>>> h = b.add_host("h0", guid=0x100000)
>>> s = b.add_switch("s0", guid=0x200000)
>>> _ = b.add_link(h, s, bandwidth=1e9, latency_ns=1, a_port=1, b_port=3)
>>> t = b.build()
>>> hex(endpoint_guid(t, h)), hex(endpoint_guid(t, s))
('0x100001', '0x200000')
>>> idx = guid_index(t)
>>> idx[0x100001], idx[0x100000], idx[0x200000]
((0, 1), (0, 1), (1, 0))
"""

from __future__ import annotations

import numpy as np

from netsteer.topology.model import HOST, Topology


def endpoint_port(topo: Topology, node: int) -> int:
    """Port whose LID stands for ``node``: 0 for a switch, else the lowest connected port.

    Returns -1 for a host with no connected port.
    """
    if topo.node_kind[node] != HOST:
        return 0
    ports = np.flatnonzero(topo.out_channel[node] >= 0)
    return int(ports[0]) if len(ports) else -1


def port_guid(topo: Topology, node: int, port: int) -> int:
    """Port GUID of ``node``'s ``port`` (0 when the node has no GUID)."""
    explicit = topo.meta.get("port_guids", {}).get(node, {})
    if port in explicit:
        return int(explicit[port])
    base = int(topo.node_guid[node])
    if base == 0:
        return 0
    # switches expose one end port (port 0) carrying the node GUID
    return base if topo.node_kind[node] != HOST else base + port


def endpoint_guid(topo: Topology, node: int) -> int:
    """Port GUID of ``node``'s endpoint (see :func:`endpoint_port`)."""
    port = endpoint_port(topo, node)
    return 0 if port < 0 else port_guid(topo, node, port)


def cabled_ca_ports(topo: Topology, node: int) -> list[int]:
    """A host's cabled ports, lowest first (its endpoint first); [] for a switch."""
    if topo.node_kind[node] != HOST:
        return []
    return [int(p) for p in np.flatnonzero(topo.out_channel[node] >= 0)]


def port_index(topo: Topology) -> dict[int, tuple[int, int]]:
    """Map every *port* GUID to ``(node, port)``: a switch's (its node GUID, port 0)
    and every cabled CA port's. A CA's node GUID names no port: OpenSM looks ports
    up by port GUID, so it is not here.

    >>> from netsteer.topology.model import TopologyBuilder
    >>> b = TopologyBuilder("t")
    >>> h = b.add_host("h0", guid=0x100000)
    >>> s = b.add_switch("s0", guid=0x200000)
    >>> _ = b.add_link(h, s, bandwidth=1e9, latency_ns=1, a_port=1, b_port=3)
    >>> {hex(g): v for g, v in port_index(b.build()).items()}
    {'0x200000': (1, 0), '0x100001': (0, 1)}
    """
    index: dict[int, tuple[int, int]] = {}
    for node in range(topo.n_nodes):
        if topo.node_kind[node] != HOST and int(topo.node_guid[node]):
            index.setdefault(int(topo.node_guid[node]), (node, 0))
    for node in range(topo.n_nodes):
        for port in cabled_ca_ports(topo, node):
            g = port_guid(topo, node, port)
            if g:
                index[g] = (node, port)
    return index


def guid_index(topo: Topology) -> dict[int, tuple[int, int]]:
    """Map every known GUID to ``(node, port)``.

    Port GUIDs of connected host ports map to that port; node GUIDs map to the
    node's endpoint port, so a file may name a host by either. Port GUIDs win over
    node GUIDs when both rules give the same number (ibsim never does that).
    """
    index: dict[int, tuple[int, int]] = {}
    for node in range(topo.n_nodes):
        g = int(topo.node_guid[node])
        if g:
            index.setdefault(g, (node, endpoint_port(topo, node)))
    for node in range(topo.n_nodes):
        if topo.node_kind[node] != HOST:
            continue
        for port in np.flatnonzero(topo.out_channel[node] >= 0):
            g = port_guid(topo, node, int(port))
            if g:
                index[g] = (node, int(port))
    return index
