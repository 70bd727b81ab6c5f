"""Results as pandas DataFrames: jobs, operations, events and port counters.

The counters are in long form, one row per (sample, channel that carried
traffic), with the columns of ``counters.parquet`` plus ``direction`` and
``gbps``; :func:`read_counters` reads the Parquet file of ``netsteer run --out``
back into the same frame.

Examples
--------
>>> import pyarrow as pa
>>> t = pa.table({"time_s": [0.0, 0.0, 1.0, 1.0], "channel": [2, 3, 2, 3], "link": [1, 1, 1, 1],
...               "from_node": ["a", "b", "a", "b"], "from_port": [1, 2, 1, 2],
...               "to_node": ["b", "a", "b", "a"], "bytes_total": [0.0, 0.0, 1.25e9, 0.0]})
>>> counters_frame(t)[["time_s", "direction", "gbps"]]
   time_s direction  gbps
0     0.0      a->b   NaN
1     0.0      b->a   NaN
2     1.0      a->b  10.0
3     1.0      b->a   0.0
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import NetsteerError

COUNTER_COLUMNS = ["time_s", "link", "direction", "channel", "from_node", "from_port", "to_node",
                   "bytes_total", "gbps"]
JOB_COLUMNS = ["job", "completion_s", "flows", "bytes"]
OPERATION_COLUMNS = ["job", "op", "count", "time_s", "bytes", "algbw_Bps", "busbw_Bps", "flows", "span_s"]
_INT_OPERATION_COLUMNS = ("count", "bytes", "flows")


def counters_frame(table: pa.Table, *, consume: bool = False) -> pd.DataFrame:
    """The long-form counters frame from the counters table (or its Parquet file's).

    ``direction`` is ``"a->b"`` for channel ``2*link`` (the cable's first end to its
    second) and ``"b->a"`` for ``2*link+1``; ``gbps`` is the channel's throughput
    over the interval that ends at ``time_s`` (NaN at the first sample). With
    ``consume``, the table's memory is released as its columns convert (the table is
    unusable after): a large file's read holds one copy, not two.
    """
    df = table.to_pandas(split_blocks=True, self_destruct=True) if consume else table.to_pandas()
    missing = [c for c in COUNTER_COLUMNS if c not in df.columns and c not in ("direction", "gbps")]
    if missing:
        raise NetsteerError(f"not a netsteer counters table: no column {missing[0]!r}", field="counters")
    # categoricals: a large fabric's frame has tens of millions of rows and a few
    # thousand names; the categories are the names present, sorted, however the table
    # was encoded (in memory, or a Parquet file's per-group dictionaries)
    for col in ("from_node", "to_node"):
        df[col] = _present_sorted(df[col])
    ch = df["channel"].to_numpy()
    df["direction"] = pd.Categorical.from_codes(ch % 2, ["a->b", "b->a"])
    blocks = _sample_blocks(ch, df["time_s"].to_numpy())
    if blocks:
        # as written: every sample the same channels in the same order, so a channel's
        # previous row is one block back (a groupby of 20 M rows takes seconds)
        k, m = blocks
        d_bytes = np.full(len(ch), np.nan)
        d_time = np.full(len(ch), np.nan)
        d_bytes[m:] = np.diff(df["bytes_total"].to_numpy().reshape(k, m), axis=0).reshape(-1)
        d_time[m:] = np.diff(df["time_s"].to_numpy().reshape(k, m), axis=0).reshape(-1)
    else:
        by = df.groupby("channel", sort=False)
        d_bytes = by["bytes_total"].diff()
        d_time = by["time_s"].diff()
    df["gbps"] = d_bytes * 8.0 / d_time / 1e9
    return df[COUNTER_COLUMNS].reset_index(drop=True)


def _present_sorted(col: pd.Series) -> pd.Categorical:
    """``col`` as a categorical of the values present, in sorted order (codes counted,
    not the rows sorted)."""
    c = col.astype("category").array  # (a categorical already: as it is)
    codes, cats = c.codes, c.categories
    present = np.flatnonzero(np.bincount(codes + 1, minlength=len(cats) + 1)[1:])  # +1: a missing value's -1
    names = np.asarray(cats[present], dtype=object)
    order = np.argsort(names, kind="stable")
    remap = np.full(len(cats) + 1, -1, dtype=np.int32)  # the last entry: a missing value stays missing
    remap[present[order]] = np.arange(len(present))
    return pd.Categorical.from_codes(remap[codes], names[order].tolist())


def _sample_blocks(ch: np.ndarray, t: np.ndarray) -> tuple[int, int] | None:
    """``(samples, channels)`` if the rows are blocks of one sample each, every
    block the same channels in the same order (as :func:`netsteer.report.counters.write_counters`
    writes them); ``None`` otherwise."""
    n = len(ch)
    if n == 0:
        return None
    m = int(np.argmax(t != t[0])) or n
    if n % m or len(np.unique(ch[:m])) != m:
        return None
    k = n // m
    if not (ch.reshape(k, m) == ch[:m]).all() or not (t.reshape(k, m) == t[::m, None]).all():
        return None
    return k, m


def read_counters(path: str | os.PathLike) -> pd.DataFrame:
    """Read ``counters.parquet`` (``netsteer run --out``) into :func:`counters_frame`'s frame.

    Raises
    ------
    NetsteerError
        The file is missing or is not a netsteer counters file.
    """
    import pyarrow.parquet as pq

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise NetsteerError("no such file", file=p)
    try:
        table = pq.read_table(p)
    except (pa.ArrowInvalid, OSError) as exc:
        raise NetsteerError(f"not a Parquet file: {exc}", file=p) from None
    try:
        return counters_frame(table, consume=True)
    except NetsteerError as exc:
        raise exc.located(p) from None


def jobs_frame(jobs: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per job: ``job, completion_s, flows, bytes`` (completion NaN if it
    never finished)."""
    rows = [{"job": j["name"], "completion_s": j["completion_s"], "flows": j["flows"], "bytes": j["bytes"]}
            for j in jobs]
    df = pd.DataFrame(rows, columns=JOB_COLUMNS)
    df["completion_s"] = df["completion_s"].astype(float)
    return df


