"""``netsteer plan circuits``: circuit planning from a rack-to-rack demand matrix.

The matrix file is ``n`` rows of ``n`` numbers (Gbit/s, row = source rack, comma and/or
blank separated); the plan comes out as a table, or as one JSON object with ``--json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from ..errors import NetsteerError
from ._console import output_console

out_console = output_console()  # whole tables when piped

plan_app = typer.Typer(help="Plan a network configuration from demand.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    plan_app.command("circuits")(circuits)
    app.add_typer(plan_app, name="plan")


def circuits(
    matrix: Path = typer.Option(..., "--matrix", "-m", help="Demand matrix CSV: n rows x n numbers, Gbit/s, row = source rack."),
    ocs: int = typer.Option(..., "--ocs", "-k", help="K: circuit switches (one optical uplink per rack on each)."),
    capacity: str = typer.Option(..., "--capacity", "-c", help="Capacity of one circuit, each way, e.g. 10Gbps."),
    hops: int = typer.Option(1, "--hops", help="1: direct circuits only; 2: also relay through one rack."),
    ports: Optional[int] = typer.Option(None, "--ports", help="Ports of each circuit switch (default: as many as racks)."),
    effort: Optional[int] = typer.Option(None, "--effort", help="Local-search kicks (default: by instance size)."),
    fair: bool = typer.Option(False, "--fair", help="Count a pair's m circuits as c*sqrt(m) (single hop): another pair's "
                              "first circuit before a pair's second; served stays in Gbit/s."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Choose the circuits of K circuit switches that serve the most demand (with its VLAN paths)."""
    from ..control.planning import plan_circuits, read_demand_csv
    from ..units import UnitError, parse_bandwidth

    try:
        cap_gbps = parse_bandwidth(capacity) / 1e9
    except UnitError as exc:
        raise NetsteerError(str(exc), field="--capacity") from None
    demand = read_demand_csv(matrix)
    try:
        plan = plan_circuits(demand, ocs, cap_gbps, hops=hops, ports_per_ocs=ports, effort=effort, fair=fair)
    except NetsteerError as exc:
        field = {"ocs": "--ocs", "capacity": "--capacity", "hops": "--hops", "ports_per_ocs": "--ports",
                 "effort": "--effort", "fair": "--fair"}.get(
            exc.field or "", exc.field)
        raise type(exc)(exc.reason, file=str(matrix), field=field) from None
    info = plan.to_json()
    info["racks"] = int(demand.shape[0])
    info["matrix"] = str(matrix)
    if as_json:
        typer.echo(json.dumps(info))
        return
    _print_plan(info)


def _print_plan(info: dict) -> None:
    t = Table(title=f"{info['matrix']}: {info['racks']} racks, K={info['ocs']} circuit switches, "
                    f"{info['capacity_gbps']:g} Gbit/s per circuit, hops={info['hops']}", show_header=False)
    served, bound, total = info["served_gbps"], info["bound_gbps"], info["demand_gbps"]
    t.add_row("circuits", str(len(info["circuits"])))
    t.add_row("served", f"{served:.6g} Gbit/s of {total:.6g} demanded"
              + (f" ({100 * served / total:.1f}%)" if total > 0 else ""))
    t.add_row("upper bound", f"{bound:.6g} Gbit/s" + (f" (served = {100 * served / bound:.1f}% of it)" if bound > 0 else ""))
    t.add_row("VLANs", f"{info['vlans']} ({len(info['paths'])} directed paths)")
    t.add_row("planning time", f"{1e3 * info['wall_s']:.1f} ms")
    out_console.print(t)
    by_ocs: dict[int, list[str]] = {}
    for c in info["circuits"]:
        by_ocs.setdefault(c["ocs"], []).append(f"{c['a']}-{c['b']}")
    ct = Table(title="circuits per switch")
    ct.add_column("ocs", justify="right")
    ct.add_column("count", justify="right")
    ct.add_column("circuits (rack-rack)")
    for o in range(info["ocs"]):
        pairs = by_ocs.get(o, [])
        shown = " ".join(pairs[:16]) + (f" ... (+{len(pairs) - 16})" if len(pairs) > 16 else "")
        ct.add_row(str(o), str(len(pairs)), shown)
    out_console.print(ct)
    for note in info["notes"]:
        out_console.print(f"note: {note}")
