"""The ``netsteer`` command line."""

from __future__ import annotations

import os
import signal
import sys


def _exit_on_early_signal(signum, frame) -> None:
    """Ctrl-C (or SIGTERM) while the command line is still importing (about 0.1 s), or
    once the command has finished: nothing is half-written then, so there is nothing to
    clean up; one line, exit 128 + signal."""
    name = "interrupted" if signum == signal.SIGINT else "terminated"
    try:  # what a finished command printed stays whole
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed pipe, or the signal came inside a write to it
        pass
    after = globals().get("_after_writing")  # defined below; absent while still importing
    tail = after(_committed()) if after is not None else ""
    os.write(2, f"netsteer: {name}: stopped by signal {signal.Signals(signum).name}{tail}\n".encode())
    os._exit(128 + signum)


def _started_as_command() -> bool:
    """True when this process is ``netsteer`` (the console script or ``python -m netsteer``),
    not a program or test that imports the module: only then are its signals ours."""
    main_module = sys.modules.get("__main__")
    spec = getattr(main_module, "__spec__", None)
    if spec is not None and spec.name == "netsteer.__main__":
        return True
    return os.path.basename(getattr(main_module, "__file__", None) or "") == "netsteer"


if _started_as_command():  # before the heavy imports below; main() takes over from here
    for _sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_sig, _exit_on_early_signal)

import json  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Optional  # noqa: E402

import typer  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

from . import __version__  # noqa: E402
from .commands._console import output_console  # noqa: E402
from .errors import NetsteerError  # noqa: E402
from .units import format_bandwidth, format_ns, format_seconds  # noqa: E402

app = typer.Typer(
    help="netsteer: an application-aware control plane for reconfigurable HPC interconnects.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
err_console = Console(stderr=True)
out_console = output_console()  # piped or in CI: tables whole, not cut at 80 columns


def _version(value: bool) -> None:
    if value:
        typer.echo(f"netsteer {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    max_memory: Optional[str] = typer.Option(
        None, "--max-memory", metavar="SIZE",
        help="Refuse inputs whose estimated size exceeds SIZE (default 4GiB, or $NETSTEER_MAX_MEMORY).",
    ),
) -> None:
    """Simulate scenarios, inspect topologies and routings."""
    from . import limits

    if max_memory is not None:
        limits.set_max_memory(limits.parse_memory(max_memory, field="--max-memory"))
    else:
        limits.reset()  # a bad NETSTEER_MAX_MEMORY is refused before any work


def _progress(enabled: bool):
    """A rich progress bar over flows done (:mod:`netsteer.report.progress`), or a no-op."""
    if not enabled:
        return None, None
    from .report.progress import simulation_progress

    return simulation_progress(err_console)


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario YAML file."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write result.json, counters.parquet and plots here."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
    fidelity: Optional[str] = typer.Option(
        None, "--fidelity", help="flow (max-min, fast) or packet (credits, VLs, arbitration); default: the scenario's."
    ),
) -> None:
    """Simulate a scenario and report job completion times."""
    from .report.outdir import check_out_path, write_run_dir
    from .report.result import result_dict
    from .scenario import build_scenario, load_scenario
    from .sim import run_scenario

    if out is not None:
        check_out_path(out)  # refused now, not after the run
    if fidelity not in (None, "flow", "packet"):
        raise NetsteerError(f"unknown fidelity {fidelity!r}; use flow or packet", field="--fidelity")
    built = build_scenario(load_scenario(scenario), fidelity=fidelity)
    prog, update = _progress(progress and err_console.is_terminal)
    if prog is not None:
        prog.start()
    try:
        res = run_scenario(built, sample=out is not None, progress=update)
    finally:
        if prog is not None:
            prog.stop()
    result = result_dict(built, res)
    if out is not None:
        write_run_dir(out, built, res, result)  # all old or all new
    if as_json:
        typer.echo(json.dumps(result))
        return
    _print_result(result, makespan_ns=res.makespan_ns, end_ns=getattr(res, "end_ns", -1))
    for note in result.get("notes", []):
        err_console.print(f"[yellow]note:[/] {note}")
    from .report.result import stall_warning

    warning = stall_warning(result)  # the text Result.notes and a sweep point's error give too
    if warning is not None:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}")


