"""OpenSM ``partitions.conf``: read it into member node sets, write it back.

The grammar is the one in ``man opensm`` (PARTITION CONFIGURATION) as OpenSM's
parser (``osm_prtn_config.c``) reads it::

    # comment to end of line
    Name=PKey[,flag[=value]]... : member[=full|limited|both], ... ;

- A definition runs to ``;`` and may span lines, but its header (up to ``:``)
  must be on its first line; several definitions may share a line. The file's
  last definition may end without ``;``: OpenSM adds members as it reads them, so
  it applies that definition too (seen with OpenSM 3.3.23 on ibsim). A missing
  ``;`` before another definition is an error: the next header reads as a member.
- ``PKey`` is C-style (``0x`` hex, leading-0 octal, decimal); only the low 15
  bits count, and they must not be 0 (``0x0000`` and ``0x8000`` are refused: OpenSM
  would silently generate another PKey). Omitted, it is taken from an earlier partition of the same name,
  else generated as OpenSM does (the next unused value counting from 1). A bare
  number as the name is the PKey. The same PKey twice, under any name, merges the
  member lists and flags and keeps the first name, as OpenSM does (it logs
  "Duplicated partition definition ... Will use it" and does not refuse it);
  ``sl`` comes from the later header (0 if it gives none), as OpenSM sets it per header.
- A port mentioned twice in a partition keeps its last mention (OpenSM overwrites);
  ``ALL``, ``ALL_CAS``, ``ALL_SWITCHES`` and ``SELF`` mention their ports where they stand.
- Flags: ``ipoib``, ``indx0``, ``defmember=full|limited|both`` (membership of
  members given without one; default ``limited``), and the multicast flags
  ``mtu``, ``rate``, ``sl``, ``scope``, ``Q_Key``, ``TClass``, ``FlowLabel``.
- Members: a port GUID, or ``ALL``, ``ALL_CAS``, ``ALL_SWITCHES``,
  ``ALL_ROUTERS``, ``SELF`` (the SM's port), ``NONE``. Like OpenSM, keywords,
  flags and membership words may be abbreviated to any prefix (``limi``), tried
  in OpenSM's order. ``mgid=GID[,flags]`` takes the rest of its line.

Stricter than OpenSM, which warns and goes on: an unknown flag, a bad flag value,
an unknown membership word, or a GUID that is not in the topology is a
:class:`~netsteer.errors.NetsteerError` naming file, line and the culprit. So is a
CA's node GUID: OpenSM looks members up by port GUID and silently leaves it out.

Membership is per port: ``Partition.members`` holds each node's endpoint port (the
one netsteer routes), ``Partition.other_ports`` the other CA ports (a dual-port HCA's
second port), each with its own membership; the writer writes each port back by its
own GUID.

Two ports may talk in a partition when both are members and at least one is a
full member (``both`` counts as full).

Examples
--------
>>> from netsteer.topology.model import TopologyBuilder
>>> b = TopologyBuilder("t")
>>> s = b.add_switch("s0", guid=0x200000)
>>> hs = [b.add_host(f"h{i}", guid=0x100000 + 3 * i) for i in range(3)]
>>> for i, h in enumerate(hs):
...     _ = b.add_link(s, h, bandwidth=1e9, latency_ns=1, a_port=i + 1, b_port=1)
>>> t = b.build()
>>> text = '''
... Default=0x7fff : ALL=limited, SELF=full ;   # the usual default
... jobA = 0x8001, ipoib, defmember=full :
...     0x100001, 0x100004=limi ;
... '''
>>> parts = parse_partitions_conf(text, t, sm_node=s)
>>> [(p.name, hex(p.pkey)) for p in parts]
[('Default', '0x7fff'), ('jobA', '0x1')]
>>> {t.node_names[n]: m for n, m in parts[1].members.items()}
{'h0': 'full', 'h1': 'limited'}
>>> can_communicate(parts, t).astype(int).tolist()
[[1, 1, 0], [1, 1, 0], [0, 0, 1]]
>>> parse_partitions_conf(format_partitions_conf(parts, t), t, sm_node=s) == parts
True
"""

