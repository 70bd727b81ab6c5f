"""OpenSM's LFT dump: read it into netsteer tables, write tables OpenSM loads.

The format is what ``opensm -D 0x43`` writes to ``opensm-lfts.dump`` and what the
``file`` routing engine (``opensm -R file -U FILE``) reads. One block per switch::

    Unicast lids [0-6] of switch Lid 1 guid 0x0000000000200000 ('Switch1'):
    0x0001 000 # Switch portguid 0x0000000000200000: 'Switch1'
    0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
    6 lids dumped

Each entry is ``0xLID PORT`` (LID in hex, output port in decimal, 0 = the switch
itself). OpenSM's loader (``osm_ucast_file.c``) also looks for ``portguid 0x...``
on an entry and, when the fabric's LIDs differ from the file's, moves the entry to
the LID that port has now; that is why the writer always names the port GUID.
``ibroute`` prints the same blocks with ``[0x0-0x6]``, ``(name)`` without quotes,
two column-title lines, ``: (...)`` instead of ``# ...`` and ``N valid lids
dumped``; the reader accepts both, as OpenSM does.

The reader is stricter than OpenSM, which skips what it does not understand and
silently falls back to min-hop: here a malformed line, an unknown GUID, a port
that is not cabled, or a missing switch or destination is a
:class:`~netsteer.errors.NetsteerError` naming file, line and reason.

Examples
--------
>>> from netsteer.topology.model import TopologyBuilder
>>> b = TopologyBuilder("pair")
>>> s = b.add_switch("Switch1", guid=0x200000)
>>> h0, h1 = b.add_host("Hca1", guid=0x100000), b.add_host("Hca2", guid=0x100003)
>>> _ = b.add_link(s, h0, bandwidth=1e9, latency_ns=1, a_port=1, b_port=1)
>>> _ = b.add_link(s, h1, bandwidth=1e9, latency_ns=1, a_port=4, b_port=1)
>>> t = b.build()
>>> lids = opensm_lids(t, sm_node=s)
>>> lft = np.array([[1, 4], [-1, 1], [1, -1]], dtype=np.int32)
>>> text = format_lft_dump(t, lft, lids)
>>> print(text, end="")
Unicast lids [0-3] of switch Lid 1 guid 0x0000000000200000 ('Switch1'):
0x0001 000 # Switch portguid 0x0000000000200000: 'Switch1'
0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'
0x0003 004 # Channel Adapter portguid 0x0000000000100004: 'Hca2'
3 lids dumped
>>> tables = parse_lft_tables(text, t)
>>> tables.hosts[s].tolist(), tables.lids == lids
([1, 4], True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from netsteer.errors import NetsteerError
from netsteer.topology.model import HOST, Topology

from .guids import endpoint_guid, endpoint_port, guid_index
from .lids import MAX_UNICAST_LID, LidMap, PortLid, opensm_lids, sequential_lids

__all__ = [
    "DumpEntry",
    "SwitchBlock",
    "LftTables",
    "parse_lft_dump",
    "parse_lft_tables",
    "read_lft_tables",
    "read_lft_dump",
    "format_lft_dump",
    "write_lft_dump",
    "minhop_switch_lft",
    "minhop_port_lft",
    "LidMap",
    "PortLid",
    "opensm_lids",
    "sequential_lids",
]

NO_PATH = 255  # OSM_NO_PATH: an LFT byte that routes nowhere

_HEADER = re.compile(
    r"Unicast lids \[(?P<lo>0x[0-9a-fA-F]+|\d+)-(?P<hi>0x[0-9a-fA-F]+|\d+)\] of switch"
    r"(?: Lid (?P<lid>\d+))?.*? guid 0x(?P<guid>[0-9a-fA-F]{1,16})"
    r"(?:\s+\('?(?P<name>.*?)'?\))?:?$"
)
_ENTRY = re.compile(r"0x(?P<lid>[0-9a-fA-F]{1,4})\s+(?P<port>\d{1,3})(?:\s+(?P<rest>.*))?$")
_PORTGUID = re.compile(r"(?:^|\s)portguid 0x(?P<guid>[0-9a-fA-F]{1,16})(?=$|[\s:)])")
_FOOTER = re.compile(r"\d+ (?:valid )?lids dumped$")
_TITLES = ("Lid  Out   Destination", "Lid Out Destination", "Port     Info", "Port Info")


@dataclass
class DumpEntry:
    """One ``0xLID PORT`` line; ``guid`` is 0 when the line names no port GUID."""

    lid: int
    port: int
    guid: int
    line: int


@dataclass
class SwitchBlock:
    """One ``Unicast lids ...`` block; ``lid`` is 0 when the header has no ``Lid N``."""

    guid: int
    lid: int
    name: str
    line: int
    entries: dict[int, DumpEntry] = field(default_factory=dict)


@dataclass
class LftTables:
    """Routes read from a dump, in netsteer's terms.

    Attributes
    ----------
    hosts : ndarray of int32, [n_nodes, n_hosts]
        Out-port per node per destination host, -1 for none (a dense table, as
        :class:`~netsteer.routing.table.Routing` accepts: host rows stay -1,
        meaning "my lowest connected port").
    switches : ndarray of int32, [n_nodes, n_switches]
        Out-port per node towards each switch's LID (columns in ``topo.switches``
        order); 0 on the diagonal.
    lids : LidMap
    ports : ndarray of int32, [n_nodes, len(lids.ports)]
        Out-port per node towards each other CA port's LID (second HCA ports, in
        ``lids.ports`` order), -1 for none.
    """

    hosts: np.ndarray
    switches: np.ndarray
    lids: LidMap
    ports: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ports is None:
            self.ports = np.full((len(self.hosts), len(self.lids.ports)), -1, dtype=np.int32)


def _err(reason: str, file: str, line: int | None) -> NetsteerError:
    return NetsteerError(reason, file=file, field=f"line {line}" if line else None)


def parse_lft_dump(text: str, file: str = "<lfts>") -> list[SwitchBlock]:
    """Split a dump into switch blocks; checks syntax only.

    Raises
    ------
    NetsteerError
        On a line that is neither a header, an entry, a title, a footer, a blank
        nor a ``#`` comment; on an entry outside a block; on a LID that is not
        unicast, a port above 255, or a LID given twice in one block.
    """
    blocks: list[SwitchBlock] = []
    current: SwitchBlock | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or line in _TITLES or _FOOTER.match(line):
            continue
        if line.startswith("Multicast mlids"):
            raise _err("multicast forwarding tables are not unicast LFTs", file, lineno)
        if line.startswith("Unicast lids"):
            m = _HEADER.match(line)
            if not m:
                raise _err(
                    "cannot parse switch header; expected "
                    "\"Unicast lids [0-N] of switch Lid L guid 0xGUID ('name'):\"",
                    file,
                    lineno,
                )
            guid = int(m["guid"], 16)
            if guid == 0:
                raise _err("switch GUID is 0", file, lineno)
            current = SwitchBlock(guid, int(m["lid"] or 0), m["name"] or "", lineno)
            blocks.append(current)
            continue
        m = _ENTRY.match(line)
        if not m:
            raise _err(f"unrecognised line {line[:60]!r}", file, lineno)
        if current is None:
            raise _err("LFT entry before any 'Unicast lids' switch header", file, lineno)
        lid, port = int(m["lid"], 16), int(m["port"])
        if not 0 < lid <= MAX_UNICAST_LID:
            raise _err(f"LID {lid:#06x} is not a unicast LID (1..0xbfff)", file, lineno)
        if port > NO_PATH:
            raise _err(f"port {port} is above 255", file, lineno)
        if lid in current.entries:
            first = current.entries[lid].line
            raise _err(f"LID {lid:#06x} given twice for this switch (first on line {first})", file, lineno)
        g = _PORTGUID.search(m["rest"] or "")
        current.entries[lid] = DumpEntry(lid, port, int(g["guid"], 16) if g else 0, lineno)
    return blocks


def _bind(binding: dict[int, int], lid: int, node: int, topo: Topology, file: str, line: int) -> None:
    """Record that ``lid`` belongs to ``node``; one LID per node (LMC 0)."""
    old = binding.get(lid)
    if old is not None and old != node:
        raise _err(
            f"LID {lid:#06x} names {topo.node_names[node]} here but {topo.node_names[old]} elsewhere",
            file,
            line,
        )
    binding[lid] = node


def _lid_binding(
    blocks: list[SwitchBlock], topo: Topology, lids: LidMap | None, file: str
) -> tuple[dict[int, int], dict[int, int], dict[int, PortLid]]:
    """(LID -> node, switch GUID -> node, LID -> other CA port: second HCA ports)."""
    index = guid_index(topo)
    binding: dict[int, int] = {}
    others: dict[int, PortLid] = {}
    if lids is not None:
        for node, lid in enumerate(lids.lid):
            if lid > 0:
                binding[int(lid)] = node
        others = {p.lid: p for p in lids.ports}
    node_lid = {n: l for l, n in binding.items()}
    port_lid = {(p.node, p.port): p.lid for p in others.values()}
    switch_of: dict[int, int] = {}

    def bind(lid: int, node: int, line: int) -> None:
        if node_lid.setdefault(node, lid) != lid:
            raise _err(
                f"{topo.node_names[node]} has LID {lid:#06x} here but {node_lid[node]:#06x} "
                "elsewhere (LMC > 0 is not supported)",
                file,
                line,
            )
        if lid in others:
            o = others[lid]
            raise _err(f"LID {lid:#06x} names {topo.node_names[node]} here but "
                       f"{topo.node_names[o.node]} port {o.port} elsewhere", file, line)
        _bind(binding, lid, node, topo, file, line)

    def bind_port(lid: int, node: int, port: int, guid: int, line: int) -> None:
        where = f"{topo.node_names[node]} port {port}"
        if port_lid.setdefault((node, port), lid) != lid:
            raise _err(f"{where} has LID {lid:#06x} here but {port_lid[(node, port)]:#06x} "
                       "elsewhere (LMC > 0 is not supported)", file, line)
        owner = binding.get(lid)
        o = others.get(lid)
        if owner is not None or (o is not None and (o.node, o.port) != (node, port)):
            name = topo.node_names[owner] if owner is not None else f"{topo.node_names[o.node]} port {o.port}"
            raise _err(f"LID {lid:#06x} names {where} here but {name} elsewhere", file, line)
        others[lid] = PortLid(node, port, lid, guid)

    for b in blocks:
        hit = index.get(b.guid)
        if hit is None:
            raise _err(f"switch GUID {b.guid:#018x} is not in the topology", file, b.line)
        node = hit[0]
        if topo.node_kind[node] == HOST:
            raise _err(f"GUID {b.guid:#018x} is host {topo.node_names[node]}, not a switch", file, b.line)
        if node in switch_of.values():
            raise _err(f"switch {topo.node_names[node]} has a second table", file, b.line)
        switch_of[b.guid] = node
        if b.lid:
            bind(b.lid, node, b.line)
    for b in blocks:
        for e in b.entries.values():
            if not e.guid:
                continue
            hit = index.get(e.guid)
            if hit is None:
                raise _err(f"port GUID {e.guid:#018x} is not in the topology", file, e.line)
            node, port = hit
            if port != endpoint_port(topo, node):
                bind_port(e.lid, node, port, e.guid, e.line)  # e.g. a dual-port HCA's second port
                continue
            bind(e.lid, node, e.line)
    return binding, switch_of, others


def parse_lft_tables(
    text: str,
    topo: Topology,
    *,
    lids: LidMap | None = None,
    allow_missing: bool = False,
    file: str = "<lfts>",
) -> LftTables:
    """Parse dump text against ``topo``; see :func:`read_lft_tables`."""
    blocks = parse_lft_dump(text, file)
    binding, switch_of, others = _lid_binding(blocks, topo, lids, file)
    n = topo.n_nodes
    sw_col = np.full(n, -1, dtype=np.int64)
    sw_col[topo.switches] = np.arange(topo.n_switches)
    hosts = np.full((n, topo.n_hosts), -1, dtype=np.int32)
    switches = np.full((n, topo.n_switches), -1, dtype=np.int32)
    port_list = tuple(sorted(others.values(), key=lambda p: p.lid))
    port_col = {p.lid: k for k, p in enumerate(port_list)}
    ports = np.full((n, len(port_list)), -1, dtype=np.int32)
    for b in blocks:
        sw = switch_of[b.guid]
        for e in b.entries.values():
            if e.port == NO_PATH:
                continue
            if e.lid in port_col:
                o = port_list[port_col[e.lid]]
                if e.port == 0:
                    raise _err(f"port 0 (the switch itself) for LID {e.lid:#06x}, which is "
                               f"{topo.node_names[o.node]} port {o.port}", file, e.line)
                if e.port >= topo.out_channel.shape[1] or topo.out_channel[sw, e.port] < 0:
                    raise _err(f"port {e.port} of switch {topo.node_names[sw]} is not cabled", file, e.line)
                ports[sw, port_col[e.lid]] = e.port
                continue
            dst = binding.get(e.lid)
            if dst is None:
                raise _err(
                    f"LID {e.lid:#06x} belongs to no known port: the line names no "
                    "portguid and no LID map was given",
                    file,
                    e.line,
                )
            if e.port == 0:
                if dst != sw:
                    raise _err(
                        f"port 0 (the switch itself) for LID {e.lid:#06x}, which is "
                        f"{topo.node_names[dst]}",
                        file,
                        e.line,
                    )
            elif e.port >= topo.out_channel.shape[1] or topo.out_channel[sw, e.port] < 0:
                raise _err(f"port {e.port} of switch {topo.node_names[sw]} is not cabled", file, e.line)
            if topo.node_kind[dst] == HOST:
                hosts[sw, topo.host_index[dst]] = e.port
            else:
                switches[sw, sw_col[dst]] = e.port
    lid = np.zeros(n, dtype=np.int32)
    for l, node in binding.items():
        lid[node] = l
    guid = np.array([endpoint_guid(topo, v) if lid[v] else 0 for v in range(n)], dtype=np.uint64)
    if not allow_missing:
        _check_complete(blocks, topo, switch_of, hosts, lid, file)
    # entries for second HCA ports are read when present, never required: netsteer's
    # destinations are the endpoints, and dumps netsteer wrote before it routed
    # those ports have none
    return LftTables(hosts, switches, LidMap(lid, guid, port_list), ports)


def _check_complete(blocks, topo, switch_of, hosts, lid, file) -> None:
    have = set(switch_of.values())
    for sw in topo.switches:
        if int(sw) not in have:
            raise _err(f"no table for switch {topo.node_names[sw]}", file, None)
    for h in topo.hosts:
        if lid[h] == 0 and endpoint_port(topo, int(h)) > 0:
            raise _err(f"no LID for host {topo.node_names[h]} anywhere in the dump", file, None)
    for b in blocks:
        sw = switch_of[b.guid]
        missing = [int(h) for h in topo.hosts if lid[h] and hosts[sw, topo.host_index[h]] < 0]
        if missing:
            names = ", ".join(topo.node_names[h] for h in missing[:3])
            raise _err(
                f"switch {topo.node_names[sw]} has no entry for {len(missing)} host(s): {names}"
                f" (LID {int(lid[missing[0]]):#06x} first)",
                file,
                b.line,
            )


def read_lft_tables(
    path: str | Path, topo: Topology, *, lids: LidMap | None = None, allow_missing: bool = False
) -> LftTables:
    """Read a dump file (OpenSM's or ``ibroute``'s) against ``topo``.

    Parameters
    ----------
    path : str or Path
    topo : Topology
        Its ``node_guid`` must hold the fabric's GUIDs.
    lids : LidMap, optional
        Known LIDs; needed only when entries name no ``portguid``.
    allow_missing : bool
        Accept switches without a table and destinations without an entry.

    Raises
    ------
    NetsteerError
        Malformed line, unknown GUID, uncabled port, LID conflict, or (unless
        ``allow_missing``) a missing switch table or destination.
    """
    from ...inputs import read_text

    path = str(path)
    text = read_text(path, what="LFT dump")
    return parse_lft_tables(text, topo, lids=lids, allow_missing=allow_missing, file=path)


def read_lft_dump(
    path: str | Path, topo: Topology, *, lids: LidMap | None = None, allow_missing: bool = False
) -> tuple[np.ndarray, LidMap]:
    """Routes to hosts and the LIDs found: ``(lft [n_nodes, n_hosts], LidMap)``.

    See :func:`read_lft_tables` for the parameters and errors.
    """
    t = read_lft_tables(path, topo, lids=lids, allow_missing=allow_missing)
    return t.hosts, t.lids


def minhop_switch_lft(topo: Topology) -> np.ndarray:
    """Routes towards each switch's own LID: fewest hops, lowest port on ties.

    Only switches forward. Returns int32 ``[n_nodes, n_switches]``, -1 where a
    node cannot reach the switch, 0 on the diagonal. Netsteer's engines route host
    destinations; these entries let management traffic (``ibroute LID``, SA
    queries) reach switches when tables come from netsteer.
    """
    n = topo.n_nodes
    src, dst = topo.channel_src(), topo.channel_dst()
    sport = topo.channel_src_port()
    fwd = topo.node_kind[src] != HOST
    src, dst, sport = src[fwd], dst[fwd], sport[fwd]
    # visit channels in port order so the first parent found is the lowest port
    order = np.lexsort((sport, src))
    src, dst, sport = src[order], dst[order], sport[order]
    out = np.full((n, topo.n_switches), -1, dtype=np.int32)
    for col, target in enumerate(topo.switches):
        dist = np.full(n, -1, dtype=np.int64)
        dist[target] = 0
        out[target, col] = 0
        frontier = np.zeros(n, dtype=bool)
        frontier[target] = True
        level = 0
        while frontier.any():
            level += 1
            cand = frontier[dst] & (dist[src] < 0)
            s, p = src[cand], sport[cand]
            first = np.unique(s, return_index=True)[1]
            s, p = s[first], p[first]
            dist[s] = level
            out[s, col] = p
            frontier = np.zeros(n, dtype=bool)
            frontier[s] = True
    return out


def _switch_hops(topo: Topology, targets) -> np.ndarray:
    """Hops from every node to each switch in ``targets`` through switches only:
    int64 ``[len(targets), n_nodes]``, -1 where unreachable."""
    src, dst = topo.channel_src(), topo.channel_dst()
    fwd = topo.node_kind[src] != HOST
    src, dst = src[fwd], dst[fwd]
    out = np.full((len(targets), topo.n_nodes), -1, dtype=np.int64)
    for k, target in enumerate(targets):
        dist = out[k]
        dist[target] = 0
        frontier = np.zeros(topo.n_nodes, dtype=bool)
        frontier[target] = True
        level = 0
        while frontier.any():
            level += 1
            cand = frontier[dst] & (dist[src] < 0)
            s = np.unique(src[cand])
            dist[s] = level
            frontier = np.zeros(topo.n_nodes, dtype=bool)
            frontier[s] = True
    return out


def minhop_port_lft(topo: Topology, lids: LidMap, host_lft=None) -> np.ndarray:
    """Routes towards the other CA ports' LIDs (``lids.ports``), as OpenSM's min-hop does.

    OpenSM (``osm_switch_recommend_path``) walks the LIDs in order and, on each
    switch, picks among the ports with fewest hops to the destination the one that
    carries fewest routes so far (the lowest on ties), counting every CA
    destination's route; switch LIDs are not counted. Here the endpoints' routes
    are ``host_lft``'s (netsteer's engine chose them) and only the other ports'
    are chosen, in the same walk. Returns int32 ``[n_nodes, len(lids.ports)]``, -1
    where a node cannot reach the port (hosts do not forward).

    Parameters
    ----------
    host_lft : ``Routing``, or ndarray [n_nodes, n_hosts], optional
        The routes to the endpoints, counted as OpenSM counts its own; none when
        omitted.
    """
    n_ports = len(lids.ports)
    out = np.full((topo.n_nodes, n_ports), -1, dtype=np.int32)
    if not n_ports:
        return out
    sws = np.asarray(topo.switches, dtype=np.int64)
    width = topo.out_channel.shape[1]
    chan = topo.out_channel[sws]
    cabled = chan >= 0
    nbr = np.where(cabled, topo.channel_dst()[np.where(cabled, chan, 0)], -1)
    nbr_is_switch = cabled & (topo.node_kind[np.maximum(nbr, 0)] != HOST)
    counts = np.zeros((len(sws), width), dtype=np.int64)
    rows = np.arange(len(sws))
    host_rows = None
    if host_lft is not None:
        host_rows = np.asarray(host_lft.node_rows(sws) if hasattr(host_lft, "node_rows") else
                               np.asarray(host_lft)[sws])
    attach = []  # (switch, its port) each other CA port is cabled to
    for p in lids.ports:
        c = int(topo.out_channel[p.node, p.port])
        attach.append((int(topo.channel_dst()[c]), int(topo.channel_dst_port()[c])))
    targets = sorted({a for a, _ in attach})
    hops = _switch_hops(topo, targets)
    row_of_target = {t: k for k, t in enumerate(targets)}
    dests = [(int(l), "host", v) for v, l in enumerate(lids.lid) if l > 0 and topo.node_kind[v] == HOST]
    dests += [(p.lid, "port", k) for k, p in enumerate(lids.ports)]
    for _, kind, v in sorted(dests):
        if kind == "host":
            if host_rows is None:
                continue
            port = host_rows[:, topo.host_index[v]]
            ok = port > 0
            counts[rows[ok], port[ok]] += 1
            continue
        a, q = attach[v]
        d = hops[row_of_target[a]]
        d_sw = d[sws]
        # next hops one closer to the attached switch; on it, the cable to the port
        closer = nbr_is_switch & (d[np.maximum(nbr, 0)] == (d_sw - 1)[:, None]) & (d_sw > 0)[:, None]
        closer[sws == a] = False
        closer[sws == a, q] = True
        score = np.where(closer, counts, np.iinfo(np.int64).max)
        best = np.argmin(score, axis=1)  # first minimum: the lowest port
        ok = closer[rows, best]
        out[sws[ok], v] = best[ok]
        counts[rows[ok], best[ok]] += 1
    return out


def _node_type(topo: Topology, node: int) -> str:
    return "Channel Adapter" if topo.node_kind[node] == HOST else "Switch"


def format_lft_dump(
    topo: Topology,
    routing_lft: np.ndarray,
    lids: LidMap,
    switch_lft: np.ndarray | None = None,
    port_lft: np.ndarray | None = None,
) -> str:
    """Dump text, byte for byte as ``opensm -D 0x43`` writes ``opensm-lfts.dump``.

    Parameters
    ----------
    routing_lft : ``Routing``, or ndarray [n_nodes, n_hosts]
        Out-port per node per destination host, -1 for none (skipped); only
        switch rows are written (a ``Routing``'s compact rows are read as they are).
    lids : LidMap
        Every switch and every routed host needs a LID.
    switch_lft : ndarray, [n_nodes, n_switches], optional
        Routes to switch LIDs; :func:`minhop_switch_lft` when omitted.
    port_lft : ndarray, [n_nodes, len(lids.ports)], optional
        Routes to the other CA ports' LIDs (second HCA ports);
        :func:`minhop_port_lft` when omitted, so every port with a LID is reachable
        and the header's highest LID is OpenSM's.
    """
    if hasattr(routing_lft, "row_of"):  # a Routing: rows of the nodes that have one
        table, row_of, shape = routing_lft.table, routing_lft.row_of, routing_lft.shape
    else:
        table = np.asarray(routing_lft)
        row_of, shape = np.arange(len(table)), table.shape
    if (table < -1).any():
        raise ValueError("ECMP group entries (< -1) cannot be written to an LFT; pick one port")
    if shape != (topo.n_nodes, topo.n_hosts):
        raise ValueError(f"routing_lft has shape {shape}, expected {(topo.n_nodes, topo.n_hosts)}")
    if switch_lft is None:
        switch_lft = minhop_switch_lft(topo)
    if np.asarray(switch_lft).shape != (topo.n_nodes, topo.n_switches):
        raise ValueError(f"switch_lft has shape {np.shape(switch_lft)}")
    missing = [topo.node_names[s] for s in topo.switches if lids.lid[s] <= 0]
    if missing:
        raise ValueError(f"switches without a LID: {missing[:5]}")
    if port_lft is None:
        port_lft = minhop_port_lft(topo, lids, routing_lft)
    if np.asarray(port_lft).shape != (topo.n_nodes, len(lids.ports)):
        raise ValueError(f"port_lft has shape {np.shape(port_lft)}, expected {(topo.n_nodes, len(lids.ports))}")
    sw_col = {int(s): i for i, s in enumerate(topo.switches)}
    # (LID, node, column in port_lft or -1 for an endpoint)
    dests = sorted([(int(l), v, -1) for v, l in enumerate(lids.lid) if l > 0]
                   + [(p.lid, p.node, k) for k, p in enumerate(lids.ports)])
    max_lid = dests[-1][0] if dests else 0
    out: list[str] = []
    no_row = np.full(topo.n_hosts, -1, dtype=np.int32)
    for sw in topo.switches:
        sw = int(sw)
        name = topo.node_names[sw]
        row = table[row_of[sw]] if row_of[sw] >= 0 else no_row
        out.append(
            f"Unicast lids [0-{max_lid}] of switch Lid {int(lids.lid[sw])} "
            f"guid 0x{int(topo.node_guid[sw]):016x} ('{name}'):"
        )
        for lid, v, col in dests:
            if col >= 0:
                port = int(port_lft[sw, col])
            elif v == sw:
                port = 0
            elif topo.node_kind[v] == HOST:
                port = int(row[topo.host_index[v]])
            else:
                port = int(switch_lft[sw, sw_col[v]])
            if port < 0:
                continue
            if port != 0 and (port >= topo.out_channel.shape[1] or topo.out_channel[sw, port] < 0):
                raise ValueError(f"{name} routes LID {lid} to port {port}, which is not cabled")
            guid = lids.ports[col].guid if col >= 0 else int(lids.guid[v])
            out.append(
                f"0x{lid:04x} {port:03d} # {_node_type(topo, v)} portguid "
                f"0x{guid:016x}: '{topo.node_names[v]}'"
            )
        out.append(f"{max_lid} lids dumped")
    return "\n".join(out) + "\n"


def write_lft_dump(
    topo: Topology,
    routing_lft: np.ndarray,
    lids: LidMap,
    path: str | Path,
    switch_lft: np.ndarray | None = None,
    port_lft: np.ndarray | None = None,
) -> None:
    """Write :func:`format_lft_dump` output to ``path`` (for ``opensm -R file -U``)."""
    Path(path).write_text(format_lft_dump(topo, routing_lft, lids, switch_lft, port_lft), encoding="utf-8")
