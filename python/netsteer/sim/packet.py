"""The packet fidelity: its scenario parameters, the SL of each flow, its reports.

A scenario runs packet by packet with ``fidelity: packet`` (or ``netsteer run
--fidelity packet``); the engine is the same (same flows, routing, MPI programs,
reconfiguration), only its physics changes (``crates/netsteer-core/src/packet``).
Parameters, with units, under ``packet:``; VL arbitration and SL2VL mean what
OpenSM's QoS options mean:

=================  ==========================================  ================
key                meaning                                     default
=================  ==========================================  ================
mtu                payload per packet, 256 B .. 4 KiB, power   2KiB
                   of two (IB MTU)
header             bytes added per packet on the wire, 0..128  26 (LRH+BTH+CRCs)
buffer             receive buffer per port and VL (credits)    16KiB
vls                data VLs (``qos_max_vls``), 1..15           1
switch_latency     head in to head out of a switch             100ns
switching          ``cut-through`` or ``store-and-forward``    cut-through
vlarb_high         ``"VL:weight,..."`` (``qos_vlarb_high``),   none
                   weight in 64-byte units, 0..255
vlarb_low          as above (``qos_vlarb_low``)                every VL, 64
high_limit         4 KiB units of high priority in a row       0
                   (``qos_high_limit``; 255: no limit)
sl2vl              16 VLs, one per SL (``qos_sl2vl``); 15:     SL mod vls
                   SL not usable
rc_timeout         RC transport timeout: a sender that lost    2^30 ns (1.07 s)
                   packets sends again from the first one
                   not taken, this long after the last
                   progress (``UCX_RC_TIMEOUT``)
=================  ==========================================  ================

Packets waiting for a link that is down are dropped; the sender goes back N after
``rc_timeout``. Its default is UCX's ``UCX_RC_TIMEOUT`` (1 s) as the HCA applies it:
InfiniBand's local ACK timeout is 4.096 us x 2^k, and UCX takes the nearest k, 18.

A flow's SL with a ``qos:`` section is the one it resolves (:mod:`netsteer.qos.scenario`:
a qos class's SL, else its partition's SL under pFTree, else its ``class``), as at flow
level; without one, its partition's SL when the routing assigns them (pFTree's
``partition_sl``), else its traffic ``class``.

Examples
--------
>>> p = PacketParams.model_validate({"mtu": "4KiB", "vls": 2, "vlarb_low": "0:32,1:96"})
>>> p.engine_dict()["vlarb_low"], p.engine_dict()["sl2vl"][:4]
([(0, 32), (1, 96)], [0, 1, 0, 1])
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, model_validator

from ..errors import NetsteerError, did_you_mean, plain_words
from ..schema import Duration, Size

Int = Annotated[int, Strict()]

#: UCX_RC_TIMEOUT's default (1 s) as the HCA applies it: InfiniBand's local ACK
#: timeout 4.096 us x 2^k with the nearest k, 18 (openucx, uct_ib_to_qp_fabric_time).
RC_TIMEOUT_NS = 4096 << 18
#: The longest local ACK timeout InfiniBand has, 4.096 us x 2^31.
MAX_RC_TIMEOUT_NS = 4096 << 31


def _c_number(text: str) -> int | None:
    """A number as OpenSM's parser reads it (C's ``strtoul(text, NULL, 0)``): ``0x``
    hexadecimal, a leading ``0`` octal, else decimal; ``None`` if it is not one. A
    leading minus is kept, for the range check to name.

    >>> [_c_number(t) for t in ("40", "0x28", "010", "0", "-1", "08", "4a", "")]
    [40, 40, 8, 0, -1, None, None, None]
    """
    sign, digits = (-1, text[1:]) if text.startswith("-") else (1, text)
    if digits[:2].lower() == "0x" and len(digits) > 2:
        base, digits = 16, digits[2:]
    elif digits.startswith("0") and len(digits) > 1:
        base, digits = 8, digits[1:]
    else:
        base = 10
    if not digits or not all(c in "0123456789abcdef"[:base] for c in digits.lower()):
        return None
    return sign * int(digits, base)


def _table(value: Any) -> list[tuple[int, int]]:
    """``"0:40,1:0"`` (OpenSM's syntax, numbers as OpenSM reads them: ``0x28`` is 40,
    ``010`` is 8) or ``[[0, 40], [1, 0]]``."""
    if isinstance(value, str):
        out = []
        for item in value.replace(" ", "").split(","):
            if not item:
                continue
            vl, sep, w = item.partition(":")
            v, n = _c_number(vl), _c_number(w)
            if not sep or v is None or n is None:
                raise ValueError(f"entry {item!r} is not VL:weight")
            out.append((v, n))
        value = out
    if not isinstance(value, (list, tuple)):
        raise ValueError("a VL arbitration table is 'VL:weight,...' or a list of [VL, weight]")
    table = []
    for e in value:
        if not isinstance(e, (list, tuple)) or len(e) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in e):
            raise ValueError(f"entry {e!r} is not [VL, weight]")
        vl, w = e
        if not 0 <= w <= 255:
            raise ValueError(f"weight {w} of VL {vl} is outside 0..255 (64-byte units)")
        if not 0 <= vl <= 14:
            # OpenSM would take VL n as n % 15 without a word; a table that names VL 15
            # is more likely a typo than a wish for VL 0
            hint = f"; OpenSM would read it as VL {vl % 15}" if vl > 14 else ""
            raise ValueError(f"VL {vl} is not a data VL (0..14{hint})")
        table.append((vl, w))
    if len(table) > 64:
        raise ValueError(f"{len(table)} entries: a VL arbitration table holds at most 64")
    return table


def _sl2vl(value: Any) -> list[int]:
    if isinstance(value, str):
        try:
            value = [int(x) for x in value.replace(" ", "").split(",") if x]
        except ValueError:
            raise ValueError("sl2vl is 16 comma-separated VLs, one per SL") from None
    if not isinstance(value, (list, tuple)) or len(value) != 16:
        raise ValueError("sl2vl is 16 VLs, one per SL 0..15")
    if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 15 for x in value):
        raise ValueError("sl2vl entries are VLs 0..15 (15: the SL may not be used)")
    return list(value)


Table = Annotated[list[tuple[int, int]], BeforeValidator(_table)]
Sl2Vl = Annotated[list[int], BeforeValidator(_sl2vl)]


#: The largest ``header`` taken: InfiniBand's largest packet header is LRH 8 + GRH 40 +
#: BTH 12 + extended transport headers (RDETH 4, DETH 8, AtomicETH 28) + ICRC 4 + VCRC 2
#: = 106 bytes; a header of kilobytes is a unit slip, not a protocol.
MAX_HEADER = 128


class PacketParams(BaseModel):
    """The ``packet:`` section of a scenario (see the module text)."""

    model_config = ConfigDict(extra="forbid")

    mtu: Size = 2048
    header: Size = 26
    buffer: Size = 16 * 1024
    vls: Int = Field(1, ge=1, le=15)
    switch_latency: Duration = 100
    switching: Literal["cut-through", "store-and-forward"] = "cut-through"
    vlarb_high: Table = Field(default_factory=list)
    vlarb_low: Table | None = None
    high_limit: Int = Field(0, ge=0, le=255)
    sl2vl: Sl2Vl | None = None
    rc_timeout: Duration = RC_TIMEOUT_NS

    @model_validator(mode="after")
    def _consistent(self) -> "PacketParams":
        if not (256 <= self.mtu <= 4096) or self.mtu & (self.mtu - 1):
            raise _FieldError("mtu", f"{self.mtu} B is not an InfiniBand MTU: use a power of two from 256 B to 4 KiB")
        if self.header > MAX_HEADER:
            raise _FieldError("header", f"{self.header} B is not an InfiniBand packet header: the largest (LRH, GRH, "
                                        f"BTH, extended transport headers, ICRC, VCRC) is about 106 B; give at most "
                                        f"{MAX_HEADER} B")
        packet = -(-(self.mtu + self.header) // 64) * 64
        if self.buffer < packet:
            raise _FieldError("buffer", f"{self.buffer} B per port and VL is smaller than one packet "
                                        f"({self.mtu} B + {self.header} B header = {packet} B in 64 B credits)")
        for name in ("vlarb_high", "vlarb_low"):
            for vl, w in getattr(self, name) or []:
                if vl >= self.vls and w > 0:  # weight 0 is skipped: harmless beyond the VLs
                    raise _FieldError(name, f"VL {vl} is beyond the {self.vls} VLs configured (0..{self.vls - 1})")
        if self.rc_timeout <= 0:
            raise _FieldError("rc_timeout", "a lost packet would never be sent again (InfiniBand's timeout 0 waits "
                                            "forever): give a positive time, e.g. 4.096us x 2^k")
        if self.rc_timeout > MAX_RC_TIMEOUT_NS:
            raise _FieldError("rc_timeout", f"{self.rc_timeout} ns is longer than InfiniBand's longest local ACK "
                                            f"timeout, 4.096 us x 2^31 ({MAX_RC_TIMEOUT_NS} ns, about 2.4 h)")
        for sl, vl in enumerate(self.sl2vl or []):
            if vl != 15 and vl >= self.vls:
                raise _FieldError("sl2vl", f"SL {sl} is mapped to VL {vl}, beyond the {self.vls} VLs configured "
                                           f"(0..{self.vls - 1})")
        return self

    def engine_dict(self) -> dict:
        """The parameters as ``netsteer._core.Engine(packet=...)`` takes them."""
        low = self.vlarb_low if self.vlarb_low is not None else [(v, 64) for v in range(self.vls)]
        sl2vl = self.sl2vl if self.sl2vl is not None else [s % self.vls for s in range(16)]
        return {
            "mtu": self.mtu, "header": self.header, "buffer": self.buffer, "vls": self.vls,
            "switch_latency_ns": self.switch_latency, "cut_through": self.switching == "cut-through",
            "vlarb_high": list(self.vlarb_high), "vlarb_low": list(low), "high_limit": self.high_limit,
            "sl2vl": list(sl2vl), "rc_timeout_ns": self.rc_timeout,
        }

    def served_vls(self) -> set[int]:
        d = self.engine_dict()
        return {v for v, w in d["vlarb_high"] + d["vlarb_low"] if w > 0}


class _FieldError(ValueError):
    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field


def parse_packet(data: Any, *, file: str | None = None, field: str = "packet") -> PacketParams:
    """Validate a ``packet:`` section; errors name the file and the field."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise NetsteerError("packet parameters are a mapping (mtu, buffer, vls, ...)", file=file, field=field)
    try:
        return PacketParams.model_validate(data)
    except _FieldError as exc:
        raise NetsteerError(str(exc), file=file, field=f"{field}.{exc.field}") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = ".".join(str(p) for p in e["loc"])
        ctx = e.get("ctx") or {}
        if isinstance(ctx.get("error"), _FieldError):
            return_field = f"{field}.{ctx['error'].field}"
            raise NetsteerError(str(ctx["error"]), file=file, field=return_field) from None
        if e["type"] == "extra_forbidden":
            key = e["loc"][-1]
            raise NetsteerError(f"unknown packet parameter {key!r}{did_you_mean(key, PacketParams.model_fields)}",
                                file=file, field=field) from None
        raise NetsteerError(plain_words(e), file=file, field=f"{field}.{loc}" if loc else field) from None