from __future__ import annotations

import re
from pathlib import Path

from netsteer.errors import NetsteerError
from netsteer.topology.model import Topology
from netsteer.topology.partitions import BOTH, DEFAULT_PKEY, FULL, LIMITED, Partition, can_communicate

from .guids import cabled_ca_ports, endpoint_guid, endpoint_port, guid_index, port_guid, port_index

__all__ = [
    "Partition",
    "parse_partitions_conf",
    "read_partitions_conf",
    "format_partitions_conf",
    "write_partitions_conf",
    "with_default",
    "can_communicate",
]

_MEMBERSHIPS = (FULL, BOTH, LIMITED)  # OpenSM's order for prefix matching
_INT_FLAGS = ("mtu", "rate", "scope", "Q_Key", "TClass", "sl", "FlowLabel")  # OpenSM's order
_FLAG_MAX = {"sl": 15, "scope": 15, "FlowLabel": 0xFFFFF, "mtu": 0xFF, "rate": 0xFF, "TClass": 0xFF, "Q_Key": 0xFFFFFFFF}
_KEYWORDS = ("ALL", "ALL_CAS", "ALL_SWITCHES", "ALL_ROUTERS", "SELF")  # OpenSM's order
# what OpenSM's parse_name_token gives back: inner blanks kept, ends stripped, one line
_NAME_OK = re.compile(r"[^\s,=:;#]([^\n\r,=:;#]*[^\s,=:;#])?")


def _prefix_of(word: str, choices: tuple[str, ...]) -> str | None:
    """First of ``choices`` that ``word`` abbreviates (OpenSM's ``strncmp`` test)."""
    for c in choices:
        if word and c.startswith(word):
            return c
    return None


def _c_uint(text: str) -> int:
    """``strtoul(text, &end, 0)`` that must consume all of ``text``."""
    s = text.strip()
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", s):
        return int(s, 16)
    if re.fullmatch(r"0[0-7]*", s):
        return int(s, 8)
    if re.fullmatch(r"[1-9][0-9]*", s):
        return int(s)
    raise ValueError(text)


