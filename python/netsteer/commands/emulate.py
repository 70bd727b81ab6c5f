"""``netsteer emulate SCENARIO`` and ``netsteer reproduce --emulate NAME``: real
switches (Open vSwitch in namespaces) driven by the ``openflow`` driver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import NetsteerError
from .route import reproduce_app

out_console = Console()
err_console = Console(stderr=True)

EMULATED = ("hybrid-reconfig", "unisonflow", "hyperx-steering")
#: the options each emulated reproduction uses (besides --json and --out): any other
#: given with it is refused, not silently ignored
USES = {"hybrid-reconfig": ("--rules", "--period", "--duration", "--channel"),
        "unisonflow": ("--tagger", "--plot"),
        "hyperx-steering": ("--bytes", "--iterations", "--during", "--channel", "--plot")}


def register(app: typer.Typer) -> None:
    app.command("emulate")(emulate_cmd)
    reproduce_app.callback(invoke_without_command=True)(reproduce_emulated)


def _say(quiet: bool):
    return (lambda msg: None) if quiet else (lambda msg: err_console.print(f"[dim]{msg}[/dim]"))


def _check_channel(channel: str) -> None:
    from ..emulate.run import CHANNELS

    if channel not in CHANNELS:
        raise NetsteerError(f"{channel!r} is not a channel; there is {', '.join(CHANNELS)}", field="--channel")


def _rate(text: str, field: str) -> float:
    from ..units import parse_bandwidth

    try:
        return float(parse_bandwidth(text))
    except (ValueError, TypeError) as exc:
        raise NetsteerError(f"not a rate: {exc}", field=field) from None


def _write(out: Path | None, rep: dict) -> None:
    if out is None:
        return
    from ..report.atomic import atomic_write

    with atomic_write(out, field="--out") as fh:
        fh.write(json.dumps(rep, indent=2))


def emulate_cmd(
    scenario: Path = typer.Argument(..., help="Scenario YAML file with a hybrid topology and controller."),
    time_scale: float = typer.Option(1.0, "--time-scale", help="Multiply every scenario time (durations, schedule)."),
    udp: Optional[str] = typer.Option(None, "--udp", help="Send UDP at this rate (e.g. 500Mbps): iperf3 counts lost packets."),
    channel: str = typer.Option("osken", "--channel", help="How the driver reaches the switches: osken (the os-ken application) or ofctl (ovs-ofctl)."),
    max_rate: str = typer.Option("100Mbps", "--max-rate", help="The fastest link's emulated rate, every rate scaled alike "
                                 "(0.5Mbps to 100Mbps); lower it on a busy machine."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write the JSON report to this file."),
) -> None:
    """Run a scenario on real switches: namespaces, Open vSwitch, tc rates, iperf3."""
    from ..emulate.run import TIME_SCALE, check_number, emulate
    from ..scenario import build_scenario, load_scenario

    check_number(time_scale, "--time-scale", *TIME_SCALE)
    _check_channel(channel)
    if out is not None:
        from ..report.atomic import check_writable

        check_writable(out, field="--out")
    udp_bps = None if udp is None else _rate(udp, "--udp")
    max_rate_bps = _rate(max_rate, "--max-rate")
    from ..emulate.testbed import check_rate

    check_rate(max_rate_bps, field="--max-rate")  # before the scenario is built
    built = build_scenario(load_scenario(scenario))
    rep = emulate(built, time_scale=time_scale, udp_bps=udp_bps, channel=channel, max_rate_bps=max_rate_bps,
                  progress=_say(as_json))
    from ..emulate.run import compare, controller_share

    rep["steps"] = controller_share(rep["controller"] or {}, rep["pushes"], rep["decisions"])
    rep["difference"] = compare(rep, rep["simulated"])
    _write(out, rep)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    err_console.print(f"rates x {rep['scale']:g} (emulated), times x {rep['time_scale']:g}")
    t = Table(title=f"flows on the emulated network ({rep['status']}), against the simulator")
    for c in ("src", "dst", "Gbit/s (topology rates)", "simulated", "difference", "lost packets", "in reconfig", "error"):
        t.add_column(c)
    num = lambda x: "-" if x is None else f"{x:.3f}"  # noqa: E731
    for f, s, d in zip(rep["flows"], rep["simulated"]["flows"], rep["difference"]["flow_gbps"]):
        t.add_row(str(f["src"]), str(f["dst"]), num(f.get("gbps")), num(s["gbps"]), num(d),
                  str(f.get("lost_packets", "-")), str(f.get("lost_during_reconfig", "-")), f.get("error", ""))
    out_console.print(t)
    sims = rep["simulated"]["reconfigurations"]
    for i, (r, c) in enumerate(zip((rep["controller"] or {}).get("reconfigurations", []), rep["steps"])):
        sim = sims[i] if i < len(sims) else None
        out_console.print(f"reconfiguration {r['id']} ({r['trigger']}): {r['status']}, at {r['start_s'] / rep['time_scale']:.3f} s, "
                          f"delay {num(r['delay_s'])} s (controller {num(c['controller_delay_s'])} s, of which deciding "
                          f"{num(c['decide_s'])} s); simulated: "
                          + ("none" if sim is None else f"at {num(sim['start_s'])} s, delay {num(sim['delay_s'])} s"))
    for s in sims[len(rep["steps"]):]:
        out_console.print(f"simulated only: reconfiguration ({s['trigger']}) at {num(s['start_s'])} s")
    if rep["simulated"].get("note"):
        err_console.print(f"[yellow]note:[/] {rep['simulated']['note']}")
    for note in rep.get("notes", []):
        err_console.print(f"[yellow]note:[/] {note}")


def reproduce_emulated(
    ctx: typer.Context,
    emulate: Optional[str] = typer.Option(None, "--emulate", help=f"Reproduce on emulated switches: {', '.join(EMULATED)}."),
    as_json: bool = typer.Option(False, "--json", help="With --emulate: print one JSON object on stdout."),
    rules: str = typer.Option("100,5000", "--rules", help="With --emulate: rules per reconfiguration, comma-separated."),
    period: float = typer.Option(2.0, "--period", help="With --emulate: seconds between reconfigurations (the source: 10)."),
    duration: float = typer.Option(6.0, "--duration", help="With --emulate: seconds per run."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="With --emulate: write the JSON report here."),
    channel: str = typer.Option("osken", "--channel", help="With --emulate: osken (the os-ken application) or ofctl (ovs-ofctl)."),
    nbytes: int = typer.Option(1 << 20, "--bytes", help="With --emulate hyperx-steering: the all-reduce's buffer (bytes)."),
    iterations: int = typer.Option(4, "--iterations", help="With --emulate hyperx-steering: timed all-reduces per run."),
    during: bool = typer.Option(False, "--during", help="With --emulate hyperx-steering: steer make-before-break while "
                                "one job runs (after --iterations all-reduces), instead of between two jobs."),
    tagger: str = typer.Option("ebpf", "--tagger", help="With --emulate unisonflow: the hosts' tag writer: ebpf (tc "
                               "egress program), ovs (each host's own Open vSwitch bridge) or auto (eBPF where it "
                               "attaches, the host bridge elsewhere)."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="With --emulate unisonflow or hyperx-steering: write the "
                                        "figures (PNG) into this directory."),
) -> None:
    """Reproduce a source document's evaluation (``--emulate NAME``: on real switches)."""
    # (by name: typer's click may not be the click importable here)
    given = [p.opts[0] for p in ctx.command.params
             if p.name != "emulate" and getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"]
    if emulate is None:
        # these options belong to --emulate; before a subcommand they would be dropped
        if given:
            raise NetsteerError(f"applies with --emulate NAME only; a reproduction takes its own options after its "
                                f"name (netsteer reproduce NAME --help)", field=given[0])
        if ctx.invoked_subcommand is None:
            typer.echo(ctx.get_help())
        return
    if ctx.invoked_subcommand is not None:
        raise NetsteerError("--emulate NAME takes no subcommand", field="--emulate")
    if emulate not in EMULATED:
        raise NetsteerError(f"{emulate!r} has no emulated reproduction; there is {', '.join(EMULATED)}", field="--emulate")
    for opt in given:
        if opt not in ("--json", "--out", *USES[emulate]):
            raise NetsteerError(f"{emulate} does not use it; it takes {', '.join(USES[emulate])}, --json, --out",
                                field=opt)
    if plot is not None:
        from ..report.outdir import check_out_path

        check_out_path(plot, field="--plot")
    from ..emulate.mpi import TAGGERS

    if tagger not in TAGGERS:
        raise NetsteerError(f"{tagger!r} is not a tag writer; there is {', '.join(TAGGERS)}", field="--tagger")
    if emulate == "unisonflow":
        return _unisonflow(as_json, out, plot, tagger)
    if emulate == "hyperx-steering":
        return _hyperx(as_json, out, plot, nbytes, iterations, channel, during)
    try:
        counts = tuple(int(x) for x in rules.split(","))
    except ValueError:
        raise NetsteerError(f"not a comma-separated list of integers: {rules!r}", field="--rules") from None
    _check_channel(channel)
    if any(n < 0 or n > 100_000 for n in counts):
        raise NetsteerError("each count must be 0..100000", field="--rules")
    from ..emulate.run import check_number

    check_number(period, "--period", 0.5, 30, " s")
    check_number(duration, "--duration", 1.5 * period, 60, " s (1.5 periods at least)")
    if out is not None:
        from ..report.atomic import check_writable

        check_writable(out, field="--out")
    from ..emulate.hybrid_reconfig import run

    rep = run(rules=counts, period_s=period, duration_s=duration, channel=channel, progress=_say(as_json))
    _write(out, rep)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    t = Table(title=f"iperf3 over an emulated circuit reconfigured every {period:g} s (rates / {rep['rate_divisor']:g})")
    for c in ("rules", "mode", "avg Gbit/s", "sim", "delay s", "sim", "controller s", "lost packets", "in reconfig"):
        t.add_column(c, justify="right")
    f = _fixed
    for r in rep["iperf"]:
        s = r["simulated"]
        t.add_row(str(r["rules"]), r["mode"], f(r["avg_gbps"]), f(s["avg_gbps"]), f(r["delay_s"]), f(s["delay_s"]),
                  f(r["controller_delay_s"]), str(r["lost_packets"]), str(r["lost_during_reconfig"]))
    out_console.print(t)


def _fixed(x, d: int = 3) -> str:
    """A table cell: ``x`` with ``d`` decimals, ``-`` when missing."""
    return "-" if x is None else f"{x:.{d}f}"


def _figures(plot: Path, draw) -> list[str]:
    """``draw(dir)`` (it returns the file names) into ``plot`` as a whole
    (:func:`netsteer.report.outdir.write_result_dir`: the old figures or the new, never a
    mix), with the manifest that lets a later run replace them."""
    from ..report.outdir import MANIFEST, write_result_dir

    files = write_result_dir(plot, draw, field="--plot")
    return [str(plot / f) for f in files if f != MANIFEST]


def _hyperx(as_json: bool, out: Path | None, plot: Path | None, nbytes: int, iterations: int, channel: str,
            during: bool = False) -> None:
    """The flexible-HyperX source's ring all-reduce with MPICH on the emulated HyperX,
    before and after bandwidth steering (netsteer.emulate.hyperx_steering)."""
    _check_channel(channel)
    if out is not None:
        from ..report.atomic import check_writable

        check_writable(out, field="--out")
    from ..emulate.hyperx_steering import RANKS, run

    if nbytes < 4 * RANKS or nbytes % (4 * RANKS) or nbytes > 1 << 26:
        raise NetsteerError(f"must be a positive multiple of {4 * RANKS} (the ring's {RANKS} chunks of 32-bit floats) "
                            f"up to 64 MiB, not {nbytes}", field="--bytes")
    if not 1 <= iterations <= 100:
        raise NetsteerError(f"must be 1..100, not {iterations}", field="--iterations")
    try:
        rep = run(iterations=iterations, nbytes=nbytes, channel=channel, during=during, progress=_say(as_json))
    except NetsteerError as exc:
        if exc.field in ("bytes", "iterations", "channel"):  # run()'s parameters are these options
            raise exc.as_options() from None
        raise
    if plot is not None:
        from ..emulate.plots import hyperx_links

        rep["figures"] = _figures(plot, lambda d: hyperx_links(rep, d))
    _write(out, rep)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    t = Table(title=f"MPICH ring all-reduce of {nbytes:,} B on the emulated flexible HyperX "
                    f"(links {rep['link_bps_emulated'] / 1e6:g} Mbit/s, x {rep['scale']:g} the source's)")
    for col in ("run", "circuits", "ring Mbit/s", "sim", "emulated/sim", "at 10 Gbit/s links", "check"):
        t.add_column(col, justify="right")
    cmp = rep["compare"]
    for key in ("standard", "during", "steered"):
        if key not in rep:
            continue
        r, s = rep[key], rep["simulated"].get(key, {})
        bps = r["ring_bps"]
        t.add_row(key, " ".join(f"{a}-{b}" for a, b in r["circuits"]) if key != "during" else "(changing)",
                  _fixed(bps and bps / 1e6, 2), _fixed(s.get("ring_bps") and s["ring_bps"] / 1e6, 2),
                  _fixed(cmp.get(f"{key}_emulated_over_simulated"), 2),
                  f"{r['ring_gbps_topology']:.2f} Gbit/s" if bps else "-", r["check"])
    out_console.print(t)
    st = rep["steering"]
    err_console.print(f"steering {rep['inputs']['steered']}: {len(st['steps'])} steps in {st['seconds']:.2f} s "
                      f"({sum(x['changes'] for x in st['steps'])} rule changes, make-before-break move by move)")
    err_console.print(f"steering: {cmp['speedup_emulated']:.2f}x the ring's bandwidth emulated, "
                      f"{cmp['speedup_simulated']:.2f}x simulated")
    for name, gaps in rep["links"].get("gaps", {}).items():
        err_console.print(f"[yellow]note:[/] {len(gaps)} failed read(s) of the {name} counter (first at "
                          f"{gaps[0][0]:.2f} s: {gaps[0][1]}); its rates there span the gap")


def _unisonflow(as_json: bool, out: Path | None, plot: Path | None = None, tagger: str = "ebpf") -> None:
    """The UnisonFlow source's bcast-then-reduce with MPICH on the emulated fat-tree
    (netsteer.emulate.unisonflow_real) under ECMP, with the interconnect controller
    answering packet-ins (``controller``) and with its decisions installed ahead of
    traffic (``pinned``); then OSU-like latency and bandwidth without and with tags
    (netsteer.emulate.osu_overhead, the source's Figs. 11-13)."""
    if out is not None:
        from ..report.atomic import check_writable

        check_writable(out, field="--out")
    from ..emulate.osu_overhead import run as osu
    from ..emulate.unisonflow_real import compare, run

    rep: dict = {}
    for mode in ("ecmp", "controller", "pinned"):
        rep[mode] = run(400, 1000, routing=mode, progress=_say(as_json), tagger=tagger)
    rep["comparison"] = {m: compare(rep[m]) for m in ("ecmp", "controller", "pinned")}
    rep["controller_mode"] = ("reactive: frames of new tags tell the os-ken app while going on by ECMP; the "
                              "interconnect controller's pin module answers with rules (bcast via spine1, "
                              "reduce via spine2)")
    rep["overhead"] = osu(max_bytes=1 << 16, lat_iters=200, bw_iters=20, window=16, repeat=3, tagger=tagger,
                          progress=_say(as_json))
    if plot is not None:
        from ..emulate.plots import overhead

        rep["figures"] = _figures(plot, lambda d: overhead(rep["overhead"], d))
    _write(out, rep)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    e = rep["ecmp"]
    t = Table(title=f"bytes entering each spine, MPICH {e['ranks']} ranks, {e['iterations']} x {e['bytes']} B")
    for col in ("routing", "phase", "spine1", "spine2", "sim spine1", "sim spine2", "emulated/sim"):
        t.add_column(col, justify="right")
    for mode in ("ecmp", "controller", "pinned"):
        r = rep[mode]
        for ph in ("bcast", "reduce"):
            if ph in r:
                m, cmp = r["simulated"][ph], rep["comparison"][mode][ph]
                t.add_row(mode, ph, f"{r[ph]['spine1_bytes']:,}", f"{r[ph]['spine2_bytes']:,}", f"{m['spine1_bytes']:,}",
                          f"{m['spine2_bytes']:,}", f"{cmp['bytes_ratio']:.2f}")
    out_console.print(t)
    err_console.print("controller: " + rep["controller_mode"])
    for n in (rep["controller"].get("controller") or {}).get("notes", []):
        err_console.print("note: " + n)
    o = rep["overhead"]
    t = Table(title=f"OSU-like between hosts {o['pair'][0]} and {o['pair'][1]}, median of {o['repeat']} "
                    f"(links {o['link_mbs']:g} MB/s)")
    for col in ("bytes", "latency us", "tagged", "overhead us", "sim", "MB/s", "tagged", "ratio", "sim"):
        t.add_column(col, justify="right")
    f = lambda x, d=1: _fixed(x, d)  # noqa: E731
    for r in o["sizes"]:
        p, g, s = r["plain"], r["tagged"], r["simulated"].get("plain", {})
        t.add_row(str(r["bytes"]), f(p.get("latency_us")), f(g.get("latency_us")), f(r.get("latency_overhead_us")),
                  f(s.get("latency_us")), f(p.get("bandwidth_mbs"), 3), f(g.get("bandwidth_mbs"), 3),
                  f(r.get("bandwidth_ratio"), 2), f(s.get("bandwidth_mbs"), 3))
    out_console.print(t)
