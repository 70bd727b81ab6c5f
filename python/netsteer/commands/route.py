"""``netsteer route``, ``netsteer route-eval`` and ``netsteer reproduce pftree``.

``route`` computes tables for a fabric (ibnetdiscover output, ibsim net file, a
spec) and writes them in OpenSM's LFT dump format, which ``opensm -R file -U``
loads unchanged; every table set is checked first (complete, loop-free,
deadlock-free per VL). ``route-eval`` reads any dump (OpenSM's own too) and
reports link loads, max-min throughput and effective bisection bandwidth.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from ..errors import NetsteerError
from ..topology.partitions import pkey_text
from ._console import output_console

err_console = Console(stderr=True)
out_console = output_console()

reproduce_app = typer.Typer(help="Reproduce a source document's evaluation from the model.", no_args_is_help=True)


@contextmanager
def progress_bar(label: str, total: int, enabled: bool = True):
    """A rich progress bar on stderr (only on a terminal); yields ``advance(n)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not (enabled and err_console.is_terminal):
        yield lambda n=1: None
        return
    prog = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True)
    task = prog.add_task(label, total=max(total, 1))
    with prog:
        yield lambda n=1: prog.advance(task, n)


def load_topology(spec: str):
    """The topology of ``--topology`` (file or inline spec); errors name the file."""
    from ..topology.spec import parse_topo_arg

    return parse_topo_arg(spec)


def scenario_partitions(topology: str) -> Path | None:
    """The partitions file of a scenario given as ``--topology``: its
    ``routing.partitions``, relative to the scenario's directory (as ``run`` reads
    it), or None (no scenario, no partitions in it).

    ``route`` and ``route-eval`` use it when ``--partitions`` is not given, so the
    tables are the ones ``run`` routes for that scenario; ``--partitions`` overrides it.

    Raises
    ------
    NetsteerError
        On ``routing.partitions`` of the scenario, for a file that does not exist.
    """
    from ..inputs import load_json, load_yaml, read_text

    p = Path(topology)
    if p.suffix.lower() not in (".yaml", ".yml", ".json") or not p.is_file():
        return None
    text = read_text(p, file=topology)
    data = load_json(text, file=topology) if p.suffix.lower() == ".json" else load_yaml(text, file=topology)
    routing = data.get("routing") if isinstance(data, dict) and "topology" in data else None
    conf = routing.get("partitions") if isinstance(routing, dict) else None
    if conf is None:
        return None
    if not isinstance(conf, str) or not conf.strip():
        raise NetsteerError(f"expected the path of a partitions.conf, got {conf!r}", file=topology,
                            field="routing.partitions")
    path = Path(conf) if Path(conf).is_absolute() else p.parent / conf
    if not path.is_file():
        raise NetsteerError(f"no such partitions file {str(path)!r}", file=topology, field="routing.partitions")
    return path


def with_guids(topo, topology_file: str | None = None):
    """``topo`` with the GUIDs its LFT dump names: its own, made up where it has none.

    ``route`` writes and ``route-eval`` reads with this one rule
    (:func:`netsteer.topology.ibsim_net.fabric_guids`, what ``netsteer topo --export
    x.net`` writes), so tables written for a generated fabric, a scenario or a JSON
    export read back against the same source. Nothing else changes: names,
    bandwidths and cables are the topology's own.

    Raises
    ------
    NetsteerError
        On ``--topology`` of ``topology_file``, for fabrics an LFT dump cannot
        describe: circuit switches, ports above 255.
    """
    from ..topology.ibsim_net import not_infiniband, with_fabric_guids

    reason = not_infiniband(topo)
    if reason:
        raise NetsteerError(reason, file=topology_file, field="--topology")
    return with_fabric_guids(topo)


# The registered engines whose tables hold one port per destination, as an LFT does
# (ecmp's groups of ports cannot be written); named in --engine's help and refusals.
LFT_ENGINES = ("minhop", "dmodk", "ftree", "pftree", "dor")


def refuse_ecmp_groups(routing, engine: str) -> None:
    """Refuse tables with ECMP groups, before the check and before any write.

    Parameters
    ----------
    routing : Routing
    engine : str
        The ``--engine`` that computed ``routing``.

    Raises
    ------
    NetsteerError
        On ``--engine``, when an entry is a group of ports (``< -1``): an LFT entry
        is one port, and neither the deadlock check nor the dump writer can take one.
        On fabrics where ecmp finds one port per destination its tables pass.
    """
    if (routing.table < -1).any():
        raise NetsteerError(
            f"{engine} gives ECMP groups (several ports for one destination), but an LFT holds "
            f"one port per destination; use an engine that picks one: {', '.join(LFT_ENGINES)}",
            field="--engine")


