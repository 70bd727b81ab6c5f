"""The driver's flow and group lines as OpenFlow 1.4 messages, encoded with os-ken.

:mod:`.flows` writes a switch's table as ``ovs-ofctl`` lines (``flow add
table=1,priority=101,ip,nw_dst=10.64.1.0/24 actions=group:7``); this module turns
those lines into os-ken's message objects (``OFPFlowMod``, ``OFPGroupMod``) and
into the bytes of one **bundle** (``OFPBundleCtrlMsg`` open, one
``OFPBundleAddMsg`` per change, commit). The vocabulary :mod:`.flows`, the fabric
table builders (:mod:`netsteer.emulate.fabric_routes`) and the reactive path
(:mod:`netsteer.emulate.reactive_tags`) write is understood, with ``ovs-ofctl``'s
meaning (a bucket without ``weight:``, a flow's ``cookie=``); anything else raises
:class:`ValueError` naming the token.

Speed: os-ken builds and serializes about 10,000 flow-mods a second here, so a
5000-rule change would spend half a second in encoding alone. A flow-mod is a
fixed header, a match and instructions; the match and the instructions are
serialized by os-ken once per distinct text and kept (a controller sends the
same matches again and again: rules moved, rolled back, re-synchronised), and
the fixed parts are packed with os-ken's own layouts.

Examples
--------
>>> enc = Encoder()
>>> fm = enc.message("flow add table=0,priority=10,in_port=1 actions=output:2")
>>> fm.table_id, fm.priority, fm.match["in_port"], fm.instructions[0].actions[0].port
(0, 10, 1, 2)
>>> parse_message(enc.encode("flow delete_strict table=3,priority=10,ip,nw_dst=10.64.0.1", xid=7)).command
4
>>> chunks = enc.bundle(["flow add table=0,priority=0 actions=drop"], bundle_id=1, first_xid=10)
>>> [c[1] for c in chunks]  # message types: bundle control, bundle add, bundle control
[33, 34, 33]
>>> parse_message(chunks[1][16:]).table_id  # the flow-mod inside the add
0
"""

from __future__ import annotations

import ipaddress
import struct

from os_ken.ofproto import nx_actions  # noqa: F401  (registers the Nicira actions)
from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_4 as ofp
from os_ken.ofproto import ofproto_v1_4_parser as p
from os_ken.ofproto.ofproto_protocol import ProtocolDesc

DP = ProtocolDesc(ofp.OFP_VERSION)  # what os-ken's message classes need to know of a switch
_FLOW_CMDS = {"add": ofp.OFPFC_ADD, "modify": ofp.OFPFC_MODIFY, "modify_strict": ofp.OFPFC_MODIFY_STRICT,
              "delete": ofp.OFPFC_DELETE, "delete_strict": ofp.OFPFC_DELETE_STRICT}
_GROUP_CMDS = {"add": ofp.OFPGC_ADD, "modify": ofp.OFPGC_MODIFY, "delete": ofp.OFPGC_DELETE}
_GROUP_TYPES = {"select": ofp.OFPGT_SELECT, "all": ofp.OFPGT_ALL, "indirect": ofp.OFPGT_INDIRECT,
                "ff": ofp.OFPGT_FF}
_HEADER = struct.Struct(ofp.OFP_HEADER_PACK_STR)
_FLOW_MOD = struct.Struct(ofp.OFP_FLOW_MOD_PACK_STR0)
_BUNDLE_ADD = struct.Struct(ofp.OFP_BUNDLE_ADD_MSG_0_PACK_STR)
_ATOMIC = ofp.OFPBF_ATOMIC | ofp.OFPBF_ORDERED


def _int(v: str) -> int:
    return int(v, 0)


def _ipv4(v: str):
    """``10.64.1.0/24`` -> (address, mask); ``10.64.1.2`` -> address."""
    if "/" not in v:
        return str(ipaddress.IPv4Address(v))
    net = ipaddress.IPv4Network(v, strict=False)
    return (str(net.network_address), str(net.netmask))


