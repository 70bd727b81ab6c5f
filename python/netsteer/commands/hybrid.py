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
    reproduce_app.command("hybrid-shifting")(reproduce_shifting)


def reproduce_hybrid(
    rules: str = typer.Option("100,5000", help="Rules pushed per iperf reconfiguration, comma-separated: two runs "
                              "(make-before-break, break-before-make) each (the source: 100 and 5000)."),
    period: str = typer.Option("10s", help="iperf: a reconfiguration every this long (the source: 10 s)."),
    duration: str = typer.Option("60s", help="iperf: length of each run (the source's Fig. 3a: 60 s)."),
    vlan_tag_time: str = typer.Option("0.6s", help="Delay model: VLAN tagging per ToR port (the source's 1.2 s "
                                      "for the two ports of a ToR)."),
    rule_time: str = typer.Option("0.44ms", help="Delay model: per rule per Open vSwitch (assumed; makes 5000 "
                                  "rules take the source's 2.2 s)."),
    switching_time: str = typer.Option("25ms", help="Delay model: MEMS switching."),
    push: str = typer.Option("sequential", help="Rules pushed to switches: sequential (the source) or parallel."),
    core_bandwidth: str = typer.Option("1Gbps", help="The electrical network's rate per ToR (the source: 1 Gbit/s)."),
    trigger: str = typer.Option("15s", help="FFTW: when the scheduled reconfiguration to topology 2 starts "
                                "(the source: 15 s)."),
    poll: str = typer.Option("200ms", help="FFTW, congestion-triggered mode: polling interval."),
    fft_ranks: int = typer.Option(8, help="FFTW ranks, a power of two (pairwise alltoall), half on each of racks 1 and 2 "
                                  "(the source: 4 servers a rack)."),
    fft_bytes: str = typer.Option("32MiB", help="FFTW: bytes each rank sends each other rank per phase (assumed)."),
    fft_phases: int = typer.Option(20, help="FFTW: phases, each a compute step and a pairwise alltoall (assumed)."),
    fft_alone: str = typer.Option("28.7s", help="FFTW: uncongested run time the compute steps are calibrated "
                                  "on (the source: 28.7 s)."),
    fft_rules: int = typer.Option(100, help="FFTW: rules pushed per reconfiguration (assumed)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.json, the Fig. 3 plots and every "
                                       "run as a scenario here."),
) -> None:
    """Reconfiguration delay (iperf, 100 and 5000 rules) and FFTW under congestion."""
    from ..errors import NetsteerError
    from ..reproduce.hybrid import Reconfig, plot, run, scenarios, steps
    from ..units import parse_duration

    try:
        counts = tuple(int(x) for x in rules.split(","))
    except ValueError:
        raise NetsteerError(f"must be integers separated by commas, got {rules!r}", field="--rules") from None
    params = Reconfig(rules=counts, period=period, duration=duration, vlan_tag_time=vlan_tag_time,
                      rule_time=rule_time, switching_time=switching_time, push=push, core_bandwidth=core_bandwidth,
                      trigger=trigger, poll=poll, fft_ranks=fft_ranks, fft_bytes=fft_bytes, fft_phases=fft_phases,
                      fft_alone=fft_alone, fft_rules=fft_rules)
    try:
        params.check()
    except NetsteerError as exc:
        raise exc.as_options() from None
    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing hybrid-reconfig", steps(params)) as adv:
        try:
            rep = run(progress=adv, params=params)
        except NetsteerError as exc:  # the calibration: its field is a parameter too
            raise exc.as_options() from None
    if out is not None:
        import yaml

        from ..report.outdir import write_result_dir

        def write(d: Path) -> None:
            (d / "report.json").write_text(json.dumps(rep, indent=2))
            plot(rep, d / "fig3a_iperf.png", d / "fig3b_fftw.png")
            for name, data in scenarios(rep, params).items():
                (d / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))

        write_result_dir(out, write)
    if as_json:
        slim = {k: [{kk: vv for kk, vv in r.items() if kk not in ("time_s", "gbps", "gbps_rack1_to_rack2", "gbps_rack2_to_rack1")} for r in v]
                if isinstance(v, list) else v for k, v in rep.items()}
        typer.echo(json.dumps(slim))
        return
    t = Table(title=f"iperf over a circuit reconfigured every {parse_duration(period) / 1e9:g} s")
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
    for r in rep["fftw"]:
        for n in r.get("notes", ()):
            out_console.print(f"note: {r['run']}: {n}")
    _print_provenance(rep["parameters"])


def _print_provenance(block: dict) -> None:
    """Which inputs the source gives, which are assumed, which an option changed."""
    from ..reproduce._params import provenance_lines

    for line in provenance_lines(block):
        out_console.print(line, highlight=False, soft_wrap=True)


