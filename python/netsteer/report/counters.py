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


# rows per Parquet row group: bounds what a write holds besides the counters array
# (a 65,536-host fat-tree has 393,216 channels; its 55 samples are 21.6 M rows)
ROWS_PER_GROUP = 1 << 20


def _used(times_ns: np.ndarray, cum_bytes: np.ndarray) -> np.ndarray:
    """The channels that carried traffic (their counters are the rows)."""
    return np.flatnonzero(cum_bytes[-1] > 0) if len(times_ns) else np.zeros(0, dtype=np.int64)


def _schema() -> pa.Schema:
    names = pa.dictionary(pa.int32(), pa.string())
    return pa.schema([("time_s", pa.float64()), ("channel", pa.int64()), ("link", pa.int64()),
                      ("from_node", names), ("from_port", pa.int32()), ("to_node", names),
                      ("bytes_total", pa.float64())])


def _arr(a: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A numpy column as an Arrow array, zero-copy. ``pa.array`` would first ask
    whether it is a pandas object, importing pandas (0.17 s) on a run that has no
    other use for it."""
    a = np.ascontiguousarray(a, dtype=typ.to_pandas_dtype())
    return pa.Array.from_buffers(typ, len(a), [None, pa.py_buffer(a)])


def _strings(values: list[str]) -> pa.Array:
    """Strings as an Arrow array, built from their bytes (as :func:`_arr`, no pandas)."""
    data = [v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


class _Columns:
    """What every row group repeats: the used channels' ends, ports and the node names
    (encoded once: a 65,536-host fabric has 70,656 of them)."""

    def __init__(self, topo, used: np.ndarray):
        self.used = used
        self.src, self.dst = topo.channel_src()[used], topo.channel_dst()[used]
        self.sport = topo.channel_src_port()[used]
        self.names = _strings(list(topo.node_names))


def _rows(cols: _Columns, times_ns: np.ndarray, cum_bytes: np.ndarray, samples: slice) -> pa.Table:
    """The rows of ``samples`` (a slice of the sample axis), every used channel each.

    Node names are dictionary-encoded (indices into the topology's node names): a
    row costs 4 bytes per name, not a string, and pandas reads them back as
    categoricals.
    """
    used = cols.used
    k = len(times_ns[samples])
    ch = np.tile(used, k)
    i32, i64, f64 = pa.int32(), pa.int64(), pa.float64()
    return pa.Table.from_arrays([
        _arr(np.repeat(times_ns[samples], len(used)) * 1e-9, f64),
        _arr(ch, i64),
        _arr(ch // 2, i64),
        pa.DictionaryArray.from_arrays(_arr(np.tile(cols.src, k), i32), cols.names),
        _arr(np.tile(cols.sport, k), i32),
        pa.DictionaryArray.from_arrays(_arr(np.tile(cols.dst, k), i32), cols.names),
        # np.take, not [:, used]: numpy's fancy column index is ~4x slower here
        _arr(np.take(cum_bytes[samples], used, axis=1).reshape(-1), f64),
    ], schema=_schema())


def counters_table(topo, times_ns: np.ndarray, cum_bytes: np.ndarray) -> pa.Table:
    """Long table: one row per (sample, channel that carried traffic).

    >>> from netsteer.topology.pgft import pgft
    >>> topo = pgft(1, [2], [1], link_bandwidth=10e9, link_latency_ns=1000)
    >>> cum = np.zeros((2, topo.n_channels)); cum[1, 0] = 1250.0
    >>> t = counters_table(topo, np.array([0, 10**6]), cum)
    >>> t.to_pydict()["from_node"], t.to_pydict()["bytes_total"]
    (['h0', 'h0'], [0.0, 1250.0])
    """
    return _rows(_Columns(topo, _used(times_ns, cum_bytes)), times_ns, cum_bytes, slice(None))


def write_counters(path: str | Path, topo, times_ns: np.ndarray, cum_bytes: np.ndarray) -> Path:
    """Write the counters as Parquet, atomically, a row group at a time (memory: one
    group besides the counters, whatever the fabric's size)."""
    path = Path(path)
    cols = _Columns(topo, _used(times_ns, cum_bytes))
    per = max(1, ROWS_PER_GROUP // max(len(cols.used), 1))
    with atomic_file(path) as tmp:
        with pq.ParquetWriter(tmp, _schema(), use_dictionary=["from_node", "to_node"], write_statistics=["time_s"]) as w:
            for a in range(0, max(len(times_ns), 1), per):
                w.write_table(_rows(cols, times_ns, cum_bytes, slice(a, a + per)), row_group_size=ROWS_PER_GROUP)
    return path
