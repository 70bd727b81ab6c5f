"""Hybrid electrical-packet / optical-circuit rack networks (Christodoulopoulos et al.).

Racks of servers hang off Top-of-Rack (ToR) switches. Each ToR has two kinds of
uplinks: electrical ones into a small, oversubscribed packet core, and optical ones
into each of an array of circuit (MEMS) switches. The reference system of the source
document is 320 racks x 32 servers = 10,240 servers, 10 Gbit/s ToRs, and 320-port
MEMS switches; the electrical core runs at a lower rate.

Which circuit-switch port is paired with which is runtime state
(:class:`netsteer.sim.network.CircuitState`), not topology: here a ToR's optical
uplinks are plain cables into circuit-switch ports.

Numbering
---------
Nodes: hosts ``h0..`` rack by rack, then ToRs ``tor<r>`` (level 1), core switches
``core<c>`` (level 2), circuit switches ``ocs<j>``.

ToR ports: ``1..servers_per_rack`` are the servers, then the ``tor_uplinks``
electrical uplinks (uplink ``u`` goes to core ``u % core_switches``), then the
optical uplinks, circuit switch by circuit switch: uplink ``i`` into circuit switch
``j`` is ToR port ``servers_per_rack + tor_uplinks + j * circuit_uplinks + i + 1``
and circuit-switch port ``r * circuit_uplinks + i + 1`` for rack ``r``.

Examples
--------
>>> t = hybrid(4, 2, server_bandwidth=10e9, tor_uplinks=1, core_bandwidth=1e9,
...            circuit_ports=8, circuit_uplinks=1, circuit_bandwidth=10e9,
...            switching_time_ns=25_000_000, link_latency_ns=500)
>>> t.summary()["hosts"], t.summary()["switches"], t.summary()["circuit_switches"]
(8, 5, 1)
>>> t.n_links  # 8 servers + 4 electrical + 4 optical
16
>>> t.meta["oversubscription"]
20.0
>>> [int(x) for x in t.meta["circuit_port_of"][2, 0]]  # rack 2, first optical uplink
[13, 3]
"""

from __future__ import annotations

import numpy as np

from .model import Topology, TopologyBuilder


def default_core_switches(tor_uplinks) -> int:
    """One core switch, none when ToRs have no electrical uplinks (it would have no cables)."""
    return 0 if tor_uplinks == 0 else 1


def check_hybrid(
    racks: int,
    servers_per_rack: int,
    tor_uplinks: int,
    core_switches: int,
    circuit_switches: int,
    circuit_ports: int,
    circuit_uplinks: int,
) -> None:
    """Raise ``ValueError`` naming the parameter when the shape is impossible.

    >>> check_hybrid(320, 32, 4, 1, 4, 256, 1)
    Traceback (most recent call last):
    ...
    ValueError: circuit_ports is 256 but 320 racks x 1 circuit_uplinks need 320 ports on each circuit switch
    """
    for key, v, low in (
        ("racks", racks, 1), ("servers_per_rack", servers_per_rack, 1),
        ("tor_uplinks", tor_uplinks, 0), ("core_switches", core_switches, 0),
        ("circuit_switches", circuit_switches, 0), ("circuit_uplinks", circuit_uplinks, 0),
        ("circuit_ports", circuit_ports, 0),
    ):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < low:
            raise ValueError(f"{key} must be an integer >= {low}, got {v!r}")
    if tor_uplinks and not core_switches:
        raise ValueError(f"tor_uplinks is {tor_uplinks} but core_switches is 0")
    if core_switches and not tor_uplinks:
        raise ValueError(f"core_switches is {core_switches} but tor_uplinks is 0: a core switch would have no "
                         f"cables (without uplinks there is no electrical core: core_switches 0, its default then)")
    if core_switches and tor_uplinks % core_switches:
        raise ValueError(
            f"tor_uplinks ({tor_uplinks}) must be a multiple of core_switches "
            f"({core_switches}) so every ToR reaches every core switch equally"
        )
    if circuit_switches and not circuit_uplinks:
        raise ValueError(f"circuit_switches is {circuit_switches} but circuit_uplinks is 0")
    need = racks * circuit_uplinks
    if circuit_switches and circuit_ports < need:
        raise ValueError(
            f"circuit_ports is {circuit_ports} but {racks} racks x {circuit_uplinks} "
            f"circuit_uplinks need {need} ports on each circuit switch"
        )
    if not (tor_uplinks or circuit_switches) and racks > 1:
        raise ValueError("racks are not connected: give tor_uplinks or circuit_switches")


