"""Topologies from named parameters, files and specs, as scenario files describe them.

Each function builds the spec a scenario's ``topology:`` holds and builds it with
the same checks (:func:`netsteer.topology.spec.build_topology`), so an error names
the same field a file would. The spec stays with the topology
(``topo.meta["spec"]``): a scenario made from it writes it back.

Bandwidths and latencies carry their units (``"10Gbps"``, ``"1us"``); the
latency, if not given, is the scenario default, 100 ns.

Examples
--------
>>> t = pgft(levels=2, down=[4, 4], up=[1, 2], link_bandwidth="10Gbps", link_latency="1us")
>>> t.n_hosts, t.n_switches, t.meta["spec"]["down"]
(16, 6, [4, 4])
>>> hyperx(S=[4, 4], T=2, link_bandwidth="100Gbps").n_hosts
32
>>> pgft(levels=2, down=[4], up=[1, 2], link_bandwidth="10Gbps")
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: topology.down: down has 1 entries but levels is 2; give one per level
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from ..errors import NetsteerError
from ..topology.model import Topology
from ._values import given, plain

Bandwidth = str
"""A bandwidth with its unit: ``"10Gbps"``, ``"25GBps"``."""
Duration = str | int
"""A duration with its unit: ``"1us"``, ``"10ms"`` (``0`` needs none)."""


def from_spec(spec: dict[str, Any], *, file: str | None = None) -> Topology:
    """Build the topology a scenario's ``topology:`` mapping describes.

    Parameters
    ----------
    spec : dict
        ``kind`` and that kind's keys (``docs/model.md``), e.g.
        ``{"kind": "pgft", "levels": 1, "down": [4], "up": [1], "link_bandwidth": "1Gbps"}``.
    file : str, optional
        The file the spec came from: the base of a relative ``path`` and named in errors.

    Returns
    -------
    Topology
        With the spec in ``meta["spec"]`` (a ``path`` made absolute).

    Examples
    --------
    >>> from_spec({"kind": "pgft", "levels": 1, "down": [4], "up": [1],
    ...            "link_bandwidth": "1Gbps"}).n_hosts
    4
    """
    from ..topology.spec import build_topology

    if not isinstance(spec, dict):
        raise NetsteerError(f"expected a mapping with a kind, got {type(spec).__name__}", file=file,
                            field="topology")
    spec = plain(spec)
    topo = build_topology(spec, file=file)
    kept = dict(spec)
    if isinstance(kept.get("path"), str) and not os.path.isabs(kept["path"]):
        base = Path(file).parent if file else Path.cwd()
        kept["path"] = str((base / kept["path"]).resolve())
    topo.meta["spec"] = kept
    return topo


def pgft(
    levels: int,
    down: Sequence[int],
    up: Sequence[int],
    parallel: Sequence[int] | None = None,
    *,
    link_bandwidth: Bandwidth | Sequence[Bandwidth],
    link_latency: Duration | Sequence[Duration] | None = None,
    name: str | None = None,
) -> Topology:
    """A parallel generalized fat-tree, with SimGrid's FAT_TREE parameters.

    Parameters
    ----------
    levels : int
        Switch levels.
    down, up, parallel : list of int
        Per level: children per switch, parents per node, cables per parent
        (``parallel`` defaults to ones).
    link_bandwidth : str or list of str
        Each direction, for every level or one per level (level 0: host links).
    link_latency : str or list of str, optional
        Per cable; default 100 ns.
    name : str, optional

    Returns
    -------
    Topology
        Hosts ``h0..`` in SimGrid's order, then switches ``s<level>_<position>``.

    Examples
    --------
    >>> t = pgft(2, [16, 16], [1, 8], link_bandwidth="10Gbps")
    >>> t.n_hosts, t.n_switches
    (256, 24)
    """
    spec = {"kind": "pgft", **given(levels=levels, down=down, up=up, parallel=parallel,
                                    link_bandwidth=link_bandwidth, link_latency=link_latency, name=name)}
    return from_spec(spec)


def hyperx(
    S: Sequence[int],
    T: int,
    *,
    K: int | Sequence[int] | None = None,
    link_bandwidth: Bandwidth,
    host_bandwidth: Bandwidth | None = None,
    link_latency: Duration | None = None,
    radix: int | None = None,
    circuits: Sequence[dict[str, Any]] | None = None,
    name: str | None = None,
) -> Topology:
    """A HyperX: switches on a lattice, all-to-all within each dimension.

    Parameters
    ----------
    S : list of int
        Switches per dimension.
    T : int
        Terminals (hosts) per switch.
    K : int or list of int, optional
        Trunking (cables between two switches of a dimension); default 1.
    link_bandwidth : str
    host_bandwidth : str, optional
        Host links; default ``link_bandwidth``.
    link_latency : str, optional
    radix : int, optional
        Ports per packet switch: a shape that needs more is refused.
    circuits : list of dict, optional
        Circuit switches inserted into cables, as the spec writes them: each
        ``{"links": [["x0_0", "x1_0"], ...]}`` or ``{"dim": 0}``, with
        ``"switching_time": "10us"`` and optionally ``"name"``
        (:mod:`netsteer.topology.hyperx`).
    name : str, optional

    Examples
    --------
    >>> t = hyperx([3, 3], 1, K=2, link_bandwidth="25Gbps")
    >>> t.n_switches, t.n_links
    (9, 45)
    >>> f = hyperx([2, 4], 2, link_bandwidth="10Gbps", radix=6,
    ...            circuits=[{"dim": 0, "switching_time": "10us"}])
    >>> f.summary()["circuit_switches"], f.meta["spec"]["circuits"]
    (1, [{'dim': 0, 'switching_time': '10us'}])
    >>> hyperx([8, 8], 4, K=2, link_bandwidth="10Gbps", radix=24)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: topology.radix: radix is 24 but S=[8, 8], K=[2, 2], T=4 need 32 ports per switch (T + sum(K*(S-1)) = 4 + 28); use fewer terminals, less trunking or smaller dimensions
    """
    spec = {"kind": "hyperx", **given(S=S, K=K, T=T, link_bandwidth=link_bandwidth,
                                      host_bandwidth=host_bandwidth, link_latency=link_latency,
                                      radix=radix, circuits=circuits, name=name)}
    return from_spec(spec)


def hybrid(
    racks: int,
    servers_per_rack: int,
    *,
    server_bandwidth: Bandwidth,
    tor_uplinks: int,
    core_bandwidth: Bandwidth,
    circuit_ports: int,
    circuit_uplinks: int,
    circuit_bandwidth: Bandwidth,
    switching_time: Duration,
    core_switches: int | None = None,
    circuit_switches: int | None = None,
    link_latency: Duration | None = None,
    name: str | None = None,
) -> Topology:
    """A hybrid rack network: ToRs with uplinks to an electrical core and to
    optical circuit switches (see ``docs/control.md``).

    Examples
    --------
    >>> t = hybrid(4, 2, server_bandwidth="10Gbps", tor_uplinks=1, core_bandwidth="10Gbps",
    ...            circuit_ports=4, circuit_uplinks=1, circuit_bandwidth="10Gbps",
    ...            switching_time="10ms")
    >>> t.n_hosts, len(t.switching_time_ns)
    (8, 1)
    """
    spec = {"kind": "hybrid", **given(
        racks=racks, servers_per_rack=servers_per_rack, server_bandwidth=server_bandwidth,
        tor_uplinks=tor_uplinks, core_switches=core_switches, core_bandwidth=core_bandwidth,
        circuit_switches=circuit_switches, circuit_ports=circuit_ports, circuit_uplinks=circuit_uplinks,
        circuit_bandwidth=circuit_bandwidth, switching_time=switching_time, link_latency=link_latency,
        name=name)}
    return from_spec(spec)


def read_topology(source: str | os.PathLike, *, link_latency: Duration | None = None,
                  default_bandwidth: Bandwidth | None = None, name: str | None = None) -> Topology:
    """A topology from a file or an inline spec, as ``netsteer topo SPEC`` reads it.

    Parameters
    ----------
    source : str or path
        An ibnetdiscover output or ibsim net file (told apart by their content), a
        YAML/JSON file holding a topology spec (or a scenario with a ``topology:``),
        what ``netsteer topo --export x.json`` wrote, or an inline spec
        ``"pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps"``.
    link_latency : str, optional
        Per cable, for imported fabrics; default 100 ns. An export has its own.
        These keywords add to a spec (inline or YAML); one that gives a key the spec
        sets itself to a different value is refused, naming both.
    default_bandwidth : str, optional
        For ibnetdiscover output: the bandwidth of cables whose rate it does not print.
    name : str, optional

    Examples
    --------
    >>> read_topology("hyperx:S=4;4,T=2,link_bandwidth=10Gbps").n_hosts
    32
    >>> read_topology("no-such.net")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: no-such.net: no such file, and not an inline spec such as pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps
    """
    from ..topology import spec as specs
    from ..topology.json_io import is_export

    s = os.fspath(source)
    extra = given(link_latency=link_latency, default_bandwidth=default_bandwidth, name=name)
    if os.path.isfile(s):
        if Path(s).suffix.lower() in (".yaml", ".yml", ".json"):
            data = specs._load(s)
            if is_export(data):
                return from_spec({"kind": "json", "path": str(Path(s).resolve()), **extra})
            if extra:
                data = _with_keywords(data, extra, f"{s}'s")
            return from_spec(data, file=s)
        kind = "ibnetdiscover" if specs._looks_like_ibnetdiscover(s) else "ibsim"
        return from_spec({"kind": kind, "path": str(Path(s).resolve()), **extra})
    kind = s.partition(":")[0].strip()
    if ":" in s and kind in specs.KINDS:
        return from_spec(_with_keywords(specs.parse_inline(s), extra, "the inline spec's"))
    specs.parse_topo_arg(s)  # raises its own message for anything else
    raise NetsteerError("not a topology", file=s)  # pragma: no cover - parse_topo_arg raised


def _same_value(key: str, a: Any, b: Any) -> bool:
    """Whether two values of ``key`` amount to the same (``1us`` and ``1000ns`` do)."""
    from ..units import parse_bandwidth, parse_duration

    parse = {"link_latency": parse_duration, "default_bandwidth": parse_bandwidth}.get(key)
    if parse is not None:
        try:
            return parse(a) == parse(b)
        except (ValueError, OverflowError, TypeError):  # one is bad: the spec's checks name it
            pass
    return a == b


def _with_keywords(spec: dict[str, Any], extra: dict[str, Any], holder: str) -> dict[str, Any]:
    """``spec`` with :func:`read_topology`'s keywords added; a keyword that gives a key
    the spec already sets to a different value is refused, naming both.

    >>> _with_keywords({"kind": "pgft", "link_latency": "1us"}, {"link_latency": "1000ns"}, "the inline spec's")
    {'kind': 'pgft', 'link_latency': '1000ns'}
    >>> _with_keywords({"kind": "pgft", "link_latency": "1us"}, {"link_latency": "5us"}, "the inline spec's")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: link_latency: link_latency='5us' conflicts with the inline spec's link_latency=1us; give it in one place
    """
    for k, v in extra.items():
        if k in spec and not _same_value(k, spec[k], v):
            raise NetsteerError(f"{k}={v!r} conflicts with {holder} {k}={spec[k]}; give it in one place",
                                field=k)
    return {**spec, **extra}


def spec_of(topo: Topology) -> dict[str, Any] | None:
    """The scenario spec a topology was built from, or None (built by hand)."""
    spec = topo.meta.get("spec")
    return dict(spec) if isinstance(spec, dict) else None
