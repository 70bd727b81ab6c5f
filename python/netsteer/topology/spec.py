"""Topology specs: a dict (from YAML, JSON or a command line) to a :class:`Topology`.

A spec names its ``kind`` and that kind's keys; values with units are strings
(``"10Gbps"``, ``"1us"``) parsed here, once::

    topology:
      kind: pgft
      levels: 2
      down: [16, 16]
      up: [1, 8]
      parallel: [1, 1]
      link_bandwidth: 10Gbps      # or one per level: [10Gbps, 40Gbps]
      link_latency: 100ns         # optional, default 100ns

Kinds and keys (``?`` optional):

- ``pgft``: levels, down, up, parallel?, link_bandwidth, link_latency?, name?
- ``hyperx``: S, K? (default 1), T, link_bandwidth, host_bandwidth?, link_latency?, radix?,
  circuits? (a list of ``{links: [[x0_0, x0_1], ...] | dim: 0, switching_time: 10us, name?}``:
  circuit switches inserted into those cables, see :mod:`netsteer.topology.hyperx`), name?
- ``hybrid``: racks, servers_per_rack, server_bandwidth, tor_uplinks, core_switches?
  (1), core_bandwidth, circuit_switches? (1), circuit_ports, circuit_uplinks,
  circuit_bandwidth, switching_time, link_latency?, name?
- ``ibnetdiscover``: path, link_latency?, default_bandwidth?, name?
- ``ibsim``: path, link_latency?, name?
- ``json``: path, name? (what ``netsteer topo --export x.json`` wrote, see
  :mod:`netsteer.topology.json_io`)

``path`` is relative to the spec's file. The one default, ``link_latency: 100ns``,
is a short cable plus a switch traversal.

Examples
--------
>>> t = parse_topo_arg("hyperx:S=4;4,T=2,link_bandwidth=10Gbps")
>>> t.n_hosts, t.n_switches, float(t.link_bandwidth[0]), int(t.link_latency_ns[0])
(32, 16, 10000000000.0, 100)
>>> build_topology({"kind": "pgft", "levels": 2, "down": [4], "up": [1, 1],
...                 "link_bandwidth": "1Gbps"}, file="s.yaml")
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: s.yaml: topology.down: down has 1 entries but levels is 2; give one per level
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

from ..errors import NetsteerError, did_you_mean
from ..units import UnitError, parse_bandwidth, parse_duration
from ..limits import check_topology, estimate_hybrid, estimate_hyperx, estimate_pgft
from .hybrid import check_hybrid, default_core_switches, hybrid
from .hyperx import check_hyperx, hyperx
from .ibnetdiscover import read_ibnetdiscover
from .ibsim_net import read_ibsim_net
from .model import Topology
from .pgft import check_pgft, pgft

DEFAULT_LINK_LATENCY = "100ns"


class _Bad(Exception):
    """A value that does not fit its key; turned into a located NetsteerError."""


def _int(v: Any) -> int:
    if isinstance(v, bool):
        raise _Bad(f"expected an integer, got {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*[0-9]+(?:\.0*)?\s*", v):
        return int(v.strip().partition(".")[0])  # "1.0" inline, as YAML's 1.0 is taken
    raise _Bad(f"expected an integer, got {v!r}")


def _list(conv: Callable[[Any], Any]) -> Callable[[Any], list]:
    def f(v: Any) -> list:
        if isinstance(v, str):
            v = [p for p in re.split(r"[;\s]+", v.strip().strip("[]")) if p]
        if not isinstance(v, (list, tuple)) or not v:
            raise _Bad(f"expected a list such as [16, 16] or 16;16, got {v!r}")
        return [conv(x) for x in v]
    return f


def _one_or_list(conv: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def f(v: Any) -> Any:
        if isinstance(v, (list, tuple)) or (isinstance(v, str) and ";" in v):
            return _list(conv)(v)
        return conv(v)
    return f


def _bw(v: Any) -> float:
    try:
        return parse_bandwidth(v)
    except UnitError as e:
        raise _Bad(str(e)) from None


def _dur(v: Any) -> int:
    try:
        return parse_duration(v)
    except UnitError as e:
        raise _Bad(str(e)) from None


def _str(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise _Bad(f"expected a non-empty string, got {v!r}")
    return v


def _hyperx_circuits(v: Any) -> list:
    from .hyperx import CircuitSpec

    if not isinstance(v, list) or not v:
        raise _Bad(f"expected a list of circuit switches such as [{{dim: 0, switching_time: 10us}}], got {v!r}")
    out = []
    for c, item in enumerate(v):
        if not isinstance(item, dict):
            raise _Bad(f"circuits[{c}] must be a mapping with links or dim, and switching_time")
        extra = set(item) - {"links", "dim", "switching_time", "name"}
        if extra:
            raise _Bad(f"circuits[{c}]: unknown key {sorted(extra)[0]!r}; known keys: links, dim, switching_time, name")
        if "switching_time" not in item:
            raise _Bad(f"circuits[{c}]: missing key 'switching_time' (how long moved ports stay dark)")
        try:
            links = item.get("links", [])
            if not isinstance(links, list):
                raise _Bad(f"circuits[{c}].links must be a list of [switch, switch] pairs, got {links!r}")
            out.append(CircuitSpec(
                links=tuple(tuple(x) if isinstance(x, list) else x for x in links),
                dim=_int(item["dim"]) if "dim" in item else None,
                switching_time_ns=_dur(item["switching_time"]),
                name=_str(item["name"]) if "name" in item else None,
            ))
        except _Bad as e:
            raise _Bad(f"circuits[{c}]: {e}") from None
    return out


_R, _O = True, False  # required, optional
_SCHEMA: dict[str, dict[str, tuple[Callable, bool]]] = {
    "pgft": {
        "levels": (_int, _R), "down": (_list(_int), _R), "up": (_list(_int), _R),
        "parallel": (_list(_int), _O), "link_bandwidth": (_one_or_list(_bw), _R),
        "link_latency": (_one_or_list(_dur), _O), "name": (_str, _O),
    },
    "hyperx": {
        "S": (_list(_int), _R), "K": (_one_or_list(_int), _O), "T": (_int, _R),
        "link_bandwidth": (_bw, _R), "host_bandwidth": (_bw, _O),
        "link_latency": (_dur, _O), "radix": (_int, _O), "circuits": (_hyperx_circuits, _O),
        "name": (_str, _O),
    },
    "hybrid": {
        "racks": (_int, _R), "servers_per_rack": (_int, _R), "server_bandwidth": (_bw, _R),
        "tor_uplinks": (_int, _R), "core_switches": (_int, _O), "core_bandwidth": (_bw, _R),
        "circuit_switches": (_int, _O), "circuit_ports": (_int, _R),
        "circuit_uplinks": (_int, _R), "circuit_bandwidth": (_bw, _R),
        "switching_time": (_dur, _R), "link_latency": (_dur, _O), "name": (_str, _O),
    },
    "ibnetdiscover": {
        "path": (_str, _R), "link_latency": (_dur, _O), "default_bandwidth": (_bw, _O),
        "name": (_str, _O),
    },
    "ibsim": {"path": (_str, _R), "link_latency": (_dur, _O), "name": (_str, _O)},
    "json": {"path": (_str, _R), "name": (_str, _O)},
}
KINDS = tuple(_SCHEMA)


def build_topology(spec: dict, *, file: str | None = None) -> Topology:
    """Build the topology a spec describes.

    Parameters
    ----------
    spec : dict
        ``kind`` and that kind's keys (see the module text).
    file : str, optional
        The file the spec came from: named in errors, and the base of ``path``.

    Raises
    ------
    NetsteerError
        With ``field="topology.<key>"`` for unknown, missing or ill-typed keys, wrong
        units and impossible shapes; importer errors name the imported file.

    Examples
    --------
    >>> build_topology({"kind": "hyperx", "S": [2], "T": 1, "link_bandwidth": 10})
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: topology.link_bandwidth: expected a bandwidth with a unit, such as '10Gbps', got 10
    """
    kind, args, schema = _parse(spec, file)
    try:
        estimate = _ESTIMATE.get(kind)
        if estimate is not None:
            nodes, hosts, links, max_port = estimate(args)
            check_topology(nodes, links, max_port, hosts=hosts, file=file)
        return _BUILD[kind](args, file)
    except ValueError as e:
        reason = getattr(e, "reason", str(e))  # a TopologyBuilder error's, without its parameter name
        raise NetsteerError(reason, file=file, field=_field_of(reason, schema)) from None


def estimate_topology(spec: Any, *, file: str | None = None) -> tuple[int, int, int, int] | None:
    """(nodes, hosts, links, max port) of the topology ``spec`` describes, from its
    parameters, without building it (what :func:`build_topology` checks against the
    memory first); None for a topology read from a file. Raises what
    :func:`build_topology` raises for a bad spec.

    >>> estimate_topology({"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "1Gbps"})
    (22, 16, 24, 6)
    """
    kind, args, schema = _parse(spec, file)
    estimate = _ESTIMATE.get(kind)
    if estimate is None:
        return None
    try:
        return estimate(args)
    except ValueError as e:
        reason = getattr(e, "reason", str(e))
        raise NetsteerError(reason, file=file, field=_field_of(reason, schema)) from None


def _parse(spec: Any, file: str | None) -> tuple[str, dict, dict]:
    """A spec's kind, its arguments converted, and its kind's schema."""
    if not isinstance(spec, dict):
        raise NetsteerError(f"expected a mapping with a kind, got {type(spec).__name__}",
                            file=file, field="topology")
    kind = spec.get("kind")
    if not isinstance(kind, str) or kind not in _SCHEMA:
        raise NetsteerError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}",
                            file=file, field="topology.kind")
    schema = _SCHEMA[kind]
    args: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "kind":
            continue
        if key not in schema:
            raise NetsteerError(f"unknown key {key!r} for kind {kind}" + (did_you_mean(key, schema) or
                                f"; known keys: {', '.join(schema)}"), file=file, field=f"topology.{key}")
        try:
            args[key] = schema[key][0](value)
        except _Bad as e:
            raise NetsteerError(str(e), file=file, field=f"topology.{key}") from None
    missing = [k for k, (_, req) in schema.items() if req and k not in args]
    if missing:
        raise NetsteerError(f"missing key {missing[0]!r} for kind {kind}",
                            file=file, field=f"topology.{missing[0]}")
    args.setdefault("link_latency", parse_duration(DEFAULT_LINK_LATENCY))
    return kind, args, schema


def _field_of(message: str, schema: dict) -> str:
    """The key a generator's error message names first."""
    hits = [(m.start(), k) for k in schema if (m := re.search(rf"\b{re.escape(k)}\b", message))]
    return f"topology.{min(hits)[1]}" if hits else "topology"


def _path(args: dict, file: str | None) -> str:
    p = Path(args["path"])
    if not p.is_absolute() and file:
        p = Path(file).parent / p
    if p.is_dir():
        raise NetsteerError(f"{str(p)!r} is a directory; name a topology file", file=file, field="topology.path")
    if not p.is_file():
        raise NetsteerError(f"no such file {str(p)!r}", file=file, field="topology.path")
    return str(p)


def _pgft(a: dict, file: str | None) -> Topology:
    return pgft(a["levels"], a["down"], a["up"], a.get("parallel"),
                link_bandwidth=a["link_bandwidth"], link_latency_ns=a["link_latency"],
                name=a.get("name"))


def _hyperx(a: dict, file: str | None) -> Topology:
    return hyperx(a["S"], a.get("K", 1), a["T"], link_bandwidth=a["link_bandwidth"],
                  link_latency_ns=a["link_latency"], host_bandwidth=a.get("host_bandwidth"),
                  radix=a.get("radix"), circuits=a.get("circuits"), name=a.get("name"))


def _hybrid(a: dict, file: str | None) -> Topology:
    return hybrid(
        a["racks"], a["servers_per_rack"], server_bandwidth=a["server_bandwidth"],
        tor_uplinks=a["tor_uplinks"],
        core_switches=a.get("core_switches", default_core_switches(a["tor_uplinks"])),
        core_bandwidth=a["core_bandwidth"], circuit_switches=a.get("circuit_switches", 1),
        circuit_ports=a["circuit_ports"], circuit_uplinks=a["circuit_uplinks"],
        circuit_bandwidth=a["circuit_bandwidth"], switching_time_ns=a["switching_time"],
        link_latency_ns=a["link_latency"], name=a.get("name"))


def _looks_like_ibnetdiscover(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(200_000).decode("utf-8", errors="replace")
    except OSError:
        return True  # the reader says why it cannot read it
    return bool(_IBND_HEADER.search(head))


def _ibnetdiscover(a: dict, file: str | None) -> Topology:
    path = _path(a, file)
    if not _looks_like_ibnetdiscover(path):
        raise NetsteerError(f"{a['path']!r} is not ibnetdiscover output (no Switch/Ca line with an "
                            "\"S-<guid>\"/\"H-<guid>\" identifier); for an ibsim net file use kind: ibsim",
                            file=file, field="topology.kind")
    return read_ibnetdiscover(path, link_latency_ns=a["link_latency"],
                              default_bandwidth=a.get("default_bandwidth"), name=a.get("name"))


def _ibsim(a: dict, file: str | None) -> Topology:
    path = _path(a, file)
    if _looks_like_ibnetdiscover(path):
        raise NetsteerError(f"{a['path']!r} is ibnetdiscover output, not an ibsim net file; use kind: ibnetdiscover",
                            file=file, field="topology.kind")
    return read_ibsim_net(path, link_latency_ns=a["link_latency"], name=a.get("name"))


def _est_pgft(a: dict) -> tuple[int, int, int, int]:
    # parallel's default has down's length, not levels' (levels: 1e20 must be refused for
    # down's length before a list of that many ones is made)
    check_pgft(a["levels"], a["down"], a["up"], a.get("parallel") or [1] * len(a["down"]))
    return estimate_pgft(a["levels"], a["down"], a["up"], a.get("parallel"))


def _est_hyperx(a: dict) -> tuple[int, int, int, int]:
    K = a.get("K", 1)
    K = K if isinstance(K, list) else [K] * len(a["S"])
    check_hyperx(a["S"], K, a["T"], a.get("radix"))
    return estimate_hyperx(a["S"], K, a["T"])


def _est_hybrid(a: dict) -> tuple[int, int, int, int]:
    check_hybrid(a["racks"], a["servers_per_rack"], a["tor_uplinks"],
                 a.get("core_switches", default_core_switches(a["tor_uplinks"])),
                 a.get("circuit_switches", 1), a["circuit_ports"], a["circuit_uplinks"])
    return estimate_hybrid(a)


# sizes from the parameters, checked against the memory limit before building
_ESTIMATE = {"pgft": _est_pgft, "hyperx": _est_hyperx, "hybrid": _est_hybrid}

def _json(a: dict, file: str | None) -> Topology:
    from .json_io import read_json

    return read_json(_path(a, file), name=a.get("name"))


_BUILD = {"pgft": _pgft, "hyperx": _hyperx, "hybrid": _hybrid,
          "ibnetdiscover": _ibnetdiscover, "ibsim": _ibsim, "json": _json}

_IBND_HEADER = re.compile(r'^(Switch|Ca)\s+\d+\s+"[SH]-[0-9a-fA-F]+"', re.M)


def parse_inline(s: str) -> dict:
    """``kind:key=value,key=value`` to a spec dict; lists use ``;``.

    >>> parse_inline("pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps")
    {'kind': 'pgft', 'levels': '2', 'down': '16;16', 'up': '1;8', 'link_bandwidth': '10Gbps'}
    """
    kind, _, rest = s.partition(":")
    spec: dict[str, Any] = {"kind": kind.strip()}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise NetsteerError(f"expected key=value, got {item!r}", field="topology")
        if key.strip() in spec:
            raise NetsteerError(f"{key.strip()} is given twice", field=f"topology.{key.strip()}")
        spec[key.strip()] = value.strip()
    return spec


def parse_topo_arg(s: str) -> Topology:
    """A topology from a command-line SPEC.

    ``s`` is a YAML/JSON file (a spec, or a scenario with a ``topology`` key), an
    ibnetdiscover output or ibsim net file (told apart by the ``"S-<guid>"``
    identifiers ibnetdiscover prints), or an inline ``kind:key=value,...`` string.

    Raises
    ------
    NetsteerError
        For a missing file, an unreadable YAML/JSON file, or a bad spec.
    """
    if os.path.isfile(s):
        suffix = Path(s).suffix.lower()
        if suffix in (".yaml", ".yml", ".json"):
            from .json_io import from_json, is_export

            data = _load(s)
            return from_json(data, file=s) if is_export(data) else build_topology(data, file=s)
        try:
            with open(s, "rb") as f:
                head = f.read(200_000).decode("utf-8", errors="replace")
        except OSError as e:
            raise NetsteerError(f"cannot read file: {e.strerror}", file=s) from None
        if _IBND_HEADER.search(head):
            return read_ibnetdiscover(s)
        return read_ibsim_net(s)
    if os.path.isdir(s):
        raise NetsteerError("is a directory; name a topology file or give an inline spec such as "
                            "pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps", file=s)
    kind = s.partition(":")[0].strip()
    if ":" in s and kind in _SCHEMA:
        return build_topology(parse_inline(s))
    if ":" in s and re.fullmatch(r"[A-Za-z_]\w*", kind):
        raise NetsteerError(f"unknown topology kind {kind!r}; use one of {', '.join(KINDS)}",
                            field="topology.kind")
    raise NetsteerError(f"no such file, and not an inline spec such as "
                        f"pgft:levels=2,down=16;16,up=1;8,link_bandwidth=10Gbps", file=s)


def _load(path: str) -> dict:
    from ..inputs import load_json, load_yaml, read_text

    text = read_text(path)
    data = load_json(text, file=path) if path.lower().endswith(".json") else load_yaml(text, file=path)
    if isinstance(data, dict) and "topology" in data:
        data = data["topology"]
    if not isinstance(data, dict):
        raise NetsteerError("expected a mapping with a kind (or a topology: key)",
                            file=path, field="topology")
    return data
