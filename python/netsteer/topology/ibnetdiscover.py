"""Read ``ibnetdiscover`` output (the topology of a real or simulated InfiniBand fabric).

The format, as ``ibnetdiscover`` prints it::

    switchguid=0x200000(200000)
    Switch  8 "S-0000000000200000"   # "Switch1" base port 0 lid 1 lmc 0
    [1]     "H-0000000000100000"[1](100001)   # "Hca1" lid 2 4xQDR
    [3]     "S-0000000000200001"[3]           # "Switch2" lid 3 4xQDR

    caguid=0x100000
    Ca      2 "H-0000000000100000"   # "Hca1"
    [1](100001)  "S-0000000000200000"[1]   # lid 2 lmc 0 "Switch1" lid 1 4xQDR

Switches become SWITCH nodes and channel adapters (``Ca``) become hosts; node
levels are unknown (-1). The GUID comes from the ``S-``/``H-`` identifier, else
from the ``switchguid=``/``caguid=`` line before the block. Nodes are named by their
quoted description (``NodeDescription``); a description held by several nodes gets
the identifier appended (``"mlx5_0 H-0002c90300a1b2c4"``), and a node without one is
named by its identifier.

Link bandwidth is the *data* rate of the ``<width>x<speed>`` at the end of a port
line: lanes times the per-lane data rate after line coding, 8b/10b for SDR, DDR and
QDR (2, 4, 8 Gbit/s per lane) and 64b/66b from FDR10 on (FDR10 10.0, FDR 13.64,
EDR 25, HDR 50, NDR 100, XDR 200 Gbit/s per lane), so ``4xQDR`` is 32 Gbit/s.
When the two ends of a cable disagree, the lower rate wins.

Examples
--------
>>> ib_rate(4, "QDR")
32000000000.0
>>> ib_rate_for(100e9)
(4, 'EDR')
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import NetsteerError
from ..inputs import file_label
from .model import HOST, SWITCH, Topology, TopologyBuilder

#: Above this LIDs are multicast.
MAX_UNICAST_LID = 0xBFFF

#: Default cable latency of imported fabrics: a few metres of copper plus a switch hop.
DEFAULT_LATENCY_NS = 100

#: Per-lane data rate in Gbit/s, after 8b/10b (SDR-QDR) or 64b/66b (FDR10 on).
LANE_GBPS = {
    "SDR": 2.0, "DDR": 4.0, "QDR": 8.0,
    "FDR10": 10.3125 * 64 / 66, "FDR": 14.0625 * 64 / 66,
    "EDR": 25.0, "HDR": 50.0, "NDR": 100.0, "XDR": 200.0,
}
WIDTHS = (1, 2, 4, 8, 12)
# Rates ibsim 0.10 understands, for writers that must stay within them.
IBSIM_SPEEDS = ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR")
IBSIM_WIDTHS = (1, 4, 8, 12)


def ib_rate(width: int, speed: str) -> float:
    """Data rate in bits/s of a ``width`` x ``speed`` link.

    >>> ib_rate(12, "EDR")
    300000000000.0
    """
    if width not in WIDTHS:
        raise ValueError(f"link width {width}x is not one of {', '.join(f'{w}x' for w in WIDTHS)}")
    if speed not in LANE_GBPS:
        raise ValueError(f"link speed {speed!r} is not one of {', '.join(LANE_GBPS)}")
    return width * LANE_GBPS[speed] * 1e9


def ib_rate_for(
    bandwidth: float,
    widths: tuple[int, ...] = IBSIM_WIDTHS,
    speeds: tuple[str, ...] = IBSIM_SPEEDS,
) -> tuple[int, str]:
    """The (width, speed) whose data rate is nearest ``bandwidth`` (by ratio).

    Ties go to the width nearest 4x (the common cable), then to the faster lanes.

    >>> ib_rate_for(32e9)
    (4, 'QDR')
    >>> ib_rate_for(10e9)  # 1xFDR10: 10.3125 Gbaud x 64/66 = 10.0 Gbit/s of data
    (1, 'FDR10')
    """
    best = min(
        (round(abs(math.log(ib_rate(w, s) / bandwidth)), 9), abs(w - 4), -LANE_GBPS[s], w, s)
        for w in widths for s in speeds
    )
    return best[3], best[4]


# -- shared by the ibnetdiscover and ibsim readers --------------------------------------
@dataclass
class NodeRec:
    """One ``Switch``/``Ca`` block as read."""

    kind: int
    ident: str
    desc: str
    nports: int
    guid: int
    where: tuple[str, int]  # (file, line) of the header


@dataclass
class PortRec:
    """One port line: ``node``'s ``port`` is cabled to ``remote``'s ``rport``."""

    node: int
    port: int
    remote: str
    rport: int
    bandwidth: float | None
    where: tuple[str, int]
    extra: dict = field(default_factory=dict)


def fail(reason: str, where: tuple[str, int]) -> NetsteerError:
    """A NetsteerError naming the file and line of ``where``."""
    return NetsteerError(reason, file=where[0], field=f"line {where[1]}")


def c_int(token: str, where: tuple[str, int]) -> int:
    """An integer as C's ``strtoul(s, 0, 0)`` reads it: ``0x`` hex, leading ``0`` octal.

    >>> c_int("0x1f", ("f", 1)), c_int("017", ("f", 1)), c_int("12", ("f", 1))
    (31, 15, 12)
    """
    try:
        if token[:2].lower() == "0x":
            return int(token[2:], 16)
        if len(token) > 1 and token.startswith("0"):
            return int(token[1:], 8)
        return int(token, 10)
    except ValueError:
        raise fail(f"{token!r} is not a number (0x.. hex, 0.. octal or decimal)", where) from None


def unique_names(nodes: list[NodeRec]) -> list[str]:
    """Descriptions as names; shared or empty ones fall back to the identifier."""
    count: dict[str, int] = {}
    for n in nodes:
        count[n.desc] = count.get(n.desc, 0) + 1
    names = []
    for n in nodes:
        if not n.desc:
            names.append(n.ident)
        elif count[n.desc] > 1:
            names.append(f"{n.desc} {n.ident}")
        else:
            names.append(n.desc)
    # an identifier can still equal someone's description: number the leftovers
    seen: set[str] = set()
    out = []
    for nm in names:
        cand, k = nm, 2
        while cand in seen:
            cand, k = f"{nm} ({k})", k + 1
        seen.add(cand)
        out.append(cand)
    return out


def assemble(
    nodes: list[NodeRec],
    ports: list[PortRec],
    *,
    name: str,
    kind: str,
    file: str,
    link_latency_ns: int,
    rate_of=None,
) -> Topology:
    """Check both ends of every cable agree and build the Topology.

    ``rate_of(a, b)`` (two PortRecs, ``b`` may be None) returns the link bandwidth;
    by default the lower of the two ends' ``bandwidth``.
    """
    if not nodes:
        raise NetsteerError("no Switch or Ca blocks found", file=file)
    index = {}
    for i, n in enumerate(nodes):
        if n.ident in index:
            first = nodes[index[n.ident]].where
            raise fail(f'node "{n.ident}" is defined twice (first at {first[0]} line {first[1]})',
                       n.where)
        index[n.ident] = i
    guid_of: dict[int, NodeRec] = {}
    for n in nodes:  # two nodes on one GUID: route's tables would name both on one port GUID
        if n.guid and n.guid in guid_of:
            first = guid_of[n.guid]
            raise fail(f'GUID {n.guid:#x} of "{n.ident}" is "{first.ident}"\'s ({first.where[0]} line '
                       f'{first.where[1]})', n.where)
        guid_of.setdefault(n.guid, n)
    at: dict[tuple[int, int], PortRec] = {}
    for p in ports:
        if (p.node, p.port) in at:
            raise fail(f'port {p.port} of "{nodes[p.node].ident}" is listed twice', p.where)
        at[(p.node, p.port)] = p

    b = TopologyBuilder(name)
    for nm, n in zip(unique_names(nodes), nodes):
        if n.kind == HOST:
            b.add_host(nm, guid=n.guid)
        else:
            b.add_switch(nm, level=-1, guid=n.guid)
    done: set[tuple[int, int]] = set()
    for p in ports:
        if (p.node, p.port) in done:
            continue
        r = index.get(p.remote)
        if r is None:
            raise fail(f'port {p.port} of "{nodes[p.node].ident}" is cabled to "{p.remote}", '
                       "which has no Switch or Ca block", p.where)
        if p.rport > nodes[r].nports:
            raise fail(f'port {p.port} of "{nodes[p.node].ident}" is cabled to port {p.rport} '
                       f'of "{p.remote}", which has only {nodes[r].nports} ports', p.where)
        q = at.get((r, p.rport))
        if q is not None and (index.get(q.remote) != p.node or q.rport != p.port):
            raise fail(f'port {p.port} of "{nodes[p.node].ident}" says it is cabled to port '
                       f'{p.rport} of "{p.remote}", but that port says it is cabled to port '
                       f'{q.rport} of "{q.remote}" ({q.where[0]} line {q.where[1]})', p.where)
        if r == p.node:
            raise fail(f'port {p.port} of "{p.remote}" is cabled to the same node', p.where)
        bw = rate_of(p, q) if rate_of else _lower(p, q)
        if bw is None:
            raise fail(f'port {p.port} of "{nodes[p.node].ident}" has no link rate '
                       "(such as 4xQDR) and no default bandwidth was given", p.where)
        b.add_link(p.node, r, bandwidth=bw, latency_ns=link_latency_ns,
                   a_port=p.port, b_port=p.rport)
        done.add((p.node, p.port))
        done.add((r, p.rport))
    b.meta = {
        "kind": kind,
        "path": file,
        "ident": [n.ident for n in nodes],
    }
    return b.build()


def _lower(p: PortRec, q: PortRec | None) -> float | None:
    rates = [x.bandwidth for x in (p, q) if x is not None and x.bandwidth is not None]
    return min(rates) if rates else None


# -- ibnetdiscover ------------------------------------------------------------------------
_HEADER = re.compile(r'^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]*)"\s*(.*)$')
_PORT = re.compile(
    r'^\[(\d+)\](?:\[ext\s+\d+\])?\s*(?:\(([0-9a-fA-F]+)\))?\s*'
    r'"([^"]*)"\s*\[(\d+)\](?:\[ext\s+\d+\])?\s*(?:\(([0-9a-fA-F]+)\))?\s*(.*)$'
)
_DESC = re.compile(r'^#\s*"([^"]*)"')
_RATE = re.compile(r"\b(\d+)x([A-Za-z0-9?]+)\b")
_GUID_ID = re.compile(r"^[SHR]-([0-9a-fA-F]{1,16})$")
_SWITCH_LID = re.compile(r"\bbase port \d+ lid (\d+)\b")
_CA_LID = re.compile(r"^#\s*lid (\d+)\b")  # a CA port line names its own LID first
_GUID_LINE = re.compile(r"^(switchguid|caguid)\s*=\s*(0x[0-9a-fA-F]+|[0-9]+)")


def parse_rate(tail: str, where: tuple[str, int]) -> float | None:
    """Bandwidth of the last ``<width>x<speed>`` after the last quote of ``tail``."""
    tail = tail.rsplit('"', 1)[-1]
    found = _RATE.findall(tail)
    if not found:
        return None
    width, speed = int(found[-1][0]), found[-1][1].upper()
    try:
        return ib_rate(width, speed)
    except ValueError as e:
        raise fail(f"bad link rate {width}x{found[-1][1]}: {e}", where) from None


def read_ibnetdiscover(
    path: str | Path,
    *,
    link_latency_ns: int = DEFAULT_LATENCY_NS,
    default_bandwidth: float | None = None,
    name: str | None = None,
) -> Topology:
    """Read an ``ibnetdiscover`` topology file.

    Parameters
    ----------
    path : str or Path
    link_latency_ns : int
        Latency given to every cable (the file has none).
    default_bandwidth : float, optional
        Bits/s for a cable whose port lines carry no ``<width>x<speed>``; without
        it such a cable is an error.
    name : str, optional
        Defaults to the file's stem.

    Returns
    -------
    Topology
        Hosts (``Ca``) and switches with level -1, ``node_guid`` set; ``meta`` holds
        ``kind="ibnetdiscover"``, ``path``, ``ident`` (the ``S-``/``H-`` identifier
        of each node) and ``lid`` (the LID of each node's endpoint as the fabric
        has it: a switch's ``base port 0 lid``, a CA's lowest cabled port's own
        ``lid``; 0 where the file has none) and ``port_lids`` (``{node: {port:
        LID}}`` of every CA port that has one, second HCA ports included).

    Raises
    ------
    NetsteerError
        Naming the file and line: unreadable lines inside a block, a cable to a node
        not in the file, two ends that disagree, a port beyond the node's count,
        an unknown rate, router (``Rt``) nodes, a LID above 0xbfff or given to two ports.

    Examples
    --------
    >>> import tempfile, os
    >>> text = '''Switch 4 "S-000000000000000a" # "sw" base port 0 lid 1 lmc 0
    ... [1] "H-0000000000000001"[1](2) # "node1 mlx4_0" lid 2 4xQDR
    ...
    ... Ca 1 "H-0000000000000001" # "node1 mlx4_0"
    ... [1](2) "S-000000000000000a"[1] # lid 2 lmc 0 "sw" lid 1 4xQDR
    ... '''
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "fabric.txt")
    ...     _ = open(p, "w").write(text)
    ...     t = read_ibnetdiscover(p)
    >>> t.node_names, t.n_links, float(t.link_bandwidth[0]), hex(int(t.node_guid[0]))
    (['sw', 'node1 mlx4_0'], 1, 32000000000.0, '0xa')
    >>> t.meta["lid"]
    [1, 2]
    """
    file = str(path)
    lines = _read_lines(path)
    nodes: list[NodeRec] = []
    ports: list[PortRec] = []
    port_lids: dict[tuple[int, int], tuple[int, tuple[str, int]]] = {}  # (node, port) -> (LID, where)
    guid_line = 0
    current = -1
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        where = (file, no)
        if not line:
            current = -1
            continue
        if line.startswith("#"):
            continue
        m = _GUID_LINE.match(line)
        if m:
            guid_line = c_int(m.group(2), where)
            if guid_line >= 2**64:
                raise fail(f"GUID {m.group(2)} does not fit in 64 bits", where)
            continue
        m = _HEADER.match(line)
        if m:
            kind_s, nports, ident, tail = m.groups()
            if kind_s == "Rt":
                raise fail("router nodes (Rt) are not supported", where)
            nports = int(nports)
            if not 1 <= nports <= 255:
                raise fail(f"a node has 1 to 255 ports, not {nports}", where)
            if not ident:
                raise fail("empty node identifier", where)
            g = _GUID_ID.match(ident)
            d = _DESC.match(tail)
            if kind_s == "Switch":
                lm = _SWITCH_LID.search(tail)
                if lm:
                    port_lids[(len(nodes), 0)] = (_lid(lm.group(1), where), where)
            nodes.append(NodeRec(HOST if kind_s == "Ca" else SWITCH, ident,
                                 d.group(1).strip() if d else "", nports,
                                 int(g.group(1), 16) if g else guid_line, where))
            guid_line = 0
            current = len(nodes) - 1
            continue
        if line.startswith("["):
            if current < 0:
                raise fail("port line outside a Switch or Ca block", where)
            m = _PORT.match(line)
            if not m:
                raise fail('cannot read port line; expected [port] "remote-id"[port] ...', where)
            port, rport = int(m.group(1)), int(m.group(4))
            n = nodes[current]
            if not 1 <= port <= n.nports:
                raise fail(f'port {port} of "{n.ident}" is outside 1..{n.nports}', where)
            if rport < 1:
                raise fail(f"remote port {rport} must be >= 1", where)
            if n.kind == HOST:
                lm = _CA_LID.match(m.group(6))
                if lm:
                    port_lids[(current, port)] = (_lid(lm.group(1), where), where)
            ports.append(PortRec(current, port, m.group(3), rport,
                                 parse_rate(m.group(6), where) or default_bandwidth, where))
            continue
        if "=" in line.split()[0]:
            continue  # vendid=, devid=, sysimgguid= ...
        raise fail(f"cannot read line {line[:40]!r}; expected Switch, Ca, a port line "
                   "or key=value", where)
    topo = assemble(nodes, ports, name=name or file_label(file), kind="ibnetdiscover",
                    file=file, link_latency_ns=link_latency_ns)
    topo.meta["lid"] = _endpoint_lids(topo, port_lids)
    ca_lids: dict[int, dict[int, int]] = {}
    for (n, port), (value, _) in port_lids.items():
        if port > 0 and value > 0:
            ca_lids.setdefault(n, {})[port] = value
    if ca_lids:
        topo.meta["port_lids"] = ca_lids
    return topo


def _lid(text: str, where: tuple[str, int]) -> int:
    lid = int(text)
    if lid > MAX_UNICAST_LID:
        raise fail(f"LID {lid} is not a unicast LID (0..{MAX_UNICAST_LID})", where)
    return lid


def _endpoint_lids(topo: Topology, port_lids: dict) -> list[int]:
    """LID of each node's endpoint (a switch's port 0, a CA's lowest cabled port);
    0 where the file gives none (an SM has not run yet). A LID given twice is an error."""
    lid = [0] * topo.n_nodes
    for n in range(topo.n_nodes):
        if topo.node_kind[n] == HOST:
            cabled = np.flatnonzero(topo.out_channel[n] >= 0)
            port = int(cabled[0]) if cabled.size else -1
        else:
            port = 0
        got = port_lids.get((n, port))
        if got:
            lid[n] = got[0]
    owner: dict[int, tuple[int, int]] = {}
    for (n, port), (value, where) in sorted(port_lids.items(), key=lambda kv: kv[1][1][1]):
        if value == 0:
            continue
        if value in owner and owner[value] != (n, port):
            first = topo.node_names[owner[value][0]]
            raise fail(f"LID {value} is given to {topo.node_names[n]} port {port} and to {first}", where)
        owner[value] = (n, port)
    return lid


def _read_lines(path: str | Path) -> list[str]:
    from ..inputs import read_text

    return read_text(path).splitlines()