def hybrid(
    racks: int,
    servers_per_rack: int,
    *,
    server_bandwidth: float,
    tor_uplinks: int,
    core_switches: int | None = None,
    core_bandwidth: float,
    circuit_switches: int = 1,
    circuit_ports: int,
    circuit_uplinks: int,
    circuit_bandwidth: float,
    switching_time_ns: int,
    link_latency_ns: int,
    name: str | None = None,
) -> Topology:
    """Build a hybrid electrical/optical rack network.

    Parameters
    ----------
    racks, servers_per_rack : int
    server_bandwidth : float
        Bits per second of each server-to-ToR cable.
    tor_uplinks : int
        Electrical uplinks per ToR, spread evenly over the core switches.
    core_switches : int, optional
        1 by default, 0 without ``tor_uplinks`` (no electrical core).
    core_bandwidth : float
        Bits per second of each electrical uplink.
    circuit_switches : int
        Circuit (MEMS) switches in the optical array.
    circuit_ports : int
        Ports per circuit switch; at least ``racks * circuit_uplinks``.
    circuit_uplinks : int
        Optical uplinks from each ToR into *each* circuit switch.
    circuit_bandwidth : float
        Bits per second of each optical uplink.
    switching_time_ns : int
        How long a circuit switch's ports stay dark while it moves.
    link_latency_ns : int
        Latency of every cable.
    name : str, optional

    Returns
    -------
    Topology
        ``meta``: ``kind="hybrid"``, ``racks``, ``servers_per_rack``,
        ``tor_of_host`` (ToR node per host index), ``tors``, ``cores`` and
        ``circuit_switches`` (node ids), ``circuit_port_of`` (int array
        ``[racks, circuit_switches * circuit_uplinks, 2]``: for ToR uplink ``k`` the
        circuit node and its port), ``tor_port_of`` (the ToR port of the same
        uplink, ``[racks, circuit_switches * circuit_uplinks]``), ``circuit_ports``
        and ``oversubscription`` (server bandwidth over electrical uplink
        bandwidth per ToR; ``inf`` without uplinks).
    """
    if core_switches is None:
        core_switches = default_core_switches(tor_uplinks)
    check_hybrid(racks, servers_per_rack, tor_uplinks, core_switches, circuit_switches,
                 circuit_ports, circuit_uplinks)
    for key, v in (("server_bandwidth", server_bandwidth), ("core_bandwidth", core_bandwidth),
                   ("circuit_bandwidth", circuit_bandwidth)):
        if not v > 0:
            raise ValueError(f"{key} must be positive, got {v!r}")
    if switching_time_ns < 0:
        raise ValueError(f"switching_time_ns must be >= 0, got {switching_time_ns!r}")

    b = TopologyBuilder(name or f"hybrid-{racks}x{servers_per_rack}")
    for h in range(racks * servers_per_rack):
        b.add_host(f"h{h}")
    tors = [b.add_switch(f"tor{r}", level=1) for r in range(racks)]
    cores = [b.add_switch(f"core{c}", level=2) for c in range(core_switches)]
    ocs = [b.add_circuit_switch(f"ocs{j}", switching_time_ns) for j in range(circuit_switches)]

    for r, tor in enumerate(tors):
        for s in range(servers_per_rack):
            b.add_link(r * servers_per_rack + s, tor, bandwidth=server_bandwidth,
                       latency_ns=link_latency_ns, a_port=1, b_port=s + 1)
    for r, tor in enumerate(tors):
        for u in range(tor_uplinks):
            b.add_link(tor, cores[u % core_switches], bandwidth=core_bandwidth,
                       latency_ns=link_latency_ns, a_port=servers_per_rack + u + 1)
    n_opt = circuit_switches * circuit_uplinks
    circuit_port_of = np.zeros((racks, n_opt, 2), dtype=np.int32)
    tor_port_of = np.zeros((racks, n_opt), dtype=np.int32)
    for r, tor in enumerate(tors):
        for j, node in enumerate(ocs):
            for i in range(circuit_uplinks):
                k = j * circuit_uplinks + i
                tp, cp = servers_per_rack + tor_uplinks + k + 1, r * circuit_uplinks + i + 1
                b.add_link(tor, node, bandwidth=circuit_bandwidth, latency_ns=link_latency_ns,
                           a_port=tp, b_port=cp)
                circuit_port_of[r, k] = (node, cp)
                tor_port_of[r, k] = tp

    up = tor_uplinks * core_bandwidth
    b.meta = {
        "kind": "hybrid",
        "racks": racks,
        "servers_per_rack": servers_per_rack,
        "tor_of_host": np.repeat(np.array(tors, dtype=np.int32), servers_per_rack),
        "tors": np.array(tors, dtype=np.int32),
        "cores": np.array(cores, dtype=np.int32),
        "circuit_switches": np.array(ocs, dtype=np.int32),
        "circuit_port_of": circuit_port_of,
        "tor_port_of": tor_port_of,
        "circuit_ports": circuit_ports,
        "oversubscription": servers_per_rack * server_bandwidth / up if up else float("inf"),
    }
    return b.build()
