"""Read and write ``ibsim`` net files (the fabric description of the InfiniBand simulator).

A net file is a list of node blocks, as ``ibnetdiscover`` prints them (ibsim reads
its output too)::

    # comment
    Switch  8 "Switch1"         # "optional description" base port 0 lid 0 lmc 0
    [1]     "Hca1"[1]
    [3]     "Switch2"[3]        w=2 s=4

    Hca     2 "Hca1"
    [1]     "Switch1"[1]

plus ``include "file"``, ``switchguid=``/``caguid=`` (GUID of the next nodes),
``width=``/``speed=`` (default enabled width and speed masks) and ``do <command>``.
What this reader does, following ibsim's parser (``ibsim/sim_net.c``):

- A block is its header and the port lines right after it (``[`` in column 1), at
  most as many as the header's port count. ibsim *drops* the first line that ends a
  block, so a non-empty one there is an error here; so is any other line ibsim would
  silently ignore (apart from comments and ``key=value`` lines).
- A cable must be listed at both ends (ibsim refuses the file otherwise). A port line
  without ``[remote port]`` means remote port 1.
- GUIDs are assigned as ibsim does: switches from 0x200000 (one each), channel
  adapters from 0x100000 (ports + 1 each), reset by ``switchguid=``/``caguid=``
  (``+N`` is relative to the last base).
- Rates: each port has an enabled width and speed set, from ``w=`` (bit mask 1=1x,
  2=4x, 4=8x, 8=12x, 16=2x), ``s=`` (1=SDR, 2=DDR, 4=QDR), a trailing
  ``lid N <width>x<speed>`` (ibnetdiscover's form), else the file's ``width=``/
  ``speed=`` or ibsim's default 4x SDR. A cable runs at the widest width and fastest
  speed both ends enable; bandwidth is that rate's data rate (see
  :mod:`netsteer.topology.ibnetdiscover`), so ibsim's default is 8 Gbit/s.
- Names are the quoted descriptions after ``#`` when present, else the node ids.
- ``include`` paths are relative to the including file; ``do`` lines are ignored
  (they act on a running simulator); aliases (``@``), ``module=`` prefixes and
  routers (``Rt``) are refused.

:func:`write_ibsim_net` writes hosts and switches in node order (the first node is
where ibsim clients such as OpenSM attach unless ``SIM_HOST`` says otherwise), each
node with an explicit GUID, each cable at both ends with the
``<width>x<speed>`` nearest its bandwidth.

Examples
--------
>>> import os, tempfile
>>> from netsteer.topology.pgft import pgft
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=32e9, link_latency_ns=100)
>>> with tempfile.TemporaryDirectory() as d:
...     write_ibsim_net(t, os.path.join(d, "net"))
...     back = read_ibsim_net(os.path.join(d, "net"))
>>> back.n_hosts, back.n_switches, back.n_links, float(back.link_bandwidth[0])
(4, 4, 8, 32000000000.0)
>>> back.node_names == t.node_names
True
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np

from ..errors import NetsteerError
from ..inputs import file_label
from .ibnetdiscover import (
    DEFAULT_LATENCY_NS,
    LANE_GBPS,
    NodeRec,
    PortRec,
    _read_lines,
    assemble,
    c_int,
    fail,
    ib_rate,
    ib_rate_for,
)
from .model import CIRCUIT, HOST, SWITCH, Topology

MAX_LINE = 255  # ibsim reads at most this many characters per line
MAX_INCLUDE = 9
NODEIDLEN = 64  # characters of a node id ibsim keeps
# ibsim's compiled-in table sizes (sim.h); larger fabrics need -N/-S/-P
IBSIM_MAX_NODES, IBSIM_MAX_SWITCHES = 2048, 256
IBSIM_MAX_PORTS = IBSIM_MAX_SWITCHES * 36 + IBSIM_MAX_NODES * 2

_WIDTH_BITS = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}  # enabled-width bit -> lanes
_SPEED_BITS = {1: "SDR", 2: "DDR", 4: "QDR"}
# what ibsim enables for an ibnetdiscover "<w>x<speed>" (parse_port_link_width_and_speed)
_WIDTH_ENABLE = {12: {1, 4, 12}, 8: {8}, 4: {1, 4}, 1: {1}, 2: {2}}
_SPEED_ENABLE = {
    "SDR": {"SDR"}, "DDR": {"SDR", "DDR"}, "QDR": {"SDR", "DDR", "QDR"},
    "FDR10": {"SDR", "DDR", "QDR", "FDR10"}, "FDR": {"SDR", "DDR", "QDR", "FDR"},
    "EDR": {"SDR", "DDR", "QDR", "FDR", "EDR"},
    "HDR": {"SDR", "DDR", "QDR", "FDR", "EDR", "HDR"},
    "NDR": {"SDR", "DDR", "QDR", "FDR", "EDR", "HDR", "NDR"},
}

_HEADER = re.compile(r'^(Switch|Hca|Ca)\s*(\d+)\s*"([^"]*)"(.*)$')
_PORT = re.compile(r'^\[(\d+)\][^"]*"([^"]*)"(.*)$')
_CONN = re.compile(r"lid\s+\d+\s+(\d+)x(\w+)[^\"]*$")
_GUIDBASE = re.compile(r"^(switchguid|hcaguids|caguid)\s*([=+])\s*(0[xX][0-9a-fA-F]+|\d+)\s*$")
_SETVAR = re.compile(r"^(width|speed)\s*=\s*(0[xX][0-9a-fA-F]+|\d+)\s*$")
_INCLUDE = re.compile(r'^include\s*"([^"]+)"')


def read_ibsim_net(
    path: str | Path,
    *,
    link_latency_ns: int = DEFAULT_LATENCY_NS,
    name: str | None = None,
) -> Topology:
    """Read an ibsim net file (and the files it includes).

    Parameters
    ----------
    path : str or Path
    link_latency_ns : int
        Latency of every cable (net files have none).
    name : str, optional
        Defaults to the file's stem.

    Returns
    -------
    Topology
        ``Hca``/``Ca`` nodes are hosts, switches have level -1, GUIDs as ibsim
        assigns them; ``meta``: ``kind="ibsim"``, ``path``, ``ident`` (node ids).

    Raises
    ------
    NetsteerError
        Naming the file (the included one when the fault is there) and line.

    Examples
    --------
    >>> import os, tempfile
    >>> text = '''Switch 8 "sw1"
    ... [1] "hca1"[1]
    ... [3] "sw2"[3] w=2 s=4
    ...
    ... Switch 8 "sw2"
    ... [3] "sw1"[3] s=7
    ...
    ... Hca 1 "hca1"
    ... [1] "sw1"
    ... '''
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = open(os.path.join(d, "net"), "w").write(text)
    ...     t = read_ibsim_net(os.path.join(d, "net"))
    >>> t.node_names, [float(x) for x in t.link_bandwidth]  # 4xSDR, then 4xQDR
    (['sw1', 'sw2', 'hca1'], [8000000000.0, 32000000000.0])
    >>> [hex(int(g)) for g in t.node_guid]
    ['0x200000', '0x200001', '0x100000']
    """
    st = _State()
    _parse(Path(path), st, depth=0)
    return assemble(st.nodes, st.ports, name=name or file_label(path), kind="ibsim",
                    file=str(path), link_latency_ns=link_latency_ns, rate_of=_rate)


class _State:
    def __init__(self) -> None:
        self.nodes: list[NodeRec] = []
        self.ports: list[PortRec] = []
        self.next_guid = {SWITCH: 0x200000, HOST: 0x100000}
        self.base_guid = dict(self.next_guid)
        self.width = {4}  # ibsim default enabled: 4x
        self.speed = {"SDR"}
        self.guids: dict[int, tuple[str, int]] = {}


def _parse(path: Path, st: _State, depth: int, where: tuple[str, int] | None = None) -> None:
    if depth >= MAX_INCLUDE:
        raise fail(f"includes nest deeper than ibsim's {MAX_INCLUDE} levels", where)
    file = str(path)
    try:
        exists = path.is_file()
    except (OSError, ValueError):  # a NUL or an over-long name
        exists = False
    if where is not None and not exists:
        raise fail(f'cannot include "{path}": no such file', where)
    lines = _read_lines(path)
    i = 0
    while i < len(lines):
        line, no = lines[i], i + 1
        here = (file, no)
        i += 1
        if len(line) > MAX_LINE:
            raise fail(f"line is {len(line)} characters; ibsim reads at most {MAX_LINE}", here)
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = _HEADER.match(line)
        if m:
            i = _block(m, lines, i, file, st)
            continue
        if line.startswith(("Rt", "rtguid")):
            raise fail("router nodes (Rt) are not supported", here)
        if line.startswith("module"):
            raise fail("module= name prefixes are not supported", here)
        m = _GUIDBASE.match(line)
        if m:
            kind = SWITCH if m.group(1) == "switchguid" else HOST
            v = c_int(m.group(3), here)
            if m.group(2) == "=":
                st.base_guid[kind] = v
                st.next_guid[kind] = v
            else:
                st.next_guid[kind] = st.base_guid[kind] + v
            continue
        if re.match(r"^(switchguid|hcaguids|caguid)\s*[=+]", line):
            raise fail(f"cannot read {s[:40]!r}: a GUID base is a number, 0x... or decimal", here)
        m = _SETVAR.match(line)
        if m:
            v = c_int(m.group(2), here)
            if m.group(1) == "width":
                st.width = _width_set(v, here)
            else:
                st.speed = _speed_set(v, here)
            continue
        m = _INCLUDE.match(line)
        if m:
            inc = Path(m.group(1))
            _parse(inc if inc.is_absolute() else path.parent / inc, st, depth + 1, here)
            continue
        if line.startswith(("do", "devid", "pdebug")) or re.match(r"^\w+\s*=", line):
            continue  # console commands and ibnetdiscover's vendid=, sysimgguid= ...
        if line[:1].isspace() or line.startswith("["):
            raise fail("port line outside a Switch or Hca block (ibsim needs '[' in "
                       "column 1, right after the header or another port line)", here)
        raise fail(f"cannot read line {s[:40]!r}; expected Switch, Hca, Ca, include, "
                   "a port line or key=value", here)


def _block(m: re.Match, lines: list[str], i: int, file: str, st: _State) -> int:
    """Parse a header at line ``i`` (1-based) and its ports; return the next index."""
    kind_s, nports, ident, tail = m.groups()
    here = (file, i)
    kind = SWITCH if kind_s == "Switch" else HOST
    nports = int(nports)
    if not 1 <= nports <= 255:
        raise fail(f"a node has 1 to 255 ports, not {nports}", here)
    if not ident or "#" in ident or "@" in ident:
        raise fail(f'bad node id "{ident}": it must be non-empty, without # or @', here)
    if len(ident) > NODEIDLEN:
        raise fail(f"node id is {len(ident)} characters; ibsim keeps {NODEIDLEN}", here)
    guid = st.next_guid[kind]
    if guid >= 2**64:
        raise fail(f"GUID {guid:#x} does not fit in 64 bits", here)
    if guid in st.guids:
        other = st.guids[guid]
        raise fail(f"GUID {guid:#x} is already used ({other[0]} line {other[1]})", here)
    st.guids[guid] = here
    st.next_guid[kind] += 1 if kind == SWITCH else nports + 1
    st.nodes.append(NodeRec(kind, ident, _desc(tail), nports, guid, here))
    node = len(st.nodes) - 1

    seen = 0
    while i < len(lines) and seen < nports:
        line, no = lines[i], i + 1
        where = (file, no)
        if line.startswith("#"):
            i += 1
            continue
        if not line.startswith(("[", "@")):
            if line.strip():
                raise fail("ibsim ends a block at the first line that is not a port line "
                           "and skips that line; put an empty line before it", where)
            return i + 1
        if len(line) > MAX_LINE:
            raise fail(f"line is {len(line)} characters; ibsim reads at most {MAX_LINE}", where)
        if line.startswith("@"):
            raise fail("port aliases (@) are not supported", where)
        st.ports.append(_port(line, node, st, where))
        seen += 1
        i += 1
    return i


def _port(line: str, node: int, st: _State, where: tuple[str, int]) -> PortRec:
    n = st.nodes[node]
    m = _PORT.match(line)
    if not m:
        raise fail('cannot read port line; expected [port] "remote-id"[port]', where)
    port, remote, rest = int(m.group(1)), m.group(2), m.group(3)
    if not 1 <= port <= n.nports:
        raise fail(f'port {port} of "{n.ident}" is outside 1..{n.nports}', where)
    if not remote:
        raise fail("empty remote node id", where)
    if "@" in remote:
        raise fail("port aliases (@) are not supported", where)
    rport = 1  # ibsim's default when no [port] follows the remote id
    if rest.startswith("["):
        mm = re.match(r"\[(-?\d*)", rest)
        rport = int(mm.group(1)) if mm.group(1) not in ("", "-") else 0
        if rport <= 0:
            raise fail(f"invalid remote port in {rest[:20]!r}; ports count from 1", where)
    width, speed = set(st.width), set(st.speed)
    for opt in re.finditer(r"([A-Za-z])[^A-Za-z=]*=\s*(0[xX][0-9a-fA-F]+|\d+)?", rest):
        letter, val = opt.group(1), opt.group(2)
        if val is None:
            raise fail(f"port option {letter}= needs a number", where)
        if letter == "w":
            width = _width_set(c_int(val, where), where)
        elif letter == "s":
            speed = _speed_set(c_int(val, where), where)
        else:
            raise fail(f"unknown port option {letter}=; ibsim knows w= and s=", where)
    c = _CONN.search(rest)
    if c:
        w, sp = int(c.group(1)), c.group(2).upper()
        if w in _WIDTH_ENABLE:
            width = set(_WIDTH_ENABLE[w])
        if sp in _SPEED_ENABLE:
            speed = set(_SPEED_ENABLE[sp])
    return PortRec(node, port, remote, rport, None, where, {"width": width, "speed": speed})


def _rate(p: PortRec, q: PortRec | None) -> float:
    if q is None:
        raise fail(f'port {p.port} is cabled to port {p.rport} of "{p.remote}", which does '
                   "not list it back; ibsim needs both ends", p.where)
    widths = p.extra["width"] & q.extra["width"]
    speeds = p.extra["speed"] & q.extra["speed"]
    if not widths or not speeds:
        raise fail(f'the two ends of the cable to "{p.remote}"[{p.rport}] enable no common '
                   f"{'width' if not widths else 'speed'}", p.where)
    return ib_rate(max(widths), max(speeds, key=LANE_GBPS.get))


def _width_set(mask: int, where) -> set[int]:
    if not 1 <= mask <= 31:
        raise fail(f"width mask {mask} must be 1..31 (1=1x, 2=4x, 4=8x, 8=12x, 16=2x)", where)
    return {lanes for bit, lanes in _WIDTH_BITS.items() if mask & bit}


def _speed_set(mask: int, where) -> set[str]:
    if not 1 <= mask <= 7:
        raise fail(f"speed mask {mask} must be 1..7 (1=SDR, 2=DDR, 4=QDR)", where)
    return {sp for bit, sp in _SPEED_BITS.items() if mask & bit}


def _desc(tail: str) -> str:
    """The description after ``#``: quoted, or up to `` lid ``/`` base port `` ..."""
    if "#" not in tail:
        return ""
    s = tail.split("#", 1)[1].strip()
    if s.startswith('"'):
        return s[1:].split('"', 1)[0].strip()
    for stop in (" enhanced port ", " base port ", " lid ", " lmc "):
        s = s.split(stop, 1)[0]
    return s.strip()


