"""``netsteer qos opensm-conf|tune`` and ``netsteer reproduce qos-staging``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ._console import output_console
from .route import progress_bar, reproduce_app

qos_app = typer.Typer(help="InfiniBand QoS: OpenSM configuration, weight tuning.", no_args_is_help=True)
out_console = output_console()
err_console = output_console(stderr=True)


def register(app: typer.Typer) -> None:
    app.add_typer(qos_app, name="qos")
    reproduce_app.command("qos-staging")(reproduce_qos_staging)


@qos_app.command("opensm-conf")
def opensm_conf(
    scenario: Path = typer.Argument(..., help="Scenario YAML file with a qos section."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write opensm.conf (and partitions.conf) here."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """The QoS options of opensm.conf (qos_*, qos_ca_*, qos_swe_*, ...) for a scenario,
    and its partitions.conf when its routing uses partitions."""
    from ..drivers.opensm.qos import parse_qos_conf, qos_conf_lines
    from ..errors import NetsteerError
    from ..scenario import build_scenario, load_scenario

    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    sc = load_scenario(scenario)
    if sc.model.qos is None:
        raise NetsteerError("the scenario has no qos section", file=str(scenario), field="qos")
    built = build_scenario(sc)
    conf = qos_conf_lines(built.qos.config)
    from ..drivers.opensm.partitions import format_partitions_conf, with_default
    from ..drivers.opensm.qos import job_sl_partitions, partitions_with_sl
    from ..qos.config import check_partition_sls
    from ..topology.ibsim_net import with_fabric_guids

    topo = with_fabric_guids(built.topology)  # the GUIDs netsteer route and topo --export give it
    parts = list(getattr(built.routing, "partitions", None) or [])
    if parts:
        # the routing's SL per partition (pFTree's lanes), as OpenSM hands it out: each
        # must get bandwidth from the tables written beside it
        sl = getattr(built.routing, "partition_sl", None) or {}
        check_partition_sls(built.qos.config, parts, sl, file=str(scenario))
        parts = partitions_with_sl(parts, sl)
    # how the jobs' traffic gets the SLs of its qos classes: a partition with sl= per job
    cols = built.dag.columns()
    jobs, notes = job_sl_partitions(topo, built.job_names, built.job_of_flow, cols.src, cols.dst,
                                    built.qos.sl, parts, base=built.qos.partition_sl)
    notes = built.qos.notes + notes  # a class over a partition's SL: which one the runs took
    parts_text = None
    if parts or jobs:
        try:
            # no routing.partitions: OpenSM reads no file, so its default partition has every port full
            parts_text = format_partitions_conf(with_default([*parts, *jobs], topo, no_file=not parts), topo)
        except ValueError as exc:
            raise NetsteerError(f"cannot be written to partitions.conf: {exc}", file=str(scenario),
                                field="routing.partitions") from None
    if out is not None:
        from ..report.outdir import write_result_dir

        def write(d: Path) -> None:
            (d / "opensm.conf").write_text(conf)
            if parts_text is not None:
                (d / "partitions.conf").write_text(parts_text)

        write_result_dir(out, write)
    if as_json:
        typer.echo(json.dumps({"opensm_conf": parse_qos_conf(conf), "partitions_conf": parts_text,
                               "qos": built.qos.summary(), "notes": notes}))
        return
    if out is None:
        typer.echo(conf, nl=False)
        if parts_text is not None:
            typer.echo("# partitions.conf\n" + parts_text, nl=False)
    else:
        out_console.print(f"wrote {out}/opensm.conf" + (" and partitions.conf" if parts_text else ""))
    for n in notes:
        err_console.print("note: " + n, soft_wrap=True, highlight=False)


@qos_app.command("tune")
def tune_cmd(
    scenario: Path = typer.Argument(..., help="Scenario YAML file with a qos section and the two classes."),
    mpi: str = typer.Option(..., "--mpi", help="The class whose slowdown is bounded."),
    io: str = typer.Option(..., "--io", help="The class whose throughput is maximised."),
    max_slowdown: float = typer.Option(..., "--max-slowdown", help="Bound on MPI's time over its time served first (e.g. 1.1)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """VL arbitration weights keeping MPI's slowdown within a bound with the most I/O throughput."""
    from ..qos.tune import runs, tune
    from ..scenario import load_scenario

    sc = load_scenario(scenario)
    with progress_bar("tuning weights", runs(), enabled=not as_json) as adv:
        rep = tune(sc, mpi, io, max_slowdown, progress=adv)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    t = Table(title=f"{mpi} vs {io}: slowdown bound {max_slowdown}")
    for c in ("MPI weight", "I/O weight", "MPI slowdown", "I/O GB/s", ""):
        t.add_column(c, justify="right")
    for p in rep["curve"]:
        mark = "best" if p is rep["best"] or p == rep["best"] else ""
        t.add_row(str(p["mpi_weight"]), str(p["io_weight"]), f"{p['slowdown']:.3f}", f"{p['io_Bps'] / 1e9:.3f}", mark)
    out_console.print(t)
    if rep["best"] is None:
        out_console.print("no weights keep the slowdown within the bound: put MPI in the high table")
    else:
        out_console.print("opensm.conf: " + "  ".join(f"{k} {v}" for k, v in rep["opensm"].items()))


