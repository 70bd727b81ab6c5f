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
    "lid_tables",
    "endpoint_reach",
    "endpoint_down_links",
    "endpoint_arrivals",
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
    _check_own_port(blocks, topo, switch_of, hosts, lid, file)
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
    reach = endpoint_reach(topo)
    row = {int(v): k for k, v in enumerate(topo.switches)}
    for b in blocks:
        sw = switch_of[b.guid]
        missing = [int(h) for h in topo.hosts
                   if lid[h] and hosts[sw, topo.host_index[h]] < 0 and reach[row[sw], topo.host_index[h]]]
        if missing:
            names = ", ".join(topo.node_names[h] for h in missing[:3])
            raise _err(
                f"switch {topo.node_names[sw]} has no entry for {len(missing)} host(s): {names}"
                f" (LID {int(lid[missing[0]]):#06x} first)",
                file,
                b.line,
            )


def _check_own_port(blocks, topo, switch_of, hosts, lid, file) -> None:
    """Refuse an entry for a host's LID whose route ends at another port of the host:
    that port drops the packets (a LID is one port's; :func:`endpoint_arrivals`)."""
    sws = np.asarray(topo.switches, dtype=np.int64)
    arrive = endpoint_arrivals(topo, hosts[sws])
    ep = np.array([endpoint_port(topo, int(v)) for v in topo.hosts], dtype=np.int64)
    wrong = (arrive >= 0) & (arrive != ep[None, :]) & (lid[np.asarray(topo.hosts)] > 0)[None, :]
    if not wrong.any():
        return
    k, h = (int(x) for x in np.argwhere(wrong)[0])
    sw, v = int(sws[k]), int(topo.hosts[h])
    block = next(b for b in blocks if switch_of[b.guid] == sw)
    entry = block.entries.get(int(lid[v]))
    name = topo.node_names[v]
    raise _err(f"switch {topo.node_names[sw]} sends LID {int(lid[v]):#06x} ({name} port {ep[h]}) out of port "
               f"{int(hosts[sw, h])}, a route that ends at {name} port {int(arrive[k, h])}, which drops packets "
               f"for another port's LID ({int(wrong.sum())} such entries)", file,
               entry.line if entry is not None else block.line)


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


def endpoint_arrivals(topo: Topology, sw_rows: np.ndarray, hosts=None, chunk: int = 1024) -> np.ndarray:
    """The port of each destination host at which each switch's route for it arrives.

    ``sw_rows`` are the switches' entries (``[n_switches, n_hosts]``, ``topo.switches``
    order, host index columns); only switches forward (an HCA drops what is not for
    its own port). Returns int32 ``[n_switches, len(hosts)]``: the host's port, -1
    where the route stops short (no entry, an uncabled port), -2 where it reaches
    another host, -3 where it loops. An LFT entry for a CA port's LID is right only
    where this is that port: InfiniBand gives each port its own LID, and a port drops
    packets addressed to another.

    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=0)
    >>> endpoint_arrivals(t, np.array([[1, 2]], dtype=np.int32)).tolist()
    [[1, 1]]
    >>> endpoint_arrivals(t, np.array([[2, -1]], dtype=np.int32)).tolist()
    [[-2, -1]]
    """
    sws = np.asarray(topo.switches, dtype=np.int64)
    hosts = np.arange(topo.n_hosts) if hosts is None else np.asarray(hosts, dtype=np.int64)
    n_sw, width = len(sws), topo.out_channel.shape[1]
    row_of = np.full(topo.n_nodes, -1, dtype=np.int64)
    row_of[sws] = np.arange(n_sw)
    cabled = topo.out_channel >= 0
    ch = np.where(cabled, topo.out_channel, 0)
    nbr = np.where(cabled, topo.channel_dst()[ch], -1) if topo.n_links else np.full(cabled.shape, -1)
    nport = np.where(cabled, topo.channel_dst_port()[ch], -1) if topo.n_links else np.full(cabled.shape, -1)
    out = np.full((n_sw, len(hosts)), -1, dtype=np.int32)
    rows = np.asarray(sw_rows)
    for lo in range(0, len(hosts), chunk):
        cols = hosts[lo:lo + chunk]
        dst_node = np.asarray(topo.hosts, dtype=np.int64)[cols]
        cur = np.repeat(sws[:, None], len(cols), axis=1)
        col = np.broadcast_to(cols[None, :], cur.shape)
        dnode = np.broadcast_to(dst_node[None, :], cur.shape)
        res = np.full(cur.shape, -3, dtype=np.int32)
        active = np.ones(cur.shape, dtype=bool)
        for _ in range(n_sw + 1):
            if not active.any():
                break
            i = np.flatnonzero(active.ravel())
            c = cur.ravel()[i]
            port = rows[row_of[c], col.ravel()[i]].astype(np.int64)
            ok = (port > 0) & (port < width)
            nxt = np.where(ok, nbr[c, np.where(ok, port, 0)], -1)
            at = np.where(ok, nport[c, np.where(ok, port, 0)], -1)
            stop = nxt < 0
            is_host = ~stop & (topo.node_kind[np.maximum(nxt, 0)] == HOST)
            r = res.ravel()
            r[i[stop]] = -1
            mine = is_host & (nxt == dnode.ravel()[i])
            r[i[mine]] = at[mine]
            r[i[is_host & ~mine]] = -2
            done = stop | is_host
            active.ravel()[i[done]] = False
            cur.ravel()[i[~done]] = nxt[~done]
        out[:, lo:lo + chunk] = res
    return out