# -- writer ---------------------------------------------------------------------------
def net_export_changes(topo: Topology) -> list[str]:
    """What a .net file of ``topo`` cannot hold, so reads back otherwise: bandwidths
    that are not an InfiniBand rate ibsim knows (written as the nearest) and link
    latencies other than the readers' default (the format has none).

    >>> from netsteer.topology.pgft import pgft
    >>> net_export_changes(pgft(2, [3, 3], [1, 2], link_bandwidth=[7e9, 32e9], link_latency_ns=[1000, 100]))
    ['7Gbps written as 4xSDR (8Gbps)', 'latencies 1us not held by the format: read back as 100ns']
    >>> net_export_changes(pgft(1, [2], [1], link_bandwidth=32e9, link_latency_ns=100))
    []
    """
    from ..units import format_bandwidth, format_duration

    notes = []
    for bw in sorted(set(float(x) for x in topo.link_bandwidth)):
        w, sp = ib_rate_for(bw)
        back = ib_rate(w, sp)
        if abs(back - bw) > 1e-9 * bw:
            notes.append(f"{format_bandwidth(bw)} written as {w}x{sp} ({format_bandwidth(back)})")
    lat = sorted(set(int(x) for x in topo.link_latency_ns) - {DEFAULT_LATENCY_NS})
    if lat:
        notes.append(f"latencies {', '.join(format_duration(x) for x in lat)} not held by the format: "
                     f"read back as {format_duration(DEFAULT_LATENCY_NS)}")
    return notes