def parse_match(text: str) -> p.OFPMatch:
    """An ``ovs-ofctl`` match (without ``table``/``priority``) as an ``OFPMatch``.

    >>> m = parse_match("ip,vlan_tci=0x0000/0x1000,nw_src=10.64.0.0/24")
    >>> m["eth_type"], m["vlan_vid"], m["ipv4_src"]
    (2048, 0, ('10.64.0.0', '255.255.255.0'))
    >>> parse_match("dl_dst=08:00:00:00:00:00/fc:00:00:00:00:00")["eth_dst"]
    ('08:00:00:00:00:00', 'fc:00:00:00:00:00')
    """
    f: dict = {}
    for tok in filter(None, text.split(",")):
        key, _, val = tok.partition("=")
        if key == "ip" and not val:
            f["eth_type"] = 0x0800
        elif key == "in_port":
            f["in_port"] = _int(val)
        elif key == "dl_vlan":
            f["vlan_vid"] = ofp.OFPVID_PRESENT | _int(val)
        elif key == "vlan_tci" and val == "0x0000/0x1000":
            f["vlan_vid"] = ofp.OFPVID_NONE  # no 802.1Q header
        elif key == "nw_src":
            f["ipv4_src"] = _ipv4(val)
        elif key == "nw_dst":
            f["ipv4_dst"] = _ipv4(val)
        elif key == "dl_dst":
            mac, _, mask = val.partition("/")
            f["eth_dst"] = (mac, mask) if mask else mac
        else:
            raise ValueError(f"match field {tok!r} is not understood by the os-ken channel")
    if ("ipv4_src" in f or "ipv4_dst" in f) and "eth_type" not in f:
        f["eth_type"] = 0x0800  # OpenFlow's prerequisite (ovs-ofctl adds it too)
    return p.OFPMatch(**f)


def parse_actions(text: str) -> list:
    """``ovs-ofctl`` actions as os-ken instructions (apply-actions, then goto).

    >>> [type(i).__name__ for i in parse_actions("pop_vlan,goto_table:3")]
    ['OFPInstructionActions', 'OFPInstructionGotoTable']
    >>> parse_actions("drop")
    []
    >>> parse_actions("set_field:02:4e:00:00:00:01->eth_dst,output:2")[0].actions[0].value
    '02:4e:00:00:00:01'
    >>> parse_actions("CONTROLLER:128")[0].actions[0].max_len
    128
    """
    acts, goto = [], None
    for tok in _split_actions(text):
        key, _, val = tok.partition(":")
        if tok == "drop":
            continue
        if key == "output":
            acts.append(p.OFPActionOutput(_int(val)))
        elif key == "goto_table":
            goto = _int(val)
        elif key == "group":
            acts.append(p.OFPActionGroup(_int(val)))
        elif tok == "pop_vlan":
            acts.append(p.OFPActionPopVlan())
        elif key == "push_vlan":
            acts.append(p.OFPActionPushVlan(_int(val)))
        elif key == "set_field" and "->" in val:
            v, field = val.split("->")
            acts.append(p.OFPActionSetField(**{field: v if field == "eth_dst" else _int(v)}))
        elif key == "CONTROLLER":
            acts.append(p.OFPActionOutput(ofp.OFPP_CONTROLLER, _int(val or "65535")))
        elif tok.startswith("resubmit(,") and tok.endswith(")"):
            acts.append(p.NXActionResubmitTable(table_id=_int(tok[10:-1])))
        else:
            raise ValueError(f"action {tok!r} is not understood by the os-ken channel")
    out = [p.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, acts)] if acts else []
    if goto is not None:
        out.append(p.OFPInstructionGotoTable(goto))
    return out


