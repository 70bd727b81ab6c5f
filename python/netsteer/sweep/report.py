"""Comparing sweep points: a summary over seeds, and a metric against each parameter.

Rows that differ only in ``seed`` are one group: the summary gives their mean,
minimum and maximum, and the plots draw the mean with the min-max range as error
bars. A plot puts one parameter on the x axis and draws one line per combination of
the other parameters.
"""

from __future__ import annotations

import re
import warnings
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
        metrics = ", ".join(metric_columns(store))
        if metric in store.columns:
            raise NetsteerError(f"{metric!r} is a column of results.parquet but not a metric "
                                f"(a metric is makespan_s or a job.<name>.completion_s column); "
                                f"metrics: {metrics}", field="--metric")
        raise NetsteerError(f"no column {metric!r}; metrics: {metrics}", field="--metric")
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


#: Lines a plot's legend names at most; past them the last entry says how many more
#: there are, so a legend never runs off the figure.
LEGEND_LINES = 12
#: Ticks of a by-value axis at most (each at a value, as written).
TICKED_VALUES = 12


def _x_axis(ax, xs: list, pos: dict, by_value: bool) -> None:
    """Scale and ticks of the x axis: a log axis for positive values by value spanning
    a factor of 10 or more (sizes, bandwidths); ticks at the values, labelled as
    written (so in the parameter's units), at most :data:`TICKED_VALUES` of them
    spread over the axis so that no two crowd; one tick per value for texts."""
    import math

    from matplotlib.ticker import NullLocator

    if not by_value:  # texts: one tick per value, as written
        ax.set_xticks([pos[x] for x in xs], [str(x) for x in xs])
        return
    vals = [pos[x] for x in xs]
    log = min(vals) > 0 and max(vals) >= 10 * min(vals)
    if log:
        ax.set_xscale("log")
    where = [math.log10(v) for v in vals] if log else vals
    gap = (max(where) - min(where)) / TICKED_VALUES
    shown: list = []
    for x, w in zip(xs, where):  # the first value, then each one far enough from the last shown
        if not shown or w - shown[-1][1] >= gap:
            shown.append((x, w))
    if len(shown) > 1 and where[-1] - shown[-1][1] < gap:  # the last value always shows: it ends the axis
        shown[-1] = (xs[-1], where[-1])
    elif shown[-1][0] is not xs[-1]:
        shown.append((xs[-1], where[-1]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks([pos[x] for x, _ in shown], [str(x) for x, _ in shown])


def _figure(summary: dict[str, Any], param: str, *, title: str = ""):
    """The figure of :func:`plot_against`, not saved."""
    from ..report.figures import legend_outside
    from ..report.plots import plt  # Agg backend, set once by the report package

    others = [p for p in summary["params"] if p != param]
    xs = sorted({g[param] for g in summary["groups"]}, key=_sort_key)
    pos, by_value = _positions(xs)
    lines: dict[tuple, list[dict]] = {}
    for g in summary["groups"]:
        if g["mean"] is not None:
            lines.setdefault(tuple(g[o] for o in others), []).append(g)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    styles = ["-", "--", ":", "-."]  # lines that coincide stay visible
    keys = sorted(lines, key=lambda k: tuple(_sort_key(v) for v in k))
    named = len(keys) if len(keys) <= LEGEND_LINES else LEGEND_LINES - 1
    for n, key in enumerate(keys):
        gs = sorted(lines[key], key=lambda g: _sort_key(g[param]))
        x = [pos[g[param]] for g in gs]
        y = [g["mean"] for g in gs]
        err = [[g["mean"] - g["min"] for g in gs], [g["max"] - g["mean"] for g in gs]]
        label = (", ".join(f"{o}={v}" for o, v in zip(others, key)) or summary["metric"]) if n < named else None
        ax.errorbar(x, y, yerr=err, marker="os^vD"[n % 5], linestyle=styles[n % 4], capsize=3, label=label)
    if len(keys) > named:  # the legend names the first lines and says how many more
        ax.errorbar([], [], linestyle="none", label=f"... and {len(keys) - named} more lines (sweep report --json)")
    _x_axis(ax, xs, pos, by_value)
    ax.set_xlabel(param)
    m = summary["metric"]
    ax.set_ylabel(f"{m.removesuffix('_s')} (s)" if m.endswith("_s") else m)
    ax.set_title(title or f"{summary['metric']} against {param}")
    if lines:
        legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3)
    with warnings.catch_warnings():  # a layout matplotlib cannot tighten is drawn as it is, not warned about
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    return fig


def plot_against(summary: dict[str, Any], param: str, path: str | Path, *, title: str = "") -> Path:
    """The metric's mean (min-max bars) against ``param``, one line per combination
    of the other parameters (the legend names :data:`LEGEND_LINES` at most); written
    as PNG atomically."""
    from ..report.atomic import atomic_file
    from ..report.plots import plt

    path = Path(path)
    fig = _figure(summary, param, title=title)
    try:
        with atomic_file(path) as tmp, warnings.catch_warnings():  # removed if the write fails or is interrupted
            warnings.simplefilter("ignore", UserWarning)
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