def write_ibsim_net(topo: Topology, path: str | Path) -> None:
    """Write ``topo`` as an ibsim net file.

    Node ids are the node names when ibsim can hold them (at most 64 characters,
    no ``"``, ``#``, ``@``), else ``S-``/``H-`` and the GUID; the description after
    ``#`` is always the name, so :func:`read_ibsim_net` gives the names back. GUIDs are
    the topology's where set and unique, else made up. Each cable carries the
    ``<width>x<speed>`` nearest its bandwidth among those ibsim 0.10 knows
    (:func:`netsteer.topology.ibnetdiscover.ib_rate_for`), so bandwidths that are
    not InfiniBand rates come back rounded.

    Raises
    ------
    NetsteerError
        For circuit switches (ibsim has none) and for nodes with ports above 255.
    """
    file = str(path)
    reason = not_infiniband(topo, "ibsim")
    if reason:
        raise NetsteerError(reason, file=file)
    nports = _nports(topo)
    guids = fabric_guids(topo)  # the numbering netsteer route gives this fabric too
    descs = [_clean(n)[:64] for n in topo.node_names]
    ids = []
    for i, nm in enumerate(topo.node_names):
        ok = nm and len(nm) <= NODEIDLEN and not set(nm) & set('"#@\n\r') and nm == nm.strip()
        ids.append(nm if ok else f"{'H' if topo.node_kind[i] == HOST else 'S'}-{guids[i]:016x}")
    if len(set(ids)) != len(ids):  # a made-up id can equal another node's name
        ids = [f"{'H' if topo.node_kind[i] == HOST else 'S'}-{guids[i]:016x}"
               for i in range(topo.n_nodes)]
    rates = {}
    for bw in set(float(x) for x in topo.link_bandwidth):
        w, s = ib_rate_for(bw)
        rates[bw] = f"{w}x{s}"

    out = [f"# ibsim net file written by netsteer from topology {_clean(topo.name)!r}",
           f"# {topo.n_hosts} hosts, {topo.n_switches} switches, {topo.n_links} cables", ""]
    bw_of_channel = topo.channel_bandwidth()
    for i in range(topo.n_nodes):
        host = topo.node_kind[i] == HOST
        out.append(f"{'caguid' if host else 'switchguid'}={guids[i]:#x}")
        if host:
            out.append(f'Ca\t{nports[i]} "{ids[i]}"\t\t# "{descs[i]}"')
        else:
            out.append(f'Switch\t{nports[i]} "{ids[i]}"\t\t# "{descs[i]}" base port 0 lid 0 lmc 0')
        for port, peer, pport in topo.neighbors(i):
            rate = rates[float(bw_of_channel[topo.out_channel[i, port]])]
            peer_is_host = topo.node_kind[peer] == HOST
            pguid = f"({guids[peer] + pport:x})" if peer_is_host else ""
            remote = f'"{ids[peer]}"[{pport}]{pguid}'
            if host:
                out.append(f'[{port}]({guids[i] + port:x}) \t{remote}\t\t'
                           f'# lid 0 lmc 0 "{descs[peer]}" lid 0 {rate}')
            else:
                out.append(f'[{port}]\t{remote}\t\t# "{descs[peer]}" lid 0 {rate}')
        out.append("")
    try:
        from ..report.atomic import atomic_write

        with atomic_write(path) as f:
            f.write("\n".join(out))
    except OSError as e:
        raise NetsteerError(f"cannot write file: {e.strerror}", file=file) from None


