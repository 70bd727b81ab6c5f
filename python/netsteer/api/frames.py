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
OPERATION_COLUMNS = ["job", "op", "count", "time_s", "bytes", "algbw_Bps", "flows", "span_s"]


def counters_frame(table: pa.Table) -> pd.DataFrame:
    """The long-form counters frame from the counters table (or its Parquet file's).

    ``direction`` is ``"a->b"`` for channel ``2*link`` (the cable's first end to its
    second) and ``"b->a"`` for ``2*link+1``; ``gbps`` is the channel's throughput
    over the interval that ends at ``time_s`` (NaN at the first sample).
    """
    df = table.to_pandas()
    missing = [c for c in COUNTER_COLUMNS if c not in df.columns and c not in ("direction", "gbps")]
    if missing:
        raise NetsteerError(f"not a netsteer counters table: no column {missing[0]!r}", field="counters")
    df["direction"] = np.where(df["channel"].to_numpy() % 2 == 0, "a->b", "b->a")
    by = df.groupby("channel", sort=False)
    d_bytes = by["bytes_total"].diff()
    d_time = by["time_s"].diff()
    df["gbps"] = d_bytes * 8.0 / d_time / 1e9
    return df[COUNTER_COLUMNS].reset_index(drop=True)


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
        return counters_frame(table)
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
    """One row per (job, operation): for MPI jobs ``count, time_s, bytes, algbw_Bps``
    (as ``netsteer run --json``), for flows ``flows, span_s`` per label."""
    rows = [{"job": j["name"], "op": op, **o} for j in jobs for op, o in j.get("operations", {}).items()]
    return pd.DataFrame(rows, columns=OPERATION_COLUMNS)


def events_frame(events: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per applied change: ``intent, at_s, done_s`` and its details."""
    cols = ["intent", "at_s", "done_s"]
    rest = sorted({k for e in events for k in e} - set(cols))
    return pd.DataFrame([dict(e) for e in events], columns=cols + rest)
