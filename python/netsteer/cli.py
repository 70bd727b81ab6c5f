"""The ``netsteer`` command line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .errors import NetsteerError
from .units import format_bandwidth

app = typer.Typer(
    help="netsteer: an application-aware control plane for reconfigurable HPC interconnects.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
err_console = Console(stderr=True)
out_console = Console()


def _version(value: bool) -> None:
    if value:
        typer.echo(f"netsteer {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """Simulate scenarios, inspect topologies and routings."""


def _progress(enabled: bool):
    """A rich progress bar over flows done, or a no-op."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not enabled:
        return None, None
    prog = Progress(
        TextColumn("[bold]simulating"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("flows  t={task.fields[now]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    task = prog.add_task("sim", total=1, now="0s")

    def update(done: int, total: int, now_ns: int) -> None:
        from .units import format_duration

        prog.update(task, completed=done, total=max(total, 1), now=format_duration(now_ns))

    return prog, update


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario YAML file."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write result.json, counters.parquet and plots here."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
) -> None:
    """Simulate a scenario and report job completion times."""
    from .report.atomic import atomic_write
    from .report.result import result_dict
    from .scenario import build_scenario, load_scenario
    from .sim import simulate

    built = build_scenario(load_scenario(scenario))
    prog, update = _progress(progress and err_console.is_terminal)
    if prog is not None:
        prog.start()
    try:
        res = simulate(
            built.topology,
            built.routing,
            built.dag,
            sharing=built.sharing,
            tcp_gamma=built.tcp_gamma,
            sample_interval_ns=built.sample_interval_ns if out is not None else 0,
            events=built.events,
            background=built.background,
            progress=update,
        )
    finally:
        if prog is not None:
            prog.stop()
    result = result_dict(built, res)
    if out is not None:
        from .report.counters import write_counters
        from .report.plots import plot_job_completion, plot_link_throughput

        out.mkdir(parents=True, exist_ok=True)
        write_counters(out / "counters.parquet", built.topology, res.sample_times_ns, res.channel_bytes)
        plot_link_throughput(
            out / "link_throughput.png", built.topology, res.sample_times_ns, res.channel_bytes, title=built.name
        )
        plot_job_completion(out / "job_completion.png", result["jobs"], title=built.name)
        result["files"] = ["result.json", "counters.parquet", "link_throughput.png", "job_completion.png"]
        with atomic_write(out / "result.json") as f:
            json.dump(result, f, indent=2)
    if as_json:
        typer.echo(json.dumps(result))
        return
    _print_result(result)
    if result["status"] == "stalled":
        st = result["stalled"]
        err_console.print(
            f"[yellow]warning:[/] {st['flows']} flows never finished (jobs: {', '.join(st['jobs'])}): "
            "stuck on links that stayed down, or starved by higher-priority traffic that never ended"
        )


def _print_result(result: dict) -> None:
    t = Table(title=f"{result['scenario']}  ({result['flows']} flows, {result['sharing']}, routing {result['routing']})")
    t.add_column("job")
    t.add_column("flows", justify="right")
    t.add_column("bytes", justify="right")
    t.add_column("completion (s)", justify="right")
    for j in result["jobs"]:
        comp = "not done" if j["completion_s"] is None else f"{j['completion_s']:.6f}"
        t.add_row(j["name"], str(j["flows"]), f"{j['bytes']:.4g}", comp)
    out_console.print(t)
    ops = Table(title="time per operation")
    for col in ("job", "operation", "count", "time (s)", "bandwidth"):
        ops.add_column(col, justify="left" if col in ("job", "operation") else "right")
    for j in result["jobs"]:
        for name, o in j.get("operations", {}).items():
            t_s = o.get("time_s", o.get("span_s"))
            bw = o.get("algbw_Bps")
            ops.add_row(
                j["name"], name, str(o.get("count", o.get("flows", ""))),
                "" if t_s is None else f"{t_s:.6f}",
                "" if bw is None else format_bandwidth(8 * bw),
            )
    if ops.row_count:
        out_console.print(ops)
    out_console.print(f"makespan {result['makespan_s']:.6f} s   simulated in {result['wall_s']:.3f} s wall")
    for e in result["events"]:
        out_console.print(f"  event {e}")


@app.command()
def topo(
    spec: str = typer.Argument(
        ...,
        help="A YAML/JSON topology spec file, an ibnetdiscover or ibsim net file, or inline "
        "'pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps'.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    draw: Optional[Path] = typer.Option(None, "--draw", help="Write a drawing (PNG) of a small topology."),
    export: Optional[Path] = typer.Option(None, "--export", help="Export as ibsim net (.net) or JSON (.json)."),
) -> None:
    """Print a topology's counts and bisection bandwidth; draw or export it."""
    from .topology import metrics
    from .topology.spec import parse_topo_arg

    t = parse_topo_arg(spec)
    info = metrics.describe(t)
    if draw is not None:
        metrics.draw(t, draw)
    if export is not None:
        _export(t, export)
    if as_json:
        typer.echo(json.dumps(info, default=float))
        return
    table = Table(title=t.name, show_header=False)
    for k, v in info.items():
        table.add_row(str(k), str(v))
    out_console.print(table)
    if t.n_nodes <= 64 and draw is None:
        out_console.print(metrics.ascii(t))


def _export(t, path: Path) -> None:
    from .report.atomic import atomic_write

    if path.suffix == ".net":
        from .topology.ibsim_net import write_ibsim_net

        write_ibsim_net(t, path)
    elif path.suffix == ".json":
        from .topology.metrics import to_json

        with atomic_write(path) as f:
            json.dump(to_json(t), f)
    else:
        raise NetsteerError("export to .net (ibsim) or .json", field=str(path))


from .commands import register_all  # noqa: E402

register_all(app)


def main() -> None:
    """Entry point: bad input is one line on stderr and exit code 2, never a traceback."""
    try:
        app(standalone_mode=False)
    except NetsteerError as exc:
        err_console.print(f"[red]netsteer: error:[/] {exc.message()}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err_console.print("netsteer: interrupted")
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - last resort: no traceback for users
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if os.environ.get("NETSTEER_DEBUG"):
            raise
        err_console.print(f"[red]netsteer: internal error:[/] {type(exc).__name__}: {exc} (set NETSTEER_DEBUG=1 for details)")
        sys.exit(1)


if __name__ == "__main__":
    main()