def _plain(v) -> str:
    """A value of the event log without Python's quotes: ``[s1_0:5 <-> s2_0:1]``."""
    return f"[{', '.join(_plain(x) for x in v)}]" if isinstance(v, list) else str(v)


def _stuck_flows(st: dict) -> str:
    """:func:`netsteer.report.result.stuck_flows` (kept for callers of this name)."""
    from .report.result import stuck_flows

    return stuck_flows(st)


def _routing_title(result: dict) -> str:
    """The scenario's routing engine, then each other engine an event put in force
    (``dmodk, then minhop at 20 ms``): the result's ``routing`` is the first only."""
    out, now = str(result["routing"]), result["routing"]
    for e in result.get("events") or []:
        eng = e.get("engine")
        if e.get("intent") == "routing" and eng and eng != now and "failed" not in e:
            out += f", then {eng} at {format_seconds(e['at_s'])}"
            now = eng
    return out


def _print_qos(q: dict) -> None:
    """The result's ``qos`` as the text says it: the tables in force and each SL in use
    (its VL, the table serving it, its weights, flows and classes); the changes are in the
    event lines, the QoS notes on stderr."""
    tables = lambda t: ",".join(f"{v}:{w}" for v, w in t) or "none"  # noqa: E731
    t = Table(title=f"QoS ({q['port']} ports' tables, every port): max_vls {q['max_vls']}, high_limit "
                    f"{q['high_limit']}, vlarb_high {tables(q['vlarb_high'])}, vlarb_low {tables(q['vlarb_low'])}")
    for col in ("SL", "VL", "table", "high weight", "low weight", "flows", "classes"):
        t.add_column(col, justify="left" if col in ("table", "classes") else "right")
    for x in q["sls"]:
        cls = ", ".join(x["classes"]) + (f"{', ' if x['classes'] else ''}{x['unclassed_flows']} flows of no class"
                                         if x["unclassed_flows"] else "")
        t.add_row(str(x["sl"]), str(x["vl"]), str(x["table"]), str(x["vlarb_high_weight"]),
                  str(x["vlarb_low_weight"]), str(x["flows"]), escape(cls))
    out_console.print(t)


