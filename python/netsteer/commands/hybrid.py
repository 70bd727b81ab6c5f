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
        from ..report.outdir import write_result_dir

        def write(d: Path) -> None:
            (d / "report.json").write_text(json.dumps(rep, indent=2))
            plot(rep, d / "fig3a_iperf.png", d / "fig3b_fftw.png")

        write_result_dir(out, write)
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
    from ..reproduce.hybrid_shifting import MODES, Study, plot, run, scenario, static_best

    if push not in ("sequential", "parallel"):
        raise NetsteerError(f"must be sequential or parallel, got {push!r}", field="--push")
    st = Study(racks=racks, servers_per_rack=servers_per_rack, circuit_switches=circuit_switches, jobs=jobs,
               phases=phases, bytes=block, core_bandwidth=core_bandwidth, period=period, poll=poll, seed=seed,
               delay={"rule_time": "0.44ms", "vlan_tag_time": "0.6s", "push": push, "tag": "parallel"})
    try:
        st.check()
    except NetsteerError as exc:  # the study's parameters are this command's options: racks is --racks
        options = ", ".join("--" + f.strip().replace("_", "-") for f in (exc.field or "").split(","))
        raise type(exc)(exc.reason, field=options) from None
    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing hybrid-shifting", len(MODES)) as adv:
        rep = run(st, progress=adv)
    if out is not None:
        import yaml

        from ..report.outdir import write_result_dir

        initial = static_best(st)

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