def ibsim_args(topo: Topology) -> list[str]:
    """``ibsim`` size flags (``-N``, ``-S``, ``-P``) large enough for ``topo``.

    >>> from netsteer.topology.hyperx import hyperx
    >>> ibsim_args(hyperx([16, 20], 1, 4, link_bandwidth=32e9, link_latency_ns=0))
    ['-N', '2048', '-S', '320', '-P', '13760']
    """
    nports = _nports(topo)
    n_sw = int((topo.node_kind != HOST).sum())
    ports = sum(n + (topo.node_kind[i] != HOST) for i, n in enumerate(nports))
    return ["-N", str(max(IBSIM_MAX_NODES, topo.n_nodes)),
            "-S", str(max(IBSIM_MAX_SWITCHES, n_sw)),
            "-P", str(max(IBSIM_MAX_PORTS, ports))]


def _nports(topo: Topology) -> list[int]:
    """Port count per node for the header: its highest cabled port, at least 1."""
    used = topo.out_channel >= 0
    last = used.shape[1] - 1 - used[:, ::-1].argmax(axis=1)
    return [int(x) if used[i].any() else 1 for i, x in enumerate(last)]


def not_infiniband(topo: Topology, what: str = "InfiniBand") -> str | None:
    """Why ``topo`` cannot be an InfiniBand fabric (``what``: "ibsim" for a net file),
    or None: a circuit switch, or a port above 255 (an LFT entry is one byte, and
    port 0 is the switch itself).

    >>> from netsteer.topology.pgft import pgft
    >>> not_infiniband(pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=0)) is None
    True
    """
    circuits = [topo.node_names[i] for i in np.flatnonzero(topo.node_kind == CIRCUIT)]
    if circuits:
        return (f"{what} has no circuit switches, and this topology has {len(circuits)} "
                f"({', '.join(circuits[:3])}{' ...' if len(circuits) > 3 else ''})")
    maxport = topo.out_channel.shape[1] - 1
    if maxport > 255:
        node = int(np.flatnonzero((topo.out_channel[:, 256:] >= 0).any(axis=1))[0])
        return f"{what} nodes have at most 255 ports; {topo.node_names[node]} uses port {maxport}"
    return None