def _print_result(result: dict, makespan_ns: int | None = None, end_ns: int = -1) -> None:
    """The result as tables; ``makespan_ns`` and ``end_ns`` (the run's own integer ns,
    when given) show the makespan and the stall time exactly, past a float's digits."""
    t = Table(title=f"{result['scenario']}  ({result['flows']} flows, {result['sharing']}, "
                    f"routing {_routing_title(result)})")
    pk = result.get("packet")
    t.add_column("job")
    t.add_column("flows", justify="right")
    t.add_column("bytes", justify="right")
    t.add_column("completion", justify="right")
    for j in result["jobs"]:
        comp = "not done" if j["completion_s"] is None else format_seconds(j["completion_s"])
        t.add_row(j["name"], str(j["flows"]), f"{j['bytes']:,}", comp)
    out_console.print(t)
    ops = Table(title="time per operation")
    for col in ("job", "operation", "count", "time", "algbw", "busbw"):
        ops.add_column(col, justify="left" if col in ("job", "operation") else "right")
    for j in result["jobs"]:
        for name, o in j.get("operations", {}).items():
            t_s = o.get("time_s", o.get("span_s"))
            bw, bus = o.get("algbw_Bps"), o.get("busbw_Bps")
            ops.add_row(
                j["name"], name, str(o.get("count", o.get("flows", ""))),
                "" if t_s is None else format_seconds(t_s),
                "" if bw is None else format_bandwidth(8 * bw),
                "" if bus is None else format_bandwidth(8 * bus),
            )
    if ops.row_count:
        out_console.print(ops)
    if result.get("qos") is not None:
        _print_qos(result["qos"])
    st = result.get("stalled")
    if result["makespan_s"] is None:
        span = "none: nothing finished"
    else:
        span = format_seconds(result["makespan_s"]) if makespan_ns is None else format_ns(max(makespan_ns, 0))
    if st is not None and "at_s" in st:
        span += f" (stalled at {format_seconds(st['at_s']) if end_ns < 0 else format_ns(end_ns)})"
    out_console.print(f"makespan {span}   simulated in {result['wall_s']:.3f} s wall")
    if pk is not None:
        from .commands.packet_report import print_packet

        print_packet(pk, out_console)
    for e in result["events"]:
        # links by their ends (the indices are for programs); "what" repeats the intent
        detail = ", ".join(f"{k}={_plain(v)}" for k, v in e.items()
                           if k not in ("intent", "at_s", "done_s", "failed", "superseded", "link_indices", "what"))
        line = f"  {format_seconds(e['at_s'])}  {e['intent']}" + (f" ({escape(detail)})" if detail else "")
        sup = e.get("superseded")
        if sup is not None and sup.startswith("never"):
            line += f", superseded: {escape(sup)}"  # done_s is when it was superseded
        elif "done_s" in e and e["done_s"] != e["at_s"]:
            line += f", in effect at {format_seconds(e['done_s'])}" + (f"; superseded {escape(sup)}" if sup else "")
        if "failed" in e:
            line += f"  [red]FAILED[/]: {escape(e['failed'])}"
        out_console.print(line)
    from .report.controllers import controller_lines

    for line in controller_lines(result.get("controller")):
        out_console.print(escape(line))


