"""Data staging over the same fabric as MPI: checkpoints to staging nodes, drained to
a parallel file system; and dd-like noise.

The source's framework (hierarchical data staging): compute nodes write checkpoints
to staging nodes, which hold them on SSDs and drain them to the parallel file system
node in the background, so the application computes while its I/O moves. Here:

- a checkpoint write is a flow ``compute -> staging`` labelled ``"<job>:staging"``;
  its drain a flow ``staging -> pfs`` labelled ``"<job>:storage"``, released when
  the write is done. Both cross the fabric, beside MPI.
- a staging node's SSD and the file system node's disks are rate limits: one extra
  channel each (capacity the device's rate) that the I/O flows into that node cross
  after the fabric, as a device sharing its bandwidth among its writers. MPI flows
  into those nodes do not cross it.
- dd-like noise (``"<job>:bulk"``): bulk writes from chosen nodes into a staging
  node, endless, through its SSD channel (dd with direct I/O writes as fast as the
  device takes it).

Every flow carries a file path (``paths``), so per-file QoS (a class with
``path_prefix``) applies to it.

Examples
--------
>>> from netsteer.topology import pgft
>>> from netsteer.traffic.dag import FlowDag
>>> t = pgft(1, [4], [1], link_bandwidth=32e9, link_latency_ns=0)
>>> s = Staging(ssd_rate=1e9, pfs_rate=0.5e9)
>>> dag, paths = FlowDag(), {}
>>> ids = s.checkpoint(dag, paths, "app", [0], staging=2, pfs=3, nbytes=10**8, at_ns=0, path="/ckpt/0")
>>> drv = StagingDriver(t, build_routing(t, "dmodk"), dag, staging=s, staging_hosts=[2], pfs_hosts=[3])
>>> drv.advance(None), drv.engine.completion_ns().tolist()  # 0.1 s to the SSD, then 0.2 s to the PFS
('done', [100000000, 300000000])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..routing import build_routing  # noqa: F401  (doctest)
from ..sim.driver import SimDriver
from ..units import BULK_BYTES


@dataclass(frozen=True)
class Staging:
    """Device rates, bytes per second: a staging node's SSD and the file system node."""

    ssd_rate: float
    pfs_rate: float

    def checkpoint(self, dag, paths: dict, job: str, hosts, *, staging: int, pfs: int, nbytes: int,
                   at_ns: int = 0, deps=(), path: str = "/ckpt") -> list[int]:
        """Each of ``hosts`` writes ``nbytes`` to ``staging`` at ``at_ns`` (or after
        ``deps``); each write drains to ``pfs`` once done. Returns the write flows."""
        writes = []
        for h in hosts:
            w = dag.add(int(h), int(staging), int(nbytes), deps=list(deps), start_ns=None if deps else int(at_ns),
                        label=f"{job}:staging")
            paths[w] = f"{path}/{int(h)}"
            d = dag.add(int(staging), int(pfs), int(nbytes), deps=[w], label=f"{job}:storage")
            paths[d] = f"{path}/{int(h)}"
            writes.append(w)
        return writes

    @staticmethod
    def noise(dag, paths: dict, job: str, hosts, *, staging: int, at_ns: int = 0, path: str = "/noise") -> list[int]:
        """dd-like bulk writes from ``hosts`` into ``staging`` (endless: mark them
        background so they end with the rest)."""
        out = []
        for h in hosts:
            f = dag.add(int(h), int(staging), BULK_BYTES, start_ns=int(at_ns), label=f"{job}:bulk")
            paths[f] = f"{path}/{int(h)}"
            out.append(f)
        return out


class StagingDriver(SimDriver):
    """The simulator with storage devices as rate-limited channels.

    ``devices`` are ``(host, rate B/s, kinds)``: flows of those kinds into ``host``
    cross a channel of that rate after the fabric. ``staging``/``staging_hosts``/
    ``pfs_hosts`` say the same for the data-staging model: an SSD channel
    (``staging.ssd_rate``) that ``staging`` and ``bulk`` flows into the staging hosts
    cross, a disk channel (``pfs_rate``) for ``storage`` flows into the file system.
    """

    def __init__(self, topo, routing, dag, *, staging: Staging | None = None, staging_hosts=(), pfs_hosts=(),
                 devices=(), **kw):
        devs = [(int(h), float(r), tuple(k)) for h, r, k in devices]
        if staging is not None:
            devs += [(int(h), staging.ssd_rate, ("staging", "bulk")) for h in staging_hosts]
            devs += [(int(h), staging.pfs_rate, ("storage",)) for h in pfs_hosts]
        self._dev_hosts = [h for h, _, _ in devs]
        self._dev_rate = [r for _, r, _ in devs]
        self._dev_kinds = [k for _, _, k in devs]
        super().__init__(topo, routing, dag, **kw)

    def _extra_channels(self, capacity, latency):
        capacity, latency = super()._extra_channels(capacity, latency)
        self._dev_channel = len(capacity) + np.arange(len(self._dev_hosts))
        return (np.append(capacity, np.asarray(self._dev_rate, dtype=np.float64)),
                np.append(latency, np.zeros(len(self._dev_hosts), dtype=latency.dtype)))

    def _flow_paths(self, flows, missed=None):
        offsets, channels = super()._flow_paths(flows, missed=missed)
        if not self._dev_hosts:
            return offsets, channels
        c = self.dag.columns()
        from .scenario import flow_kind

        kinds = [flow_kind(lbl) for lbl in self.dag.labels]
        offsets, channels = np.asarray(offsets, dtype=np.int64), np.asarray(channels, dtype=np.int64)
        parts, new_off = [], [0]
        for k, f in enumerate(np.asarray(flows, dtype=np.int64)):
            path = channels[offsets[k]:offsets[k + 1]]
            kind = kinds[c.label[f]]
            for h, ch, ks in zip(self._dev_hosts, self._dev_channel, self._dev_kinds):
                if c.dst[f] == h and kind in ks and len(path):
                    path = np.append(path, ch)
            parts.append(path)
            new_off.append(new_off[-1] + len(path))
        return np.asarray(new_off, dtype=np.int64), (np.concatenate(parts) if parts else channels)


__all__ = ["Staging", "StagingDriver"]
