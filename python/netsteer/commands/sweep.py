"""``netsteer sweep SWEEP.yaml`` and ``netsteer sweep report DIR``.

``netsteer sweep SWEEP.yaml`` is short for ``netsteer sweep run SWEEP.yaml``: a group
whose first word, when it is not a subcommand, is the sweep file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperGroup

from ._console import output_console

err_console = Console(stderr=True)
out_console = output_console()  # whole tables when piped


class _RunByDefault(TyperGroup):
    """Route ``sweep FILE ...`` to ``sweep run FILE ...``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


sweep_app = typer.Typer(
    cls=_RunByDefault,
    no_args_is_help=True,
    help="Parameter sweeps on Dask: `netsteer sweep SWEEP.yaml` runs one, `netsteer sweep report DIR` compares.",
)


def register(app: typer.Typer) -> None:
    sweep_app.command("run")(sweep_run)
    sweep_app.command("report")(sweep_report)
    app.add_typer(sweep_app, name="sweep")


class _Bar:
    """A rich progress bar on stderr (only on a terminal): points done, running, failed."""

    def __init__(self, enabled: bool, total: int):
        self.prog = None
        if enabled and err_console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.prog = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("points  running {task.fields[running]}  failed {task.fields[failed]}"),
                                 TimeElapsedColumn(), console=err_console, transient=True)
            self.task = self.prog.add_task("sweep", total=max(total, 1), running=0, failed=0)

    def __enter__(self):
        if self.prog is not None:
            self.prog.start()
        return self

    def __exit__(self, *exc):
        if self.prog is not None:
            self.prog.stop()

    def __call__(self, p) -> None:
        if self.prog is not None:
            self.prog.update(self.task, completed=p.done, total=max(p.total, 1), running=p.running, failed=p.failed)


def _interrupted(sweep, out: Path, exc: BaseException, kept: bool) -> dict:
    """``--json`` of a sweep stopped by SIGINT/SIGTERM: what was kept, as the text on stderr says it."""
    import signal

    signum = getattr(exc, "signum", signal.SIGINT)
    info = {"status": "interrupted", "signal": signal.Signals(signum).name, "sweep": sweep.name,
            "points": len(sweep.points), "recorded": 0, "done": 0, "stalled": 0, "failed": 0, "out": str(out),
            "results": str(out / "results.parquet") if kept else None,
            "resume": "run the same command again" if kept else None}
    if kept:
        try:
            from ..sweep import ResultStore

            statuses = [r["status"] for r in ResultStore(out / "results.parquet").rows.values()]
            info.update(recorded=len(statuses), **{s: statuses.count(s) for s in ("done", "stalled", "failed")})
        except Exception:  # noqa: BLE001 - the stop came while the file was being replaced: counts unknown
            info.update(recorded=None, done=None, stalled=None, failed=None)
    return info