#: A flow's share at flow level, by key: what it is, and what gives traffic its
#: share at packet level instead (a flow's SL is its ``class``, or its qos class).
FLOW_SHARES = {
    "priority": ("a flow-level strict-priority class", "its VL in vlarb_high"),
    "weight": ("a flow-level max-min weight", "its VL a weight in vlarb_low"),
}


def flow_shares(jobs) -> dict[str, list[str]]:
    """The fields of a scenario's jobs (``JobModel``) that set a share the packet
    fidelity has no use for (a priority or a weight other than the default), by key.

    >>> from netsteer.scenario import JobModel
    >>> flow_shares([JobModel(name="a", flows=[{"src": 0, "dst": 1, "bytes": 1, "weight": 2.0}]),
    ...              JobModel(name="b", bulk=[{"src": 0, "dst": 1, "priority": 1}])])
    {'weight': ['jobs.0.flows.0.weight'], 'priority': ['jobs.1.bulk.0.priority']}
    """
    out: dict[str, list[str]] = {}
    for j, job in enumerate(jobs):
        holders = [(f"jobs.{j}", job)] + [(f"jobs.{j}.{kind}.{i}", f) for kind in ("flows", "bulk")
                                          for i, f in enumerate(getattr(job, kind))]
        for base, m in holders:
            for key in FLOW_SHARES:
                if key in type(m).model_fields and getattr(m, key) != type(m).model_fields[key].default:
                    out.setdefault(key, []).append(f"{base}.{key}")
    return out


