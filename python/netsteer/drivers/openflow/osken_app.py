"""The os-ken application: netsteer's OpenFlow controller process.

Started by :class:`.osken.OskenController` as ``python -m
netsteer.drivers.openflow.osken_app PORT FD``: os-ken (eventlet, monkey-patched in
this process only) listens for switches on ``127.0.0.1:PORT`` and this app takes
requests from the driver's process on the socket ``FD``, one JSON object a line:

``{"id": 1, "op": "bundle", "dpid": 5, "lines": [...]}``
    one atomic bundle (open, adds, commit); answers ``{"id": 1}`` or
    ``{"id": 1, "error": "..."}`` with the switch's own error words;
``{"op": "ports", "dpid": 5}`` / ``{"op": "flows", "dpid": 5, "table": 0}``
    port statistics (``{"ports": {port: [rx_bytes, tx_bytes]}}``) and flow
    statistics (``{"flows": {match: n_bytes}}``);
``{"op": "port_state", "dpid": 5}``
    the port descriptions (``OFPMP_PORT_DESC``): ``{"ports": {port: up}}``, a port
    down when its state has ``OFPPS_LINK_DOWN`` or its config ``OFPPC_PORT_DOWN``;
``{"op": "connected"}``
    the datapath ids connected now;
``{"op": "packet_out", "dpid": 5, "in_port": 1, "data": HEX}``
    send a frame back through the switch's tables (``OFPP_TABLE``), as if it had
    just arrived on ``in_port``.

Frames a switch sends to the controller (packet-in) go to the driver unasked, as
``{"event": "packet_in", "dpid": 5, "in_port": 1, "eth_dst": INT, "data": HEX,
"truncated": BOOL, "cookie": INT}`` (the cookie of the flow that sent it).

Every request runs in its own green thread, so bundles to many switches are in
flight at once. A switch that is not connected, or that has not answered a request
within :data:`TIMEOUT_S` seconds (a bundle's barrier and commit together), fails
the request (the driver rolls back and re-syncs). The driver waits longer for the
app's answer (:data:`netsteer.drivers.openflow.osken.REPLY_WAIT_S`), so it never
gives up on a bundle the app is still committing.
"""

from __future__ import annotations

import json
import sys
import time

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import DEAD_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_4 as ofp

from .ofmsg import DP, Encoder, _ctrl, match_text
from .switch import TIMEOUT_S  # one request's whole time at the switch, as ovs-ofctl's --timeout
_CHANNEL_FD = None  # set by main() before the app is made