@app.command()
def topo(
    spec: str = typer.Argument(
        ...,
        help="A YAML/JSON topology spec file, an ibnetdiscover or ibsim net file, or inline "
        "'pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps'.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    draw: Optional[Path] = typer.Option(None, "--draw", help="Write a drawing of a small topology: .png, .svg or .pdf."),
    export: Optional[Path] = typer.Option(None, "--export", help="Export as ibsim net (.net) or JSON (.json)."),
) -> None:
    """Print a topology's counts and bisection bandwidth; draw or export it."""
    from .report.atomic import check_writable
    from .topology import metrics
    from .topology.spec import parse_topo_arg

    if draw is not None:
        metrics.draw_format(draw)  # .png, .svg or .pdf, before any work
        check_writable(draw, field="--draw")
    if export is not None:
        if export.suffix.lower() not in (".net", ".json"):  # as --draw and SPEC take any case
            raise NetsteerError("export to .net (ibsim) or .json", file=str(export), field="--export")
        check_writable(export, field="--export")
    t = parse_topo_arg(spec)
    info = metrics.describe(t)
    for path, option, write in ((draw, "--draw", lambda p: metrics.draw(t, p)), (export, "--export",
                                                                                lambda p: _export(t, p))):
        if path is None:
            continue
        try:
            write(path)
        except NetsteerError as exc:  # a write that fails names the option, as the checks before it do
            raise (exc.located(prefix=option) if exc.field is None and exc.file == str(path) else exc) from None
    if as_json:
        typer.echo(json.dumps(info, default=float))
        return
    table = Table(title=t.name, show_header=False)
    for k, text in metrics.describe_rows(info):
        table.add_row(k, text)
    out_console.print(table)
    if t.n_nodes <= 64 and draw is None:
        out_console.print(metrics.ascii(t))


def _export(t, path: Path) -> None:
    from .report.atomic import atomic_write

    suffix = path.suffix.lower()
    if suffix == ".net":
        from .topology.ibsim_net import net_export_changes, write_ibsim_net

        write_ibsim_net(t, path)
        changes = net_export_changes(t)
        if changes:  # written all the same, as OpenSM and ibsim need: said, not silent
            err_console.print(f"[yellow]note:[/] {escape(str(path))}: the .net format holds InfiniBand rates "
                              f"only and no latencies: {escape('; '.join(changes))} (.json keeps them exactly)",
                              soft_wrap=True)
    elif suffix == ".json":
        from .topology.json_io import to_json

        with atomic_write(path) as f:
            json.dump(to_json(t), f)
    else:
        raise NetsteerError("export to .net (ibsim) or .json", field=str(path))


from .commands import register_all  # noqa: E402

register_all(app)


class Signalled(BaseException):
    """SIGINT or SIGTERM arrived: unwinds like ``KeyboardInterrupt`` (cleaning up on the
    way out) and ends the command with exit code 128 + the signal's number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame) -> None:
    raise Signalled(signum)


def _on_unraisable(args) -> None:
    """A ``Signalled`` raised inside a callback that cannot pass it on (a garbage-collection
    hook, a finalizer) would be printed as "Exception ignored" and lost: deliver the
    signal again, to land in the command's own code. Anything else: Python's report."""
    if isinstance(args.exc_value, Signalled):
        import _thread

        # sent from another thread (started without waiting for it: a wait here would be
        # where the signal lands), it arrives once the callback has returned
        _thread.start_new_thread(os.kill, (os.getpid(), args.exc_value.signum))
        return
    sys.__unraisablehook__(args)


def _fail(prefix: str, message: str) -> None:
    """One line on stderr: ``netsteer: error: <message>``."""
    line = " ".join(str(message).split())
    if err_console.is_terminal:
        from rich.markup import escape

        err_console.print(f"[red]netsteer: {prefix}:[/] {escape(line)}", highlight=False, soft_wrap=True)
    else:
        sys.stderr.write(f"netsteer: {prefix}: {line}\n")
        sys.stderr.flush()


def _click_exceptions():
    """The ClickException classes typer raises (its vendored copy, or click itself)."""
    classes = []
    try:
        from typer._click import exceptions as vendored

        classes.append(vendored)
    except ImportError:
        pass
    try:
        import click.exceptions as real

        classes.append(real)
    except ImportError:
        pass
    return classes


def _plain_option_error(exc, mod) -> None:
    """typer checks an option's value with pydantic: its reason in plain words
    (``must be an integer, got 'x'``, not ``Input should be a valid integer, unable to
    parse string as an integer``), as a scenario's errors read."""
    from pydantic import ValidationError

    if isinstance(exc, getattr(mod, "BadParameter", ())) and isinstance(exc.__cause__, ValidationError):
        from .errors import plain_words

        exc.message = plain_words(exc.__cause__.errors()[0])


def _usage_error(exc) -> int | None:
    """Exit code for a click/typer usage error (printed as one line), or None if ``exc`` is not one."""
    for mod in _click_exceptions():
        if isinstance(exc, getattr(mod, "NoArgsIsHelpError", ())):
            # the error's message is the help: typer's rich help printed itself while
            # the error was made (the message is then empty), plain click's is text
            help_text = exc.format_message()
            if help_text.strip():
                typer.echo(help_text)
            return 2
        if isinstance(exc, mod.ClickException):
            _plain_option_error(exc, mod)
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "netsteer"
            hint = f" (see {where} --help)" if isinstance(exc, mod.UsageError) else ""
            _fail("error", f"{where}: {exc.format_message()}{hint}")
            return exc.exit_code if exc.exit_code else 2
    return None


def _committed() -> list:
    """The output directories this command has replaced whole (see ``report.outdir``;
    looked up, not imported: a command that writes none should not pay for loading it)."""
    outdir = sys.modules.get(f"{__package__}.report.outdir")
    return outdir.COMMITTED if outdir is not None else []


def _after_writing(written: list) -> str:
    """A signal after an output directory was replaced: say the result there is whole and new."""
    if not written:
        return ""
    return " after writing " + ", ".join(str(p) for p in written) + " (whole, new)"


def _pipe_closed_is_broken_pipe() -> None:
    """rich ends a print to a pipe whose reader went away (``netsteer run ... | head``)
    with ``SystemExit(1)``, the internal-error code; raise ``BrokenPipeError`` there
    instead, so that it ends with 141 as every other write to a closed pipe does."""
    from rich.console import Console

    def on_broken_pipe(self) -> None:
        if self.quiet:
            return
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as rich does: no more output
        raise BrokenPipeError("the reader of stdout went away")

    Console.on_broken_pipe = on_broken_pipe


def run_cli(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; every failure is one line on stderr.

    0 success; 2 bad input (including inputs over the size limits, unwritable outputs and
    usage errors); 130 interrupted (SIGINT); 143 terminated (SIGTERM); 1 an internal error.
    """
    _committed().clear()
    _pipe_closed_is_broken_pipe()
    try:
        rc = app(args=argv, prog_name="netsteer", standalone_mode=False)
        if isinstance(rc, int) and rc == 130:  # typer's KeyboardInterrupt
            _fail("interrupted", "stopped by the user (SIGINT)")
        return rc if isinstance(rc, int) else 0
    except NetsteerError as exc:
        _fail("error", exc.message())
        return 2
    except Signalled as exc:
        name = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}.get(exc.signum, "stopped")
        _fail(name, f"stopped by signal {signal.Signals(exc.signum).name}{_after_writing(_committed())}")
        return 128 + exc.signum
    except KeyboardInterrupt:
        _fail("interrupted", "stopped by the user (SIGINT)")
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        _fail("interrupted", "aborted")
        return 130
    except MemoryError as exc:
        from .limits import ENV

        msg = str(exc) or "an allocation failed"
        hint = "" if "--max-memory" in msg else f"; the input is too large for this machine (see netsteer --max-memory SIZE COMMAND, and {ENV})"
        _fail("error", f"out of memory: {msg}{hint}")
        return 2
    except RecursionError:
        _fail("error", "the input is nested too deeply to process")
        return 2
    except BrokenPipeError:
        # the reader went away (netsteer ... | head): nothing more to say
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 141
    except OSError as exc:
        # the environment, not netsteer: a path that cannot be read or written, a full disk
        where = exc.filename if exc.filename is not None else ""
        what = exc.strerror or str(exc)
        _fail("error", f"{where}: {what}" if where else what)
        return 2
    except Exception as exc:  # noqa: BLE001 - last resort: no traceback for users
        code = _usage_error(exc)
        if code is not None:
            return code
        if os.environ.get("NETSTEER_DEBUG"):
            raise
        from .errors import short_repr

        _fail("internal error", f"{type(exc).__name__}: {short_repr(str(exc))[1:-1]} (set NETSTEER_DEBUG=1 for details)")
        return 1


def main(argv: list[str] | None = None) -> None:
    """Entry point: SIGINT and SIGTERM unwind (cleaning up partial outputs), then :func:`run_cli`.

    It ends the process itself, with the command's exit code (from a program of your
    own, call :func:`run_cli`, which returns the code instead).
    """
    from .commands._console import plain_width_for_all

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)
    sys.unraisablehook = _on_unraisable
    plain_width_for_all()  # every command's tables whole in pipes and CI logs
    try:
        code = run_cli(argv)
        # The work is done and written; what is left is teardown. A signal there stops the
        # process at once, with its line. Threads are joined and the libraries' exit hooks
        # run (multiprocessing and Dask release what they hold), then the process ends
        # without the interpreter's module teardown: Python resets its signal handlers for
        # that phase (about half a second with Dask loaded), where a Ctrl-C ended the
        # process silently.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_on_early_signal)
    except Signalled as exc:  # in the few instructions between the command's end and the hand-over
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_on_early_signal)
        _exit_on_early_signal(exc.signum, None)
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        code = code or 141
    import atexit
    import threading

    threading._shutdown()  # as the interpreter would: join the threads still working
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":
    main()
