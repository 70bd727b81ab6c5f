"""The run's figures as matplotlib ``Figure`` objects, drawn without pyplot.

``netsteer run --out`` saves them as PNG (:mod:`netsteer.report.plots`) and
``Result.plot`` returns them to a notebook: one drawing, so both show the same
figure. No backend is chosen here (a notebook keeps its inline backend).

Examples
--------
>>> import numpy as np
>>> fig = job_completion_figure([{"name": "a", "completion_s": 1.5}, {"name": "b", "completion_s": None}],
...                             end_s=2.0)
>>> [(float(p.get_height()), p.get_hatch() and str(p.get_hatch())) for p in fig.axes[0].patches]
[(1.5, None), (2.0, '//')]
>>> [t.get_text() for t in fig.axes[0].texts]
['not done']
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.figure import Figure

from .counters import throughput


def legend_outside(ax, *, fontsize: float = 7, **kwargs):
    """Put ``ax``'s legend outside the axes, to their right, where it cannot cover
    data, and widen the figure by the legend's width so the axes keep their size.
    Every figure netsteer draws places its legend this way. Returns the legend, or
    ``None`` when nothing is labelled.

    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(4, 3)); ax = fig.add_subplot()
    >>> _ = ax.plot([0, 1], [0, 1], label="a line")
    >>> leg = legend_outside(ax); fig.tight_layout()
    >>> bool(fig.get_figwidth() > 4), legend_clear_of_axes(fig)
    (True, True)
    """
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    fig = ax.get_figure()
    kwargs.setdefault("frameon", False)
    leg = ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                    fontsize=fontsize, **kwargs)
    width = leg.get_window_extent(_renderer(fig)).width / fig.dpi
    fig.set_size_inches(fig.get_figwidth() + width + 0.15, fig.get_figheight())
    return leg


def settle_layout(fig) -> None:
    """``tight_layout`` until it settles: a legend outside the axes moves with them,
    so one pass leaves the axes slightly off what a second gives (and a figure laid
    out once, then again when saved, would differ from itself)."""
    fig.tight_layout()
    fig.tight_layout()


def _renderer(fig):
    from matplotlib.backends.backend_agg import RendererAgg

    w, h = fig.bbox.size
    return RendererAgg(int(w) + 1, int(h) + 1, fig.dpi)


def legend_clear_of_axes(fig) -> bool:
    """True when every legend of ``fig`` lies inside the figure and outside every
    axes' plotting area (what the tests hold each figure to)."""
    r = _renderer(fig)
    fb = fig.bbox
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        lb = leg.get_window_extent(r)
        if lb.x0 < fb.x0 - 1 or lb.y0 < fb.y0 - 1 or lb.x1 > fb.x1 + 1 or lb.y1 > fb.y1 + 1:
            return False
        for other in fig.axes:
            if lb.overlaps(other.get_window_extent(r)):
                return False
    return True


def busiest_channels(topo, cum_bytes: np.ndarray, top: int = 8) -> list[int]:
    """The ``top`` channels with the most bytes, switch-to-switch channels first
    (host channels fill in when fewer switch channels carried traffic)."""
    if not len(cum_bytes):
        return []
    total = cum_bytes[-1]
    kinds = topo.node_kind
    between_switches = (kinds[topo.channel_src()] != 0) & (kinds[topo.channel_dst()] != 0)
    order = np.argsort(-(total + between_switches * total.max()), kind="stable")
    return [int(c) for c in order[total[order] > 0][:top]]


def link_throughput_figure(topo, times_ns, cum_bytes, *, top: int = 8, title: str = "",
                           figure_class: type[Figure] = Figure) -> Figure:
    """Throughput (Gbps) over time of the ``top`` busiest channels, one step line each."""
    times_ns, cum_bytes = np.asarray(times_ns), np.asarray(cum_bytes)
    fig = figure_class(figsize=(7, 3.6), dpi=120)
    ax = fig.add_subplot()
    if len(times_ns) >= 2:
        chosen = busiest_channels(topo, cum_bytes, top)
        # only the chosen columns: the whole array is samples x channels (a large fabric's hundreds of MiB)
        _mid, bps = throughput(times_ns, cum_bytes[:, chosen])
        # each interval over its whole span, from the first sample to the last: a step
        # from each interval's start, the last value held to the last sample
        edges = times_ns * 1e-9
        for i, c in enumerate(chosen):
            ax.step(edges, np.append(bps[:, i], bps[-1, i]) / 1e9, where="post", label=topo.channel_name(c),
                    linewidth=1.2)
        legend_outside(ax)
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Throughput (Gbps)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "Port throughput", fontsize=10)
    settle_layout(fig)
    return fig


class ShownFigure(Figure):
    """A figure a notebook shows as PNG when a cell returns it, whatever the
    matplotlib backend (no pyplot needed)."""

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png")
        return buf.getvalue()


def run_end_s(result: dict[str, Any]) -> float | None:
    """When a run stopped (a stalled run: when the last thing moved), s, from the
    ``--json`` object; ``None`` when it says nothing."""
    stalled = result.get("stalled") or {}
    end = stalled.get("at_s") if isinstance(stalled, dict) else None
    return end if end is not None else result.get("makespan_s")


def job_completion_figure(jobs: Sequence[dict[str, Any]], *, title: str = "", end_s: float | None = None,
                          figure_class: type[Figure] = Figure) -> Figure:
    """Bar chart of job completion times. A job that never finished is a hatched,
    unfilled bar up to ``end_s`` (when the run stopped; without it, up to the latest
    completion) labelled "not done", never a bar of 0 s."""
    names = [j["name"] for j in jobs]
    done = [j.get("completion_s") for j in jobs]
    finished = [v for v in done if v is not None]
    end = end_s if end_s is not None else max(finished, default=0.0)
    fig = figure_class(figsize=(max(4, 0.8 * len(names) + 2), 3.2), dpi=120)
    ax = fig.add_subplot()
    for i, (name, v) in enumerate(zip(names, done)):
        if v is not None:
            ax.bar(i, v, color="#4c72b0")
            continue
        ax.bar(i, end, facecolor="none", edgecolor="#c44e52", hatch="//", linewidth=1.0)
        ax.annotate("not done", (i, end), xytext=(0, 2), textcoords="offset points", ha="center",
                    va="bottom", fontsize=8, color="#c44e52")
    ax.set_xticks(range(len(names)), names)
    ax.margins(y=0.12)
    ax.set_ylabel("Completion time (s)")
    ax.set_title(title or "Job completion", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    settle_layout(fig)
    return fig