def check_fidelity(fidelity: str, packet: Any, sharing_given: bool, sharing: str, *, file=None,
                   override: bool = False, notes: list[str] | None = None, jobs=()) -> PacketParams | None:
    """The packet parameters of a scenario at ``fidelity``.

    A parameter of the other fidelity in the file (``packet:`` at flow level; at
    packet level ``sharing:``, and a job's, flow's or bulk flow's ``priority`` or
    ``weight``: see :func:`flow_shares`) is an error that names it. When the
    fidelity is overridden (``--fidelity``: run this scenario the other way), it is
    left out instead, and a note saying so is appended to ``notes``, never ignored
    silently.
    """
    how = "--fidelity" if override else "fidelity"
    if fidelity == "flow":
        if packet is not None:
            if override and notes is not None:
                notes.append("packet: its parameters apply to the packet fidelity; left out at --fidelity flow")
                return None
            raise NetsteerError(f"packet parameters apply to the packet fidelity, and this run is at flow level "
                                f"({how} flow): remove them or run with fidelity packet", file=file, field="packet")
        return None
    if sharing_given:
        if override and notes is not None:
            notes.append(f"sharing: {sharing} is a flow-level model; left out at --fidelity packet, which shares "
                         "links by credits and VL arbitration")
        else:
            raise NetsteerError(f"sharing ({sharing}) is a flow-level model; the packet fidelity ({how} packet) "
                                "shares links by credits and VL arbitration: remove it", file=file, field="sharing")
    for key, fields in flow_shares(jobs).items():
        what, instead = FLOW_SHARES[key]
        if override and notes is not None:
            more = f" and {len(fields) - 3} more" if len(fields) > 3 else ""
            notes.append(f"{', '.join(fields[:3])}{more}: {key} is {what}; left out at --fidelity packet, which "
                         "shares links by credits and VL arbitration")
        else:
            raise NetsteerError(f"{key} is {what}, and the packet fidelity ({how} packet) shares links by credits "
                                f"and VL arbitration: give the traffic a service level of its own instead (class, "
                                f"or a qos class) and {instead}, or remove it", file=file, field=fields[0])
    return parse_packet(packet, file=file)


