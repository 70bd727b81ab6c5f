"""Against the real thing: OpenSM on ibsim, tables read back with ibroute.

Each test starts its own ibsim (own socket name) and OpenSM in ``tmp_path``;
:class:`IbFabric` stops both process groups on exit, also when a test fails.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from ib_samples import NET_EXAMPLES

from netsteer.drivers.opensm.guids import endpoint_guid
from netsteer.drivers.opensm.lft_dump import (
    format_lft_dump,
    parse_lft_tables,
    read_lft_tables,
    write_lft_dump,
)
from netsteer.drivers.opensm.lids import opensm_lids, read_guid2lid
from netsteer.drivers.opensm.partitions import (
    Partition,
    parse_partitions_conf,
    write_partitions_conf,
)
from netsteer.drivers.opensm.runner import FabricError, IbFabric
from netsteer.errors import NetsteerError
from netsteer.topology.ibnetdiscover import read_ibnetdiscover
from netsteer.topology.ibsim_net import read_ibsim_net, write_ibsim_net
from netsteer.topology.model import HOST
from netsteer.topology.pgft import pgft

pytestmark = [pytest.mark.ib, pytest.mark.usefixtures("need_ib_tools")]


def switch_lids(topo, lids) -> list[int]:
    return [int(lids.lid[s]) for s in topo.switches]


def installed(fab: IbFabric, topo, lids):
    """What the switches hold, read with ibroute, in netsteer's terms."""
    return parse_lft_tables(fab.ibroute_all(switch_lids(topo, lids)), topo, file="ibroute")


def assert_same_tables(a, b):
    assert np.array_equal(a.hosts, b.hosts)
    assert np.array_equal(a.switches, b.switches)
    assert np.array_equal(a.ports, b.ports)  # second HCA ports
    assert a.lids == b.lids


def round_trip(net, topo, tmp_path, engine: str):
    """OpenSM's own tables -> netsteer -> dump -> OpenSM file engine -> ibroute."""
    with IbFabric(net, tmp_path / "a", engine=engine) as fab:
        theirs = read_lft_tables(fab.lfts_dump, topo)
        # LIDs: the dump, OpenSM's cache and netsteer's prediction agree
        assert theirs.lids == read_guid2lid(fab.guid2lid, topo)
        assert theirs.lids == opensm_lids(topo, sm_node=0)
        # and what the switches hold is what OpenSM dumped
        assert_same_tables(installed(fab, topo, theirs.lids), theirs)
        original = fab.lfts_dump.read_text()
    mine = tmp_path / "netsteer-lfts.dump"
    write_lft_dump(topo, theirs.hosts, theirs.lids, mine, switch_lft=theirs.switches, port_lft=theirs.ports)
    with IbFabric(net, tmp_path / "b", engine="file", lfts_file=mine) as fab:
        assert fab.engine_used == "file"
        assert_same_tables(installed(fab, topo, theirs.lids), theirs)
        reloaded = fab.lfts_dump.read_text()
    return original, mine.read_text(), reloaded


@pytest.mark.parametrize("example", ["net", "net.1", "net.2sw2path", "net.2sw2path4hca", "net.2sw2path4hca2port"])
def test_net_examples_round_trip_through_file_engine(example, tmp_path):
    net = NET_EXAMPLES / example
    topo = read_ibsim_net(net)
    # ftree refuses these small non-fat-trees (OpenSM then falls back): use minhop
    original, mine, reloaded = round_trip(net, topo, tmp_path, "minhop")
    assert_same_tables(parse_lft_tables(reloaded, topo), parse_lft_tables(mine, topo))
    # netsteer's dump is OpenSM's, byte for byte (second HCA ports included), and
    # OpenSM dumps exactly what it loaded
    assert mine == original and reloaded == mine


