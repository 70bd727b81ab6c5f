"""Size limits: what a command may build is estimated before it is built.

One knob, the memory limit, bounds everything a command builds from its input
(topology, routing tables, flows, counter samples, parsed YAML). It defaults to
:data:`DEFAULT_MAX_MEMORY` and is raised with ``netsteer --max-memory 16GiB ...`` or
the environment variable ``NETSTEER_MAX_MEMORY``. An input whose estimate exceeds the
limit is refused with the estimate (a :class:`~netsteer.errors.LimitError`, exit code
2) before anything large is allocated.

The per-item costs below were measured on CPython 3.11 with numpy (peak RSS over
the baseline; see ``tests/robustness``), and are rounded up.

Examples
--------
>>> lim = Limits(max_memory=2**30)
>>> lim.max_yaml_nodes, lim.max_flows(0) > 10**6
(2147483, True)
>>> check(3 * 2**30, "the topology", detail="10 hosts", limits=lim, file="s.yaml", field="topology")
Traceback (most recent call last):
...
netsteer.errors.LimitError: s.yaml: topology: the topology would need about 3 GiB (10 hosts), more than the memory limit of 1 GiB; raise it with NETSTEER_MAX_MEMORY=SIZE, netsteer --max-memory SIZE COMMAND (before the command) or, in Python, netsteer.limits.set_max_memory(bytes)
>>> check(950 * 2**20, "the topology", limits=lim)
Traceback (most recent call last):
...
netsteer.errors.LimitError: the topology would need about 950 MiB, more than the 924 MiB the memory limit of 1 GiB leaves beside the interpreter and libraries; raise it with NETSTEER_MAX_MEMORY=SIZE, netsteer --max-memory SIZE COMMAND (before the command) or, in Python, netsteer.limits.set_max_memory(bytes)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from math import prod

from .errors import LimitError, NetsteerError

DEFAULT_MAX_MEMORY = 4 * 2**30
ENV = "NETSTEER_MAX_MEMORY"


def raise_hint() -> str:
    """How to raise the memory limit, right wherever the limit is met: one message for
    the command line and Python alike (a scenario's refusal is the same line in both).
    On the command line ``--max-memory`` is global (``netsteer --max-memory SIZE sweep
    ...``: after the subcommand it is an unknown option); Python has no command line.

    >>> raise_hint()
    'raise it with NETSTEER_MAX_MEMORY=SIZE, netsteer --max-memory SIZE COMMAND (before the command) or, in Python, netsteer.limits.set_max_memory(bytes)'
    """
    return (f"raise it with {ENV}=SIZE, netsteer --max-memory SIZE COMMAND (before the command) or, in Python, "
            "netsteer.limits.set_max_memory(bytes)")


#: Estimated bytes per item (measured, rounded up).
NODE_BYTES = 250  # names, kinds, indexes; plus 8 per port slot (the dense port table)
PORT_SLOT_BYTES = 8
LINK_BYTES = 400
ROUTE_ENTRY_BYTES = 12  # int32 table entries, with the temporaries engines make
TABLE_ENTRY_BYTES = 4  # int32 table entries, built
FLOW_BYTES = 500  # DAG columns, paths, engine state and results, per flow
#: an MPI job's record of one executed step (iteration x step), streamed or as a DAG: the
#: engine's span, its columns and the report's span object (measured 450-540 streamed, 210 DAG)
SPAN_BYTES = 600
SAMPLE_VALUE_BYTES = 160  # engine buffer, numpy copy, and the Parquet table of one (sample, channel)
YAML_NODE_BYTES = 500  # a parsed and validated YAML value
MAX_INPUT_FILE = 256 * 2**20  # input files larger than this (or the memory limit / 8) are refused
BASE_BYTES = 100 * 2**20  # the interpreter, numpy, pyarrow, matplotlib
RESULT_CELL_BYTES = 120  # a cell of a sweep's results.parquet, read into rows (measured ~100)
WORKER_BYTES = 128 * 2**20  # a local sweep worker process with netsteer imported (75 MiB measured), before its point


@dataclass(frozen=True)
class Limits:
    """Limits derived from one memory limit (bytes)."""

    max_memory: int

    @property
    def usable(self) -> int:
        """What inputs may use, beyond the interpreter and libraries."""
        return max(self.max_memory - BASE_BYTES, self.max_memory // 4)

    @property
    def max_yaml_nodes(self) -> int:
        """Values (scalars, lists, mappings) a YAML file may expand to, aliases counted each time."""
        return self.max_memory // YAML_NODE_BYTES

    @property
    def max_file_bytes(self) -> int:
        return min(MAX_INPUT_FILE, self.max_memory // 8)

    @property
    def max_sample_values(self) -> int:
        """Counter samples times channels the engine may hold."""
        return max(self.usable // SAMPLE_VALUE_BYTES, 1)

    def max_flows(self, used: int) -> int:
        """Flows that fit beside ``used`` bytes already committed."""
        return max((self.usable - used) // FLOW_BYTES, 0)


_current: Limits | None = None


def parse_memory(value: str, *, field: str) -> int:
    """Bytes from ``16GiB`` (a size with a unit, or plain bytes)."""
    from .units import UnitError, parse_size

    try:
        n = parse_size(value.strip() if isinstance(value, str) else value)
    except (UnitError, ValueError, OverflowError) as exc:
        raise NetsteerError(f"expected a memory size such as 16GiB: {exc}", field=field) from None
    if n < 64 * 2**20:
        raise NetsteerError(f"the memory limit must be at least 64MiB, got {value!r}", field=field)
    return n


def current() -> Limits:
    """The limits in force: set by :func:`set_max_memory`, else ``NETSTEER_MAX_MEMORY``, else the default."""
    global _current
    if _current is None:
        env = os.environ.get(ENV)
        set_max_memory(parse_memory(env, field=ENV) if env else DEFAULT_MAX_MEMORY)
    assert _current is not None
    return _current


def reset() -> Limits:
    """Back to ``NETSTEER_MAX_MEMORY`` or the default (each command starts here)."""
    global _current
    _current = None
    return current()


def set_max_memory(n: int) -> Limits:
    """Set the memory limit for this process (also the engine's counter-sample cap)."""
    global _current
    _current = Limits(max_memory=int(n))
    try:
        from . import _core

        _core.set_sample_limit(_current.max_sample_values)
    except (ImportError, AttributeError):  # an engine built before the cap existed
        pass
    return _current


def fmt_bytes(n: float) -> str:
    """``3 GiB``, ``512 MiB``.

    >>> fmt_bytes(3 * 2**30), fmt_bytes(1.5 * 2**20), fmt_bytes(10**30)
    ('3 GiB', '1.5 MiB', '8.7e+11 EiB')
    """
    for unit, scale in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            v = n / scale
            return f"{v:.3g} {unit}" if v < 1000 or unit != "EiB" else f"{v:.2g} {unit}"
    return f"{int(n)} B"


def available_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo``, or None where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _own_bytes() -> int:
    """What this process holds beyond the interpreter and libraries (resident, less
    :data:`BASE_BYTES`): an estimate counts what is built already too."""
    try:
        with open("/proc/self/statm") as f:
            resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
    return max(resident - BASE_BYTES, 0)


def check(need: float, what: str, *, detail: str = "", limits: Limits | None = None,
          file: str | None = None, field: str | None = None, available: bool = False) -> None:
    """Refuse with the estimate when ``need`` bytes exceed the memory limit; with
    ``available``, also when they exceed the memory the machine has for it
    (``MemAvailable``, plus what this process holds already: ``need`` counts it), so
    that a limit raised past the machine (``--max-memory 200GiB`` on 32 GiB) does not
    let a build run until it is killed.

    >>> import netsteer.limits as lim_
    >>> real, lim_.available_bytes = lim_.available_bytes, lambda: 2**30
    >>> try:
    ...     check(2 * 2**30, "the topology", limits=Limits(max_memory=2**40), available=True)
    ... finally:
    ...     lim_.available_bytes = real
    Traceback (most recent call last):
    ...
    netsteer.errors.LimitError: the topology would need about 2 GiB, more than the memory available (MemAvailable: 1 GiB); free memory first, or give a smaller input
    """
    lim = limits or current()
    if available and need <= lim.usable:
        free = available_bytes()
        if free is not None and need > free + _own_bytes():
            extra = f" ({detail})" if detail else ""
            raise LimitError(f"{what} would need about {fmt_bytes(need)}{extra}, more than the memory available "
                             f"(MemAvailable: {fmt_bytes(free)}); free memory first, or give a smaller input",
                             file=file, field=field)
    if need > lim.usable:
        extra = f" ({detail})" if detail else ""
        # under the limit itself, but not beside the interpreter and libraries: say so
        room = (f"the memory limit of {fmt_bytes(lim.max_memory)}" if need > lim.max_memory else
                f"the {fmt_bytes(lim.usable)} the memory limit of {fmt_bytes(lim.max_memory)} leaves "
                f"beside the interpreter and libraries")
        raise LimitError(
            f"{what} would need about {fmt_bytes(need)}{extra}, more than {room}; "
            f"{raise_hint()}",
            file=file, field=field,
        )


def topology_bytes(nodes: int, links: int, max_port: int) -> int:
    """Estimated bytes of a topology with these counts."""
    return nodes * (NODE_BYTES + PORT_SLOT_BYTES * (max_port + 1)) + links * LINK_BYTES


def check_topology(nodes: int, links: int, max_port: int, *, hosts: int | None = None,
                   file: str | None = None, field: str | None = "topology") -> int:
    """Refuse a topology too large to build; returns its estimated bytes."""
    need = topology_bytes(nodes, links, max_port)
    detail = f"{nodes:,} nodes" if hosts is None else f"{hosts:,} hosts, {nodes - hosts:,} switches"
    check(need, "the topology", detail=f"{detail}, {links:,} links", file=file, field=field, available=True)
    return need


def routing_bytes(topo) -> int:
    """Estimated bytes of a routing's tables while they are built (entries with the
    temporaries engines make)."""
    return _table_entries(topo) * ROUTE_ENTRY_BYTES


def table_bytes(topo) -> int:
    """Bytes of a built routing's tables: :func:`routing_bytes` without the
    temporaries of building them (int32 entries)."""
    return _table_entries(topo) * TABLE_ENTRY_BYTES


def _table_entries(topo) -> int:
    """One row per forwarding node (every switch, and every host with more than one
    cabled port), one column per host."""
    from .routing._graph import forwarding_nodes  # the rows a Routing keeps

    return len(forwarding_nodes(topo)) * int(topo.n_hosts)


def check_routing(topo, *, file: str | None = None, field: str | None = "routing") -> int:
    """Refuse routing a topology whose tables would not fit; returns topology + routing bytes."""
    used = topology_bytes(topo.n_nodes, topo.n_links, int(topo.out_channel.shape[1]) - 1)
    need = routing_bytes(topo)
    check(used + need, "the routing tables",
          detail=f"{topo.n_switches:,} switches x {topo.n_hosts:,} destinations", file=file, field=field,
          available=True)
    return used + need


# -- estimates of generated topologies, from their parameters -------------------------

def estimate_pgft(levels: int, down: list[int], up: list[int], parallel: list[int] | None) -> tuple[int, int, int, int]:
    """(nodes, hosts, links, max port) of a PGFT, without building it."""
    parallel = parallel or [1] * levels
    by_level = [prod(up[i] if i < lv else down[i] for i in range(levels)) for lv in range(levels + 1)]
    links = sum(by_level[lv] * up[lv] * parallel[lv] for lv in range(levels))
    max_port = max([down[lv] * parallel[lv] + (up[lv + 1] * parallel[lv + 1] if lv + 1 < levels else 0)
                    for lv in range(levels)] + [up[0] * parallel[0]])
    return sum(by_level), by_level[0], links, max_port


def estimate_hyperx(S: list[int], K: list[int], T: int) -> tuple[int, int, int, int]:
    """(nodes, hosts, links, max port) of a HyperX."""
    switches = prod(S)
    radix = sum(k * (s - 1) for s, k in zip(S, K))
    return switches * (T + 1), switches * T, switches * T + switches * radix // 2, T + radix


def estimate_hybrid(a: dict) -> tuple[int, int, int, int]:
    """(nodes, hosts, links, max port) of a hybrid EPS/OCS network."""
    racks, spr = a["racks"], a["servers_per_rack"]
    from .topology.hybrid import default_core_switches

    core, ocs = a.get("core_switches", default_core_switches(a["tor_uplinks"])), a.get("circuit_switches", 1)
    up_links = racks * (a["tor_uplinks"] + a["circuit_uplinks"])
    nodes = racks * (spr + 1) + core + ocs
    max_port = max(spr + a["tor_uplinks"] + a["circuit_uplinks"], a["circuit_ports"],
                   racks * a["tor_uplinks"] // max(core, 1) + 1)
    return nodes, racks * spr, racks * spr + up_links, max_port


def check_workers(n: int, *, limits: Limits | None = None, field: str = "--workers") -> None:
    """Refuse starting ``n`` local worker processes whose baseline alone exceeds the limit.

    >>> four = Limits(max_memory=4 * 2**30)
    >>> check_workers(2, limits=four)
    >>> check_workers(1000, limits=four)
    Traceback (most recent call last):
    ...
    netsteer.errors.LimitError: --workers: 1,000 worker processes would need about 125 GiB (128 MiB each, before their points), more than the memory limit of 4 GiB; raise it with NETSTEER_MAX_MEMORY=SIZE, netsteer --max-memory SIZE COMMAND (before the command) or, in Python, netsteer.limits.set_max_memory(bytes)
    """
    check(n * WORKER_BYTES, f"{n:,} worker processes", detail=f"{fmt_bytes(WORKER_BYTES)} each, before their points",
          limits=limits, field=field)


def default_workers(cores: int, *, limits: Limits | None = None) -> int:
    """Local sweep workers by default: one per core, as many as the memory limit holds (at least one).

    >>> four = Limits(max_memory=4 * 2**30)
    >>> default_workers(2, limits=four), default_workers(512, limits=four)
    (2, 31)
    """
    return max(1, min(cores, (limits or current()).usable // WORKER_BYTES))
