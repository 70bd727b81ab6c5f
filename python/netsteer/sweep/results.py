"""``results.parquet``: one row per finished point, rewritten as each point finishes.

Parquet files cannot be appended to, so the whole table is rewritten atomically as
points finish: a reader, or a resumed sweep after a crash, sees every row recorded so
far and never half a file. While a rewrite is cheap (milliseconds: thousands of rows)
that is after every point; on very large sweeps rows that finish close together are
written together, so rewriting never takes more than about a third of the time. Rows are kept by point key, so a point is
recorded once however often its task ran.

Columns: ``point`` (the key), one per parameter (named by its dotted path; ``seed``),
``status``, ``error``, ``makespan_s``, ``job.<name>.completion_s`` per job,
``wall_s``, ``cpu_s``, ``finished_at`` (UTC, ISO 8601).
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import NetsteerError
from ..report.atomic import atomic_file

FIXED = ("point", "status", "error", "makespan_s", "wall_s", "cpu_s", "finished_at")
FINISHED = ("done", "stalled", "failed")  # "lost" (its worker died too often) runs again
RESULTS = "results.parquet"


def job_column(name: str) -> str:
    return f"job.{name}.completion_s"


def _array(values: list) -> pa.Array:
    """One column; values of mixed types (an edited sweep file) become strings."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values])


class ResultStore:
    """The rows of a sweep's ``results.parquet``, by point key.

    Parameters
    ----------
    path : Path
        The Parquet file; read if it exists.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.rows: dict[str, dict[str, Any]] = {}
        self.columns: list[str] = []
        self.unwritten = 0  # rows recorded since the last rewrite
        self.last_write = self.last_cost = 0.0  # time.monotonic() of the last rewrite, and what it took
        if self.path.exists():
            from ..limits import RESULT_CELL_BYTES, check

            try:
                # one open file for the footer and the pages: a running sweep may rename a
                # newer file over this path between two opens (footer of one, pages of the other)
                with open(self.path, "rb") as fh:
                    pf = pq.ParquetFile(fh)
                    meta = pf.metadata  # the footer only: sizes before reading a row
                    # a small file can hold millions of repeated rows: refused with the estimate
                    check(meta.num_rows * meta.num_columns * RESULT_CELL_BYTES, "reading these results",
                          detail=f"{meta.num_rows:,} rows of {meta.num_columns} columns", file=str(self.path))
                    table = pf.read()
            except (OSError, pa.ArrowException) as exc:
                raise NetsteerError(f"cannot read earlier results: {exc}", file=str(self.path)) from None
            if "point" not in table.column_names:
                raise NetsteerError("not a sweep's results (no point column)", file=str(self.path))
            self.columns = list(table.column_names)
            for row in table.to_pylist():
                self.rows[row["point"]] = row

    def finished(self, retry_failed: bool = False) -> set[str]:
        """Keys of points not to run again."""
        keep = ("done", "stalled") if retry_failed else FINISHED
        return {k for k, r in self.rows.items() if r.get("status") in keep}

    #: Unwritten rows wait at most this many times the last rewrite's cost: rewrites take at
    #: most about a third of the time (a whole-file rewrite of 100,000 rows costs ~0.2 s).
    WRITE_SPACING = 2.0

    def add(self, key: str, params: dict[str, Any], result: dict[str, Any], *, write: bool = True) -> dict[str, Any]:
        """Record a point's result (from :func:`netsteer.sweep.point.run_point`) and
        rewrite the file (or, with ``write=False``, leave that to :meth:`write_due`);
        returns the row."""
        row = {"point": key, **params}
        row.update(status=result["status"], error=result.get("error"), makespan_s=result.get("makespan_s"))
        for name, comp in (result.get("jobs") or {}).items():
            row[job_column(name)] = comp
        row["wall_s"] = result.get("wall_s")
        row["cpu_s"] = result.get("cpu_s")
        row["finished_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")
        self.rows.pop(key, None)
        self.rows[key] = row
        for c in row:
            if c not in self.columns:
                self.columns.append(c)
        self.unwritten += 1
        if write:
            self.write()
        return row

    def write_due(self, now: float) -> bool:
        """Rewrite the file if rows wait and the last rewrite is long enough ago
        (``now``: :func:`time.monotonic`); returns whether it wrote.

        >>> import tempfile, pathlib
        >>> st = ResultStore(pathlib.Path(tempfile.mkdtemp()) / "results.parquet")
        >>> st.last_write, st.last_cost = 100.0, 1.0  # as if a rewrite had cost 1 s at t = 100 s
        >>> _ = st.add("p1", {"x": 1}, {"status": "done"}, write=False)
        >>> st.write_due(101.5), st.unwritten, st.write_due(102.0), st.unwritten
        (False, 1, True, 0)
        >>> st.write_due(500.0)  # nothing waits
        False
        """
        if self.unwritten and now >= self.last_write + self.WRITE_SPACING * self.last_cost:
            self.write()
            return True
        return False

    def ordered_columns(self) -> list[str]:
        """point, parameters, status, error, makespan_s, jobs, wall_s, cpu_s, finished_at."""
        jobs = sorted(c for c in self.columns if c.startswith("job."))
        params = [c for c in self.columns if c not in FIXED and c not in jobs]
        return ["point", *params, "status", "error", "makespan_s", *jobs, "wall_s", "cpu_s", "finished_at"]

    def write(self) -> None:
        """Rewrite the whole file atomically with every row."""
        t0 = time.monotonic()
        cols = self.ordered_columns()
        rows = list(self.rows.values())
        table = pa.table({c: _array([r.get(c) for r in rows]) for c in cols})
        with atomic_file(self.path) as tmp:  # removed if the write fails or is interrupted
            pq.write_table(table, tmp)
        self.unwritten = 0
        self.last_write = time.monotonic()
        self.last_cost = self.last_write - t0


def read_results(out: str | Path) -> ResultStore:
    """The results of a sweep folder (or of a Parquet file given directly)."""
    p = Path(out)
    if p.is_dir():
        p = p / RESULTS
    if not p.is_file():
        raise NetsteerError("no sweep results here (run netsteer sweep SWEEP.yaml --out DIR first)", file=str(p))
    return ResultStore(p)