def route_topology(topo, engine: str, parts, *, topology_file: str | None = None, vls: int = 8):
    """Build the routing, passing partitions to engines that take them."""
    import inspect

    from ..routing import ENGINES, build_routing, check_engine

    check_engine(engine, field="--engine")
    from ..limits import check_routing

    check_routing(topo, file=topology_file, field="--topology")
    params = {}
    sig = inspect.signature(ENGINES[engine]).parameters
    if parts is not None and "partitions" in sig:
        params["partitions"] = parts
    if "vls" in sig:
        params["vls"] = vls
    try:
        r = build_routing(topo, engine, **params)
    except NetsteerError as exc:
        from ..routing.homing import advise

        # the advice names engines this command takes (ecmp routes a dual-homed fabric in a run, not in an LFT)
        raise on_topology(advise(exc, LFT_ENGINES), topology_file) from None
    if parts is not None and not getattr(r, "partitions", None):
        r.partitions = list(parts)
    return r


def choose_lids(topo, sm_node: str | None, topology_file: str):
    """The LIDs the dump is written with, and where they come from.

    The fabric's own (ibnetdiscover output carries them) when it has some; else
    what a fresh OpenSM on ``sm_node`` (default: the file's first node, where
    ibsim attaches the SM) would assign.
    """
    from ..drivers.opensm.lids import fabric_lids, opensm_lids

    try:
        lids = fabric_lids(topo)
    except ValueError as exc:
        raise NetsteerError(str(exc), file=topology_file, field="lid") from None
    if lids is not None:
        if sm_node is not None:
            raise NetsteerError("the topology carries the fabric's LIDs (ibnetdiscover output); "
                                "--sm-node only places the SM on fabrics without LIDs", field="--sm-node")
        return lids, "fabric (as discovered)"
    if sm_node is None:
        node = 0
    else:
        try:
            node = topo.node(sm_node)
        except (KeyError, ValueError):
            raise NetsteerError(f"no node named {sm_node!r} in {topo.name}", field="--sm-node") from None
    try:
        lids = opensm_lids(topo, sm_node=node)
    except ValueError as exc:
        raise NetsteerError(str(exc), field="--sm-node" if sm_node else None, file=topology_file) from None
    return lids, f"assigned as OpenSM would, SM on {topo.node_names[node]}"


def on_topology(exc: NetsteerError, topology_file: str | None, what: str = "") -> NetsteerError:
    """``exc`` located at the ``--topology`` file (a routing that cannot be built or
    fails its check on that fabric), unless it names a place of its own (a
    partitions file's line, another option). ``what`` prefixes the reason.

    >>> on_topology(NetsteerError("switch s1_0 has no route to h4"), "e1.json", "dmodk's tables: ").message()
    "e1.json: --topology: dmodk's tables: switch s1_0 has no route to h4"
    """
    if exc.file or exc.field:
        return exc.located(topology_file)
    return type(exc)(what + exc.reason, file=topology_file, field="--topology")


