"""Demand matrices: checked on the way in, read from CSV with errors that name row and column.

A demand matrix is ``n x n`` Gbit/s, row = source rack, column = destination rack; the
diagonal is ignored (set to zero on the way in).

Examples
--------
>>> import numpy as np
>>> check_demand(np.array([[0, 1.5], [2, 7]])).tolist()
[[0.0, 1.5], [2.0, 0.0]]
>>> try:
...     check_demand(np.array([[0, -1], [2, 0]]), file="m.csv")
... except PlanningError as exc:
...     print(exc)
m.csv: row 0, column 1: demand must be >= 0 Gbit/s, got -1.0
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ...errors import NetsteerError


#: What separates a row's cells: a comma with any blanks around it, or blanks.
_SEPARATOR = re.compile(r"\s*,\s*|\s+")


class PlanningError(NetsteerError):
    """A circuit plan that cannot be made: bad demand, bad ``k``, conflicting pinned circuits, too many VLANs."""


def check_demand(demand, *, file: str | None = None) -> np.ndarray:
    """Return ``demand`` as a float64 ``n x n`` array with a zero diagonal, or raise.

    Parameters
    ----------
    demand : array_like
        ``n x n`` Gbit/s, ``n >= 2``; finite and non-negative off the diagonal.
    file : str, optional
        Named in errors.

    Raises
    ------
    PlanningError
        Wrong shape, NaN, infinite or negative entries (naming the first bad row and column).
    """
    try:
        d = np.array(demand, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise PlanningError(f"demand must be an n x n matrix of numbers ({exc})", file=file) from None
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise PlanningError(f"demand must be a square n x n matrix, got shape {d.shape}", file=file)
    if d.shape[0] < 2:
        raise PlanningError(f"demand needs at least 2 racks, got {d.shape[0]}", file=file)
    np.fill_diagonal(d, 0.0)
    bad = ~np.isfinite(d)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        raise PlanningError(f"demand must be a finite number, got {d[r, c]}", file=file,
                            field=f"row {r}, column {c}")
    neg = d < 0
    if neg.any():
        r, c = map(int, np.argwhere(neg)[0])
        raise PlanningError(f"demand must be >= 0 Gbit/s, got {d[r, c]}", file=file, field=f"row {r}, column {c}")
    return d


def read_demand_csv(path: str | Path) -> np.ndarray:
    """Read an ``n x n`` demand matrix (Gbit/s) from a CSV file and check it.

    Numbers are separated by commas and/or blanks, mixed as they come (``0 10, 0 5``);
    blank lines and ``#`` comments are skipped; a leading UTF-8 byte-order mark is
    ignored. The diagonal is ignored: any number there, ``nan`` or negative too, reads
    as 0; a cell that is not a number is refused wherever it is. Rows and columns in
    errors count from 0, like racks.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.csv")
    >>> _ = open(path, "w").write("nan 10, 5\\n1,, -5\\n2 3 0\\n")
    >>> try:
    ...     read_demand_csv(path)
    ... except PlanningError as exc:
    ...     print(exc.field, exc.reason)
    line 2, row 1, column 1 '' is not a number (Gbit/s)
    >>> _ = open(path, "w").write("nan 10, 5\\n1, -5 ,2\\n2 3 inf\\n")
    >>> read_demand_csv(path).tolist()
    [[0.0, 10.0, 5.0], [1.0, 0.0, 2.0], [2.0, 3.0, 0.0]]

    Raises
    ------
    PlanningError
        Unreadable file, a cell that is not a number, rows of different lengths, a
        matrix that is not square, negative or NaN entries.
    """
    from ...inputs import read_text

    p = Path(path)
    try:  # UTF-8 only, no NUL bytes, at most the input size limit: each a located error
        text = read_text(p, what="the demand matrix")
    except NetsteerError as exc:
        raise PlanningError(exc.reason, file=exc.file, field=exc.field) from None
    text = text.removeprefix("\ufeff")  # the byte-order mark spreadsheets put first ("UTF-8 with BOM")
    rows: list[list[float]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        # a comma (blanks around it included) or a run of blanks separates cells, mixed
        # as they come ("0 10, 0 5"); two commas with nothing between leave an empty cell
        cells = _SEPARATOR.split(line)
        if len(cells) > 1 and cells[-1] == "":
            cells.pop()  # a trailing comma
        row = []
        for col, cell in enumerate(cells):
            try:
                v = float(cell)
            except ValueError:
                raise PlanningError(f"{cell!r} is not a number (Gbit/s)", file=str(p),
                                    field=f"line {lineno}, row {len(rows)}, column {col}") from None
            # the diagonal is ignored: any number there (NaN, negative) reads as 0, as
            # check_demand sets it; a cell that is no number is refused wherever it is
            if math.isnan(v) and col != len(rows):
                raise PlanningError("demand must be a number, got NaN", file=str(p),
                                    field=f"line {lineno}, row {len(rows)}, column {col}")
            row.append(v)
        if rows and len(row) != len(rows[0]):
            raise PlanningError(f"row has {len(row)} numbers, row 0 has {len(rows[0])}", file=str(p),
                                field=f"line {lineno}, row {len(rows)}")
        rows.append(row)
    if not rows:
        raise PlanningError("empty demand matrix", file=str(p))
    if len(rows) != len(rows[0]):
        raise PlanningError(f"demand matrix must be n x n, got {len(rows)} rows of {len(rows[0])} numbers",
                            file=str(p))
    return check_demand(np.array(rows), file=str(p))