QOS_KEYS = ("vls", "vlarb_high", "vlarb_low", "high_limit", "sl2vl")


#: The packet fabric's clock: int64 picoseconds. A path's latency (in ps) must stay within
#: half of it, as a flow's finish must within half of the flow level's int64 ns.
PACKET_LATENCY_RANGE_PS = 2**62


def check_packet_latencies(topo, *, file=None) -> None:
    """Refuse a topology whose path latencies could pass the packet fabric's clock.

    A link may take up to 2^63-1 ns (the flow level's int64 clock), but the packet
    fidelity counts time in int64 picoseconds (about 106 days), so a hop of more than
    about 107 days, or a path of several long hops, would wrap. A route crosses each
    link at most once, so links whose latencies add up to less than 2^62 ps (about 53
    days) leave every path within range.

    >>> from netsteer.topology.pgft import pgft
    >>> check_packet_latencies(pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=100))
    >>> try:
    ...     check_packet_latencies(pgft(1, [2], [1], link_bandwidth=1e9, link_latency_ns=2**62), file="s.yaml")
    ... except NetsteerError as exc:
    ...     print(str(exc)[:44], "add up to 9223372036854775808 ns" in str(exc))
    s.yaml: topology: the packet fidelity counts True
    """
    lat = np.asarray(topo.link_latency_ns, dtype=np.int64)
    limit_ns = PACKET_LATENCY_RANGE_PS // 1000
    if not len(lat) or int(lat.max()) * len(lat) < limit_ns:  # (Python ints: no overflow)
        return
    total = sum(lat.tolist())
    if total < limit_ns:
        return
    raise NetsteerError(f"the packet fidelity counts time in int64 picoseconds (about 106 days): the link "
                        f"latencies add up to {total} ns, so a path's latency could pass that clock; give links "
                        f"latencies that add up to less than {limit_ns} ns (about 53 days), or run at flow level",
                        file=file, field="topology")


