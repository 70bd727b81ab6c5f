"""``netsteer reproduce hyperx-steering``: the flexible-HyperX source's experiment."""

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
    reproduce_app.command("hyperx-steering")(reproduce_hyperx)
    reproduce_app.command("hyperx", help="Alias of hyperx-steering.")(reproduce_hyperx)


def reproduce_hyperx(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.json and the Fig. 3(c)/(d) plots here."),
    iterations: int = typer.Option(10_000, "--iterations", min=2, help="Training iterations (not in the source: an assumption)."),
    beyond: bool = typer.Option(True, "--beyond/--no-beyond", help="Also run the 8x8 HyperX with four jobs."),
) -> None:
    """MobileNetV2 on the 16-node flexible HyperX, standard then steered; then beyond the source."""
    from ..errors import NetsteerError
    from ..reproduce.hyperx import STEPS, plot, public, run

    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing hyperx-steering", STEPS if beyond else 3) as adv:
        try:
            rep = run(iterations=iterations, beyond=beyond, progress=adv)
        except ValueError as exc:
            raise NetsteerError(str(exc), field="--iterations") from None
    slim = public(rep)
    if out is not None:
        from ..report.outdir import write_result_dir

        def write(d: Path) -> None:
            (d / "report.json").write_text(json.dumps(slim, indent=2))
            plot(rep, d / "fig3c_standard.png", d / "fig3d_steered.png")

        write_result_dir(out, write)
    if as_json:
        typer.echo(json.dumps(slim))
        return
    t = Table(title=f"MobileNetV2, 16 ranks, {iterations:,} iterations (compute calibrated on the standard run)")
    for c in ("run", "ring (Gbit/s)", "EPS7->EPS8 peak (Gbit/s)", "EPS8->EPS7 peak (Gbit/s)", "job (s)", "source"):
        t.add_column(c, justify="right" if c != "run" else "left")
    for key in ("standard", "steered"):
        r, src = slim[key], slim["source"][key]
        link = r["link_eps7_eps8_peak_gbps"]
        t.add_row(key, f"{r['ring_gbps']:.2f}", f"{link['EPS7->EPS8']:.2f}", f"{link['EPS8->EPS7']:.2f}",
                  f"{r['job_s']:.1f}", f"{src['ring_gbps']:.0f} Gbit/s, {src['job_s']:.0f} s")
    out_console.print(t)
    plan = slim["controller_plan"]
    out_console.print(f"improvement {slim['improvement']:.1%} (source: 20.9%); the controller's own plan: "
                      f"{', '.join('-'.join(c) for c in plan['circuits'])} -> {plan['job_s']:.1f} s")
    if "beyond" in slim:
        b = slim["beyond"]
        t = Table(title=f"{b['jobs']} jobs x {b['ranks']} ranks on a {b['topology']['S'][0]}x{b['topology']['S'][1]} HyperX, T={b['topology']['T']}")
        for c in ("routing", "makespan (s)", "job times (s)", "mean hops"):
            t.add_column(c, justify="right" if c != "routing" else "left")
        for name, r in b["runs"].items():
            t.add_row(name, f"{r['makespan_s']:.4f}", ", ".join(f"{x:.4f}" for x in r["job_s"]), f"{r['mean_hops']:.2f}")
        out_console.print(t)
