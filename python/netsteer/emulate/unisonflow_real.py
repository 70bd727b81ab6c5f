"""The UnisonFlow source's experiment with real MPICH traffic on the testbed.

The source's fabric (2 spines, 4 leaves, 6 nodes per leaf, 4 parallel cables per
leaf-spine link) is built as namespaces and Open vSwitch bridges
(:mod:`.testbed`); its bcast-then-reduce program (``programs/bcast_reduce.c``,
unmodified, compiled with MPICH) runs with one rank per node (:mod:`.mpi`); the
spines' port counters are sampled while it runs and split at the phase
boundaries the PMPI library recorded on rank 0 (its peer table), giving the
bytes entering each spine per phase.

Routing: ``ecmp`` (select groups, untagged, :mod:`.fabric_routes`) or ``pinned``:
hosts tag every packet (PMPI library + eBPF writer) and the switches hold the
``pin`` module's decisions for the source's controller (bcast via spine1, reduce
via spine2) installed ahead of traffic with ECMP for other tags and the true-MAC
rewrite at the last switch (:func:`.fabric_routes.tag_tables`). Or
``controller``: the reactive path (:mod:`.reactive_tags`): the switches hold
the default routing only (ECMP, for tags on their destination rank), and frames
of a tag nobody has decided also tell the os-ken application; the interconnect
controller's modules (the same ``pin`` decisions) answer with rules, which move
the tag onto its module's path.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from typing import Any

from ..drivers.openflow.switch import OfctlSwitch
from ..topology.pgft import pgft
from ..unisonflow.tags import PRIMITIVE_NAMES
from .counters import Sampler, sampling
from .fabric_routes import ecmp_tables, notify_tables, tag_tables
from .mpi import MpiHosts, check_management_net, compile_program, phases, read_peer_tables
from .reactive_tags import ReactiveTags
from .testbed import Testbed

#: the source's controller: bcast (code 2) through spine1, reduce (code 3) through spine2
PINS = {2: "s2_0", 3: "s2_1"}
ROUTINGS = ("ecmp", "pinned", "controller")
#: the source's controller as module specs (the reactive path)
MODULES = [{"module": "pin", "primitive": "bcast", "via": PINS[2]},
           {"module": "pin", "primitive": "reduce", "via": PINS[3]}]


def source_fabric():
    """The source's fat-tree: 24 nodes, 4 leaves of 6, 2 spines, 4 cables per leaf-spine link, 1 Gbit/s."""
    return pgft(2, [6, 4], [1, 2], [1, 4], link_bandwidth=1e9, link_latency_ns=1000)


@contextlib.contextmanager
def _reactive(tb, topo, routing: str, modules):
    """The os-ken application with the interconnect controller behind it
    (``controller`` routing); ``None`` otherwise."""
    if routing != "controller":
        yield None
        return
    from ..unisonflow.controller import InterconnectController
    from ..unisonflow.fabric import Fabric
    from ..unisonflow.modules import JobView
    from .run import open_switches

    ctl = InterconnectController(Fabric(topo), {0: (JobView(0, {0: list(range(topo.n_hosts))}), modules)})
    with open_switches(tb, "osken") as switches, ReactiveTags(next(iter(switches.values())).ctl, switches, ctl) as r:
        yield r