def endpoint_reach(topo: Topology) -> np.ndarray:
    """bool ``[n_switches, n_hosts]``: whether the switch reaches the host's endpoint
    port through switches (HCAs do not forward). Not so across the rails of a
    multi-rail fabric: there OpenSM leaves the entry out, and so does netsteer."""
    ep = [endpoint_port(topo, int(v)) for v in topo.hosts]
    att = np.full(topo.n_hosts, -1, dtype=np.int64)
    for h, v in enumerate(topo.hosts):
        if ep[h] > 0:
            c = int(topo.out_channel[int(v), ep[h]])
            att[h] = int(topo.channel_dst()[c])
    ok = att >= 0
    ok[ok] = topo.node_kind[att[ok]] != HOST
    targets = sorted(set(att[ok].tolist()))
    out = np.zeros((topo.n_switches, topo.n_hosts), dtype=bool)
    if targets:
        hops = _switch_hops(topo, targets)[:, np.asarray(topo.switches)]
        k = {t: i for i, t in enumerate(targets)}
        cols = np.flatnonzero(ok)
        out[:, cols] = hops[[k[int(a)] for a in att[cols]]].T >= 0
    return out


def endpoint_down_links(topo: Topology) -> np.ndarray:
    """The cables of hosts' ports other than their endpoints: what an LFT cannot use
    (packets go to a LID's own port, and leave from the sender's endpoint), as
    ``down_links`` for a :class:`~netsteer.routing.table.Routing` read from a dump."""
    ends = []
    for v in topo.hosts:
        v = int(v)
        e = endpoint_port(topo, v)
        for p in np.flatnonzero(topo.out_channel[v] >= 0):
            if int(p) != e:
                ends.append(int(topo.out_channel[v, p]) // 2)
    return np.array(sorted(set(ends)), dtype=np.int64)


def lid_tables(topo: Topology, lids: LidMap, host_lft=None):
    """The LFT entries for every CA port's LID, each ending at that port.

    InfiniBand gives every cabled CA port its own LID, and a port drops packets for
    another port's LID. netsteer's engines route each *host*, and on a host with
    several cabled ports (multi-rail) a route may end at any of them. So the entries
    for a host's endpoint LID (:func:`~netsteer.drivers.opensm.guids.endpoint_port`,
    its lowest cabled port) are the engine's wherever its route ends at that port,
    and elsewhere (``changed``) a min-hop route to that port; the other ports' LIDs
    (``lids.ports``) get min-hop routes. Min-hop as OpenSM's
    (``osm_switch_recommend_path``): walking the LIDs in order, each switch takes
    among the ports with fewest hops to the destination the one that carries fewest
    routes so far (the lowest on ties), counting every CA destination's route.

    A switch whose engine route ends at the endpoint port passes only switches whose
    routes do too, and a min-hop step gets one hop closer, so the result is loop-free.

    Parameters
    ----------
    host_lft : ``Routing``, or ndarray [n_nodes, n_hosts], optional
        The engine's routes to the hosts; none when omitted (endpoint LIDs then have
        no entries, and are not counted).

    Returns
    -------
    hosts : ndarray of int32, [n_switches, n_hosts]
        Entries for each host's endpoint LID, switches in ``topo.switches`` order.
    ports : ndarray of int32, [n_nodes, len(lids.ports)]
        Entries for the other CA ports' LIDs (:func:`minhop_port_lft`).
    changed : ndarray of bool, [n_switches, n_hosts]
        The engine's entries replaced because they ended at another port of the host.
    """
    sws = np.asarray(topo.switches, dtype=np.int64)
    n_ports = len(lids.ports)
    out = np.full((topo.n_nodes, n_ports), -1, dtype=np.int32)
    if host_lft is None:
        host_rows = np.full((len(sws), topo.n_hosts), -1, dtype=np.int32)
    else:
        host_rows = np.array(host_lft.node_rows(sws) if hasattr(host_lft, "node_rows") else
                             np.asarray(host_lft)[sws], dtype=np.int32)
    ep = np.array([endpoint_port(topo, int(v)) for v in topo.hosts], dtype=np.int64)
    arrive = endpoint_arrivals(topo, host_rows) if host_lft is not None else \
        np.full(host_rows.shape, -1, dtype=np.int32)
    changed = (arrive >= 0) & (arrive != ep[None, :])
    fix_hosts = np.flatnonzero(changed.any(axis=0))
    if not n_ports and not fix_hosts.size:
        return host_rows, out, changed
    width = topo.out_channel.shape[1]
    chan = topo.out_channel[sws]
    cabled = chan >= 0
    nbr = np.where(cabled, topo.channel_dst()[np.where(cabled, chan, 0)], -1)
    nbr_is_switch = cabled & (topo.node_kind[np.maximum(nbr, 0)] != HOST)
    counts = np.zeros((len(sws), width), dtype=np.int64)
    rows = np.arange(len(sws))

    def attached(node: int, port: int) -> tuple[int, int]:
        c = int(topo.out_channel[node, port])
        return int(topo.channel_dst()[c]), int(topo.channel_dst_port()[c])

    attach = [attached(p.node, p.port) for p in lids.ports]  # (switch, its port) per other CA port
    host_attach = {int(h): attached(int(topo.hosts[h]), int(ep[h])) for h in fix_hosts}
    targets = sorted({a for a, _ in attach} | {a for a, _ in host_attach.values()})
    hops = _switch_hops(topo, targets)
    row_of_target = {t: k for k, t in enumerate(targets)}

    def minhop(a: int, q: int, where: np.ndarray) -> np.ndarray:
        """Per switch, the min-hop port towards switch ``a``'s port ``q``, -1 for none;
        only on the switches of ``where``; counted."""
        d = hops[row_of_target[a]]
        d_sw = d[sws]
        closer = nbr_is_switch & (d[np.maximum(nbr, 0)] == (d_sw - 1)[:, None]) & (d_sw > 0)[:, None]
        closer[sws == a] = False
        closer[sws == a, q] = True
        closer &= where[:, None]
        score = np.where(closer, counts, np.iinfo(np.int64).max)
        best = np.argmin(score, axis=1)  # first minimum: the lowest port
        ok = closer[rows, best]
        got = np.full(len(sws), -1, dtype=np.int32)
        got[ok] = best[ok]
        counts[rows[ok], best[ok]] += 1
        return got

    dests = [(int(l), "host", v) for v, l in enumerate(lids.lid) if l > 0 and topo.node_kind[v] == HOST]
    dests += [(p.lid, "port", k) for k, p in enumerate(lids.ports)]
    for _, kind, v in sorted(dests):
        if kind == "host":
            h = int(topo.host_index[v])
            if host_lft is None:
                continue
            port = host_rows[:, h]
            keep = (port > 0) & ~changed[:, h]
            counts[rows[keep], port[keep]] += 1
            if h in host_attach and topo.node_kind[host_attach[h][0]] != HOST:
                host_rows[:, h] = np.where(changed[:, h], minhop(*host_attach[h], changed[:, h]), port)
            continue
        a, q = attach[v]
        got = minhop(a, q, np.ones(len(sws), dtype=bool))
        ok = got >= 0
        out[sws[ok], v] = got[ok]
    return host_rows, out, changed


def minhop_port_lft(topo: Topology, lids: LidMap, host_lft=None) -> np.ndarray:
    """Routes towards the other CA ports' LIDs (``lids.ports``), as OpenSM's min-hop does.

    OpenSM (``osm_switch_recommend_path``) walks the LIDs in order and, on each
    switch, picks among the ports with fewest hops to the destination the one that
    carries fewest routes so far (the lowest on ties), counting every CA
    destination's route; switch LIDs are not counted. Here the endpoints' routes
    are ``host_lft``'s (netsteer's engine chose them; those that end at another port
    of the host are min-hop ones, :func:`lid_tables`) and only the other ports'
    are chosen, in the same walk. Returns int32 ``[n_nodes, len(lids.ports)]``, -1
    where a node cannot reach the port (hosts do not forward).

    Parameters
    ----------
    host_lft : ``Routing``, or ndarray [n_nodes, n_hosts], optional
        The routes to the endpoints, counted as OpenSM counts its own; none when
        omitted.
    """
    return lid_tables(topo, lids, host_lft)[1]


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
        switch rows are written (a ``Routing``'s compact rows are read as they are),
        at each host's endpoint LID, and only where the route ends at that port;
        elsewhere a min-hop route to it (:func:`lid_tables`).
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
    # each endpoint LID's entries end at its port (lid_tables); the other CA ports' too
    sw_rows, auto_ports, _ = lid_tables(topo, lids, routing_lft)
    if port_lft is None:
        port_lft = auto_ports
    if np.asarray(port_lft).shape != (topo.n_nodes, len(lids.ports)):
        raise ValueError(f"port_lft has shape {np.shape(port_lft)}, expected {(topo.n_nodes, len(lids.ports))}")
    sw_col = {int(s): i for i, s in enumerate(topo.switches)}
    # (LID, node, column in port_lft or -1 for an endpoint)
    dests = sorted([(int(l), v, -1) for v, l in enumerate(lids.lid) if l > 0]
                   + [(p.lid, p.node, k) for k, p in enumerate(lids.ports)])
    max_lid = dests[-1][0] if dests else 0
    out: list[str] = []
    for k, sw in enumerate(topo.switches):
        sw = int(sw)
        name = topo.node_names[sw]
        row = sw_rows[k]
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
