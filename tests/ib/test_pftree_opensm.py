"""pFTree tables installed by OpenSM's file engine, read back with ibroute.

The fabric is a 2:1 tree with three partitions, so pftree both isolates by links
and assigns lanes; OpenSM gets netsteer's dump (``-R file -U``) and the
partitions.conf with pftree's ``sl=`` per partition (``-P``).
"""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.drivers.opensm.lft_dump import parse_lft_tables, write_lft_dump
from netsteer.drivers.opensm.lids import opensm_lids, read_guid2lid
from netsteer.drivers.opensm.partitions import Partition, write_partitions_conf
from netsteer.drivers.opensm.runner import IbFabric
from netsteer.routing import build_routing
from netsteer.drivers.opensm.qos import partitions_with_sl
from netsteer.topology.ibsim_net import ibsim_args, read_ibsim_net, write_ibsim_net
from netsteer.topology.pgft import pgft

pytestmark = [pytest.mark.ib, pytest.mark.usefixtures("need_ib_tools")]


@pytest.mark.parametrize("shape", [dict(levels=2, down=[8, 4], up=[1, 4]), dict(levels=3, down=[4, 2, 2], up=[1, 2, 2])],
                         ids=["2lvl-2:1", "3lvl"])
def test_pftree_tables_are_installed_as_written(shape, tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(**shape, link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    hosts = np.random.default_rng(5).permutation([int(h) for h in topo.hosts])
    parts = [Partition(f"job{i}", 0x20 + i, {int(h): "full" for h in g})
             for i, g in enumerate(np.array_split(hosts, 3))]
    routing = build_routing(topo, "pftree", partitions=parts, vls=4)
    routing.check()
    lids = opensm_lids(topo, sm_node=0)
    dump = tmp_path / "pftree.dump"
    write_lft_dump(topo, routing, lids, dump)
    conf = tmp_path / "partitions.conf"
    write_partitions_conf(partitions_with_sl(parts, routing.partition_sl), topo, conf)
    with IbFabric(net, tmp_path / "run", engine="file", lfts_file=dump, partitions=conf,
                  ibsim_args=ibsim_args(topo)) as fab:
        assert fab.engine_used == "file"
        assert read_guid2lid(fab.guid2lid, topo) == lids
        lid_list = [int(lids.lid[s]) for s in topo.switches]
        got = parse_lft_tables(fab.ibroute_all(lid_list), topo, file="ibroute")
    sw = topo.switches
    assert np.array_equal(got.hosts[sw], routing.node_rows(sw))
