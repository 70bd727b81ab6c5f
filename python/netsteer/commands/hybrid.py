"""``netsteer reproduce hybrid-reconfig``: the hybrid EPS/OCS source's experiments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from .route import progress_bar, reproduce_app

out_console = Console()


def register(app: typer.Typer) -> None:
    # reproduce_app is added to the root app by commands.route
    reproduce_app.command("hybrid-reconfig")(reproduce_hybrid)


def reproduce_hybrid(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.json and the Fig. 3 plots here."),
) -> None:
    """Reconfiguration delay (iperf, 100 and 5000 rules) and FFTW under congestion."""
    from ..reproduce.hybrid import STEPS, plot, run

    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing hybrid-reconfig", STEPS) as adv:
        rep = run(progress=adv)
    if out is not None:
        from ..report.outdir import output_dir

        with output_dir(out) as d:
            (d / "report.json").write_text(json.dumps(rep, indent=2))
            plot(rep, d / "fig3a_iperf.png", d / "fig3b_fftw.png")
    if as_json:
        slim = {k: [{kk: vv for kk, vv in r.items() if kk not in ("time_s", "gbps")} for r in v]
                if isinstance(v, list) else v for k, v in rep.items()}
        typer.echo(json.dumps(slim))
        return
    t = Table(title="iperf over a circuit reconfigured every 10 s")
    for c in ("run", "avg Gbit/s", "reconfigurations", "mean delay (s)"):
        t.add_column(c, justify="right" if c != "run" else "left")
    for r in rep["iperf"]:
        d = "-" if r["reconfig_delay_s"] is None else f"{r['reconfig_delay_s']:.3f}"
        t.add_row(r["run"], f"{r['avg_gbps']:.3f}", str(r["reconfigurations"]), d)
    out_console.print(t)
    t = Table(title="FFTW on racks 1 and 2 (compute calibrated on the run alone)")
    for c in ("run", "completion (s)", "reconfigurations"):
        t.add_column(c, justify="right" if c != "run" else "left")
    for r in rep["fftw"]:
        t.add_row(r["run"], f"{r['completion_s']:.2f}", ", ".join(
            f"{x['trigger']} {x['start_s']:.1f}-{x['end_s']:.1f} s" for x in r["reconfigurations"]) or "-")
    out_console.print(t)