class NetsteerApp(app_manager.OSKenApp):
    OFP_VERSIONS = [ofp.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        import socket
        self.sock = socket.socket(fileno=_CHANNEL_FD)  # green: eventlet patched socket
        self.dps: dict[int, object] = {}
        # (dpid, xid) -> ([event, replies, errors], whether its replies answer the request)
        self.waiting: dict[tuple[int, int], tuple[list, bool]] = {}
        self.encoder = Encoder()
        self.bundle_ids = 0
        # one writer at a time: a green sendall that meets a full socket yields, and
        # another green thread's line would land inside its line
        self._send_lock = hub.BoundedSemaphore(1)
        self.threads.append(hub.spawn(self._serve))

    def _emit(self, obj: dict) -> None:
        """One JSON line to the driver's process, whole."""
        data = (json.dumps(obj) + "\n").encode()
        with self._send_lock:
            self.sock.sendall(data)

    # -- switches ------------------------------------------------------------------

    @set_ev_cls(ofp_event.EventOFPStateChange, [MAIN_DISPATCHER, DEAD_DISPATCHER])
    def _state(self, ev):
        dp = ev.datapath
        if ev.state == MAIN_DISPATCHER:
            self.dps[dp.id] = dp
        elif dp.id is not None and self.dps.get(dp.id) is dp:
            del self.dps[dp.id]
            for (dpid, _), (w, _answer) in list(self.waiting.items()):
                if dpid == dp.id:
                    w[2].append("disconnected")
                    w[0].set()

    def _wake(self, ev, error: str | None = None):
        msg = ev.msg
        w = self.waiting.get((msg.datapath.id, msg.xid))
        if w is None:
            return
        w, answer = w
        if error is None and not answer:
            return  # a reply on the way (a bundle's open): only its commit answers
        if error is not None:
            w[2].append(error)
            w[0].set()
            return
        w[1].append(msg)
        if not (getattr(msg, "flags", 0) & ofp.OFPMPF_REPLY_MORE):
            w[0].set()

    @set_ev_cls(ofp_event.EventOFPErrorMsg, MAIN_DISPATCHER)
    def _error(self, ev):
        m = ev.msg
        names = ofp.ofp_error_code_to_str(m.type, m.code) if hasattr(ofp, "ofp_error_code_to_str") else ""
        self._wake(ev, f"OpenFlow error type {m.type} code {m.code} {names}".strip())

    @set_ev_cls(ofp_event.EventOFPBundleCtrlMsg, MAIN_DISPATCHER)
    def _bundle(self, ev):
        self._wake(ev)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def _barrier(self, ev):
        self._wake(ev)

    @set_ev_cls(ofp_event.EventOFPPortStatsReply, MAIN_DISPATCHER)
    def _ports(self, ev):
        self._wake(ev)

    @set_ev_cls(ofp_event.EventOFPPortDescStatsReply, MAIN_DISPATCHER)
    def _port_desc(self, ev):
        self._wake(ev)

    @set_ev_cls(ofp_event.EventOFPFlowStatsReply, MAIN_DISPATCHER)
    def _flows(self, ev):
        self._wake(ev)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def _packet_in(self, ev):
        m = ev.msg
        data = bytes(m.data)
        if len(data) < 14:
            return
        out = {"event": "packet_in", "dpid": m.datapath.id, "in_port": int(m.match.get("in_port", 0)),
               "eth_dst": int.from_bytes(data[:6], "big"), "data": data.hex(),
               "truncated": len(data) < int(getattr(m, "total_len", len(data))),
               "cookie": int(getattr(m, "cookie", 0) or 0)}
        self._emit(out)

    def _ask(self, dpid: int, chunks: list[bytes], xid: int, also: range = range(0),
             deadline: float | None = None) -> list:
        """Send ``chunks``; wait for the replies to ``xid`` (errors of ``also`` count too)
        until ``deadline`` (``time.monotonic()``; default :data:`TIMEOUT_S` from now)."""
        dp = self.dps.get(dpid)
        if dp is None:
            raise RuntimeError("not connected")
        w = [hub.Event(), [], []]
        keys = [(dpid, xid)] + [(dpid, x) for x in also]
        for k in keys:
            self.waiting[k] = (w, k[1] == xid)
        try:
            dp.send(b"".join(chunks))  # one write: the bundle goes out as one stream
            left = TIMEOUT_S if deadline is None else deadline - time.monotonic()
            if left <= 0 or not w[0].wait(timeout=left):
                raise RuntimeError(f"no answer within {TIMEOUT_S:g} s")
            if w[2]:
                raise RuntimeError("; ".join(w[2]))
            return w[1]
        finally:
            for k in keys:
                self.waiting.pop(k, None)

    def _multipart(self, dpid: int, make) -> list:
        """The entries of every reply to one multipart request, ``make(datapath)``,
        sent to switch ``dpid``."""
        xid = self._next_xid(dpid, 1)
        dp = self.dps[dpid]
        msg = make(dp)
        msg.set_xid(xid)
        msg.serialize()
        return [s for r in self._ask(dpid, [bytes(msg.buf)], xid) for s in r.body]

    def _next_xid(self, dpid: int, n: int) -> int:
        dp = self.dps.get(dpid)
        if dp is None:
            raise RuntimeError("not connected")
        first = (dp.xid + 1) & 0x7FFFFFFF or 1
        dp.xid = first + n
        return first

    # -- requests -------------------------------------------------------------------

    def _handle(self, req: dict) -> dict:
        op, dpid = req["op"], req.get("dpid")
        if op == "connected":
            return {"dpids": sorted(self.dps)}
        if op == "bundle":
            lines = req["lines"]
            first = self._next_xid(dpid, len(lines) + 3)
            self.bundle_ids += 1
            bid = self.bundle_ids
            t0 = time.perf_counter()
            deadline = time.monotonic() + TIMEOUT_S  # barrier and commit share it (module text)
            *adds, commit = self.encoder.bundle(lines, bid, first)
            t1 = time.perf_counter()
            commit_xid, barrier_xid = first + len(lines) + 1, first + len(lines) + 2
            # Open vSwitch answers a bad add with an error and leaves it out of the
            # bundle, so a commit would apply the rest: the barrier's reply says every
            # add was taken (their errors come before it); only then commit
            try:
                self._ask(dpid, adds + [_barrier(barrier_xid)], barrier_xid, also=range(first, commit_xid),
                          deadline=deadline)
            except RuntimeError:
                if dpid in self.dps:
                    self.dps[dpid].send(_ctrl(bid, ofp.OFPBCT_DISCARD_REQUEST, commit_xid))
                raise
            replies = self._ask(dpid, [commit], commit_xid, deadline=deadline)
            if not any(r.type == ofp.OFPBCT_COMMIT_REPLY for r in replies):
                raise RuntimeError("bundle not committed")
            # the app's own time (encoding) and the wait for the switch (send to commit reply)
            return {"encode_s": t1 - t0, "switch_s": time.perf_counter() - t1}
        if op == "ports":
            body = self._multipart(dpid, lambda dp: dp.ofproto_parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY))
            return {"ports": {s.port_no: [s.rx_bytes, s.tx_bytes] for s in body if s.port_no <= ofp.OFPP_MAX}}
        if op == "port_state":
            body = self._multipart(dpid, lambda dp: dp.ofproto_parser.OFPPortDescStatsRequest(dp, 0))
            return {"ports": {s.port_no: not (s.state & ofp.OFPPS_LINK_DOWN or s.config & ofp.OFPPC_PORT_DOWN)
                              for s in body if s.port_no <= ofp.OFPP_MAX}}
        if op == "flows":
            body = self._multipart(dpid, lambda dp: dp.ofproto_parser.OFPFlowStatsRequest(dp, table_id=req["table"]))
            out = {}
            for s in body:
                out[match_text(s.match)] = out.get(match_text(s.match), 0) + s.byte_count
            return {"flows": out, "n": len(body)}
        if op == "packet_out":
            dp = self.dps.get(dpid)
            if dp is None:
                raise RuntimeError("not connected")
            parser = dp.ofproto_parser
            msg = parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=req["in_port"],
                                      actions=[parser.OFPActionOutput(ofp.OFPP_TABLE)],
                                      data=bytes.fromhex(req["data"]))
            dp.send_msg(msg)
            return {}
        raise RuntimeError(f"unknown request {op!r}")

    def _run(self, req: dict) -> None:
        try:
            out = self._handle(req)
        except Exception as exc:  # every failure goes back to the driver as words
            out = {"error": str(exc) or type(exc).__name__}
        out["id"] = req["id"]
        self._emit(out)

    def _serve(self) -> None:
        buf = b""
        while True:
            data = self.sock.recv(1 << 20)
            if not data:  # the driver's process is gone: stop
                import os
                os._exit(0)
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                hub.spawn(self._run, json.loads(line))


def _barrier(xid: int) -> bytes:
    from os_ken.ofproto import ofproto_v1_4_parser as p

    msg = p.OFPBarrierRequest(DP)
    msg.set_xid(xid)
    msg.serialize()
    return bytes(msg.buf)


def main(argv: list[str]) -> None:
    global _CHANNEL_FD
    hub.patch(thread=False)
    from os_ken import cfg
    port, _CHANNEL_FD = int(argv[0]), int(argv[1])
    cfg.CONF(args=[], project="os_ken")
    cfg.CONF.set_override("ofp_listen_host", "127.0.0.1")
    cfg.CONF.set_override("ofp_tcp_listen_port", port)
    app_manager.AppManager.run_apps(["os_ken.controller.ofp_handler", __name__])


if __name__ == "__main__":
    main(sys.argv[1:])