class _Reader:
    def __init__(self, topo: Topology, sm_node: int | None, file: str):
        self.topo, self.sm_node, self.file = topo, sm_node, file
        self.index = guid_index(topo)
        self.ports = port_index(topo)
        self.parts: dict[int, Partition] = {}
        self.pkey_counter = 0
        self.cur: Partition | None = None
        self.defmember = LIMITED

    def err(self, reason: str, line: int) -> NetsteerError:
        return NetsteerError(reason, file=self.file, field=f"line {line}")

    # -- header ---------------------------------------------------------------
    def header(self, text: str, line: int) -> None:
        tokens = text.split(",")
        name, eq, pkey_text = (s.strip() for s in tokens[0].partition("="))
        if not eq and name[:1].isdigit():
            name, pkey_text = "", name  # a bare number is the PKey
        if eq and not pkey_text:
            raise self.err(f"partition {name!r} has '=' but no PKey", line)
        pkey = 0
        if pkey_text:
            try:
                pkey = _c_uint(pkey_text)
            except ValueError:
                raise self.err(f"bad PKey {pkey_text!r}", line) from None
            if pkey > 0xFFFF:
                raise self.err(f"PKey {pkey_text} does not fit in 16 bits", line)
            if not pkey & 0x7FFF:
                # OpenSM masks the membership bit and, left with 0, silently generates a PKey
                raise self.err(f"PKey {pkey_text} has no partition number (its low 15 bits are 0); "
                               "give one in 0x0001..0x7fff, or leave the PKey out to have one generated", line)
            pkey &= 0x7FFF
        flags: dict[str, object] = {}
        ipoib = indx0 = False
        self.defmember = LIMITED
        for tok in tokens[1:]:
            flag, eq, val = (s.strip() for s in tok.partition("="))
            if not flag:
                raise self.err("empty partition flag (two commas?)", line)
            known = _prefix_of(flag, _INT_FLAGS)
            if known:
                flags_val = self.int_flag(known, val if eq else None, line)
                if known == "scope":
                    flags.setdefault("scope", []).append(flags_val)  # type: ignore[union-attr]
                else:
                    flags[known] = flags_val
            elif "ipoib".startswith(flag):
                ipoib = True
            elif "defmember".startswith(flag):
                m = _prefix_of(val, (LIMITED, BOTH, FULL))
                if m is None:
                    raise self.err(f"defmember needs full, limited or both, got {val!r}", line)
                self.defmember = m
            elif flag == "indx0":
                indx0 = True
            else:
                raise self.err(f"unknown partition flag {flag!r}", line)
        self.cur = self.partition(name, pkey, line)
        self.cur.ipoib |= ipoib
        self.cur.indx0 |= indx0
        # OpenSM sets the partition's SL from every header (partition_create), 0 when
        # the header gives none: a later definition of the PKey resets it
        self.cur.flags.pop("sl", None)
        for k, v in flags.items():
            if k == "scope":
                self.cur.flags.setdefault("scope", []).extend(v)  # type: ignore[union-attr,arg-type]
            else:
                self.cur.flags[k] = v

    def int_flag(self, flag: str, val: str | None, line: int) -> int:
        try:
            v = _c_uint(val or "")
        except ValueError:
            raise self.err(f"flag {flag!r} needs a number, got {val!r}", line) from None
        if v > _FLAG_MAX[flag] or (flag == "scope" and v == 0):
            raise self.err(f"flag {flag}={val} is out of range", line)
        return v

    def partition(self, name: str, pkey: int, line: int) -> Partition:
        if pkey == 0:
            for p in self.parts.values():
                if name and p.name == name:
                    return p
            while True:
                self.pkey_counter += 1
                if self.pkey_counter >= DEFAULT_PKEY:
                    raise self.err("no PKey left to generate", line)
                if self.pkey_counter not in self.parts:
                    pkey = self.pkey_counter
                    break
        if pkey not in self.parts:
            self.parts[pkey] = Partition(name=name, pkey=pkey, line=line)
        return self.parts[pkey]

    # -- members --------------------------------------------------------------
    def members(self, text: str, line: int) -> None:
        tokens = text.split(",")
        for i, tok in enumerate(tokens):
            name, eq, flag = (s.strip() for s in tok.partition("="))
            if name == "mgid":
                # a multicast group takes the rest of the line, flags and all
                self.cur.mgroups.append(",".join(t.strip() for t in tokens[i:]))  # type: ignore[union-attr]
                return
            if ":" in tok:
                # OpenSM reads it as a port and refuses it ("bad PortGUID"); say why
                raise self.err(f"{tok.strip()!r} is a partition header inside the definition of "
                               f"{self.cur.name or hex(self.cur.pkey)!r}: "  # type: ignore[union-attr]
                               "the ';' that ends that definition is missing", line)
            self.member(name, flag if eq else None, line)

    def member(self, name: str, flag: str | None, line: int) -> None:
        p = self.cur
        assert p is not None
        if not name or "NONE".startswith(name):
            return
        membership = self.defmember
        if flag is not None:
            membership = _prefix_of(flag, _MEMBERSHIPS)
            if membership is None:
                raise self.err(f"membership of {name} must be full, limited or both, got {flag!r}", line)
        topo = self.topo
        keyword = _prefix_of(name, _KEYWORDS)
        if keyword == "SELF":
            if self.sm_node is None:
                # the SM's port is not known: keep SELF where it stands among the mentions
                p.self_membership = membership
                p.after_self.clear()
                return
            nodes = [self.sm_node]
        elif keyword is not None:
            nodes = {
                "ALL": range(topo.n_nodes),
                "ALL_CAS": topo.hosts,
                "ALL_SWITCHES": topo.switches,
                "ALL_ROUTERS": [],
            }[keyword]
            if keyword in ("ALL", "ALL_CAS"):  # every CA port, a dual-port HCA's second one too
                for h in topo.hosts:
                    for port in cabled_ca_ports(topo, int(h))[1:]:
                        p.other_ports[(int(h), port)] = membership
        else:
            try:
                guid = _c_uint(name)
            except ValueError:
                raise self.err(f"bad port GUID {name!r}", line) from None
            if guid == 0 or guid >> 64:
                raise self.err(f"bad port GUID {name!r}", line)
            if guid not in self.ports:
                if guid in self.index:  # a CA's node GUID
                    node = self.index[guid][0]
                    ports = ", ".join(f"{port_guid(topo, node, q):#018x} (port {q})"
                                      for q in cabled_ca_ports(topo, node))
                    raise self.err(
                        f"{guid:#018x} is the node GUID of {topo.node_names[node]}, not a port GUID: OpenSM "
                        f"looks members up by port GUID and would leave {topo.node_names[node]} out of "
                        f"partition {p.name or hex(p.pkey)!r}; name its ports instead: {ports}", line)
                raise self.err(f"port GUID {guid:#018x} is not in the topology", line)
            node, port = self.ports[guid]
            if port != endpoint_port(topo, node):  # a dual-port HCA's second port: its own membership
                p.other_ports[(node, port)] = membership
                return
            nodes = [node]
        for n in nodes:
            # the last mention wins, as OpenSM's osm_prtn_add_port removes the port
            # before inserting it ("already in partition ... Will overwrite")
            n = int(n)
            p.members[n] = membership
            if p.self_membership is not None:
                p.after_self.add(n)

    # -- driver ---------------------------------------------------------------
    def feed(self, text: str) -> list[Partition]:
        for lineno, raw in enumerate(text.splitlines(), 1):
            body = raw.split("#", 1)[0]
            segments = body.split(";")
            for k, seg in enumerate(segments):
                closes = k < len(segments) - 1
                if self.cur is None:
                    if not seg.strip():
                        if closes:
                            raise self.err("';' without a partition definition", lineno)
                        continue
                    head, colon, rest = seg.partition(":")
                    if not colon:
                        raise self.err(
                            "no partition definition found: expected 'Name=PKey : members ;'", lineno
                        )
                    self.header(head, lineno)
                    seg = rest
                self.members(seg, lineno)
                if closes:
                    self.cur = None
        return list(self.parts.values())