def _split_actions(text: str) -> list[str]:
    """Split on commas outside parentheses (``resubmit(,2)``)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    if cur:
        out.append(cur)
    return out


def _flow_fields(spec: str):
    """``table=1,priority=101,cookie=0x4e0001,ip,... actions=...`` -> (table, priority,
    cookie, match, actions)."""
    head, _, actions = spec.partition(" actions=")
    table, prio, cookie, rest = 0, 0x8000, 0, []
    for tok in head.split(","):
        if tok.startswith("table="):
            table = _int(tok[6:])
        elif tok.startswith("priority="):
            prio = _int(tok[9:])
        elif tok.startswith("cookie="):
            cookie = _int(tok[7:])
        elif tok:
            rest.append(tok)
    return table, prio, cookie, ",".join(rest), actions or None


def _cookie_mask(verb: str, cookie: int) -> int:
    """Adds and modifies set the flow's cookie; a delete naming one deletes only the
    flow with that cookie (OpenFlow matches the cookie under the mask)."""
    return (1 << 64) - 1 if verb.startswith("delete") and cookie else 0


def _group(spec: str, command: int) -> p.OFPGroupMod:
    """``group_id=7,type=select,bucket=weight:500,actions=...,bucket=...``.

    A bucket is written as ``ovs-ofctl`` takes it: ``weight:N,actions=A``,
    ``actions=A`` or bare actions ``A``. A select group's bucket without a weight
    weighs 1, another group's 0, as ``ovs-ofctl`` gives them (OpenFlow defines the
    weight for select groups only).

    >>> g = _group("group_id=3,type=select,bucket=output:3,bucket=weight:2,actions=output:4", ofp.OFPGC_ADD)
    >>> [(b.weight, b.actions[0].port) for b in g.buckets]
    [(1, 3), (2, 4)]
    >>> [b.weight for b in _group("group_id=5,type=all,bucket=actions=output:1,output:2", ofp.OFPGC_ADD).buckets]
    [0]
    """
    head, *buckets = spec.split(",bucket=")
    fields = dict(tok.split("=", 1) for tok in head.split(","))
    kind = fields.get("type", "all")
    if kind not in _GROUP_TYPES:
        raise ValueError(f"group type {kind!r} is not understood by the os-ken channel")
    out = []
    for b in buckets:
        weight = 1 if kind == "select" else 0
        actions = b
        if b.startswith("weight:") or b.startswith("weight="):
            w, _, actions = b.partition(",")
            weight = _int(w[7:])
        if actions.startswith("actions="):
            actions = actions[len("actions="):]
        if not actions:
            raise ValueError(f"bucket {b!r}: no actions")
        inst = parse_actions(actions)
        acts = inst[0].actions if inst else []
        out.append(p.OFPBucket(weight=weight, actions=acts))
    return p.OFPGroupMod(DP, command, _GROUP_TYPES[kind], _int(fields["group_id"]), out)


class Encoder:
    """Lines -> os-ken messages -> bytes, with matches and instructions kept once
    serialized (module text)."""

    def __init__(self):
        self._match: dict[str, bytes] = {}
        self._inst: dict[str, bytes] = {}

    def message(self, line: str):
        """The os-ken message object of one line (``flow VERB SPEC`` or ``group VERB SPEC``)."""
        kind, verb, spec = line.split(" ", 2)
        if kind == "flow":
            if verb not in _FLOW_CMDS:
                raise ValueError(f"flow command {verb!r} is not understood")
            table, prio, cookie, match, actions = _flow_fields(spec)
            return p.OFPFlowMod(DP, cookie=cookie, cookie_mask=_cookie_mask(verb, cookie),
                                table_id=table, priority=prio, command=_FLOW_CMDS[verb],
                                match=parse_match(match), instructions=parse_actions(actions or ""),
                                out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY, buffer_id=ofp.OFP_NO_BUFFER)
        if kind == "group":
            if verb not in _GROUP_CMDS:
                raise ValueError(f"group command {verb!r} is not understood")
            return _group(spec, _GROUP_CMDS[verb])
        raise ValueError(f"line {line[:60]!r}: 'flow' or 'group' expected")

    def encode(self, line: str, xid: int) -> bytes:
        """One line as the bytes of its message with ``xid``."""
        kind, verb, spec = line.split(" ", 2)
        if kind != "flow":
            msg = self.message(line)
            msg.set_xid(xid)
            msg.serialize()
            return bytes(msg.buf)
        if verb not in _FLOW_CMDS:
            raise ValueError(f"flow command {verb!r} is not understood")
        table, prio, cookie, match, actions = _flow_fields(spec)
        mb = self._match.get(match)
        if mb is None:
            buf = bytearray()
            parse_match(match).serialize(buf, 0)
            mb = self._match[match] = bytes(buf)
        ib = self._inst.get(actions or "")
        if ib is None:
            buf = bytearray()
            for inst in parse_actions(actions or ""):
                inst.serialize(buf, len(buf))
            ib = self._inst[actions or ""] = bytes(buf)
        n = ofp.OFP_FLOW_MOD_SIZE - ofp.OFP_MATCH_SIZE + len(mb) + len(ib)
        return b"".join((_HEADER.pack(ofp.OFP_VERSION, ofp.OFPT_FLOW_MOD, n, xid),
                         _FLOW_MOD.pack(cookie, _cookie_mask(verb, cookie), table, _FLOW_CMDS[verb], 0, 0, prio,
                                        ofp.OFP_NO_BUFFER,
                                        ofp.OFPP_ANY, ofp.OFPG_ANY, 0, 0),
                         mb, ib))

    def bundle(self, lines: list[str], bundle_id: int, first_xid: int) -> list[bytes]:
        """Open, one add per line, commit: the messages of an atomic change. The
        xids run from ``first_xid`` (open) to ``first_xid + len(lines) + 1`` (commit)."""
        out = [_ctrl(bundle_id, ofp.OFPBCT_OPEN_REQUEST, first_xid)]
        xid = first_xid
        for line in lines:
            xid += 1
            inner = self.encode(line, xid)
            out.append(_HEADER.pack(ofp.OFP_VERSION, ofp.OFPT_BUNDLE_ADD_MESSAGE, 16 + len(inner), xid)
                       + _BUNDLE_ADD.pack(bundle_id, _ATOMIC) + inner)
        out.append(_ctrl(bundle_id, ofp.OFPBCT_COMMIT_REQUEST, xid + 1))
        return out


def _ctrl(bundle_id: int, kind: int, xid: int) -> bytes:
    msg = p.OFPBundleCtrlMsg(DP, bundle_id, kind, _ATOMIC, [])
    msg.set_xid(xid)
    msg.serialize()
    return bytes(msg.buf)


def wipe_lines() -> list[str]:
    """What empties a switch inside a bundle: every flow of every table, every group."""
    return [f"flow delete table={ofp.OFPTT_ALL}", f"group delete group_id={ofp.OFPG_ALL}"]


def parse_message(buf: bytes):
    """Bytes -> the os-ken message (tests and the app's replies)."""
    version, kind, length, xid = _HEADER.unpack_from(buf)
    return ofproto_parser.msg(DP, version, kind, length, xid, bytearray(buf))


def match_text(match) -> str:
    """An ``OFPMatch`` back in ``ovs-ofctl`` words (what flow statistics report).

    >>> match_text(parse_match("ip,nw_src=10.64.0.0/24,nw_dst=10.64.1.0/24"))
    'ip,nw_src=10.64.0.0/24,nw_dst=10.64.1.0/24'
    """
    f = dict(match.items())
    out = []
    if f.get("eth_type") == 0x0800:
        out.append("ip")
    if "in_port" in f:
        out.append(f"in_port={f['in_port']}")
    if "vlan_vid" in f:
        v = f["vlan_vid"]
        out.append("vlan_tci=0x0000/0x1000" if v == ofp.OFPVID_NONE else f"dl_vlan={v & 0xfff}")
    for key, name in (("ipv4_src", "nw_src"), ("ipv4_dst", "nw_dst")):
        if key in f:
            v = f[key]
            if isinstance(v, tuple):
                bits = ipaddress.IPv4Network(f"0.0.0.0/{v[1]}").prefixlen
                out.append(f"{name}={v[0]}/{bits}")
            else:
                out.append(f"{name}={v}")
    return ",".join(out)
