"""Peer for bench_unisonflow.py: what an os-ken (Ryu) app does per packet-in.

Reads JSON from stdin: ``{"decisions": [[tag, [[dpid, port], ...], true_mac], ...]}``
(the routes netsteer's controller chose, so the peer does no routing at all), and for
each one, as an os-ken app's packet-in handler does:

1. parses the OpenFlow 1.3 PACKET_IN message from its wire bytes (built beforehand,
   one per decision, carrying an Ethernet frame whose destination is the tag);
2. parses the frame with ``os_ken.lib.packet`` and reads the destination MAC;
3. builds one FLOW_MOD per switch of the route (match ``eth_dst``, output, and at the
   last switch ``set_field eth_dst`` to the true MAC) and serializes it to bytes.

No sockets and no event dispatch: the figure is an upper bound for an os-ken app.
Prints ``{"decisions_per_s": ..., "flow_mods_per_s": ...}`` per CPU second, the
median of 5 runs after a warm-up. Run with an interpreter that has os-ken
(``pip install os-ken``).
"""

import json
import statistics
import struct
import sys
import time

from os_ken.lib.packet import ethernet, packet
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser


class Datapath:
    """The part of os-ken's Datapath that message classes use."""

    ofproto = ofp
    ofproto_parser = parser

    def __init__(self, dpid):
        self.id = dpid


def mac_text(v):
    return ":".join(f"{(v >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def packet_in_bytes(dp, tag):
    frame = ethernet.ethernet(dst=mac_text(tag), src="02:00:00:00:00:01", ethertype=0x0800)
    p = packet.Packet()
    p.add_protocol(frame)
    p.serialize()
    data = bytes(p.data) + b"\x00" * 46
    msg = parser.OFPPacketIn(dp, buffer_id=ofp.OFP_NO_BUFFER, total_len=len(data), reason=ofp.OFPR_NO_MATCH,
                             table_id=0, cookie=0, match=parser.OFPMatch(in_port=1), data=data)
    # os-ken only builds PACKET_IN from the wire: serialize by hand (header, fields, match, pad, data)
    match = bytearray()
    mlen = msg.match.serialize(match, 0)
    body = struct.pack("!IHBBQ", msg.buffer_id, msg.total_len, msg.reason, msg.table_id, msg.cookie)
    payload = body + bytes(match[:mlen + (-mlen) % 8]) + b"\x00\x00" + data
    hdr = struct.pack("!BBHI", ofp.OFP_VERSION, ofp.OFPT_PACKET_IN, 8 + len(payload), 0)
    return hdr + payload


def handle(dps, buf, route, true_mac):
    version, msg_type, msg_len, xid = struct.unpack_from("!BBHI", buf)
    msg = parser.OFPPacketIn.parser(dps[route[0][0]], version, msg_type, msg_len, xid, buf)
    eth = packet.Packet(msg.data).get_protocol(ethernet.ethernet)
    out = []
    for k, (dpid, port) in enumerate(route):
        dp = dps[dpid]
        actions = [parser.OFPActionOutput(port)]
        if k == len(route) - 1:
            actions.insert(0, parser.OFPActionSetField(eth_dst=true_mac))
        inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
        mod = parser.OFPFlowMod(dp, priority=100, match=parser.OFPMatch(eth_dst=eth.dst), instructions=inst)
        mod.serialize()
        out.append(mod.buf)
    return out


def main():
    spec = json.load(sys.stdin)["decisions"]
    dps = {}
    for _, route, _ in spec:
        for dpid, _ in route:
            dps.setdefault(dpid, Datapath(dpid))
    msgs = [(packet_in_bytes(dps[route[0][0]], tag), route, mac_text(mac)) for tag, route, mac in spec]
    rates, mods = [], 0
    for _ in range(6):
        t0 = time.process_time()
        mods = sum(len(handle(dps, b, r, m)) for b, r, m in msgs)
        rates.append(len(msgs) / (time.process_time() - t0))
    r = statistics.median(rates[1:])
    print(json.dumps({"decisions_per_s": r, "flow_mods_per_s": r * mods / len(msgs), "decisions": len(msgs)}))


if __name__ == "__main__":
    main()