def fabric_guids(topo: Topology) -> list[int]:
    """The node GUIDs ``topo`` has as an InfiniBand fabric: its own, made up where unknown.

    This is the one numbering of a fabric without GUIDs (generated, a JSON file
    whose ``"guid"`` is ``"0x0"``): :func:`write_ibsim_net` and
    :func:`~netsteer.topology.json_io.to_json` write it (so ibsim and
    OpenSM see it), and ``netsteer route`` and ``route-eval`` use it through
    :func:`with_fabric_guids`, so that the tables ``route`` writes for a spec name
    the nodes ``route-eval`` finds in that spec, or in its ``.net``/``.json`` export.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    list of int
        Per node, in node order: the node's own GUID when it has one that does not
        repeat an earlier node's GUIDs; else the next free number from
        ``0x0002c90300000000`` (Mellanox's OUI). A channel adapter also takes
        ``guid + port`` for each port up to its highest cabled one (its port GUIDs, the
        rule of ibsim and of :mod:`netsteer.drivers.opensm.guids`), so no two
        nodes' GUIDs overlap.

    Examples
    --------
    >>> from netsteer.topology.pgft import pgft
    >>> t = pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=0)
    >>> t.node_names, [hex(g) for g in fabric_guids(t)]
    (['h0', 'h1', 's1_0'], ['0x2c90300000000', '0x2c90300000002', '0x2c90300000004'])
    """
    return _guids(topo, _nports(topo))


