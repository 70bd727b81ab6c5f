"""Plots in the style of the source documents' figures: throughput of switch
ports over time, in Gbps, one line per port."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .atomic import atomic_file  # noqa: E402
from .counters import throughput  # noqa: E402


def plot_link_throughput(path: str | Path, topo, times_ns, cum_bytes, *, top: int = 8, title: str = "") -> Path:
    """Throughput over time of the ``top`` busiest switch-to-switch channels (and,
    when there are fewer, of host channels), written as PNG atomically."""
    path = Path(path)
    mid, bps = throughput(np.asarray(times_ns), np.asarray(cum_bytes))
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=120)
    if len(mid):
        total = cum_bytes[-1]
        kinds = topo.node_kind
        between_switches = (kinds[topo.channel_src()] != 0) & (kinds[topo.channel_dst()] != 0)
        order = np.argsort(-(total + between_switches * total.max()), kind="stable")
        chosen = [c for c in order if total[c] > 0][:top]
        for c in chosen:
            ax.step(mid, bps[:, c] / 1e9, where="mid", label=topo.channel_name(int(c)), linewidth=1.2)
        if chosen:
            ax.legend(fontsize=7, loc="upper right", frameon=False)
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Throughput (Gbps)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "Port throughput", fontsize=10)
    return _save(fig, path)


def plot_job_completion(path: str | Path, jobs: list[dict], *, title: str = "") -> Path:
    """Bar chart of job completion times."""
    path = Path(path)
    names = [j["name"] for j in jobs]
    vals = [j["completion_s"] or 0.0 for j in jobs]
    fig, ax = plt.subplots(figsize=(max(4, 0.8 * len(names) + 2), 3.2), dpi=120)
    ax.bar(names, vals, color="#4c72b0")
    ax.set_ylabel("Completion time (s)")
    ax.set_title(title or "Job completion", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    """Write ``fig`` as PNG atomically and release it."""
    try:
        fig.tight_layout()
        with atomic_file(path) as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    return path
