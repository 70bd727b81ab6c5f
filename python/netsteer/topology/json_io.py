"""A topology as plain JSON, written by ``netsteer topo --export x.json`` and read back.

The file holds the nodes (name, kind, level, GUID), the cables (both ends with their
ports, bandwidth in bits per second, latency in ns), the circuit switches' switching
times, and the generator's parameters (``meta``: what routing engines such as
``dmodk`` and the hybrid controller read). Read back, it is the same topology: a
scenario names it as ``topology: {kind: json, path: x.json}``, a command as
``x.json``. Cables can be edited in between (a cable removed, a bandwidth changed);
``meta`` then still describes the generator's shape, which routing that relies on it
assumes. Nodes cannot: ``meta`` numbers them, so a file whose nodes no longer match it
is refused naming ``meta`` (:func:`meta_mismatch`); without ``meta`` it reads as a plain fabric.

The GUIDs are the ones the rest of netsteer gives the fabric
(:func:`netsteer.topology.ibsim_net.with_fabric_guids`: the topology's own, made up
by one rule where it has none), the GUIDs ``netsteer route`` writes into its dump and
``--export x.net`` into the net file. So a partitions.conf can name the hosts by
the GUIDs the export shows, and tables routed for the spec read back against the
export even after its nodes or cables are edited. A file whose nodes say
``"guid": "0x0"`` (or none) still reads: those nodes get GUIDs by that rule.

Examples
--------
>>> import json, os, tempfile
>>> from netsteer.topology import pgft
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=5)
>>> path = os.path.join(tempfile.mkdtemp(), "t.json")
>>> with open(path, "w") as f:
...     json.dump(to_json(t), f)
>>> back = read_json(path)
>>> back.n_links == t.n_links and back.meta["down"] == [2, 2]
True
>>> bool((back.meta["labels"] == t.meta["labels"]).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import NetsteerError, unknown_key_reason
from ..units import MAX_BANDWIDTH_BPS
from .model import KIND_NAMES, Topology, TopologyBuilder

FORMAT = "netsteer-topology"
_KIND_OF = {v: k for k, v in KIND_NAMES.items()}
#: The keys :func:`to_json` writes, and the only ones a file may hold (a misspelt
#: ``bandwidth`` for ``bandwidth_bps`` must not leave the cable as it was).
_TOP_KEYS = ("format", "name", "nodes", "links", "switching_time_ns", "meta")
_NODE_KEYS = ("name", "kind", "level", "guid")
_LINK_KEYS = ("a", "a_port", "b", "b_port", "bandwidth_bps", "latency_ns")
_REQUIRED_LINK_KEYS = ("a", "a_port", "b", "b_port", "bandwidth_bps")
#: A cable without ``latency_ns`` gets the generators' default link latency (100 ns).
DEFAULT_LATENCY_NS = 100


def to_json(topo: Topology) -> dict[str, Any]:
    """A plain JSON description of ``topo`` (module text).

    >>> from netsteer.topology import pgft
    >>> d = to_json(pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=5))
    >>> d["nodes"][2], d["links"][0]
    ({'name': 's1_0', 'kind': 'switch', 'level': 1, 'guid': '0x2c90300000004'}, {'a': 'h0', 'a_port': 1, 'b': 's1_0', 'b_port': 1, 'bandwidth_bps': 1000000000.0, 'latency_ns': 5})
    """
    from .ibsim_net import with_fabric_guids

    names = topo.node_names
    guids = with_fabric_guids(topo).node_guid  # the GUIDs route, route-eval and .net use
    return {
        "format": FORMAT,
        "name": topo.name,
        "nodes": [
            {"name": names[i], "kind": KIND_NAMES[int(topo.node_kind[i])], "level": int(topo.node_level[i]),
             "guid": f"{int(guids[i]):#x}"}
            for i in range(topo.n_nodes)
        ],
        "links": [
            {"a": names[int(topo.link_a[k])], "a_port": int(topo.link_a_port[k]),
             "b": names[int(topo.link_b[k])], "b_port": int(topo.link_b_port[k]),
             "bandwidth_bps": float(topo.link_bandwidth[k]), "latency_ns": int(topo.link_latency_ns[k])}
            for k in range(topo.n_links)
        ],
        "switching_time_ns": {names[n]: int(t) for n, t in topo.switching_time_ns.items()},
        "meta": _encode(topo.meta),
    }


def is_export(data: Any) -> bool:
    """True for what :func:`to_json` writes (a mapping with nodes and links, no kind)."""
    return isinstance(data, dict) and "kind" not in data and ("nodes" in data or data.get("format") == FORMAT)


def read_json(path: str, *, name: str | None = None, file: str | None = None) -> Topology:
    """The topology in ``path``, a file :func:`to_json` wrote.

    Raises
    ------
    NetsteerError
        Naming ``path`` and the field (``nodes[3].kind``, ``links[7].b_port`` ...)
        for anything missing, ill-typed or inconsistent: an unknown key, an unknown
        node, a port or a GUID used twice, a bandwidth that is not positive. A cable without
        ``latency_ns`` has 100 ns (:data:`DEFAULT_LATENCY_NS`); exports always write it.
    """
    from ..inputs import load_json, read_text

    data = load_json(read_text(path), file=path)
    return from_json(data, name=name, file=path)


def from_json(data: Any, *, name: str | None = None, file: str | None = None) -> Topology:
    """The topology a :func:`to_json` mapping describes (see :func:`read_json`)."""

    def bad(field: str, reason: str) -> NetsteerError:
        return NetsteerError(reason, file=file, field=field)

    def known(d: dict, keys: tuple, where: str | None, required: tuple = ()) -> None:
        unknown = [k for k in d if k not in keys]
        if unknown:
            reason = unknown_key_reason(unknown, [k for k in required if k not in d], keys)
            raise bad(f"{where}.{unknown[0]}" if where else str(unknown[0]), reason)

    if not is_export(data):
        raise bad("topology", "expected a netsteer topology export (a mapping with nodes and links)")
    known(data, _TOP_KEYS, None)
    if "format" in data and data["format"] != FORMAT:  # another tool's file: its keys would mean other things
        raise bad("format", f"expected {FORMAT!r} (what topo --export writes), got {data['format']!r}")
    for key in ("nodes", "links"):
        if key not in data:
            raise bad(key, f"required key is missing (a list of the {key}; topo --export writes it)")
        if not isinstance(data[key], list):
            raise bad(key, f"expected a list, got {type(data[key]).__name__}")
    b = TopologyBuilder(name or str(data.get("name") or "topology"))
    times = data.get("switching_time_ns", {})
    if not isinstance(times, dict):
        raise bad("switching_time_ns", "expected a mapping of circuit switch name to ns")
    guid_of: dict[int, str] = {}  # GUID -> the node that has it
    for i, n in enumerate(data["nodes"]):
        where = f"nodes[{i}]"
        if not isinstance(n, dict):
            raise bad(where, f"expected a mapping, got {type(n).__name__}")
        known(n, _NODE_KEYS, where, ("name", "kind"))
        nm, kind = n.get("name"), n.get("kind")
        if not isinstance(nm, str) or not nm:
            raise bad(f"{where}.name", f"expected a name, got {nm!r}")
        if kind not in _KIND_OF:
            raise bad(f"{where}.kind", f"expected one of {', '.join(_KIND_OF)}, got {kind!r}")
        level = _int(n.get("level", -1), f"{where}.level", bad)
        guid = _guid(n.get("guid", "0x0"), f"{where}.guid", bad)
        if nm in b._index:
            raise bad(f"{where}.name", f"node {nm!r} is given twice")
        if guid and guid in guid_of:
            # two nodes on one GUID: route would write tables naming both on one port
            # GUID (which route-eval then refuses); "0x0" (none) may repeat
            raise bad(f"{where}.guid", f"{guid:#x} is {guid_of[guid]}'s")
        guid_of[guid] = nm
        if kind == "host":
            b.add_host(nm, guid=guid)
        elif kind == "switch":
            b.add_switch(nm, level=level, guid=guid)
        else:
            if nm not in times:
                raise bad("switching_time_ns", f"circuit switch {nm!r} has no switching time")
            t = _int(times[nm], f"switching_time_ns.{nm}", bad)
            if t < 0:
                raise bad(f"switching_time_ns.{nm}", f"must not be negative, got {t}")
            b.add_circuit_switch(nm, t, guid=guid)
    for nm in times:
        if nm not in b._index or b.kind[b._index[nm]] != _KIND_OF["circuit"]:
            raise bad(f"switching_time_ns.{nm}", f"{nm!r} is not a circuit switch of nodes")
    for k, link in enumerate(data["links"]):
        where = f"links[{k}]"
        if not isinstance(link, dict):
            raise bad(where, f"expected a mapping, got {type(link).__name__}")
        known(link, _LINK_KEYS, where, _REQUIRED_LINK_KEYS)
        ends = []
        for end in ("a", "b"):
            nm = link.get(end)
            if nm not in b._index:
                raise bad(f"{where}.{end}", f"no node named {nm!r}")
            ends.append(b._index[nm])
        bw = link.get("bandwidth_bps")
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0 or bw == float("inf"):
            raise bad(f"{where}.bandwidth_bps", f"expected a positive number of bits per second, got {bw!r}")
        if bw > MAX_BANDWIDTH_BPS:  # the cap a spec's bandwidth has (past it the metrics overflow)
            raise bad(f"{where}.bandwidth_bps", f"{bw!r} bits per second is too large: at most 1e18 bps (1 Ebps)")
        lat = _int(link.get("latency_ns", DEFAULT_LATENCY_NS), f"{where}.latency_ns", bad)
        if lat < 0:
            raise bad(f"{where}.latency_ns", f"must not be negative, got {lat}")
        ports = [_int(link.get(f"{e}_port"), f"{where}.{e}_port", bad) for e in ("a", "b")]
        try:
            b.add_link(ends[0], ends[1], bandwidth=float(bw), latency_ns=lat, a_port=ports[0], b_port=ports[1])
        except ValueError as exc:  # the builder's (ports): it names its parameter
            field = getattr(exc, "field", None)
            raise bad(f"{where}.{field}" if field else where, getattr(exc, "reason", str(exc))) from None
    try:
        b.meta = _decode(data.get("meta", {}))
    except (TypeError, ValueError) as exc:
        raise bad("meta", f"not what an export writes: {exc}") from None
    if not isinstance(b.meta, dict):
        raise bad("meta", "expected a mapping")
    _check_size(b, data["links"], file)
    topo = b.build()
    reason = meta_mismatch(topo)
    if reason:
        raise bad("meta", f"no longer describes the nodes read ({reason}); delete it to read the file as a "
                          f"plain fabric (engines that need the {topo.meta.get('kind')} generator's shape, such "
                          f"as dmodk, then refuse it)")
    return topo


#: What each generator's meta must hold (node numbers in it index the node list).
_META_KEYS = {
    "pgft": ("levels", "down", "up", "parallel", "nodes_by_level", "first_node", "labels", "position"),
    "hyperx": ("S", "K", "T", "coords", "host_switch", "switch_at"),
    "hybrid": ("racks", "servers_per_rack", "tor_of_host", "tors", "cores", "circuit_switches"),
}


def meta_mismatch(topo: Topology) -> str | None:
    """Why ``topo.meta`` (a generator's description, by node number) does not describe
    ``topo``'s nodes, or None when it does (or is no generator's).

    Cables may be edited (routing that relies on the generator's shape then checks
    its tables), but the nodes are what meta numbers: a node added, removed or moved
    would have meta index the wrong ones. So the node count, the hosts (the first
    nodes, as every generator numbers them), the switch levels and the kinds of the
    nodes meta names must be those the generator made.

    >>> from netsteer.topology import pgft
    >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    >>> meta_mismatch(t) is None
    True
    >>> t.meta["kind"] = "hyperx"
    >>> meta_mismatch(t)
    "it has no 'S'"
    """
    from .model import CIRCUIT, HOST, SWITCH

    meta = topo.meta
    kind = meta.get("kind")
    if kind not in _META_KEYS:
        return None
    missing = [k for k in _META_KEYS[kind] if k not in meta]
    if missing:
        return f"it has no {missing[0]!r}"
    n, kinds = topo.n_nodes, topo.node_kind
    try:
        def named(key: str, want: int, count: int | None = None) -> str | None:
            v = np.asarray(meta[key], dtype=np.int64).reshape(-1)
            if count is not None and v.size != count:
                return f"{key} names {v.size} nodes, the generator's shape {count}"
            if v.size and (v.min() < 0 or v.max() >= n):
                return f"{key} names node {int(v.max() if v.max() >= n else v.min())}, the file has nodes 0..{n - 1}"
            if v.size and (kinds[v] != want).any():
                bad = int(v[kinds[v] != want][0])
                return f"{key} names {topo.node_names[bad]}, which is a {KIND_NAMES[int(kinds[bad])]}"
            return None

        def rows(key: str, count: int) -> str | None:
            got = len(np.asarray(meta[key]))
            return None if got == count else f"{key} has {got} rows, the file {count} nodes"

        if kind == "pgft":
            levels, down, up = int(meta["levels"]), list(meta["down"]), list(meta["up"])
            if not (len(down) == len(up) == len(meta["parallel"]) == levels):
                return f"down, up and parallel need {levels} entries each"
            by_level = [int(np.prod([up[i] if i < lv else down[i] for i in range(levels)], dtype=object))
                        for lv in range(levels + 1)]
            if [int(x) for x in meta["nodes_by_level"]] != by_level:
                return f"nodes_by_level is {list(meta['nodes_by_level'])}, the shape makes {by_level}"
            hosts = by_level[0]
            expect = [lv for lv, c in enumerate(by_level) for _ in range(c)]
            if sum(by_level) != n:
                return f"the shape makes {sum(by_level)} nodes ({hosts} hosts), the file has {n} ({topo.n_hosts} hosts)"
            first = list(np.cumsum([0] + by_level[:-1]))
            if [int(x) for x in meta["first_node"]] != first:
                return f"first_node is {list(meta['first_node'])}, the shape's levels start at {first}"
            if (kinds[:hosts] != HOST).any() or (kinds[hosts:] == HOST).any():
                return f"the hosts are not the first {hosts} nodes"
            lv_of = np.asarray(expect[hosts:])
            off = np.flatnonzero(topo.node_level[hosts:] != lv_of)
            if off.size:
                v = hosts + int(off[0])
                return f"{topo.node_names[v]} is at level {int(topo.node_level[v])}, the shape puts node {v} at {expect[v]}"
            return rows("labels", n) or rows("position", n)
        if kind == "hyperx":
            n_sw = int(np.prod(meta["S"], dtype=object))
            hosts = int(meta["T"]) * n_sw
            if topo.n_hosts != hosts or (kinds[:hosts] != HOST).any():
                return f"the shape makes {hosts} hosts first, the file has {topo.n_hosts}"
            return (rows("coords", n) or named("host_switch", SWITCH, hosts) or named("switch_at", SWITCH, n_sw)
                    or (named("circuit_switches", CIRCUIT) if "circuit_switches" in meta else None)
                    or named_keys(meta.get("initial_circuits") or {}, kinds, n, CIRCUIT))
        hosts = int(meta["racks"]) * int(meta["servers_per_rack"])
        if topo.n_hosts != hosts or (kinds[:hosts] != HOST).any():
            return f"the shape makes {hosts} hosts first, the file has {topo.n_hosts}"
        return (named("tor_of_host", SWITCH, hosts) or named("tors", SWITCH, int(meta["racks"]))
                or named("cores", SWITCH) or named("circuit_switches", CIRCUIT))
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        return f"not what the generator writes ({exc})"


def named_keys(d: dict, kinds: np.ndarray, n: int, want: int) -> str | None:
    """Why the node numbers keying ``d`` are not nodes of kind ``want``, or None."""
    for k in d:
        if not isinstance(k, (int, np.integer)) or not 0 <= int(k) < n or kinds[int(k)] != want:
            return f"initial_circuits is keyed by {k!r}, not a {KIND_NAMES[want]} of the file"
    return None


def _check_size(b: TopologyBuilder, links: list, file: str | None) -> None:
    """Refuse, before it is made, a port table too large for memory, naming the file
    and the cable end with the highest port (the table has a column per port number)."""
    from ..limits import check_topology

    if not b.links:
        return
    ends = [(row[1], k, "a_port") for k, row in enumerate(b.links)] + \
        [(row[3], k, "b_port") for k, row in enumerate(b.links)]
    port, k, end = max(ends, key=lambda e: e[0])
    check_topology(len(b.names), len(b.links), int(port), hosts=b.kind.count(_KIND_OF["host"]),
                   file=file, field=f"links[{k}].{end}")


def _guid(v: Any, field: str, bad) -> int:
    """A node's GUID: an integer or an integer string (``"0x2c9..."``) in 0..2**64-1.

    A float or a bool is refused, not truncated (``1.5`` is no GUID, ``true`` is not 1).
    """
    if isinstance(v, str):
        try:
            g = int(v, 0)
        except ValueError:
            raise bad(field, f"expected an integer or hex string, got {v!r}") from None
    elif isinstance(v, int) and not isinstance(v, bool):
        g = v
    else:
        raise bad(field, f"expected an integer or hex string, got {v!r}")
    if not 0 <= g < 2**64:
        raise bad(field, f"a GUID is 64 bits (0..0xffffffffffffffff), got {v!r}")
    return g


def _int(v: Any, field: str, bad) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise bad(field, f"expected an integer, got {v!r}")
    return v


# meta holds arrays and dicts with integer keys (circuit switch -> pairing): tagged,
# so that they come back as they were, not as lists and string keys
def _encode(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"$ndarray": v.tolist(), "dtype": str(v.dtype)}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in v):
            return {k: _encode(x) for k, x in v.items()}
        return {"$dict": [[_encode(k), _encode(x)] for k, x in v.items()]}
    if isinstance(v, tuple):
        return {"$tuple": [_encode(x) for x in v]}
    if isinstance(v, list):
        return [_encode(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    raise TypeError(f"cannot export a {type(v).__name__} in the topology's meta")


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "$ndarray" in v:
        return np.array(v["$ndarray"], dtype=np.dtype(v["dtype"]))
    if "$dict" in v:
        return {_hashable(_decode(k)): _decode(x) for k, x in v["$dict"]}
    if "$tuple" in v:
        return tuple(_decode(x) for x in v["$tuple"])
    return {k: _decode(x) for k, x in v.items()}


def _hashable(k: Any) -> Any:
    return tuple(k) if isinstance(k, list) else k


__all__ = ["FORMAT", "from_json", "is_export", "read_json", "to_json"]
