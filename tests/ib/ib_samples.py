"""Sample fabrics and texts for the OpenSM driver tests (shared by module name, not conftest)."""

from __future__ import annotations

from pathlib import Path

from netsteer.topology.model import Topology, TopologyBuilder

NET_EXAMPLES = Path("/usr/share/doc/ibsim-utils/net-examples")


def two_switch_fabric() -> Topology:
    """ibsim's ``net.2sw2path4hca`` as ibsim numbers it (GUIDs from ``sim_net.c``).

    Switch1 and Switch2 joined by two cables; Hca1/Hca3 on Switch1, Hca2/Hca4 on
    Switch2. Written out here so the parser tests need neither ibsim nor a net
    file reader.
    """
    b = TopologyBuilder("2sw2path4hca")
    s1 = b.add_switch("Switch1", guid=0x200000)
    s2 = b.add_switch("Switch2", guid=0x200001)
    # CAs take node GUIDs 0x100000 + 3*i in file order (2 ports + 1 each)
    h = {name: b.add_host(name, guid=0x100000 + 3 * i) for i, name in enumerate(["Hca1", "Hca2", "Hca3", "Hca4"])}
    kw = dict(bandwidth=8e9, latency_ns=100)
    b.add_link(s1, h["Hca1"], a_port=1, b_port=1, **kw)
    b.add_link(s1, h["Hca3"], a_port=2, b_port=1, **kw)
    b.add_link(s1, s2, a_port=3, b_port=3, **kw)
    b.add_link(s1, s2, a_port=5, b_port=5, **kw)
    b.add_link(s2, h["Hca2"], a_port=1, b_port=1, **kw)
    b.add_link(s2, h["Hca4"], a_port=2, b_port=1, **kw)
    return b.build()


# What OpenSM 3.3.23 wrote for net.2sw2path4hca with -D 0x43 (minhop after ftree
# gave up on this non-fat-tree), byte for byte.
OPENSM_DUMP = """\
Unicast lids [0-6] of switch Lid 1 guid 0x0000000000200000 ('Switch1'):
0x0001 000 # Switch portguid 0x0000000000200000: 'Switch1'
0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
0x0003 003 # Switch portguid 0x0000000000200001: 'Switch2'
0x0004 003 # Channel Adapter portguid 0x0000000000100004: 'Hca2'
0x0005 002 # Channel Adapter portguid 0x0000000000100007: 'Hca3'
0x0006 005 # Channel Adapter portguid 0x000000000010000a: 'Hca4'
6 lids dumped
Unicast lids [0-6] of switch Lid 3 guid 0x0000000000200001 ('Switch2'):
0x0001 003 # Switch portguid 0x0000000000200000: 'Switch1'
0x0002 003 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
0x0003 000 # Switch portguid 0x0000000000200001: 'Switch2'
0x0004 001 # Channel Adapter portguid 0x0000000000100004: 'Hca2'
0x0005 005 # Channel Adapter portguid 0x0000000000100007: 'Hca3'
0x0006 002 # Channel Adapter portguid 0x000000000010000a: 'Hca4'
6 lids dumped
"""

# ibroute's view of the same switch (infiniband-diags), as it prints it
IBROUTE_SWITCH2 = """\
Unicast lids [0x0-0x6] of switch Lid 3 guid 0x0000000000200001 (Switch2):
  Lid  Out   Destination
       Port     Info 
0x0001 003 : (Switch portguid 0x0000000000200000: 'Switch1')
0x0002 003 : (Channel Adapter portguid 0x0000000000100001: 'Hca1')
0x0003 000 : (Switch portguid 0x0000000000200001: 'Switch2')
0x0004 001 : (Channel Adapter portguid 0x0000000000100004: 'Hca2')
0x0005 005 : (Channel Adapter portguid 0x0000000000100007: 'Hca3')
0x0006 002 : (Channel Adapter portguid 0x000000000010000a: 'Hca4')
6 valid lids dumped 
"""


def dual_port_fabric() -> Topology:
    """ibsim's ``net.2sw2path4hca2port``: Hca1 on Switch1 and Hca2 on Switch2, each
    by both of its ports (1 and 2); the switches joined by ports 3 and 5."""
    b = TopologyBuilder("2sw2path4hca2port")
    s1 = b.add_switch("Switch1", guid=0x200000)
    s2 = b.add_switch("Switch2", guid=0x200001)
    h1 = b.add_host("Hca1", guid=0x100000)
    h2 = b.add_host("Hca2", guid=0x100003)
    kw = dict(bandwidth=8e9, latency_ns=100)
    b.add_link(s1, h1, a_port=1, b_port=1, **kw)
    b.add_link(s1, h1, a_port=2, b_port=2, **kw)
    b.add_link(s1, s2, a_port=3, b_port=3, **kw)
    b.add_link(s1, s2, a_port=5, b_port=5, **kw)
    b.add_link(s2, h2, a_port=1, b_port=1, **kw)
    b.add_link(s2, h2, a_port=2, b_port=2, **kw)
    return b.build()


# What OpenSM 3.3.23 wrote for net.2sw2path4hca2port with -D 0x43 (minhop),
# byte for byte: LIDs 4 and 6 are the HCAs' second ports; Switch1 reaches LID 6
# through port 5, because port 3 already carries LID 5 (OpenSM balances min-hop
# ports by the routes they carry).
OPENSM_DUMP_2PORT = """\
Unicast lids [0-6] of switch Lid 1 guid 0x0000000000200000 ('Switch1'):
0x0001 000 # Switch portguid 0x0000000000200000: 'Switch1'
0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
0x0003 003 # Switch portguid 0x0000000000200001: 'Switch2'
0x0004 002 # Channel Adapter portguid 0x0000000000100002: 'Hca1'
0x0005 003 # Channel Adapter portguid 0x0000000000100004: 'Hca2'
0x0006 005 # Channel Adapter portguid 0x0000000000100005: 'Hca2'
6 lids dumped
Unicast lids [0-6] of switch Lid 3 guid 0x0000000000200001 ('Switch2'):
0x0001 003 # Switch portguid 0x0000000000200000: 'Switch1'
0x0002 003 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
0x0003 000 # Switch portguid 0x0000000000200001: 'Switch2'
0x0004 005 # Channel Adapter portguid 0x0000000000100002: 'Hca1'
0x0005 001 # Channel Adapter portguid 0x0000000000100004: 'Hca2'
0x0006 002 # Channel Adapter portguid 0x0000000000100005: 'Hca2'
6 lids dumped
"""