def test_route_reaches_second_hca_ports_as_opensm_minhop(tmp_path):
    # netsteer routes one endpoint per host; the dump must still route every CA port
    # that has a LID (here Hca1 and Hca2 port 2, LIDs 4 and 6), or OpenSM loads
    # tables that cannot reach them. Min-hop the way OpenSM does it: the same bytes.
    import subprocess
    import sys

    net = NET_EXAMPLES / "net.2sw2path4hca2port"
    topo = read_ibsim_net(net)
    mine = tmp_path / "netsteer.dump"
    p = subprocess.run([sys.executable, "-m", "netsteer", "route", "-t", str(net), "-e", "minhop", "-o", str(mine)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    with IbFabric(net, tmp_path / "osm", engine="minhop") as fab:
        original = fab.lfts_dump.read_text()
    assert mine.read_text() == original
    with IbFabric(net, tmp_path / "file", engine="file", lfts_file=mine) as fab:
        assert fab.engine_used == "file"
        lids = read_guid2lid(fab.guid2lid, topo)
        assert [(topo.node_names[q.node], q.port, q.lid) for q in lids.ports] == [("Hca1", 2, 4), ("Hca2", 2, 6)]
        got = installed(fab, topo, lids)
    # every switch has a route to every port LID
    assert (got.ports[topo.switches] > 0).all() and (got.hosts[topo.switches] > 0).all()


@pytest.mark.parametrize(
    "shape",
    [
        dict(levels=2, down=[4, 4], up=[1, 2], parallel=[1, 1]),  # 2-level, 2 spines
        dict(levels=2, down=[4, 4], up=[1, 2], parallel=[1, 2]),  # parallel cables
        dict(levels=3, down=[4, 2, 2], up=[1, 2, 2], parallel=[1, 1, 1]),  # 3-level
        # 48 hosts + 16 switches = LIDs 1..64: ibroute itself skips LID 64 (see
        # IbFabric.ibroute), so this checks the workaround too
        dict(levels=2, down=[6, 8], up=[1, 8], parallel=[1, 1]),
    ],
    ids=["2lvl", "2lvl-parallel", "3lvl", "top-lid-64"],
)
def test_opensm_ftree_on_generated_fat_tree_round_trips(shape, tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(**shape, link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    original, mine, reloaded = round_trip(net, topo, tmp_path, "ftree")
    assert mine == original and reloaded == mine
    # ftree routed every host from every switch
    tables = parse_lft_tables(mine, topo)
    assert (tables.hosts[topo.switches] > 0).all()


def test_netsteer_routing_is_installed_as_written(tmp_path):
    from netsteer.routing import build_routing

    net = tmp_path / "fabric.net"
    tree = pgft(2, [4, 4], [1, 2], link_bandwidth=32e9, link_latency_ns=100)
    write_ibsim_net(tree, net)
    topo = read_ibsim_net(net)  # same nodes and ports as tree, plus ibsim's GUIDs
    assert topo.node_names == tree.node_names
    assert np.array_equal(topo.out_channel >= 0, tree.out_channel >= 0)
    routing = build_routing(tree, "dmodk")  # dmodk wants the PGFT labels
    # On this tree OpenSM's ftree picks exactly D-mod-K's ports, so swap the two up
    # ports of every leaf: still a valid routing, and one OpenSM would not compute
    lft = routing.node_rows(np.arange(topo.n_nodes))  # dense copy: host rows -1
    leaves = [int(s) for s in topo.switches if topo.node_names[s].startswith("s1_")]
    for leaf in leaves:
        row = lft[leaf]
        lft[leaf] = np.where(row == 5, 6, np.where(row == 6, 5, row))
    lids = opensm_lids(topo, sm_node=0)  # predicted before OpenSM ever runs
    mine = tmp_path / "dmodk.dump"
    write_lft_dump(topo, lft, lids, mine)
    with IbFabric(net, tmp_path / "run", engine="file", lfts_file=mine) as fab:
        assert read_guid2lid(fab.guid2lid, topo) == lids
        got = installed(fab, topo, lids)
    sw = topo.switches
    assert np.array_equal(got.hosts[sw], lft[sw])
    with IbFabric(net, tmp_path / "ftree", engine="ftree") as fab:
        ftree = read_lft_tables(fab.lfts_dump, topo)
    assert np.array_equal(ftree.hosts[sw], routing.node_rows(sw))
    assert not np.array_equal(ftree.hosts[sw], got.hosts[sw])


def assert_pkey_tables(fab, topo, parts, engine_lids):
    """Each host port's P_Key table, read with smpquery, holds what ``parts`` give it."""
    for h in (int(x) for x in topo.hosts):
        out = fab.run(["smpquery", "pkeys", str(int(engine_lids.lid[h]))])
        table = {int(w, 16) for line in out.splitlines() if ":" in line
                 for w in line.split(":", 1)[1].split() if w.startswith("0x")} - {0}
        want = {p.pkey | (0x8000 if p.members[h] != "limited" else 0) for p in parts if h in p.members}
        assert table == want, topo.node_names[h]


def test_partitions_reach_the_port_pkey_tables(tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(2, [4, 4], [1, 2], link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    hosts = [int(h) for h in topo.hosts]
    parts = [
        Partition("Default", 0x7FFF, {n: "limited" for n in range(topo.n_nodes)} | {0: "full"}),
        Partition("victim", 0x0010, {h: "full" for h in hosts[:4]} | {hosts[4]: "limited"}),
        Partition("aggressor", 0x0011, {h: "full" for h in hosts[8:]}),
    ]
    conf = tmp_path / "partitions.conf"
    write_partitions_conf(parts, topo, conf)
    assert parse_partitions_conf(conf.read_text(), topo) == parts
    with IbFabric(net, tmp_path / "run", engine="ftree", partitions=conf) as fab:
        assert_pkey_tables(fab, topo, parts, opensm_lids(topo, sm_node=0))


def one_switch_fabric(tmp_path):
    """Four hosts on one switch as an ibsim net file: the file, its topology as read
    back, and the hosts' port GUIDs."""
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(1, [4], [1], link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    return net, topo, [endpoint_guid(topo, int(h)) for h in topo.hosts]


def test_unterminated_last_partition_and_shared_pkey_read_as_opensm_applies_them(tmp_path):
    # OpenSM applies a last definition without ';' and merges two names for one PKey;
    # netsteer's reading of the file must give the P_Key tables OpenSM installs
    net, topo, g = one_switch_fabric(tmp_path)
    conf = tmp_path / "partitions.conf"
    conf.write_text(f"Default=0x7fff : ALL=limited, SELF=full ;\n"
                    f"a=0x10 : {g[0]:#x}=full, {g[1]:#x} ;\n"
                    f"b=0x10 : {g[2]:#x}=full ;\n"
                    f"c=0x11 : {g[3]:#x}=full\n")
    parts = parse_partitions_conf(conf.read_text(), topo, sm_node=0)
    assert [(p.name, p.pkey, len(p.members)) for p in parts] == [
        ("Default", 0x7FFF, topo.n_nodes), ("a", 0x10, 3), ("c", 0x11, 1)]
    with IbFabric(net, tmp_path / "run", engine="minhop", partitions=conf) as fab:
        assert_pkey_tables(fab, topo, parts, opensm_lids(topo, sm_node=0))


def test_last_mention_and_self_written_back_reach_the_port_pkey_tables(tmp_path):
    # a port listed twice keeps its last mention in OpenSM; netsteer reads it so, and
    # what it writes from a reading without the SM's node (route --sl-out) installs
    # the same P_Key tables, the SM port's (node 0, a full member of 0x7fff) included
    net, topo, g = one_switch_fabric(tmp_path)
    conf = tmp_path / "partitions.conf"
    conf.write_text(f"Default=0x7fff : ALL=limited, SELF=full ;\n"
                    f"a=0x10 : {g[0]:#x}=full, {g[1]:#x}=full, {g[0]:#x}=limited ;\n"
                    f"a2=0x10 : {g[1]:#x}=limited ;\n"
                    f"c=0x30 : ALL_CAS=full, {g[2]:#x}=limited, {g[3]:#x}=limited ;\n")
    parts = parse_partitions_conf(conf.read_text(), topo, sm_node=0)
    assert [parts[0].members[0]] + [parts[1].members[int(h)] for h in topo.hosts[:2]] == ["full", "limited", "limited"]
    with IbFabric(net, tmp_path / "run", engine="minhop", partitions=conf) as fab:
        assert_pkey_tables(fab, topo, parts, opensm_lids(topo, sm_node=0))
    again = tmp_path / "again.conf"
    write_partitions_conf(parse_partitions_conf(conf.read_text(), topo), topo, again)
    with IbFabric(net, tmp_path / "run2", engine="minhop", partitions=again) as fab:
        assert_pkey_tables(fab, topo, parts, opensm_lids(topo, sm_node=0))


def test_ibnetdiscover_sees_the_fabric_ibsim_was_given(tmp_path):
    net = NET_EXAMPLES / "net.2sw2path4hca"
    from_net = read_ibsim_net(net)
    with IbFabric(net, tmp_path / "run", engine="minhop") as fab:
        (tmp_path / "disc.txt").write_text(fab.ibnetdiscover())
        discovered = read_ibnetdiscover(tmp_path / "disc.txt")
        # OpenSM's dump reads against the discovered topology as well
        tables = read_lft_tables(fab.lfts_dump, discovered)
    key = lambda t: sorted(  # noqa: E731 -- cables as GUID/port pairs
        tuple(sorted([(int(t.node_guid[a]), int(pa)), (int(t.node_guid[b]), int(pb))]))
        for a, pa, b, pb in zip(t.link_a, t.link_a_port, t.link_b, t.link_b_port)
    )
    assert key(discovered) == key(from_net)
    assert (tables.hosts[discovered.switches] > 0).all()
    assert {discovered.node_names[n] for n in range(discovered.n_nodes) if discovered.node_kind[n] == HOST} == {
        "Hca1", "Hca2", "Hca3", "Hca4"
    }


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_fallback_is_an_error_and_processes_are_stopped(tmp_path):
    net = NET_EXAMPLES / "net.2sw2path4hca"
    bad = tmp_path / "bad.dump"
    bad.write_text("Unicast lids [0-6] of switch Lid 1 guid zz\n")  # OpenSM: parse error -> minhop
    fab = IbFabric(net, tmp_path / "run", engine="file", lfts_file=bad)
    with pytest.raises(FabricError, match="minhop engine, not file"):
        with fab:
            pass
    assert _gone(fab.ibsim.pid) and _gone(fab.opensm.pid)


def test_processes_are_stopped_when_the_body_fails(tmp_path):
    net = NET_EXAMPLES / "net.1"
    fab = IbFabric(net, tmp_path / "run", engine="minhop")
    with pytest.raises(ZeroDivisionError):
        with fab:
            pids = fab.ibsim.pid, fab.opensm.pid
            assert not _gone(pids[0]) and not _gone(pids[1])
            1 / 0
    assert _gone(pids[0]) and _gone(pids[1])


def test_two_fabrics_run_side_by_side(tmp_path):
    # each IbFabric has its own ibsim socket name, so parallel test runs do not mix
    a_net, b_net = NET_EXAMPLES / "net.1", NET_EXAMPLES / "net.2sw2path4hca"
    with IbFabric(a_net, tmp_path / "a", engine="minhop") as a, IbFabric(b_net, tmp_path / "b", engine="minhop") as b:
        assert a.sockname != b.sockname
        assert "Switch2" not in a.ibnetdiscover() and "Switch2" in b.ibnetdiscover()


def test_writer_output_is_what_the_file_engine_needs(tmp_path):
    # a dump naming every port GUID survives LIDs that differ from the fabric's:
    # OpenSM moves each entry to the LID its port GUID has now
    net = NET_EXAMPLES / "net.2sw2path4hca"
    topo = read_ibsim_net(net)
    with IbFabric(net, tmp_path / "a", engine="minhop") as fab:
        real = read_lft_tables(fab.lfts_dump, topo)
    shifted = type(real.lids)(np.where(real.lids.lid > 0, real.lids.lid + 100, 0).astype(np.int32), real.lids.guid)
    mine = tmp_path / "shifted.dump"
    mine.write_text(format_lft_dump(topo, real.hosts, shifted, real.switches))
    with IbFabric(net, tmp_path / "b", engine="file", lfts_file=mine) as fab:
        got = installed(fab, topo, real.lids)
    assert np.array_equal(got.hosts, real.hosts)


def port_pkey_tables(fab, topo, lids):
    """``{(node, port): P_Keys}`` of every CA port, read with smpquery (0x0000 left out)."""
    from netsteer.drivers.opensm.guids import endpoint_port

    def read(lid):
        out = fab.run(["smpquery", "pkeys", str(int(lid))])
        return {int(w, 16) for line in out.splitlines() if ":" in line
                for w in line.split(":", 1)[1].split() if w.startswith("0x")} - {0}

    got = {(int(h), endpoint_port(topo, int(h))): read(lids.lid[int(h)]) for h in topo.hosts}
    return got | {pl[:2]: read(pl.lid) for pl in lids.ports}


def expected_port_tables(parts, topo, lids):
    """The same from netsteer's reading: each CA port's memberships."""
    from netsteer.drivers.opensm.guids import endpoint_port

    def key(p, m):
        return p.pkey | (0x8000 if m != "limited" else 0)

    want = {}
    for h in (int(x) for x in topo.hosts):
        want[(h, endpoint_port(topo, h))] = {key(p, p.members[h]) for p in parts if h in p.members}
    for pl in lids.ports:
        want[(pl.node, pl.port)] = {key(p, p.other_ports[pl[:2]]) for p in parts if pl[:2] in p.other_ports}
    return want


def test_membership_is_per_port_and_a_node_guid_is_no_member(tmp_path):
    # dual-port HCAs: OpenSM gives each port the membership its port GUID has, and a
    # CA's node GUID names no port, so OpenSM leaves that host out (netsteer used to
    # count the node GUID as the host, merge port 2 into port 1, and rewrite it so)
    from netsteer.drivers.opensm.guids import port_guid

    net = NET_EXAMPLES / "net.2sw2path4hca2port"
    topo = read_ibsim_net(net)
    h1, h2 = topo.node("Hca1"), topo.node("Hca2")
    lids = opensm_lids(topo, sm_node=0)
    assert len(lids.ports) == 2  # the second ports of both HCAs
    members = (f"Default=0x7fff : ALL=limited, SELF=full ;\n"
               f"a=0x10 : {port_guid(topo, h1, 1):#x}=limited, {port_guid(topo, h1, 2):#x}=full, "
               f"{port_guid(topo, h2, 1):#x}=full ;\n")
    node_guid = f"b=0x11 : {int(topo.node_guid[h2]):#x}=full ;\n"
    conf = tmp_path / "partitions.conf"
    conf.write_text(members + node_guid)
    with IbFabric(net, tmp_path / "run", engine="minhop", partitions=conf) as fab:
        tables = port_pkey_tables(fab, topo, lids)
    assert len(tables) == 4 and all(0x11 not in t and 0x8011 not in t for t in tables.values())
    # netsteer refuses the node GUID (OpenSM would ignore it) and reads the rest per port
    with pytest.raises(NetsteerError, match="node GUID"):
        parse_partitions_conf(conf.read_text(), topo, sm_node=0)
    conf.write_text(members)
    parts = parse_partitions_conf(members, topo, sm_node=0)
    want = expected_port_tables(parts, topo, lids)
    assert want[(h1, 1)] != want[(h1, 2)]  # the case that was merged
    again = tmp_path / "again.conf"  # what route --sl-out writes back
    write_partitions_conf(parse_partitions_conf(members, topo), topo, again)
    for name, c in (("run2", conf), ("run3", again)):
        with IbFabric(net, tmp_path / name, engine="minhop", partitions=c) as fab:
            assert port_pkey_tables(fab, topo, lids) == want, name
