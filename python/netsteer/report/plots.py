"""Plots in the style of the source documents' figures: throughput of switch
ports over time, in Gbps, one line per port."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402

from .atomic import atomic_file  # noqa: E402
from .figures import job_completion_figure, legend_outside, link_throughput_figure, settle_layout  # noqa: E402


def __getattr__(name: str):
    # ``plt`` on first use: pyplot costs 0.16 s to import, and ``netsteer run --out``
    # draws on plain figures without it
    if name == "plt":
        import matplotlib.pyplot as plt

        return plt
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def plot_link_throughput(path: str | Path, topo, times_ns, cum_bytes, *, top: int = 8, title: str = "") -> Path:
    """Throughput over time of the ``top`` busiest switch-to-switch channels (and,
    when there are fewer, of host channels), written as PNG atomically."""
    return _save(link_throughput_figure(topo, times_ns, cum_bytes, top=top, title=title), Path(path), layout=False)


def plot_job_completion(path: str | Path, jobs: list[dict], *, title: str = "", end_s: float | None = None) -> Path:
    """Bar chart of job completion times (a job not done: hatched to ``end_s``, "not done")."""
    return _save(job_completion_figure(jobs, title=title, end_s=end_s), Path(path), layout=False)


def plot_size_sweep(path: str | Path, sizes, curves, ylabel: str, *, logy: bool = False, title: str = "",
                    zero_line: bool = False) -> Path:
    """An OSU-style figure: ``curves`` (``(label, values, style)``) against message
    size on a base-2 axis, written as PNG atomically (the UnisonFlow source's Figs. 11-13)."""
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    for label, ys, style in curves:
        ax.plot(sizes, ys, style, label=label, **({"color": "grey"} if style == ":" else {}))
    if zero_line:
        ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    legend_outside(ax, fontsize=8)
    ax.grid(alpha=0.3)
    return _save(fig, Path(path))


def _save(fig: Figure, path: Path, *, layout: bool = True) -> Path:
    """Write ``fig`` (a plain :class:`~matplotlib.figure.Figure`: no pyplot registry to
    release it from) as PNG atomically; ``layout=False`` for a figure laid out already
    (as ``Result.plot`` returns it: laying it out again would move it by a fraction
    of a pixel)."""
    if layout:
        settle_layout(fig)
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format="png")
    return path