def lft_as_written(topo, r, lids, check: bool, topology_file: str, engine: str):
    """The tables the dump holds, the other CA ports' entries, and a note (or "").

    An LFT entry is for one port's LID, and a port drops packets for another's. On a
    host with several cabled ports an engine's route may end at any of them: those
    entries of the host's endpoint LID are written as min-hop routes to its port
    (:func:`~netsteer.drivers.opensm.lft_dump.lid_tables`), checked like the engine's
    (unless ``--no-check``), and the note says how many, since ``route-eval`` of the
    dump (and OpenSM running it) then differs from the engine's own routing.
    """
    import numpy as np

    from ..drivers.opensm.lft_dump import lid_tables
    from ..routing.table import Routing

    sw_rows, port_lft, changed = lid_tables(topo, lids, r)
    if not changed.any():
        return r, port_lft, ""
    written = Routing(topo, sw_rows, rows=np.asarray(topo.switches, dtype=np.int64), engine=r.engine)
    if check:
        # each route ends at its LID's port, or (where no switch path reaches that port:
        # another rail) has no entry, as OpenSM leaves it; then deadlock freedom per VL
        from ..drivers.opensm.guids import endpoint_port
        from ..drivers.opensm.lft_dump import endpoint_arrivals
        from ..routing.deadlock import check_deadlock

        ep = np.array([endpoint_port(topo, int(v)) for v in topo.hosts])
        arrive = endpoint_arrivals(topo, sw_rows)
        bad = (arrive != -1) & (arrive != ep[None, :])
        try:
            if bad.any():
                k, h = (int(x) for x in np.argwhere(bad)[0])
                raise NetsteerError(f"switch {topo.node_names[int(topo.switches[k])]}'s route to "
                                    f"{topo.node_names[int(topo.hosts[h])]} port {ep[h]} does not end there")
            check_deadlock(written)
        except NetsteerError as exc:
            raise on_topology(exc, topology_file, f"{engine}'s tables as written for LIDs: ") from None
    hosts = np.flatnonzero(changed.any(axis=0))
    names = ", ".join(topo.node_names[int(topo.hosts[h])] for h in hosts[:3]) + (", ..." if len(hosts) > 3 else "")
    note = (f"{int(changed.sum())} of {engine}'s entries for {len(hosts)} multi-port host(s) ({names}) end at "
            "another port of the host than the one whose LID they are for (an LFT entry is one port's, and a "
            "port drops packets for another's): they are written as min-hop routes to the LID's port, so the "
            "dump (route-eval, OpenSM) does not route as netsteer run does")
    return written, port_lft, note


def check_all(routing, advance=lambda n=1: None) -> None:
    """Completeness and loops (:meth:`Routing.check`), then deadlock freedom per VL."""
    from ..routing.deadlock import check_deadlock

    routing.check()
    check_deadlock(routing, progress=advance)


def register(app: typer.Typer) -> None:
    app.command("route")(route)
    app.command("route-eval")(route_eval)
    reproduce_app.command("pftree")(reproduce_pftree)
    app.add_typer(reproduce_app, name="reproduce")


