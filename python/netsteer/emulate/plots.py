"""Figures of the emulated reproductions, in the style of the sources' figures.

- :func:`overhead`: the UnisonFlow source's Figs. 11-13 (OSU-like bandwidth,
  latency, and the latency tagging adds) from :func:`.osu_overhead.run`, the
  simulator's figures drawn beside the emulated ones;
- :func:`hyperx_links`: the flexible-HyperX source's Fig. 3(c)/(d) (throughput
  over time of the EPS7-EPS8 cable and of the circuit ports) from
  :func:`.hyperx_steering.run`, one panel per run.
"""

from __future__ import annotations

from pathlib import Path


def overhead(rep: dict, outdir) -> list[str]:
    """``fig11_bandwidth.png``, ``fig12_latency.png``, ``fig13_latency_overhead.png``
    in ``outdir``; returns the file names."""
    from ..report.plots import plot_size_sweep

    outdir = Path(outdir)
    rows = rep["sizes"]
    x = [r["bytes"] for r in rows]
    title = f"OSU-like, links {rep['link_mbs']:g} MB/s, median of {rep['repeat']}"
    files = []
    for fname, key, ylabel in (("fig11_bandwidth.png", "bandwidth_mbs", "bandwidth (MB/s)"),
                               ("fig12_latency.png", "latency_us", "latency (us)")):
        curves = [("without tags (emulated)", [r["plain"].get(key) for r in rows], "o-"),
                  ("with tags (emulated)", [r["tagged"].get(key) for r in rows], "s--")]
        sim = [r["simulated"].get("plain", {}).get(key) for r in rows]
        if any(v is not None for v in sim):
            curves.append(("simulator", sim, ":"))
        plot_size_sweep(outdir / fname, x, curves, ylabel, logy=key == "latency_us", title=title)
        files.append(fname)
    plot_size_sweep(outdir / "fig13_latency_overhead.png", x,
                    [("with tags - without (emulated)", [r.get("latency_overhead_us") for r in rows], "o-")],
                    "latency overhead (us)", title=title, zero_line=True)
    files.append("fig13_latency_overhead.png")
    return files


def hyperx_links(rep: dict, outdir, smooth: int = 5) -> list[str]:
    """``fig3c_standard.png`` and ``fig3d_steered.png`` in ``outdir``: each run's
    sampled link rates (Mbit/s at the testbed's rates) over its own time, a moving
    mean over ``smooth`` samples (the counters are read every 50 ms, and a ring
    step's bursts would hide the trend)."""
    import numpy as np

    from ..report.figures import legend_outside
    from ..report.plots import plt

    outdir = Path(outdir)
    s = rep["links"]
    t = s["t_s"]
    files = []
    for key, fname, title in (("standard", "fig3c_standard.png", "standard HyperX (Fig. 3c)"),
                              ("steered", "fig3d_steered.png", "bandwidth-steered HyperX (Fig. 3d)")):
        a, b = s["runs"][key]
        keep = [i for i, ti in enumerate(t) if a <= ti <= b]
        fig, ax = plt.subplots(figsize=(8, 4))
        for name, rate in s["bps"].items():
            style = "--" if "SiP" in name else "-"
            y = np.convolve(np.asarray(rate, dtype=float)[keep] / 1e6, np.ones(smooth) / smooth, mode="same")
            ax.plot([t[i] - a for i in keep], y, style, lw=1.2, label=name)
        ax.axhline(rep["link_bps_emulated"] / 1e6, color="black", lw=0.8, ls=":", label="link rate")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_ylim(0, rep["link_bps_emulated"] / 1e6 * 1.15)
        r = rep[key]
        ax.set_title(f"{title}, emulated: {r['ring_bps'] / 1e6:.2f} Mbit/s ring "
                     f"(simulator {rep['simulated'][key]['ring_bps'] / 1e6:.2f})", fontsize=9)
        legend_outside(ax)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(outdir / fname, dpi=110)
        plt.close(fig)
        files.append(fname)
    return files


__all__ = ["hyperx_links", "overhead"]