def parse_partitions_conf(
    text: str, topo: Topology, *, sm_node: int | None = None, file: str = "<partitions.conf>"
) -> list[Partition]:
    """Parse ``partitions.conf`` text; partitions in order of first definition.

    Parameters
    ----------
    topo : Topology
        Member GUIDs are looked up in it (see :mod:`.guids`).
    sm_node : int, optional
        Node running the SM, for ``SELF``; unknown, ``SELF`` is kept as
        ``Partition.self_membership``.
    """
    return _Reader(topo, sm_node, file).feed(text)


def read_partitions_conf(
    path: str | Path, topo: Topology, *, sm_node: int | None = None
) -> list[Partition]:
    """Read a ``partitions.conf`` file; see :func:`parse_partitions_conf`."""
    from ...inputs import read_text

    path = str(path)
    text = read_text(path, what="partitions file")
    return parse_partitions_conf(text, topo, sm_node=sm_node, file=path)


def with_default(parts: list[Partition], topo: Topology, sm_node: int | None = None, *,
                 no_file: bool = False) -> list[Partition]:
    """Add the partition OpenSM creates when it has no 0x7fff rule.

    OpenSM (``prtn_make_default``) makes every port a member with
    ``osm_prtn_add_all(..., full=no_config)``: with a partitions file that has no
    0x7fff rule, it behaves as if the file said ``Default=0x7fff : ALL=limited,
    SELF=full;``; with no file at all (``no_file``), every port is a full member
    (``ALL=full``), so writing the limited rule out would cut every host from every
    other on the default P_Key.

    Parameters
    ----------
    parts : list of Partition
        The file's partitions (empty when there is no file).
    topo : Topology
    sm_node : int, optional
        The SM's node, for ``SELF``; unknown, ``SELF`` is kept symbolic.
    no_file : bool
        OpenSM reads no partitions file: the default partition has every port full.

    Returns
    -------
    list of Partition
        ``parts``, with the default partition first when it had none.
    """
    if any(p.pkey == DEFAULT_PKEY for p in parts):
        return list(parts)
    m = FULL if no_file else LIMITED
    d = Partition(name="Default", pkey=DEFAULT_PKEY)
    d.members = {n: m for n in range(topo.n_nodes)}
    d.other_ports = {(int(h), q): m for h in topo.hosts for q in cabled_ca_ports(topo, int(h))[1:]}
    if no_file:
        pass  # SELF is a full member like every other port
    elif sm_node is None:
        d.self_membership = FULL
    else:
        d.members[sm_node] = FULL
    return [d, *parts]


