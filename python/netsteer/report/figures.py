"""The run's figures as matplotlib ``Figure`` objects, drawn without pyplot.

``netsteer run --out`` saves them as PNG (:mod:`netsteer.report.plots`) and
``Result.plot`` returns them to a notebook: one drawing, so both show the same
figure. No backend is chosen here (a notebook keeps its inline backend).

Examples
--------
>>> import numpy as np
>>> fig = job_completion_figure([{"name": "a", "completion_s": 1.5}, {"name": "b", "completion_s": None}])
>>> [float(p.get_height()) for p in fig.axes[0].patches]
[1.5, 0.0]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.figure import Figure

from .counters import throughput


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
        mid, bps = throughput(times_ns, cum_bytes[:, chosen])
        for i, c in enumerate(chosen):
            ax.step(mid, bps[:, i] / 1e9, where="mid", label=topo.channel_name(c), linewidth=1.2)
        if chosen:
            ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Throughput (Gbps)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "Port throughput", fontsize=10)
    fig.tight_layout()
    return fig


class ShownFigure(Figure):
    """A figure a notebook shows as PNG when a cell returns it, whatever the
    matplotlib backend (no pyplot needed)."""

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self.savefig(buf, format="png")
        return buf.getvalue()


def job_completion_figure(jobs: Sequence[dict[str, Any]], *, title: str = "",
                          figure_class: type[Figure] = Figure) -> Figure:
    """Bar chart of job completion times (a job that never finished shows 0)."""
    names = [j["name"] for j in jobs]
    vals = [j["completion_s"] or 0.0 for j in jobs]
    fig = figure_class(figsize=(max(4, 0.8 * len(names) + 2), 3.2), dpi=120)
    ax = fig.add_subplot()
    ax.bar(names, vals, color="#4c72b0")
    ax.set_ylabel("Completion time (s)")
    ax.set_title(title or "Job completion", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    return fig
