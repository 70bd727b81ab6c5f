"""The packet fidelity's lines in ``netsteer run``'s table output."""

from __future__ import annotations

from rich.table import Table

from ..units import format_seconds


def print_packet(pk: dict, console) -> None:
    """Ports that waited longest for credits, what links that went down cost, and
    per job its messages' latency."""
    p = pk["parameters"]
    console.print(f"packet fidelity: MTU {p['mtu']} B, {p['vls']} VL(s), buffer {p['buffer']} B per port and VL, "
                  f"{p['switching']}; {pk['packets']} packets, PortXmitWait total {format_seconds(pk['xmit_wait_s_total'])}")
    if pk.get("dropped") or pk.get("timeouts"):
        console.print(f"packets lost: {pk['dropped']} dropped, {pk['naks']} NAKs, {pk['timeouts']} retransmission "
                      f"timeouts (rc_timeout {p['rc_timeout'] * 1e-9:.6g} s), {pk['retransmitted']} packets sent again, "
                      f"{pk['discarded']} thrown away at destinations (duplicates, or behind a lost one)")
    if pk["ports_waiting_most"]:
        t = Table(title="ports waiting for credits (PortXmitWait)")
        for c in ("port", "VL", "xmit wait", "peak buffer (B)"):
            t.add_column(c, justify="left" if c == "port" else "right")
        for r in pk["ports_waiting_most"]:
            t.add_row(r["port"], str(r["vl"]), format_seconds(r["xmit_wait_s"]), str(r["peak_occupancy_bytes"]))
        console.print(t)
    if pk["messages"]:
        t = Table(title="message latency and queueing")
        for c in ("job", "messages", "latency mean", "max", "queueing mean", "max"):
            t.add_column(c, justify="left" if c == "job" else "right")
        def s(x):  # no queueing figure: only bulk flows stopped by their duration
            return "-" if x is None else format_seconds(x)

        for name, m in pk["messages"].items():
            t.add_row(name, str(m["messages"]), s(m["latency_mean_s"]), s(m["latency_max_s"]),
                      s(m["queueing_mean_s"]), s(m["queueing_max_s"]))
        console.print(t)
