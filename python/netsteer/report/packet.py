"""Files the packet fidelity adds to a run's ``--out`` directory.

* ``packet_ports.parquet``: one row per port (channel) and VL that carried traffic
  or dropped it: ``xmit_wait_s`` (PortXmitWait: time it had a packet but no
  credits), ``peak_occupancy_bytes`` of the input buffer at its far end,
  ``xmit_bytes``, ``xmit_discards`` (PortXmitDiscards: packets dropped, its link
  down);
* ``queue_occupancy.parquet``: per counter sample, the occupancy of every buffer
  that ever held a packet (long table: ``time_s``, ``channel``, ``vl``, ``bytes``);
* ``messages.parquet``: per flow, its ``job`` (name), ``src``, ``dst``, ``bytes`` (a
  bulk flow: what it delivered, as the job's ``bytes`` counts it), ``latency_s`` (release to last byte),
  ``queueing_s`` (the part beyond its time alone on an idle fabric; empty where
  there is none, as for a bulk flow stopped by its duration), and its
  packets ``dropped`` (a link down on its way) and ``retransmitted``;
* ``queue_occupancy.png``: occupancy over time of the buffers that waited most.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .atomic import atomic_file

PACKET_FILES = ["packet_ports.parquet", "queue_occupancy.parquet", "messages.parquet", "queue_occupancy.png"]


def _write(table: pa.Table, path: Path) -> None:
    with atomic_file(path) as tmp:
        pq.write_table(table, tmp)


def write_packet_files(d: Path, built, res) -> list[str]:
    """Write :data:`PACKET_FILES` into ``d``; returns their names."""
    from ..sim.packet import message_times

    rep, topo = res.packet, built.topology
    n_ch, nv = topo.n_channels, rep["vls"]
    wait, peak, xb, disc = (rep[k][:n_ch] for k in ("xmit_wait_ns", "peak_occupancy_bytes", "xmit_bytes",
                                                    "xmit_discards"))
    c, v = np.nonzero((xb > 0) | (disc > 0))
    names = np.array([topo.channel_name(int(x)) for x in range(n_ch)], dtype=object)
    _write(pa.table({"channel": c.astype(np.int64), "port": names[c] if len(c) else np.array([], dtype=object),
                     "vl": v.astype(np.int32), "xmit_wait_s": wait[c, v] * 1e-9,
                     "peak_occupancy_bytes": peak[c, v].astype(np.int64), "xmit_bytes": xb[c, v],
                     "xmit_discards": disc[c, v].astype(np.int64)}),
           d / "packet_ports.parquet")
    occ = rep["occupancy_bytes"][:, :n_ch, :]
    times = np.asarray(res.sample_times_ns)[: occ.shape[0]]
    used = np.argwhere(peak > 0)
    k = len(times)
    _write(pa.table({"time_s": np.repeat(times, len(used)) * 1e-9,
                     "channel": np.tile(used[:, 0], k).astype(np.int64),
                     "vl": np.tile(used[:, 1], k).astype(np.int32),
                     "bytes": occ[:, used[:, 0], used[:, 1]].reshape(-1) if len(used) else np.zeros(0)}),
           d / "queue_occupancy.parquet")
    lat, queue = message_times(res, built.dag.columns().bytes)
    cols = built.dag.columns()
    nbytes = np.asarray(cols.bytes, dtype=np.float64)
    sent = getattr(res, "sent_bytes", None)
    if sent is not None:
        # a bulk flow has no size: what it delivered (its nominal 10^18 bytes is no figure)
        from ..units import BULK_BYTES

        nbytes = np.where(nbytes == BULK_BYTES, np.asarray(sent, dtype=np.float64)[:len(nbytes)], nbytes)
    job_names = np.array(built.job_names, dtype=object)
    _write(pa.table({"flow": np.arange(len(lat), dtype=np.int64),
                     "job": pa.array(job_names[np.asarray(built.job_of_flow, np.int64)].tolist(), pa.string()),
                     "src": cols.src.astype(np.int64), "dst": cols.dst.astype(np.int64),
                     "bytes": np.rint(nbytes).astype(np.int64),
                     "latency_s": np.where(lat >= 0, lat * 1e-9, np.nan),
                     "queueing_s": np.where(queue >= 0, queue * 1e-9, np.nan),
                     "dropped": np.asarray(rep["dropped_per_flow"][:len(lat)], np.int64),
                     "retransmitted": np.asarray(rep["retransmitted_per_flow"][:len(lat)], np.int64)}),
           d / "messages.parquet")
    plot_occupancy(d / "queue_occupancy.png", topo, times, occ, wait, title=built.name)
    return list(PACKET_FILES)


def plot_occupancy(path: Path, topo, times, occ, wait, *, top: int = 8, title: str = "") -> Path:
    """Buffer occupancy over time of the ``top`` ports and VLs that waited longest
    for credits (or, with no waiting, that held the most)."""
    from matplotlib.figure import Figure

    from .figures import legend_outside
    from .plots import _save

    fig = Figure(figsize=(7, 3.6), dpi=120)
    ax = fig.add_subplot()
    if len(times) and occ.size:
        score = wait + (occ.max(axis=0) if len(occ) else 0) * 1e-6
        for k in np.argsort(-score, axis=None, kind="stable")[:top]:
            c, v = divmod(int(k), occ.shape[2])
            if occ[:, c, v].max() <= 0:
                continue
            ax.step(np.asarray(times) * 1e-9, occ[:, c, v] / 1024, where="post",
                    label=f"{topo.channel_name(c)} VL{v}", linewidth=1.2)
        legend_outside(ax)
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Input buffer (KiB)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "Queue occupancy", fontsize=10)
    return _save(fig, path)