def sweep_run(
    sweep_file: Path = typer.Argument(..., metavar="SWEEP.yaml", help="Sweep file: base scenario, grid, seeds."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="A running Dask scheduler (tcp://host:8786); default: a local cluster."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", min=1, help="Worker processes of the local cluster (default: one per core)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Results folder (default out/sweeps/<sweep file name>)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Run points recorded as failed again."),
    check: bool = typer.Option(False, "--check", help="Check the sweep file and count the points left to run; run nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
) -> None:
    """Run every point of a sweep not yet in DIR/results.parquet (rerun to resume)."""
    from ..errors import NetsteerError
    from ..sweep import load_sweep, plan, run_sweep

    if scheduler and workers:
        raise NetsteerError("--workers sizes the local cluster; with --scheduler the cluster has its own workers",
                            field="--workers")
    if workers is not None:
        from ..limits import check_workers

        check_workers(workers)  # refused now, with the estimate, not after the base scenario is read
    sweep = load_sweep(sweep_file)  # a bad file stops here, before any cluster starts
    out = out if out is not None else Path("out/sweeps") / sweep_file.stem
    if check:
        from ..sweep.check import refused_points

        info = plan(sweep, out, retry_failed=retry_failed)
        info.update(refused_points(sweep))
        if info["refused"]:
            ex = info["examples"][0]
            sample = "" if info["checked"] == info["points"] else f" (of {info['checked']} checked)"
            raise NetsteerError(f"{info['refused']} of {info['points']} points{sample} are refused by the scenario; "
                                f"the first, {ex['point']}: {ex['error']}", file=str(sweep_file), field=ex["field"])
        if as_json:
            typer.echo(json.dumps(info))
        else:
            every = info["checked"] == info["points"]
            checked = "every point's scenario" if every else \
                f"{info['checked']} points' scenarios (every value in one at least)"
            how = "builds as netsteer run builds it" if info["built"] == info["checked"] else \
                f"passes the checks ({info['built']} built as netsteer run builds them, every value in one at " \
                "least; the others against the schema)"
            out_console.print(f"{sweep_file}: ok, {info['points']} points over {', '.join(info['params'])}, "
                              f"{checked} {how}; {info['recorded']} recorded in {out}, {info['to_run']} to run",
                              highlight=False)
        return
    try:
        with _Bar(progress and not as_json, len(sweep.points)) as bar:
            summary = run_sweep(sweep, out, scheduler=scheduler, workers=workers, retry_failed=retry_failed,
                                progress=bar)
    except BaseException as exc:
        # Ctrl-C or a signal (the entry point sets the exit code): say where the sweep stands
        if not isinstance(exc, (Exception, SystemExit)):
            kept = (out / "results.parquet").exists()
            if kept:
                err_console.print(f"netsteer: finished points are in {out / 'results.parquet'}; "
                                  "run the same command again to resume", highlight=False, soft_wrap=True)
            if as_json:  # --json promises one object on stdout, an interrupted sweep included
                typer.echo(json.dumps(_interrupted(sweep, out, exc, kept)))
        raise
    if as_json:
        typer.echo(json.dumps(summary))
        return
    t = Table(title=f"sweep {summary['sweep']}", show_header=False)
    for k in ("points", "skipped", "ran", "done", "stalled", "failed", "lost", "workers", "results"):
        t.add_row(k, str(summary[k]))
    t.add_row("wall", f"{summary['wall_s']:.2f} s")
    out_console.print(t)
    if summary["failed"] or summary["lost"]:
        err_console.print(f"[yellow]warning:[/] {summary['failed']} points failed and {summary['lost']} were lost; "
                          f"their errors are in {summary['results']} (lost points run again on the next invocation)")
    out_console.print(f"compare: netsteer sweep report {out}")


def sweep_report(
    out: Path = typer.Argument(..., metavar="DIR", help="A sweep's results folder (or its results.parquet)."),
    metric: str = typer.Option("makespan_s", "--metric", "-m", help="Column to compare: makespan_s or job.<name>.completion_s."),
    plots: bool = typer.Option(True, "--plots/--no-plots", help="Draw <metric>_vs_<parameter>.png into DIR."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Summary table (seeds pooled) and plots of a metric against each parameter."""
    from ..sweep import plot_all, read_results, summarize
    from ..units import format_seconds  # every metric is a time in seconds

    store = read_results(out)
    summary = summarize(store, metric)
    folder = store.path.parent
    summary["plots"] = [str(folder / f) for f in plot_all(summary, folder)] if plots else []
    if as_json:
        typer.echo(json.dumps(summary))
        return
    t = Table(title=f"{metric} over {summary['rows']} points ({store.path})")
    for p in summary["params"]:
        t.add_column(p, overflow="fold")
    for c in ("runs", "failed", "mean", "min", "max"):
        t.add_column(c, justify="right")
    for g in summary["groups"]:
        stats = ["" if g[s] is None else format_seconds(g[s]) for s in ("mean", "min", "max")]  # --json: seconds
        t.add_row(*(str(g[p]) for p in summary["params"]), str(g["runs"]), str(g["failed"]), *stats)
    out_console.print(t)
    for e in summary["errors"][:5]:
        err_console.print(f"  error: {e}", highlight=False)
    for f in summary["plots"]:
        out_console.print(f"wrote {f}")