def with_qos(params: PacketParams, raw: Any, plan, *, file=None) -> PacketParams:
    """The packet parameters with the ``qos:`` section's switch-port settings
    (``max_vls``, ``high_limit``, ``vlarb_high``, ``vlarb_low``, ``sl2vl``: OpenSM's
    meaning in both places). Setting them under ``packet:`` too is an error."""
    for k in QOS_KEYS:
        if isinstance(raw, dict) and k in raw:
            raise NetsteerError(f"{k} is set by the qos section (its switch ports) at packet level too; "
                                "give VL arbitration and SL2VL in one place, the qos section", file=file,
                                field=f"packet.{k}")
    p = plan.config.port("swe")
    q = params.model_copy(update=dict(vls=p.max_vls, high_limit=p.high_limit, vlarb_high=list(p.vlarb_high),
                                      vlarb_low=list(p.vlarb_low), sl2vl=list(p.sl2vl)))
    try:
        return q._consistent()
    except _FieldError as exc:
        raise NetsteerError(str(exc), file=file, field="qos") from None


def credit_loop(driver, params: PacketParams) -> str | None:
    """The credit loop a stalled packet run's unfinished flows hold, or None.

    Each unfinished flow (of the DAG, or a streamed MPI job's message in flight)
    makes each channel of its route depend on the next one, on its VL (Dally and
    Seitz, as :mod:`netsteer.routing.deadlock` builds the graph from tables): with
    credit-based flow control, a cycle of those inside one VL can fill every buffer
    on it and stop for good. Returns ``"VL v: c1 -> c2 -> ... -> c1"`` with the
    channels named as the topology names them.
    """
    from ..routing.deadlock import find_cycle

    eng, topo = driver.engine, driver.topo
    nC = topo.n_channels
    sl2vl = params.engine_dict()["sl2vl"]
    edges: dict[int, list[tuple[int, int]]] = {}
    for f in eng.unfinished_flows().tolist():
        path = [int(c) for c in eng.flow_path(f)]
        # the SL it travels on now: a DAG flow's, a streamed message's job's, or a QoS change's
        vl = int(sl2vl[eng.flow_sl(f) & 15])
        edges.setdefault(vl, []).extend((a, b) for a, b in zip(path, path[1:]) if a < nC and b < nC)
    for vl in sorted(edges):
        e = np.unique(np.array(edges[vl], dtype=np.int64).reshape(-1, 2), axis=0)
        cyc = find_cycle(e[:, 0], e[:, 1], nC) if len(e) else []
        if cyc:
            return f"VL {vl}: " + " -> ".join(topo.channel_name(int(c)) for c in cyc + [cyc[0]])
    return None


def _class_field(built, i: int) -> str:
    """Where the scenario gives DAG flow ``i`` its class: ``jobs.J.flows.K.class``,
    ``jobs.J.bulk.K.class`` or an MPI job's ``jobs.J.class``."""
    from ..qos.scenario import class_field

    cls = int(built.dag.columns().traffic_class[i])
    return class_field(built.scenario.model.jobs, int(built.job_of_flow[i]), cls)


