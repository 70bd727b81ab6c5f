"""``netsteer route`` writes the fabric's own LIDs, checked against ibsim and OpenSM.

On a discovered fabric (ibnetdiscover output, which names every port's LID) the
dump must use exactly those LIDs; on a fabric without LIDs (an ibsim net file)
``--sm-node`` must give the LIDs OpenSM really assigns with its SM on that node.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from netsteer.drivers.opensm.guids import guid_index
from netsteer.drivers.opensm.lft_dump import parse_lft_dump
from netsteer.drivers.opensm.lids import read_guid2lid
from netsteer.drivers.opensm.runner import IbFabric
from netsteer.topology.ibnetdiscover import read_ibnetdiscover
from netsteer.topology.ibsim_net import read_ibsim_net, write_ibsim_net
from netsteer.topology.model import HOST
from netsteer.topology.pgft import pgft

pytestmark = [pytest.mark.ib, pytest.mark.usefixtures("need_ib_tools")]


def netsteer(*args):
    p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def dump_lids(text: str, topo) -> dict[int, int]:
    """node -> LID, as the dump says: every entry's port GUID, and every switch header."""
    index = guid_index(topo)
    out: dict[int, int] = {}
    for block in parse_lft_dump(text):
        node, _ = index[block.guid]
        assert out.setdefault(node, block.lid) == block.lid
        for e in block.entries.values():
            n, _ = index[e.guid]
            assert out.setdefault(n, e.lid) == e.lid, topo.node_names[n]
    return out


@pytest.mark.parametrize("sm_host", ["h0", "h5"])
def test_dump_of_a_discovered_fabric_keeps_its_lids(sm_host, tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(2, [4, 4], [1, 2], link_bandwidth=32e9, link_latency_ns=100), net)
    with IbFabric(net, tmp_path / "run", engine="ftree", sm_host=sm_host) as fab:
        disc = tmp_path / "disc.txt"
        disc.write_text(fab.ibnetdiscover())
    topo = read_ibnetdiscover(disc)
    # what ibnetdiscover reports, port by port, read straight from its text
    reported, ca = {}, None
    for line in disc.read_text().splitlines():
        head = re.match(r'(Switch|Ca)\s+\d+\s+"[^"]*"\s+#\s+"([^"]*)"(.*)', line)
        if head:
            ca = head[2] if head[1] == "Ca" else None
            if head[1] == "Switch":
                reported[head[2]] = int(re.search(r"base port 0 lid (\d+)", head[3])[1])
        elif ca and line.startswith("["):
            reported.setdefault(ca, int(re.search(r"#\s*lid (\d+)", line)[1]))  # its lowest port
    assert len(reported) == topo.n_nodes and 0 not in reported.values()

    out = tmp_path / "lfts.dump"
    rc, stdout, err = netsteer("route", "-t", disc, "-e", "ftree", "-o", out, "--json")
    assert rc == 0, err
    assert json.loads(stdout)["lids"].startswith("fabric")
    got = dump_lids(out.read_text(), topo)
    assert {topo.node_names[n]: lid for n, lid in got.items()} == reported
    assert reported[sm_host] == 1  # OpenSM gives its own port LID 1: not the file's first node


def test_sm_node_gives_the_lids_opensm_assigns(tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(2, [4, 4], [1, 4], link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    out = tmp_path / "lfts.dump"
    rc, stdout, err = netsteer("route", "-t", net, "-e", "ftree", "-o", out, "--sm-node", "h6", "--json")
    assert rc == 0, err
    assert "SM on h6" in json.loads(stdout)["lids"]
    with IbFabric(net, tmp_path / "run", engine="file", lfts_file=out, sm_host="h6") as fab:
        real = read_guid2lid(fab.guid2lid, topo)
    got = dump_lids(out.read_text(), topo)
    assert got == {n: int(real.lid[n]) for n in range(topo.n_nodes) if real.lid[n]}


def test_dump_of_a_discovered_dual_port_fabric_routes_every_port_lid(tmp_path):
    # ibnetdiscover names every CA port's LID; the dump must route the second ports'
    # too, at those LIDs, and its header's highest LID is the fabric's
    from ib_samples import NET_EXAMPLES

    net = NET_EXAMPLES / "net.2sw2path4hca2port"
    with IbFabric(net, tmp_path / "run", engine="minhop") as fab:
        disc = tmp_path / "disc.txt"
        disc.write_text(fab.ibnetdiscover())
        original = fab.lfts_dump.read_text()
    topo = read_ibnetdiscover(disc)
    # (node name, port) -> LID, read straight from ibnetdiscover's CA port lines
    reported, ca = {}, None
    for line in disc.read_text().splitlines():
        head = re.match(r'(Switch|Ca)\s+\d+\s+"[^"]*"\s+#\s+"([^"]*)"', line)
        if head:
            ca = head[2] if head[1] == "Ca" else None
        elif ca and line.startswith("["):
            reported[(ca, int(re.match(r"\[(\d+)\]", line)[1]))] = int(re.search(r"#\s*lid (\d+)", line)[1])
    assert len(reported) == 4
    out = tmp_path / "lfts.dump"
    rc, _, err = netsteer("route", "-t", disc, "-e", "minhop", "-o", out)
    assert rc == 0, err
    index = guid_index(topo)
    got = {}
    for block in parse_lft_dump(out.read_text()):
        for e in block.entries.values():
            node, port = index[e.guid]
            if topo.node_kind[node] == HOST:
                got.setdefault((topo.node_names[node], port), set()).add(e.lid)
    got = {k: v.pop() for k, v in got.items() if k in reported and len(v) == 1}
    assert got == reported
    # and OpenSM's own min-hop wrote the same entries (its switches in another order)
    entries = lambda text: {(b.guid, b.lid, e.lid, e.port, e.guid)  # noqa: E731
                            for b in parse_lft_dump(text) for e in b.entries.values()}
    assert entries(out.read_text()) == entries(original)
    assert re.findall(r"Unicast lids \[0-(\d+)\]", out.read_text()) == ["6", "6"]