def run(iterations: int = 300, nbytes: int = 1000, routing: str = "ecmp", progress=lambda m: None,
        modules: list[dict] | None = None, tagger: str = "ebpf", nice: int = 19) -> dict[str, Any]:
    """Run the program on the source's fabric; returns per phase the bytes entering
    each spine (``spine1_bytes``, ``spine2_bytes``), the phase times and the peer
    table's summary. ``tagger``: the hosts' tag writer (:class:`.mpi.MpiHosts`);
    ``ovs`` and ``auto`` build every host its own bridge. ``nice``: the ranks'
    niceness (:class:`.mpi.MpiHosts`): 24 ranks that poll while they wait would
    otherwise take the CPU from the switches, the samplers and the controller,
    whose rules then land seconds into a phase on a loaded machine."""
    if routing not in ROUTINGS:
        from ..errors import NetsteerError
        raise NetsteerError(f"routing {routing!r} is not available on the testbed; there is {', '.join(ROUTINGS)}",
                            field="routing")
    topo = source_fabric()
    modules = MODULES if modules is None else modules
    with tempfile.TemporaryDirectory(prefix="netsteer-uf-") as d:
        exe = compile_program("bcast_reduce", d)
        check_management_net()  # before the testbed: a busy or stale management net refuses the run
        with Testbed(topo, progress=progress, host_bridges=tagger != "ebpf") as tb, \
                _reactive(tb, topo, routing, modules) as reactive:
            ranks = list(range(topo.n_hosts))
            tabs = (tag_tables(topo, ranks, PINS) if routing == "pinned" else
                    notify_tables(topo, ranks) if reactive else ecmp_tables(topo))
            sw = {s: OfctlSwitch(tb.bridges[s]) for s in tabs}
            for s, tab in tabs.items():
                sw[s].replace(tab.flow_lines(), tab.group_lines())
            spines = {"spine1": sw[topo.node("s2_0")], "spine2": sw[topo.node("s2_1")]}
            with MpiHosts(tb, tags=routing != "ecmp", tagger=tagger, nice=nice) as m:
                # bytes entering each spine (from the switches' own port counters),
                # each spine sampled by its own thread: one stamp per read
                samplers = {n: Sampler(lambda n=n, s=s: {n: sum(rx for rx, _ in s.port_bytes().values())})
                            for n, s in spines.items()}
                with sampling(samplers.values()):
                    t0 = time.monotonic()
                    r = m.run(str(exe), [str(iterations), str(nbytes)], list(range(topo.n_hosts)))
                wall = time.monotonic() - t0
                tables = read_peer_tables(m.tag_dir)
                taggers = m.tagger_report()
    out: dict[str, Any] = {"routing": routing, "iterations": iterations, "bytes": nbytes, "wall_s": wall,
                           "ranks": len(tables), "scale": tb.scale, "program_output": r.stdout.strip().splitlines()}
    first = min(x.samples[0][0] for x in samplers.values())
    for code, a, b in phases(tables[0]):
        name = PRIMITIVE_NAMES.get(code, str(code))
        if name not in ("bcast", "reduce"):
            continue
        out[name] = {"start_s": (a - first) * 1e-9, "end_s": (b - first) * 1e-9,
                     **{f"{k}_bytes": int(round(x.at(b, k) - x.at(a, k))) for k, x in samplers.items()},
                     "samples": min(x.within(a, b) for x in samplers.values())}
    out["total"] = {f"{k}_bytes": x.samples[-1][1][k] - x.samples[0][1][k] for k, x in samplers.items()}
    out["testbed"] = tb.prefix
    if routing != "ecmp":
        agent = [t["agent"] for t in tables.values() if "agent" in t]
        out["tagger"] = {**taggers, "agent_ms": sum(a["waited_ns"] for a in agent) * 1e-6,
                         "agent_timeouts": sum(a["timeouts"] for a in agent)}
    if reactive is not None:
        out["controller"] = {**reactive.report(), "unisonflow": reactive.controller.report()}
    out["simulated"] = predict(iterations, nbytes, routing)
    out["peer_table"] = {"ranks": len(tables), "peers_of_rank0": len(tables[0]["peers"]),
                         "primitive_changes_rank0": len(tables[0]["prims"]),
                         # changes of primitive that waited for the previous one's unsent bytes
                         "drains": sum(t["drain"]["changes"] for t in tables.values()),
                         "drain_ms": sum(t["drain"]["waited_ns"] for t in tables.values()) * 1e-6,
                         "drain_timeouts": sum(t["drain"]["timeouts"] for t in tables.values())}
    return out


def predict(iterations: int, nbytes: int, routing: str = "ecmp") -> dict[str, Any]:
    """The simulator's bytes per spine per phase for the same program and fabric
    (:func:`netsteer.reproduce.unisonflow.phases`: MPI payload bytes; the testbed's
    counters also count Ethernet/IP/TCP and UCX headers and TCP acknowledgements)."""
    from ..reproduce.unisonflow import PARAMS, phases as sim_phases

    r = sim_phases({**PARAMS, "iterations": iterations, "nbytes": nbytes})["ecmp" if routing == "ecmp" else "controller"]
    return {ph: {k: r[ph][k] for k in ("spine1_bytes", "spine2_bytes")} for ph in ("bcast", "reduce")}


def compare(rep: dict) -> dict[str, Any]:
    """Per phase: emulated bytes through both spines / simulated (header overhead
    and acknowledgements make it above 1) and each spine's share, both ways."""
    out = {}
    for ph in ("bcast", "reduce"):
        e, m = rep.get(ph), rep["simulated"][ph]
        if not e:
            continue
        et, mt = e["spine1_bytes"] + e["spine2_bytes"], m["spine1_bytes"] + m["spine2_bytes"]
        out[ph] = {"bytes_ratio": et / mt if mt else None,
                   "spine1_share": et and e["spine1_bytes"] / et, "simulated_spine1_share": mt and m["spine1_bytes"] / mt}
    return out


__all__ = ["compare", "predict", "run", "source_fabric"]