def flow_sls(built, params: PacketParams) -> np.ndarray:
    """Each DAG flow's SL, checked against SL2VL and the arbitration tables: with a
    ``qos:`` section the one it resolved (a qos class over its partition's SL, as at
    flow level); else its partition's SL under a partition-aware routing, else its class."""
    from ..qos.scenario import partition_flow_sls

    cols = built.dag.columns()
    sl = np.asarray(cols.traffic_class, dtype=np.int64).copy()
    routing = built.routing
    part_sl = getattr(routing, "partition_sl", None)
    qos = getattr(built, "qos", None)
    if part_sl and len(sl) and qos is None:  # with qos, apply_qos has put the partitions' SLs in
        sl = partition_flow_sls(routing, cols.src, cols.dst)
    if len(sl) and (sl.max() > 15):
        i = int(np.argmax(sl > 15))
        raise NetsteerError(f"class {int(sl[i])} is not an InfiniBand SL (0..15): the packet fidelity takes a "
                            "flow's class as its SL", file=built.scenario.file, field=_class_field(built, i))
    if part_sl and qos is not None:  # the tables are the qos section's: name the partition and its key
        from ..qos.config import check_partition_sls

        check_partition_sls(qos.config, getattr(routing, "partitions", None), part_sl, file=built.scenario.file)
    _check_sls_served(built, params, np.unique(sl).tolist())
    return sl


def streamed_sls(built, params: PacketParams) -> list[int]:
    """The SL each streamed MPI job's messages travel on: its partition's SL under a
    partition-aware routing (all its pairs share one, or it would not stream:
    :func:`netsteer.qos.scenario.job_pair_sls`), else its class; checked as
    :func:`flow_sls` checks the DAG's."""
    from ..qos.scenario import job_pair_sls
    from ..traffic.placement import place

    out = []
    for j, job in getattr(built, "streamed", []):
        sls = job_pair_sls(built.routing, place(job.ranks, job.placement, built.topology.n_hosts, job.seed))
        sl = min(sls) if sls else job.traffic_class
        if sl > 15:
            raise NetsteerError(f"class {sl} is not an InfiniBand SL (0..15): the packet fidelity takes a "
                                "job's class as its messages' SL", file=built.scenario.file, field=f"jobs.{j}.class")
        out.append(int(sl))
    _check_sls_served(built, params, sorted(set(out)))
    return out


def _check_sls_served(built, params: PacketParams, sls: list) -> None:
    """Refuse SLs that flows use but SL2VL or the arbitration tables leave without a VL
    that sends."""
    file = built.scenario.file
    section = "qos" if getattr(built, "qos", None) is not None else "packet"  # where the scenario gave the tables
    d = params.engine_dict()
    served = params.served_vls()
    for s in sls:
        vl = d["sl2vl"][int(s)]
        if vl == 15:
            raise NetsteerError(f"SL {int(s)} is used by flows but sl2vl maps it to VL 15 (not usable)",
                                file=file, field=f"{section}.sl2vl")
        if vl not in served:
            raise NetsteerError(f"SL {int(s)} is used by flows and maps to VL {vl}, which has no weight in "
                                "vlarb_high or vlarb_low: its packets would never leave", file=file,
                                field=f"{section}.vlarb_low")


def _message_figures(t: dict) -> dict:
    """A job's message figures (s) from its sums (ns), as the engine keeps them for
    a streamed job (``Engine.mpi_message_times``) and as the DAG's flows give them."""
    n, q = t["messages"], t["queued"]
    return {"messages": int(n), "latency_mean_s": t["latency_sum_ns"] / n * 1e-9,
            "latency_max_s": t["latency_max_ns"] * 1e-9,
            "queueing_mean_s": t["queueing_sum_ns"] / q * 1e-9 if q else None,
            "queueing_max_s": t["queueing_max_ns"] * 1e-9 if q else None}