def reproduce_shifting(
    racks: int = typer.Option(320, help="Racks (the source's Fig. 1: 320)."),
    servers_per_rack: int = typer.Option(32, help="Servers per rack (Fig. 1: 32, 10,240 servers)."),
    circuit_switches: int = typer.Option(8, help="Circuit switches: optical uplinks per ToR."),
    jobs: int = typer.Option(8, help="Jobs, each on a random set of racks."),
    phases: int = typer.Option(4, help="Phases per job: a new rack pairing each."),
    block: str = typer.Option("4GiB", "--bytes", help="Mean bytes a server sends its partner per phase."),
    core_bandwidth: str = typer.Option("10Gbps", help="Each ToR's electrical uplink."),
    push: str = typer.Option("sequential", help="Rules pushed to switches: sequential or parallel."),
    period: str = typer.Option("1s", help="Periodic mode: sampling period."),
    poll: str = typer.Option("200ms", help="Congestion mode: polling interval."),
    seed: int = typer.Option(1, help="Seed of the racks, blocks and pairings."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.json, job_times.png and the four scenarios here."),
) -> None:
    """Beyond the source: 320 racks under a shifting workload, periodic vs congestion vs static best."""
    from ..errors import NetsteerError
    from ..reproduce.hybrid_shifting import MODES, Study, plot, run, scenario, static_initial

    if push not in ("sequential", "parallel"):
        raise NetsteerError(f"must be sequential or parallel, got {push!r}", field="--push")
    st = Study(racks=racks, servers_per_rack=servers_per_rack, circuit_switches=circuit_switches, jobs=jobs,
               phases=phases, bytes=block, core_bandwidth=core_bandwidth, period=period, poll=poll, seed=seed,
               delay={"rule_time": "0.44ms", "vlan_tag_time": "0.6s", "push": push, "tag": "parallel"})
    try:
        st.check()
    except NetsteerError as exc:  # the study's parameters are this command's options: racks is --racks
        raise exc.as_options() from None
    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing hybrid-shifting", len(MODES)) as adv:
        rep = run(st, progress=adv)
    if out is not None:
        import yaml

        from ..report.outdir import write_result_dir

        initial = static_initial(st, rep)  # the static best run() chose

        def write(d: Path) -> None:
            (d / "report.json").write_text(json.dumps(rep, indent=2))
            plot(rep, d / "job_times.png")
            for m in MODES:
                name = m.replace(" ", "-")
                (d / f"scenario-{name}.yaml").write_text(yaml.safe_dump(scenario(st, m, initial), sort_keys=False))

        write_result_dir(out, write)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    t = Table(title=f"{racks} racks x {servers_per_rack} servers, {jobs} jobs x {phases} phases: job completion (s)")
    t.add_column("network")
    for name in rep["runs"][0]["jobs"]:
        t.add_column(name, justify="right")
    for c in ("mean", "reconfig.", "mean delay (s)"):
        t.add_column(c, justify="right")
    for r in rep["runs"]:
        d = "-" if r["mean_reconfig_delay_s"] is None else f"{r['mean_reconfig_delay_s']:.2f}"
        t.add_row(r["mode"], *[f"{v:.1f}" for v in r["jobs"].values()], f"{r['mean_job_s']:.1f}",
                  str(r["reconfigurations"]), d)
    out_console.print(t)
    out_console.print(static_line(rep["static_best"]), highlight=False)
    _print_provenance(rep["parameters"])


def static_line(choice: dict) -> str:
    """How the static best was chosen, in one line.

    >>> print(static_line({"circuits": 6, "pairs_with_at_least": 6, "candidates": [
    ...     {"pairs_with_at_least": 2, "circuits": 128, "mean_job_s": 214.94},
    ...     {"pairs_with_at_least": 6, "circuits": 6, "mean_job_s": 97.16},
    ...     {"pairs_with_at_least": 7, "circuits": 0, "mean_job_s": 97.16}]}))
    static best: 6 circuits, the fastest of 3 static networks simulated (mean job: 214.9 s with the planner's 128 circuits, 97.2 s with its 6 for rack pairs given at least 6, 97.2 s with no circuits)
    """
    cands = choice["candidates"]
    parts = []
    for i, c in enumerate(cands):
        if c["circuits"] == 0:
            what = "no circuits"
        elif i == 0:
            what = f"the planner's {c['circuits']} circuits"
        else:
            what = f"its {c['circuits']} for rack pairs given at least {c['pairs_with_at_least']}"
        parts.append(f"{c['mean_job_s']:.1f} s with {what}")
    n = choice["circuits"]
    return (f"static best: {n} circuit{'s' if n != 1 else ''}, the fastest of {len(cands)} static networks simulated "
            f"(mean job: {', '.join(parts)})")
