"""``netsteer reproduce unisonflow``: the UnisonFlow source's experiments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import NetsteerError
from ._console import output_console
from .route import progress_bar, reproduce_app


def register(app: typer.Typer) -> None:
    # reproduce_app is added to the root app by commands.route
    reproduce_app.command("unisonflow")(reproduce_unisonflow)


def reproduce_unisonflow(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.json and Figs. 7-13 here."),
    iterations: int = typer.Option(10_000, "--iterations", help="MPI_Bcast and MPI_Reduce calls per phase (the source: 10,000)."),
    osu_scale: float = typer.Option(1.0, "--osu-scale", help="Fraction of OSU's default iteration counts."),
    sample: str = typer.Option("2s", "--sample", help="Port-counter sampling interval (the source: 2s)."),
) -> None:
    """Routing per primitive (bcast over spine1, reduce over spine2) against ECMP, tag overhead, acceleration."""
    from ..reproduce.unisonflow import PARAMS, STEPS, plot, run

    if iterations < 1:
        raise NetsteerError("must be at least 1", field="--iterations")
    from ..limits import BASE_BYTES, FLOW_BYTES, check

    # each bcast + reduce of 24 ranks is ~170 messages (binomial 23, Rabenseifner with
    # its folding step ~144), each a flow of the DAG: refuse before building it
    check(BASE_BYTES + iterations * 200 * FLOW_BYTES, "the bcast and reduce phases",
          detail=f"{iterations} calls of each, about 200 flows per call pair", field="--iterations")
    if not 0 < osu_scale <= 1:
        raise NetsteerError("must be in (0, 1]", field="--osu-scale")
    from ..units import parse_duration

    try:
        sample_ns = parse_duration(sample)
    except (ValueError, NetsteerError) as exc:
        raise NetsteerError(str(getattr(exc, "reason", exc)), field="--sample") from None
    if sample_ns <= 0:
        raise NetsteerError("must be more than 0", field="--sample")
    if out is not None:
        from ..report.outdir import check_out_path

        check_out_path(out)
    with progress_bar("reproducing unisonflow", STEPS) as adv:
        rep = run(dict(PARAMS, iterations=iterations, sample_interval_ns=sample_ns), progress=adv, osu_scale=osu_scale)
    if out is not None:
        from ..report.outdir import write_result_dir

        def write(d: Path) -> None:
            (d / "report.json").write_text(json.dumps(rep, indent=2))
            plot(rep, d)

        write_result_dir(out, write)
    if as_json:
        slim = json.loads(json.dumps(rep))
        for mode in ("controller", "ecmp"):
            slim[mode].pop("series", None)
        typer.echo(json.dumps(slim))
        return
    con = output_console()
    t = Table(title=f"bytes through each spine per phase ({iterations} calls of 1000 bytes each)")
    for c in ("routing", "phase", "spine1 bytes", "spine2 bytes", "phase time (s)"):
        t.add_column(c, justify="left" if c in ("routing", "phase") else "right")
    for mode in ("controller", "ecmp"):
        r = rep[mode]
        for ph, (a, b) in (("bcast", ("t1_s", "t2_s")), ("reduce", ("t2_s", "t3_s"))):
            t.add_row(mode, ph, f"{r[ph]['spine1_bytes']:,}", f"{r[ph]['spine2_bytes']:,}", f"{r[a]:.3f}-{r[b]:.3f}")
    con.print(t)
    t = Table(title="point-to-point overhead of tags (node01 <-> node02)")
    for c in ("bytes", "latency plain (us)", "latency tagged (us)", "overhead (us)", "overhead, first packet in (us)",
              "bandwidth plain (MB/s)", "bandwidth tagged (MB/s)"):
        t.add_column(c, justify="right")
    for r in rep["overhead"]["sizes"]:
        t.add_row(str(r["bytes"]), f"{r['plain']['latency_us']:.2f}", f"{r['tagged']['latency_us']:.2f}",
                  f"{r['latency_overhead_us']:.3f}", f"{r['latency_overhead_all_us']:.3f}",
                  f"{r['plain']['bandwidth_mbs']:.2f}", f"{r['tagged']['bandwidth_mbs']:.2f}")
    con.print(t)
    t = Table(title="acceleration under background traffic (ms per call)")
    for c in ("primitive", "ranks", "ECMP", "module", "speed-up", "steady ECMP", "steady module", "steady speed-up"):
        t.add_column(c, justify="right" if c != "primitive" else "left")
    for name, r in rep["acceleration"].items():
        t.add_row(name, str(r["ranks"]), f"{r['ecmp']['per_call_ms']:.3f}", f"{r['module']['per_call_ms']:.3f}",
                  f"{r['speedup']:.2f}x", f"{r['ecmp']['steady_per_call_ms']:.3f}",
                  f"{r['module']['steady_per_call_ms']:.3f}", f"{r['steady_speedup']:.2f}x")
    con.print(t)
    from ..reproduce._params import provenance_lines

    for line in provenance_lines(rep["parameters"]):  # which inputs the source gives
        con.print(line, highlight=False, soft_wrap=True)
