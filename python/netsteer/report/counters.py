"""Per-link port counters: cumulative bytes sampled at a fixed interval, as the
switch counters that the source documents plot, written as a columnar file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import atomic_file


def throughput(times_ns: np.ndarray, cum_bytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mid-interval times (s) and bits per second per channel from cumulative bytes.

    >>> t, bps = throughput(np.array([0, 10**9]), np.array([[0.0], [1e9]]))
    >>> float(bps[0, 0])
    8000000000.0
    """
    if len(times_ns) < 2:
        return np.zeros(0), np.zeros((0, cum_bytes.shape[1] if cum_bytes.ndim == 2 else 0))
    dt = np.diff(times_ns).astype(np.float64) * 1e-9
    bps = np.diff(cum_bytes, axis=0) * 8.0 / dt[:, None]
    mid = (times_ns[:-1] + times_ns[1:]) * 0.5e-9
    return mid, bps


def counters_table(topo, times_ns: np.ndarray, cum_bytes: np.ndarray) -> pa.Table:
    """Long table: one row per (sample, channel that carried traffic)."""
    used = np.flatnonzero(cum_bytes[-1] > 0) if len(times_ns) else np.zeros(0, dtype=np.int64)
    k = len(times_ns)
    src, dst = topo.channel_src(), topo.channel_dst()
    sport = topo.channel_src_port()
    names = np.asarray(topo.node_names, dtype=object)
    t = np.repeat(times_ns, len(used))
    ch = np.tile(used, k)
    cum = cum_bytes[:, used].reshape(-1) if len(used) else np.zeros(0)
    return pa.table(
        {
            "time_s": t * 1e-9,
            "channel": ch.astype(np.int64),
            "link": (ch // 2).astype(np.int64),
            "from_node": names[src[ch]] if len(ch) else np.array([], dtype=object),
            "from_port": sport[ch].astype(np.int32),
            "to_node": names[dst[ch]] if len(ch) else np.array([], dtype=object),
            "bytes_total": cum,
        }
    )


def write_counters(path: str | Path, topo, times_ns: np.ndarray, cum_bytes: np.ndarray) -> Path:
    """Write the counters as Parquet, atomically."""
    path = Path(path)
    with atomic_file(path) as tmp:
        pq.write_table(counters_table(topo, times_ns, cum_bytes), tmp)
    return path