def with_fabric_guids(topo: Topology) -> Topology:
    """``topo`` with the GUIDs of :func:`fabric_guids`: a copy where it lacks some.

    A topology in which every node has a GUID (ibnetdiscover output, a net file) is
    returned as it is, even if two of its nodes' GUIDs overlap under the node + port
    rule: those are the GUIDs the running fabric, and OpenSM, use. Otherwise the
    copy shares everything else with ``topo`` (names, cables, ``meta``, the port
    table); only ``node_guid`` differs, so routing it routes the same fabric.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    Topology
    """
    if topo.node_guid.all():
        return topo
    guids = np.array(fabric_guids(topo), dtype=np.uint64)
    if np.array_equal(guids, topo.node_guid):
        return topo
    out = copy.copy(topo)  # shallow: a topology is immutable by convention
    out.node_guid = guids
    return out


def _guids(topo: Topology, nports: list[int]) -> list[int]:
    """Unique GUIDs; a CA also takes ``guid + port`` for its port GUIDs."""
    taken: set[int] = set()
    out: list[int] = []
    synth = 0x0002C90300000000

    def span(i: int, g: int) -> set[int]:
        return {g} | ({g + p for p in range(1, nports[i] + 1)} if topo.node_kind[i] == HOST
                      else set())

    for i in range(topo.n_nodes):
        g = int(topo.node_guid[i])
        if not g or span(i, g) & taken:
            while span(i, synth) & taken:
                synth += 1
            g = synth
        taken |= span(i, g)
        out.append(g)
    return out


def _clean(s: str) -> str:
    """A description ibsim reads back: no quotes, ``=`` or line breaks."""
    return re.sub(r'["=\r\n]', "_", s)