def packet_summary(built, res, top: int = 10) -> dict:
    """The packet fidelity's part of a run's result: its parameters, the ports that
    waited longest for credits (PortXmitWait), per job the messages' latency and how
    much of it was queueing, and what links that went down cost: packets dropped
    (and the ports that dropped them, PortXmitDiscards), retransmission timeouts and NAKs,
    packets sent again, packets their destinations threw away (go-back-N)."""
    rep = res.packet
    topo = built.topology
    n_ch = topo.n_channels
    wait = rep["xmit_wait_ns"][:n_ch]
    peak = rep["peak_occupancy_bytes"][:n_ch]
    order = np.argsort(-wait, axis=None, kind="stable")[:top]
    ports = []
    for k in order:
        c, v = divmod(int(k), rep["vls"])
        if wait[c, v] <= 0:
            break
        ports.append({"port": topo.channel_name(c), "channel": c, "vl": v, "xmit_wait_s": float(wait[c, v]) * 1e-9,
                      "peak_occupancy_bytes": int(peak[c, v])})
    drops = []
    disc = rep["xmit_discards"][:n_ch]
    for k in np.argsort(-disc, axis=None, kind="stable")[:top]:
        c, v = divmod(int(k), rep["vls"])
        if disc[c, v] <= 0:
            break
        drops.append({"port": topo.channel_name(c), "channel": c, "vl": v, "xmit_discards": int(disc[c, v])})
    lat, queue = message_times(res, built.dag.columns().bytes)
    sums = {}
    for j, name in enumerate(built.job_names):
        m = (built.job_of_flow == j) & ~built.background & (lat >= 0)
        if m.any():
            # queueing over the messages that have a time alone to measure it against
            # (not bulk flows stopped by their duration): None when none has
            q = m & (queue >= 0)
            sums[name] = {"messages": int(m.sum()), "latency_sum_ns": float(lat[m].sum()),
                          "latency_max_ns": float(lat[m].max()), "queued": int(q.sum()),
                          "queueing_sum_ns": float(queue[q].sum()),
                          "queueing_max_ns": float(queue[q].max()) if q.any() else 0.0}
    # streamed MPI jobs: their flows' slots were reused, the engine summed as they finished
    mpi = getattr(res, "mpi", None) or {}
    for (_, job), t in zip(getattr(built, "streamed", []), mpi.get("messages", [])):
        if t and t["messages"]:
            sums[job.name] = t
    jobs = {name: _message_figures(sums[name]) for name in built.job_names if name in sums}
    return {"parameters": built.packet.model_dump(), "packets": int(rep["packets"]),
            "xmit_wait_s_total": float(wait.sum()) * 1e-9, "ports_waiting_most": ports, "messages": jobs,
            "dropped": int(rep["dropped"]), "timeouts": int(rep["timeouts"]), "naks": int(rep["naks"]),
            "retransmitted": int(rep["retransmitted"]), "discarded": int(rep["discarded"]),
            "stopped_discards": int(rep.get("stopped_discards", 0)),
            "ports_dropping": drops}


def message_times(res, nbytes=None) -> tuple[np.ndarray, np.ndarray]:
    """Per flow: latency (release to last byte, ns) and the part of it spent
    queueing (its time beyond what it takes alone on an idle fabric); -1 where the
    flow did not finish or has no packets. Queueing is -1 too where there is no time
    alone to measure it against: a flow stopped before its last byte (an iperf-like
    bulk flow ended by its duration: its bytes, ``nbytes``, against what it sent),
    and one whose time alone is none (``ideal_ns`` -1: beyond the clock, as a bulk
    flow's nominal size is)."""
    rep = res.packet
    comp, rel = res.completion_ns, res.release_ns
    start, ideal = rep["start_ns"], rep["ideal_ns"]
    n = len(comp)
    start, ideal = start[:n], ideal[:n]
    ok = (comp >= 0) & (start >= 0)
    lat = np.where(ok, comp - rel, -1)
    alone = ok & (ideal >= 0)
    sent = getattr(res, "sent_bytes", None)
    if nbytes is not None and sent is not None:
        alone &= np.asarray(sent, dtype=np.float64)[:n] >= np.asarray(nbytes, dtype=np.float64)[:n] * (1 - 1e-9)
    queue = np.where(alone, np.maximum(comp - start - ideal, 0), -1)
    return lat, queue


__all__ = ["PacketParams", "check_fidelity", "flow_shares", "flow_sls", "streamed_sls", "message_times", "packet_summary", "parse_packet"]
