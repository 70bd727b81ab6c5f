"""netsteer's ftree against OpenSM's own ftree on ibsim: same link-load statistics.

Tolerance: the tables need not be identical (OpenSM's tie-breaks depend on its
internal switch order), but on every fabric here the maximum, mean and standard
deviation of flows per switch-to-switch channel must agree within 5% for
all-to-all and for every shift (a stricter test than the issue's "within a stated
tolerance": measured, they are equal).
"""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.drivers.opensm.lft_dump import read_lft_tables
from netsteer.drivers.opensm.runner import IbFabric
from netsteer.routing import build_routing
from netsteer.routing.evaluate import link_load_stats, pattern_flows
from netsteer.routing.table import Routing
from netsteer.topology.ibsim_net import ibsim_args, read_ibsim_net, write_ibsim_net
from netsteer.topology.pgft import pgft

pytestmark = [pytest.mark.ib, pytest.mark.usefixtures("need_ib_tools")]

TOLERANCE = 0.05

FABRICS = {
    "2lvl-1:1": dict(levels=2, down=[4, 4], up=[1, 4]),
    "2lvl-2:1-parallel": dict(levels=2, down=[4, 4], up=[1, 2], parallel=[1, 2]),
    "3lvl-rlft": dict(levels=3, down=[4, 2, 2], up=[1, 2, 2]),
    "3lvl-2:1": dict(levels=3, down=[8, 4, 4], up=[1, 4, 4]),
}


def close(a: dict, b: dict) -> bool:
    return all(abs(a[k] - b[k]) <= TOLERANCE * max(abs(a[k]), abs(b[k]), 1e-9) for k in ("max", "mean", "std"))


@pytest.mark.parametrize("name", list(FABRICS))
def test_link_loads_match_opensm_ftree(name, tmp_path):
    net = tmp_path / "fabric.net"
    write_ibsim_net(pgft(**FABRICS[name], link_bandwidth=32e9, link_latency_ns=100), net)
    topo = read_ibsim_net(net)
    with IbFabric(net, tmp_path / "run", engine="ftree", ibsim_args=ibsim_args(topo)) as fab:
        theirs = Routing(topo, read_lft_tables(fab.lfts_dump, topo).hosts, engine="opensm-ftree")
    theirs.check()
    mine = build_routing(topo, "ftree")
    H = topo.n_hosts
    rng = np.random.default_rng(0)
    cases = [("all-to-all", pattern_flows("all-to-all", np.arange(H), rng))]
    cases += [(f"shift {k}", (np.arange(H), (np.arange(H) + k) % H)) for k in range(1, H)]
    agree = 0
    for label, (s, d) in cases:
        a, b = link_load_stats(theirs, s, d), link_load_stats(mine, s, d)
        assert close(a, b), (label, a, b)
        agree += a == b
    same_ports = float((theirs.node_rows(topo.switches) == mine.node_rows(topo.switches)).mean())
    print(f"{name}: {agree}/{len(cases)} patterns with identical statistics, {same_ports:.1%} of entries identical")