def route(
    topology: str = typer.Option(..., "--topology", "-t", help="ibnetdiscover output, ibsim net file, spec file or inline spec."),
    engine: str = typer.Option(
        ..., "--engine", "-e",
        help=f"{', '.join(LFT_ENGINES[:-1])} or {LFT_ENGINES[-1]}. An LFT holds one port per "
             "destination, so ecmp's groups of ports cannot be written."),
    out: Path = typer.Option(..., "--out", "-o", help="LFT dump to write (opensm -R file -U loads it)."),
    partitions: Optional[Path] = typer.Option(None, "--partitions", "-p", help="OpenSM partitions.conf."),
    vls: Optional[int] = typer.Option(
        None, "--vls", help="Data VLs pftree may give partitions that share links (pftree only; default 8)."),
    sl_out: Optional[Path] = typer.Option(None, "--sl-out", help="Write partitions.conf with pftree's sl= per partition."),
    qos_out: Optional[Path] = typer.Option(
        None, "--qos-out", help="Write opensm.conf QoS lines (SL i on VL i) for pftree's lanes."),
    sm_node: Optional[str] = typer.Option(
        None, "--sm-node",
        help="Node the SM runs on, for fabrics without LIDs (generated, ibsim net): LIDs are then "
             "assigned as a fresh OpenSM there would. Default: the first node of the file."),
    check: bool = typer.Option(True, "--check/--no-check", help="Check completeness, loops and deadlock first."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Route a fabric and write OpenSM's LFT dump format."""
    import time

    from ..drivers.opensm.lft_dump import format_lft_dump
    from ..drivers.opensm.partitions import format_partitions_conf, read_partitions_conf
    from ..report.atomic import check_distinct, check_writable, write_all

    if vls is not None and engine != "pftree":
        # the other engines put every partition on VL 0: the option would be dropped silently
        raise NetsteerError(f"only pftree gives partitions VLs; {engine} takes no --vls", field="--vls")
    vls = 8 if vls is None else vls
    if not 1 <= vls <= 15:
        raise NetsteerError(f"must be 1..15 (InfiniBand has at most 15 data VLs), got {vls}", field="--vls")
    # every output is checked before any work, and every refusal comes before any write
    # two outputs on one file: the second would replace the first silently. --sl-out
    # may name the --partitions file: that is read before anything is written
    check_distinct([(out, "--out"), (sl_out, "--sl-out"), (qos_out, "--qos-out")])
    check_writable(out, field="--out")
    for path, flag in ((sl_out, "--sl-out"), (qos_out, "--qos-out")):
        if path is not None:
            check_writable(path, field=flag)
    given = partitions
    if partitions is None:  # a scenario's own, as run routes it
        partitions = scenario_partitions(topology)
    if sl_out is not None and partitions is None:
        raise NetsteerError("--sl-out needs --partitions (and an engine that assigns SLs, pftree)",
                            field="--sl-out")
    topo = with_guids(load_topology(topology), topology)
    parts = read_partitions_conf(partitions, topo) if partitions is not None else None
    if engine == "pftree" and parts is not None:
        from ..routing.pftree import MAX_PARTITIONS
        from ..topology.partitions import isolating

        n_iso = len(isolating(parts))
        if n_iso > MAX_PARTITIONS:
            raise NetsteerError(f"pftree isolates at most {MAX_PARTITIONS} partitions (the default 0x7fff one "
                                f"not counted), this file has {n_iso}", file=str(partitions), field="--partitions")
    t0 = time.perf_counter()
    r = route_topology(topo, engine, parts, topology_file=topology, vls=vls)
    route_s = time.perf_counter() - t0
    refuse_ecmp_groups(r, engine)
    t0 = time.perf_counter()
    if check:
        with progress_bar("checking", topo.n_hosts) as adv:
            try:
                check_all(r, lambda n=1: adv(n))
            except NetsteerError as exc:
                raise on_topology(exc, topology, f"{engine}'s tables: ") from None
    check_s = time.perf_counter() - t0
    lids, lid_source = choose_lids(topo, sm_node, topology)
    written, port_lft, moved = lft_as_written(topo, r, lids, check, topology, engine)
    text = format_lft_dump(topo, written, lids, port_lft=port_lft)
    sl = getattr(r, "partition_sl", None)
    if sl_out is not None and (parts is None or sl is None):
        raise NetsteerError(f"--sl-out needs an engine that assigns SLs (pftree), not {engine}",
                            field="--sl-out")
    if qos_out is not None and sl is None:
        # the lines map SL i to VL i for the lanes the engine gave the partitions; an
        # engine that assigns none leaves every partition on SL 0, so they would do nothing
        raise NetsteerError(f"--qos-out maps the SLs an engine assigns to partitions onto VLs; {engine} "
                            "assigns none (use pftree)", field="--qos-out")
    sl_text = None
    if sl_out is not None:
        from ..drivers.opensm.qos import partitions_with_sl

        # formatted before anything is written: a refusal leaves no partial output
        try:
            sl_text = format_partitions_conf(partitions_with_sl(parts, sl), topo)
        except ValueError as exc:
            raise NetsteerError(f"cannot be written back for --sl-out: {exc}", file=str(partitions)) from None
    outputs = [(out, "--out", text)]
    if sl_text is not None:
        outputs.append((sl_out, "--sl-out", sl_text))
    if qos_out is not None:
        from ..drivers.opensm.qos import opensm_qos_conf

        outputs.append((qos_out, "--qos-out", opensm_qos_conf(getattr(r, "vls", vls))))
    # all or none: a file that cannot be written leaves the others as they were
    files = write_all(outputs)
    notes = list(getattr(r, "notes", None) or [])  # the engine's (pftree: common partitions, sl= replaced)
    if given is None and partitions is not None:
        notes.insert(0, f"partitions from the scenario's routing.partitions ({partitions}), as run routes it; "
                        "--partitions gives others")
    if moved:
        notes.append(moved)
    if getattr(r, "vls", 0) > 8:
        used = sorted({int(v) for v in (getattr(r, "partition_vl", None) or {}).values()})
        notes.append(f"--vls {r.vls}: pftree may put partitions on VLs up to {r.vls - 1}"
                     + (f" (it used {', '.join(map(str, used))})" if used else "")
                     + (f" and {qos_out} says qos_max_vls {r.vls}" if qos_out is not None else "")
                     + ", but ports with VLCap VL0-7 (ibsim's, and most HCAs and switches) hold VLs 0-7 only: "
                     "OpenSM runs them with at most 8 data VLs, so lanes 8 and up are not there")
    info = {
        "engine": r.engine,
        "topology": topo.name,
        "hosts": topo.n_hosts,
        "switches": topo.n_switches,
        "checked": check,
        "route_s": round(route_s, 3),
        "check_s": round(check_s, 3),
        "lids": lid_source,
        "partition_sl": {pkey_text(k): v for k, v in (sl or {}).items()},
        "files": files,
        "notes": notes,
    }
    if as_json:
        typer.echo(json.dumps(info))
        return
    t = Table(title=f"{r.engine} on {topo.name}", show_header=False)
    for k, text in route_rows(info):
        t.add_row(k, text)
    out_console.print(t)
    for n in notes:
        err_console.print("note: " + n, soft_wrap=True, highlight=False)


def route_rows(info: dict) -> list[tuple[str, str]]:
    """``route``'s ``--json`` figures as ``(name, text)`` rows for people: times with
    their unit, yes/no, partitions' SLs and files spelled out, no Python reprs.

    >>> route_rows({"checked": True, "route_s": 0.0221, "partition_sl": {"0x0010": 0, "0x0011": 1},
    ...             "files": ["a.dump", "p.conf"], "notes": []})
    [('checked', 'yes'), ('route_s', '0.022 s'), ('partition_sl', '0x0010: SL 0, 0x0011: SL 1'), ('files', 'a.dump, p.conf')]
    """
    rows = []
    for k, v in info.items():
        if k == "notes":
            continue
        if k == "checked":
            text = "yes" if v else "no (--no-check)"
        elif k.endswith("_s"):
            text = f"{v:.3f} s"
        elif k == "partition_sl":
            text = ", ".join(f"{pkey}: SL {sl}" for pkey, sl in v.items()) or "none (no SLs assigned)"
        elif k == "files":
            text = ", ".join(v) or "none"
        else:
            text = str(v)
        rows.append((k, text))
    return rows


#: the unit of each figure route-eval's text prints (the JSON keys' meaning, docs/cli.md)
ROUTE_EVAL_UNITS = {
    "max_link_load": "flows per switch-to-switch channel",
    "mean_link_load": "flows per switch-to-switch channel",
    "std_link_load": "flows per switch-to-switch channel",
    "throughput": "fraction of the source's link rate, mean per flow",
    "effective_bisection_bandwidth": "fraction of the link rate, mean over random bisections",
}


def route_eval(
    topology: str = typer.Option(..., "--topology", "-t", help="The fabric the dump is for."),
    lfts: Path = typer.Option(..., "--lfts", "-l", help="LFT dump (opensm-lfts.dump, netsteer route, ibroute)."),
    pattern: str = typer.Option("bisect", "--pattern", help="all-to-all, shift, bisect, random-ring, gather, scatter, partition-local."),
    partitions: Optional[Path] = typer.Option(None, "--partitions", "-p", help="OpenSM partitions.conf."),
    seeds: int = typer.Option(10, "--seeds", help="Phases of random patterns and bisections for the EBB."),
    vl_model: str = typer.Option(
        "shared", "--vl-model",
        help="shared (plain max-min) or split (VLs share links evenly). A partition's VL is its sl= "
             "in --partitions (SL2VL the identity, as pftree assumes; no sl=: VL 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
) -> None:
    """Evaluate a table set: link loads, throughput, effective bisection bandwidth."""
    from ..drivers.opensm.lft_dump import read_lft_tables
    from ..drivers.opensm.partitions import read_partitions_conf
    from ..routing.evaluate import PATTERNS, evaluate
    from ..routing.table import Routing

    if pattern not in PATTERNS:
        raise NetsteerError(f"unknown pattern {pattern!r}; use one of {', '.join(PATTERNS)}", field="--pattern")
    if not 1 <= seeds <= 10_000:
        raise NetsteerError(f"must be 1..10000, got {seeds}", field="--seeds")
    if vl_model not in ("shared", "split"):
        raise NetsteerError(f"must be shared or split, got {vl_model!r}", field="--vl-model")
    given = partitions
    if partitions is None:  # a scenario's own, as run routes it
        partitions = scenario_partitions(topology)
    if pattern == "partition-local" and partitions is None:
        raise NetsteerError("the partition-local pattern needs --partitions", field="--pattern")
    if vl_model == "split" and partitions is None:
        # split shares links between the partitions' VLs: without partitions every flow
        # is on VL 0 and it is shared, so the option would be dropped silently
        raise NetsteerError("split puts each partition on the VL of its sl=; it needs --partitions (without, "
                            "every flow is on VL 0: shared)", field="--vl-model")
    # route's tables name a fabric without GUIDs (spec, scenario) by the
    # GUIDs with_guids gives it: read them with the same ones
    topo = with_guids(load_topology(topology), topology)
    from ..limits import FLOW_BYTES, check

    n = topo.n_hosts
    flows = n * (n - 1) if pattern in ("all-to-all", "partition-local") else n
    check(flows * FLOW_BYTES, f"the {pattern} pattern", detail=f"{flows:,} flows on {n:,} hosts", field="--pattern")
    tables = read_lft_tables(lfts, topo)
    # an LFT routes to each host's endpoint port and hosts send from it: the cables of
    # their other ports carry nothing (so a switch that reaches a host only through
    # one, on another rail, needs no entry)
    from ..drivers.opensm.lft_dump import endpoint_down_links

    r = Routing(topo, tables.hosts, engine=f"file:{lfts.name}", down_links=endpoint_down_links(topo))
    try:
        r.check()
    except NetsteerError as exc:
        raise NetsteerError(exc.reason, file=str(lfts), field="--lfts") from None
    parts = read_partitions_conf(partitions, topo) if partitions is not None else None
    if parts is not None:
        from ..drivers.opensm.qos import partition_vls

        # a dump has no VLs: each partition's lane is its sl= (SL2VL the identity, as
        # pftree assigns them and route --sl-out writes them); without this the split
        # model saw every partition on VL 0
        r.partition_vl = partition_vls(parts)
    phases = (1 if pattern in ("all-to-all", "partition-local") else seeds) + seeds
    with progress_bar("evaluating", phases) as adv:
        rep = evaluate(r, pattern, partitions=parts, seeds=seeds, vl_model=vl_model, progress=adv)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    if given is None and partitions is not None:
        err_console.print(f"note: partitions from the scenario's routing.partitions ({partitions}); "
                          "--partitions gives others", soft_wrap=True, highlight=False)
    t = Table(title=f"{pattern} on {lfts.name} ({rep['flows']} flows, {rep['phases']} phases)")
    for c in ("", "value", "unit"):
        t.add_column(c, justify="right" if c == "value" else "left")
    for k in ("max_link_load", "mean_link_load", "std_link_load", "throughput", "effective_bisection_bandwidth"):
        v = rep[k]
        t.add_row(k, "-" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v), ROUTE_EVAL_UNITS[k])
    out_console.print(t)
    if rep["partitions"]:
        pt = Table(title="partitions")
        for c in ("partition", "hosts", "flows", "throughput (of link rate)", "links", "shared links", "VL"):
            pt.add_column(c, justify="right")
        for name, p in rep["partitions"].items():
            thr = "-" if p["throughput"] is None else f"{p['throughput']:.4f}"
            pt.add_row(name, str(p["hosts"]), str(p["flows"]), thr, str(p["links"]), str(p["shared_links"]), str(p["vl"]))
        out_console.print(pt)


def reproduce_pftree(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    seeds: int = typer.Option(4, "--seeds", help="Random partition placements (and pattern seeds) per case."),
    quick: bool = typer.Option(False, "--quick", help="Topologies A-D only (no 256-node trees)."),
    fidelity: str = typer.Option("flow", "--fidelity", help="flow (max-min) or packet (victims vs aggressor, A-D; "
                                                            "--quick: A-B)."),
) -> None:
    """pFTree's evaluation (topologies A-F, victims vs an aggressor; random ring and EBB)."""
    from ..reproduce.pftree import print_report, run

    if not 1 <= seeds <= 1000:
        raise NetsteerError(f"must be 1..1000, got {seeds}", field="--seeds")
    if fidelity not in ("flow", "packet"):
        raise NetsteerError(f"unknown fidelity {fidelity!r}; use flow or packet", field="--fidelity")
    if fidelity == "packet":
        from ..reproduce.pftree_packet import print_report, run  # noqa: F811
    with progress_bar("reproducing pftree", 1) as adv:
        rep = run(seeds=seeds, quick=quick, progress=adv)
    if as_json:
        typer.echo(json.dumps(rep))
        return
    print_report(rep, out_console)