# the set-up's fields whose option is named otherwise (the rest: ssd_rate is --ssd-rate)
_SETUP_OPTIONS = {"link_bps": "--link-bandwidth", "link_latency_ns": "--link-latency"}


def reproduce_qos_staging(
    noise_streams: int = typer.Option(2, help="dd streams from each noisy node (assumed: the source says dd, not "
                                      "how many)."),
    ssd_rate: str = typer.Option("1GBps", help="A staging node's SSD write rate (assumed for the OCZ VeloDrive)."),
    pfs_rate: str = typer.Option("0.5GBps", help="The parallel file system node's write rate (assumed)."),
    link_bandwidth: str = typer.Option("32Gbps", help="Data rate of a link (QDR: 40 Gbit/s signalling, 8b/10b)."),
    link_latency: str = typer.Option("700ns", help="Latency per link: HCA, cable and switch (assumed)."),
    window: int = typer.Option(64, help="OSU bandwidth test: messages in flight on the QP (osu_bw's default)."),
    compute_nodes: int = typer.Option(8, help="Compute nodes; the applications' 64 processes spread evenly over "
                                      "them (the source: 8 x 8 cores)."),
    staging_nodes: int = typer.Option(2, help="Staging nodes with an SSD each."),
    alltoall_ranks: int = typer.Option(8, help="Alltoall ranks, one a compute node, noise from each (assumed)."),
    high_limit: int = typer.Option(255, help="qos_ca_high_limit (the source: 255)."),
    vlarb_high: Optional[str] = typer.Option(None, help="qos_ca_vlarb_high, VL:weight,... (default: the source's, "
                                             "0:40 and VLs 1..14 at 0; MPI is on SL 0, VL 0)."),
    vlarb_low: Optional[str] = typer.Option(None, help="qos_ca_vlarb_low, VL:weight,... (default: the source's, "
                                            "0:0,1:2,2:4,...,7:128; I/O is on SL 1, VL 1; the SL weight study puts "
                                            "MPI on VLs 1..7)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.json and the figures here."),
) -> None:
    """The QoS-aware data-staging source: OSU-like latency/bandwidth, alltoall, apps, SL weights."""
    from ..errors import NetsteerError
    from ..reproduce.qos import STEPS, Setup, plot, run
    from ..units import checked_duration, parse_bandwidth

    rates = {}
    for option, value in (("--ssd-rate", ssd_rate), ("--pfs-rate", pfs_rate), ("--link-bandwidth", link_bandwidth)):
        try:
            rates[option] = parse_bandwidth(value)
        except ValueError as exc:
            raise NetsteerError(str(exc), field=option) from None
    try:
        latency_ns = checked_duration(link_latency)
    except ValueError as exc:
        raise NetsteerError(str(exc), field="--link-latency") from None
    setup = Setup(link_bps=rates["--link-bandwidth"], link_latency_ns=latency_ns, ssd_rate=rates["--ssd-rate"] / 8,
                  pfs_rate=rates["--pfs-rate"] / 8, noise_streams=noise_streams, window=window,
                  compute_nodes=compute_nodes, staging_nodes=staging_nodes, alltoall_ranks=alltoall_ranks,
                  high_limit=high_limit,
                  **{k: v for k, v in (("vlarb_high", vlarb_high), ("vlarb_low", vlarb_low)) if v is not None})
    try:
        setup.check()
    except NetsteerError as exc:
        raise exc.as_options(_SETUP_OPTIONS) from None
    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing qos-staging", STEPS, enabled=not as_json) as adv:
        try:
            rep = run(setup, progress=adv)
        except NetsteerError as exc:  # a rate too slow for the runs to end (reproduce/qos.py)
            raise exc.as_options(_SETUP_OPTIONS) from None
    if out is not None:
        from ..report.outdir import write_result_dir

        def write(d: Path) -> None:
            (d / "report.json").write_text(json.dumps(rep, indent=2))
            plot(rep, d)

        write_result_dir(out, write)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    from ..reproduce.qos import qos_label

    fav = rep["qos_favours"]
    qos = qos_label(fav["favours"])
    t = Table(title="MPI under I/O noise, largest message (flow fidelity)")
    # what is computed: noise + QoS minus noise, signed; the source's are gains, its QoS favouring MPI
    for c in ("", "no noise", "noise", f"noise + {qos}", "QoS effect", "source's effect"):
        t.add_column(c, justify="right")
    lat = {k: v[-1]["us"] for k, v in rep["latency"].items()}
    bw = {k: v[-1]["mbps"] for k, v in rep["bandwidth"].items()}
    a = rep["at_largest"]
    t.add_row("latency (us)", f"{lat['no_noise']:.0f}", f"{lat['noise']:.0f}", f"{lat['noise_qos']:.0f}",
              f"{a['latency_effect_us']:+.0f}", f"{-rep['source']['at_4MB']['latency_gain_us']:+d}")
    t.add_row("bandwidth (MB/s)", f"{bw['no_noise']:.0f}", f"{bw['noise']:.0f}", f"{bw['noise_qos']:.0f}",
              f"{a['bandwidth_effect_mbps']:+.0f}", f"{rep['source']['at_4MB']['bandwidth_gain_mbps']:+d}")
    out_console.print(t)
    out_console.print(f"{qos}: {fav['why']}; QoS effect: noise + QoS minus noise (latency below 0 and bandwidth "
                      "above 0: MPI faster with QoS)" + ("" if fav["favours"] == "mpi" else
                                                         ", not a gain: the tables do not favour MPI"))
    # small messages: the packet model's curves (queueing behind the noise), else the flow model's
    model, curves = ("packet", rep["packet"]) if rep.get("packet") else ("flow", rep)
    small = min(p["bytes"] for p in curves["latency"]["noise"])
    pts = {k: next(p for p in v if p["bytes"] == small) for k, v in curves["latency"].items()}
    out_console.print(f"{small}-byte latency: {pts['no_noise']['us']:.2f} us, with noise {pts['noise']['us']:.2f} us, "
                      f"with noise and {qos} {pts['noise_qos']['us']:.2f} us ({model} fidelity)")
    t = Table(title="Applications, 64 processes, checkpoints through staging")
    for c in ("app", "no QoS (ms)", f"{qos} (ms)", "QoS effect on run time"):
        t.add_column(c, justify="right")
    for name, r in rep["apps"].items():
        t.add_row(name, f"{r['no_qos_ms']:.1f}", f"{r['qos_ms']:.1f}",
                  f"{r['qos_effect']:+.1%} ({'faster' if r['qos_effect'] < 0 else 'slower' if r['qos_effect'] > 0 else 'same'})")
    out_console.print(t)
    io = rep["sl_weights_io"]
    t = Table(title=f"Impact of SL weights (MPI on low SL k, I/O on SL {io['sl']}: {io['table']} weight "
                    f"{io['weight']}), 4 MiB")
    for c in ("MPI SL", "MPI weight", "latency (us)", "bandwidth (MB/s)"):
        t.add_column(c, justify="right")
    for r in rep["sl_weights"]:
        # MPI on I/O's own VL shares its turns: not a weight against I/O's
        t.add_row(str(r["mpi_sl"]), f"{r['mpi_weight']}" + (" (I/O's VL)" if r["shares_io_vl"] else ""),
                  f"{r['latency_us']:.0f}", f"{r['bandwidth_mbps']:.0f}")
    out_console.print(t)
    if not rep["sl_weights"]:
        out_console.print("SL weights: no rows: " + rep["sl_weights_none"])
