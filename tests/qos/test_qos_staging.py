"""Data staging: devices behind hosts are rate limits for the I/O into them, checkpoint
writes drain to the file system after they land, MPI into those hosts is not limited."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.control.core import Controller
from netsteer.qos.staging import Staging, StagingDriver
from netsteer.routing import build_routing
from netsteer.scenario import build_scenario, parse_scenario
from netsteer.sim import run_scenario
from netsteer.sim.simulate import run_driver
from netsteer.topology import pgft
from netsteer.traffic.dag import FlowDag

SC = """\
name: dev
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 8Gbps, link_latency: 0ns}
routing: {engine: dmodk}
jobs:
  - name: io
    flows: [{id: w, src: 0, dst: 2, bytes: 100MB}, {src: 2, dst: 3, bytes: 100MB, after: [w]}]
  - name: mpi
    ranks: 2
    placement: [1, 2]
    program: [{op: send, src: 0, dst: 1, bytes: 100MB}]
qos:
  max_vls: 2
  vlarb_low: [[0, 64], [1, 64]]
  classes: [{name: io, sl: 1, jobs: [io]}]
  devices: [{host: 2, rate: 250MBps}, {host: 3, rate: 500MBps}]
"""


def test_devices_limit_io_not_mpi():
    built = build_scenario(parse_scenario(SC))
    res = run_scenario(built, sample=False)
    jobs = dict(zip(built.job_names, range(2)))
    io = np.flatnonzero(built.job_of_flow == jobs["io"])
    mpi = np.flatnonzero((built.job_of_flow == jobs["mpi"]) & (built.dag.columns().bytes > 0))
    # the write lands at the SSD's 250 MB/s (0.4 s), the drain at 500 MB/s (0.2 s more)
    assert res.completion_ns[io].tolist() == [400_000_000, 600_000_000]
    # MPI into host 2 shares host 2's link with the write (0.25 GB/s of 1): 0.75 GB/s for
    # 100 MB plus its envelope, not limited by the device
    assert res.completion_ns[mpi].max() < 0.14e9


def test_device_on_a_missing_host_is_refused(tmp_path, cli):
    f = tmp_path / "s.yaml"
    f.write_text(SC.replace("{host: 3, rate: 500MBps}", "{host: 9, rate: 500MBps}"))
    code, out, err = cli("run", f, "--no-progress")
    assert code == 2 and f"{f}: qos.devices.1.host: host 9 does not exist: the topology has 4 hosts" in err


@pytest.mark.parametrize("dev,field,reason", [
    ("{host: 2, rate: 0GBps}", "qos.devices.0.rate", "positive"),
    ("{host: 2, rate: fast}", "qos.devices.0.rate", "fast"),
    ("{host: 3, rate: 1GBps}", "qos.devices.1.host", "has a device already"),
])
def test_bad_devices(tmp_path, cli, dev, field, reason):
    f = tmp_path / "s.yaml"
    f.write_text(SC.replace("{host: 2, rate: 250MBps}", dev))
    code, out, err = cli("run", f, "--no-progress")
    assert code == 2 and f"{f}: {field}" in err and reason in err, err


def test_checkpoint_overlaps_and_drains():
    t = pgft(1, [4], [1], link_bandwidth=8e9, link_latency_ns=0)
    s = Staging(ssd_rate=1e9, pfs_rate=0.25e9)
    dag, paths = FlowDag(), {}
    # two writers into one staging SSD, both drains to the same file system
    s.checkpoint(dag, paths, "ck", [0, 1], staging=2, pfs=3, nbytes=10**8, path="/ckpt/a")
    drv = StagingDriver(t, build_routing(t, "dmodk"), dag, staging=s, staging_hosts=[2], pfs_hosts=[3])
    res = run_driver(drv, Controller())
    # writes share the SSD (0.2 s), drains share the PFS: 2e8 B at 0.25 GB/s = 0.8 s more
    assert res.completion_ns.tolist() == [200_000_000, 1_000_000_000, 200_000_000, 1_000_000_000]
    assert paths == {0: "/ckpt/a/0", 1: "/ckpt/a/0", 2: "/ckpt/a/1", 3: "/ckpt/a/1"}


def test_per_file_classes_follow_the_path():
    from netsteer.qos.scenario import apply_qos

    dag, paths = FlowDag(), {}
    s = Staging(ssd_rate=1e9, pfs_rate=1e9)
    s.checkpoint(dag, paths, "ck", [0], staging=2, pfs=3, nbytes=10, path="/scratch/urgent")
    s.checkpoint(dag, paths, "ck", [1], staging=2, pfs=3, nbytes=10, path="/scratch/lazy")
    Staging.noise(dag, paths, "dd", [1], staging=2)
    plan = apply_qos({"max_vls": 3, "vlarb_low": "0:8,1:8,2:8",
                      "classes": [{"name": "urgent", "sl": 2, "path_prefix": "/scratch/urgent"},
                                  {"name": "noise", "sl": 1, "kind": "bulk"}]},
                     dag, [0] * 5, ["ck"], paths=paths)
    assert plan.sl.tolist() == [2, 2, 0, 0, 1]
    assert plan.flows_of("urgent").tolist() == [0, 1]