def _flag_text(p: Partition) -> list[str]:
    out = ["ipoib"] if p.ipoib else []
    if p.indx0:
        out.append("indx0")
    for k in _INT_FLAGS:
        v = p.flags.get(k)
        if v is None:
            continue
        for x in v if isinstance(v, list) else [v]:
            out.append(f"{k}={x:#x}" if k == "Q_Key" else f"{k}={x}")
    return out


def format_partitions_conf(parts: list[Partition], topo: Topology) -> str:
    """``partitions.conf`` text for ``parts``; every member is written by port GUID.

    Raises
    ------
    ValueError
        A name OpenSM would read otherwise (one of ``,=:;#``, a line break, blanks
        at either end), a PKey that is 0 or over 15 bits, or a member without a GUID.
    """
    out = ["# partitions.conf written by netsteer"]
    for p in parts:
        if p.name and not _NAME_OK.fullmatch(p.name):
            raise ValueError(f"partition name {p.name!r} cannot be written to partitions.conf")
        if not 0 < p.pkey <= 0x7FFF:
            raise ValueError(f"partition {p.name!r}: PKey {p.pkey:#x} is not in 1..0x7fff")
        head = ",".join([f"{p.name}={p.pkey:#06x}", *_flag_text(p)])
        items = []
        # OpenSM keeps a port's last mention: SELF goes after the members it overrides
        # and before those mentioned after it (see Partition.after_self)
        after = p.after_self if p.self_membership else set()
        order = sorted(p.members, key=lambda n: (n in after, n))
        split = sum(n not in after for n in order)
        # every port by its own GUID (a CA's second port keeps its own membership)
        ports = [(endpoint_guid(topo, n), n, p.members[n]) for n in order[:split]]
        ports += [(port_guid(topo, n, q), n, m) for (n, q), m in sorted(p.other_ports.items())]
        ports += [(endpoint_guid(topo, n), n, p.members[n]) for n in order[split:]]
        for k, (g, node, m) in enumerate(ports + [(0, -1, "")]):
            if k == len(ports) - len(order) + split and p.self_membership:
                items.append(f"SELF={p.self_membership}")
            if node < 0:
                continue
            if not g:
                raise ValueError(f"{topo.node_names[node]} has no GUID")
            items.append(f"0x{g:016x}={m}")
        lines = [f"{head} :"]
        lines += [f"    {m}" for m in p.mgroups]  # one per line: an mgid takes its line
        body = ",\n".join(f"    {i}" for i in items)
        out.append("\n".join(lines) + ("\n" + body if body else "") + " ;")
    return "\n".join(out) + "\n"


def write_partitions_conf(parts: list[Partition], topo: Topology, path: str | Path) -> None:
    """Write :func:`format_partitions_conf` output to ``path`` (for ``opensm -P``)."""
    from ...report.atomic import atomic_write

    with atomic_write(path) as f:
        f.write(format_partitions_conf(parts, topo))
