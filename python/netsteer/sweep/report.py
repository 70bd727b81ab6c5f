"""Comparing sweep points: a summary over seeds, and a metric against each parameter.

Rows that differ only in ``seed`` are one group: the summary gives their mean,
minimum and maximum, and the plots draw the mean with the min-max range as error
bars. A plot puts one parameter on the x axis and draws one line per combination of
the other parameters.
"""

from __future__ import annotations

import re
from pathlib import Path
from statistics import mean
from typing import Any

from ..errors import NetsteerError
from ..units import UnitError, parse_bandwidth, parse_duration, parse_size
from .results import FIXED, ResultStore

OK = ("done",)


def param_columns(store: ResultStore) -> list[str]:
    """Parameter columns (``seed`` included), in the results' order."""
    return [c for c in store.ordered_columns() if c not in FIXED and not c.startswith("job.")]


def metric_columns(store: ResultStore) -> list[str]:
    return ["makespan_s", *sorted(c for c in store.columns if c.startswith("job."))]


#: Units a text value may carry, in the order they sort: bandwidths, durations, sizes.
_QUANTITIES = (parse_bandwidth, parse_duration, parse_size)


def _quantity(v: Any) -> tuple[int, float] | None:
    """The kind (index in :data:`_QUANTITIES`) and SI value of a text with a unit
    (``10Gbps``, ``200ms``, ``16MiB``); None for anything else."""
    if not isinstance(v, str):
        return None
    for kind, parse in enumerate(_QUANTITIES):
        try:
            return kind, float(parse(v))
        except UnitError:
            pass
    return None


def _sort_key(v: Any) -> tuple:
    """Numbers in numeric order; then texts with a unit, by kind and by value
    (``1Gbps`` before ``10Gbps``, ``10ms`` before ``1s``); then other texts; None last."""
    if v is None:
        return (3, 0, 0.0, "")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, 0, float(v), "")
    q = _quantity(v)
    if q is not None:
        return (1, q[0], q[1], str(v))
    return (2, 0, 0.0, str(v))


def _positions(xs: list) -> tuple[dict, bool]:
    """Where each x value (sorted) goes on the axis, and whether the axis is by value.

    Numbers, or texts with units of one kind, go at their value; anything else at
    its rank, one tick per value.
    """
    keys = [_sort_key(x) for x in xs]
    if all(k[0] == 0 for k in keys) or (all(k[0] == 1 for k in keys) and len({k[1] for k in keys}) == 1):
        return {x: k[2] for x, k in zip(xs, keys)}, True
    return {x: i for i, x in enumerate(xs)}, False


def summarize(store: ResultStore, metric: str = "makespan_s") -> dict[str, Any]:
    """One entry per parameter combination (seeds pooled).

    Returns
    -------
    dict
        ``params`` (columns, ``seed`` excluded), ``metric``, ``rows`` (all points),
        ``groups``: ``[{<param>: value, "runs", "failed", "mean", "min", "max"}]``
        where ``failed`` counts points not ``done`` and the statistics are over the
        ``done`` points (None when there are none).
    """
    if metric not in metric_columns(store):
        raise NetsteerError(f"no column {metric!r}; metrics: {', '.join(metric_columns(store))}", field="--metric")
    params = [c for c in param_columns(store) if c != "seed"]
    groups: dict[tuple, list[dict]] = {}
    for row in store.rows.values():
        groups.setdefault(tuple(row.get(p) for p in params), []).append(row)
    out = []
    for key in sorted(groups, key=lambda k: tuple(_sort_key(v) for v in k)):
        rows = groups[key]
        vals = [r[metric] for r in rows if r["status"] in OK and r.get(metric) is not None]
        out.append({
            **dict(zip(params, key)),
            "runs": len(rows),
            "failed": sum(r["status"] not in OK for r in rows),
            "mean": mean(vals) if vals else None,
            "min": min(vals) if vals else None,
            "max": max(vals) if vals else None,
        })
    errors = sorted({r["error"] for r in store.rows.values() if r.get("error")})
    return {"params": params, "metric": metric, "rows": len(store.rows), "groups": out, "errors": errors}


def _file_name(metric: str, param: str) -> str:
    """``<metric>_vs_<parameter>.png`` as docs/sweeps.md says, the names as written
    (dots kept); a character a file name cannot safely hold (``/``, spaces, ``%``) is
    percent-encoded, so two parameters never share a file.

    >>> _file_name("makespan_s", "routing.engine")
    'makespan_s_vs_routing.engine.png'
    >>> _file_name("makespan_s", "a.b") != _file_name("makespan_s", "a_b")
    True
    >>> _file_name("job.x/y.completion_s", "p q")
    'job.x%2Fy.completion_s_vs_p%20q.png'
    """
    from urllib.parse import quote

    return f"{quote(metric, safe='')}_vs_{quote(param, safe='')}.png"


def plot_against(summary: dict[str, Any], param: str, path: str | Path, *, title: str = "") -> Path:
    """The metric's mean (min-max bars) against ``param``, one line per combination
    of the other parameters; written as PNG atomically."""
    from ..report.plots import plt  # Agg backend, set once by the report package
    from ..report.atomic import atomic_file
    from ..report.figures import legend_outside

    path = Path(path)
    others = [p for p in summary["params"] if p != param]
    xs = sorted({g[param] for g in summary["groups"]}, key=_sort_key)
    pos, by_value = _positions(xs)
    lines: dict[tuple, list[dict]] = {}
    for g in summary["groups"]:
        if g["mean"] is not None:
            lines.setdefault(tuple(g[o] for o in others), []).append(g)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    styles = ["-", "--", ":", "-."]  # lines that coincide stay visible
    for n, key in enumerate(sorted(lines, key=lambda k: tuple(_sort_key(v) for v in k))):
        gs = sorted(lines[key], key=lambda g: _sort_key(g[param]))
        x = [pos[g[param]] for g in gs]
        y = [g["mean"] for g in gs]
        err = [[g["mean"] - g["min"] for g in gs], [g["max"] - g["mean"] for g in gs]]
        label = ", ".join(f"{o}={v}" for o, v in zip(others, key)) or summary["metric"]
        ax.errorbar(x, y, yerr=err, marker="os^vD"[n % 5], linestyle=styles[n % 4], capsize=3, label=label)
    if not by_value or not all(isinstance(x, (int, float)) for x in xs):  # texts: one tick per value, as written
        ax.set_xticks([pos[x] for x in xs], [str(x) for x in xs])
    ax.set_xlabel(param)
    m = summary["metric"]
    ax.set_ylabel(f"{m.removesuffix('_s')} (s)" if m.endswith("_s") else m)
    ax.set_title(title or f"{summary['metric']} against {param}")
    if lines:
        legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    try:
        with atomic_file(path) as tmp:  # removed if the write fails or is interrupted
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    return path


def plot_all(summary: dict[str, Any], out: str | Path) -> list[str]:
    """One plot per parameter with results at two values or more; the files written."""
    out = Path(out)
    files = []
    for p in summary["params"]:
        if len({g[p] for g in summary["groups"] if g["mean"] is not None}) >= 2:  # else nothing to compare
            files.append(plot_against(summary, p, out / _file_name(summary["metric"], p)).name)
    return files