def operations_frame(jobs: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per (job, operation): for MPI jobs ``count, time_s, bytes, algbw_Bps,
    busbw_Bps`` (as ``netsteer run --json``), for flows ``flows, span_s`` per label.

    ``count``, ``bytes`` and ``flows`` stay integers: ``int64``, or pandas' nullable
    ``Int64`` with ``<NA>`` where some rows have none (MPI and flow jobs mixed), where
    float64 would make counts ``1.0`` and ``NaN``.

    >>> df = operations_frame([{"name": "m", "operations": {"barrier": {"count": 2, "time_s": 1e-6, "bytes": 0}}},
    ...                        {"name": "f", "operations": {"f:flow": {"flows": 3, "span_s": 0.5}}}])
    >>> df["count"].tolist(), str(df["count"].dtype), df["flows"].tolist()
    ([2, <NA>], 'Int64', [<NA>, 3])
    >>> str(operations_frame([{"name": "m", "operations": {"barrier": {"count": 2}}}])["count"].dtype)
    'int64'

    """
    rows = [{"job": j["name"], "op": op, **o} for j in jobs for op, o in j.get("operations", {}).items()]
    df = pd.DataFrame(rows, columns=OPERATION_COLUMNS)
    for col in _INT_OPERATION_COLUMNS:
        df[col] = df[col].astype("Int64" if df[col].isna().any() else "int64")
    return df


def events_frame(events: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per applied change: ``intent, at_s, done_s`` and its details."""
    cols = ["intent", "at_s", "done_s"]
    rest = sorted({k for e in events for k in e} - set(cols))
    return pd.DataFrame([dict(e) for e in events], columns=cols + rest)
