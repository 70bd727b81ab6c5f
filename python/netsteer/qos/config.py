"""InfiniBand QoS as a scenario declares it: SL2VL maps, VL arbitration, traffic classes.

The ``qos:`` section of a scenario. Its keys mean what OpenSM's ``qos_*`` options of
``opensm.conf`` mean (the same names without the prefix), so a configuration moves
between netsteer and a real subnet manager unchanged:

=============  ===============================================================
key            meaning
=============  ===============================================================
max_vls        data VLs in use (``qos_max_vls``), 1..15
high_limit     4 KiB units of high-priority bytes sent in a row before a low
               priority packet gets its chance (``qos_high_limit``); 255: none
vlarb_high     ``[[VL, weight], ...]`` or ``"VL:weight,..."``; weight in 64-byte
               units, 0..255 (0: the entry is skipped)
vlarb_low      the low-priority table, same syntax
sl2vl          16 VLs, one per SL (VL 15: the SL may not be used)
ports          per port type overrides of the keys above: ``ca`` (HCA ports),
               ``swe`` (switch external ports), ``sw0`` (switch port 0),
               ``rtr`` (routers)
classes        traffic classes: ``{name, sl, jobs, kind, path_prefix}``; a flow
               takes the SL of the first class whose given selectors all match
changes        ``{at, job | class, sl}``: a priority changed while the run goes on
devices        ``{host, rate, kinds}``: a storage device behind a host (a staging
               node's SSD, the file system's disks) that the I/O flows into that
               host cross, at ``rate`` (see :mod:`netsteer.qos.staging`)
=============  ===============================================================

Examples
--------
>>> q = parse_qos({"max_vls": 4, "high_limit": 10, "vlarb_high": [[0, 4]],
...                "vlarb_low": [[1, 16], [2, 8], [3, 32]], "sl2vl": list(range(4)) * 4})
>>> q.port("swe").vlarb_low, q.port("ca").high_limit
([(1, 16), (2, 8), (3, 32)], 10)
>>> parse_qos({"vlarb_low": "0:300"})
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: qos.vlarb_low: weight 300 of VL 0 is outside 0..255 (64-byte units)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError

from ..errors import NetsteerError, clean_loc, key_loc, keys_at, plain_words, unknown_key_reason
from ..schema import Duration
from ..sim.packet import _sl2vl as _packet_sl2vl
from ..sim.packet import _table as _packet_table

Int = Annotated[int, Strict()]

#: OpenSM's port types, in the order its options are written.
PORT_TYPES = ("ca", "swe", "sw0", "rtr")
#: Traffic kinds a class may select (see :func:`flow_kind`).
KINDS = ("mpi", "flows", "bulk", "staging", "storage")


# One parser for OpenSM's VL arbitration and SL2VL syntax: the packet fidelity's
# (same entries, ranges and messages under ``packet:`` and ``qos:``).
parse_vlarb = _packet_table
parse_sl2vl = _packet_sl2vl


Table = Annotated[list[tuple[int, int]], BeforeValidator(parse_vlarb)]
Sl2Vl = Annotated[list[int], BeforeValidator(parse_sl2vl)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PortQos(_Strict):
    """One port type's settings; unset keys come from the ``qos:`` section's own."""

    max_vls: Int | None = Field(None, ge=1, le=15)
    high_limit: Int | None = Field(None, ge=0, le=255)
    vlarb_high: Table | None = None
    vlarb_low: Table | None = None
    sl2vl: Sl2Vl | None = None


class ResolvedPort(_Strict):
    """A port type's complete settings (what OpenSM programs into such a port)."""

    max_vls: int
    high_limit: int
    vlarb_high: list[tuple[int, int]]
    vlarb_low: list[tuple[int, int]]
    sl2vl: list[int]

    def served(self) -> dict[int, str]:
        """VL -> ``"high"`` or ``"low"``: the table that serves it (high wins)."""
        out = {vl: "low" for vl, w in self.vlarb_low if w > 0}
        out.update({vl: "high" for vl, w in self.vlarb_high if w > 0})
        return out


class TrafficClass(_Strict):
    name: str
    sl: Int = Field(ge=0, le=15)
    jobs: list[str] | None = None
    kind: Literal["mpi", "flows", "bulk", "staging", "storage"] | None = None
    path_prefix: str | None = None


class PriorityChange(_Strict):
    at: Duration
    job: str | None = None
    traffic_class: str | None = Field(None, alias="class")
    sl: Int = Field(ge=0, le=15)


def _rate(value: Any) -> float:
    from ..units import parse_bandwidth

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("a device rate is a bandwidth such as 1GBps or 8Gbps")
    bps = parse_bandwidth(value)
    if not bps > 0:
        raise ValueError(f"a device rate must be positive, not {value!r}")
    return bps / 8.0


class Device(_Strict):
    """A device behind ``host`` that flows of ``kinds`` into it cross at ``rate`` (B/s)."""

    host: Int = Field(ge=0)
    rate: Annotated[float, BeforeValidator(_rate)]
    kinds: list[Literal["mpi", "flows", "bulk", "staging", "storage"]] = Field(
        default_factory=lambda: ["flows", "bulk", "staging", "storage"], min_length=1)


class QosConfig(_Strict):
    """The ``qos:`` section (see the module text)."""

    max_vls: Int = Field(1, ge=1, le=15)
    high_limit: Int = Field(0, ge=0, le=255)
    vlarb_high: Table = Field(default_factory=list)
    vlarb_low: Table | None = None
    sl2vl: Sl2Vl | None = None
    ports: dict[Literal["ca", "swe", "sw0", "rtr"], PortQos] = Field(default_factory=dict)
    classes: list[TrafficClass] = Field(default_factory=list)
    changes: list[PriorityChange] = Field(default_factory=list)
    devices: list[Device] = Field(default_factory=list)

    def port(self, kind: str | None = "swe") -> ResolvedPort:
        """The settings of port type ``kind`` (base keys, then its overrides; None:
        the base keys alone)."""
        o = (self.ports.get(kind) if kind is not None else None) or PortQos()
        vls = o.max_vls if o.max_vls is not None else self.max_vls
        low = o.vlarb_low if o.vlarb_low is not None else self.vlarb_low
        sl2vl = o.sl2vl if o.sl2vl is not None else self.sl2vl
        return ResolvedPort(
            max_vls=vls,
            high_limit=o.high_limit if o.high_limit is not None else self.high_limit,
            vlarb_high=list(o.vlarb_high if o.vlarb_high is not None else self.vlarb_high),
            # OpenSM's defaults: every VL in the low table; SL i on VL i mod max_vls
            vlarb_low=list(low) if low is not None else [(v, 64) for v in range(vls)],
            sl2vl=list(sl2vl) if sl2vl is not None else [s % vls for s in range(16)],
        )


def packet_keys(q: QosConfig, kind: str = "swe") -> dict:
    """The packet fidelity's ``packet:`` keys for port type ``kind`` (the packet engine
    has one set of tables for every port): ``vls``, ``vlarb_high``, ``vlarb_low``,
    ``high_limit``, ``sl2vl``, in its names and syntax.

    >>> packet_keys(parse_qos({"max_vls": 2, "vlarb_low": "0:8,1:8"}))["vlarb_low"]
    [[0, 8], [1, 8]]
    """
    p = q.port(kind)
    return {"vls": p.max_vls, "high_limit": p.high_limit,
            "vlarb_high": [[v, w] for v, w in p.vlarb_high if v < p.max_vls],
            "vlarb_low": [[v, w] for v, w in p.vlarb_low if v < p.max_vls], "sl2vl": list(p.sl2vl)}


def _check(q: QosConfig) -> None:
    """Cross-field rules; raises ``(field, reason)`` as a ValueError pair."""
    for kind in (None, *q.ports):
        p = q.port(kind)
        at = "" if kind is None else f"ports.{kind}."
        o = q.ports.get(kind) if kind is not None else None

        def where(name: str) -> tuple[str, str]:
            # a table the port type inherits: name the key the user wrote there (its max_vls)
            if o is None or getattr(o, name) is not None:
                return f"{at}{name}", ""
            return f"{at}max_vls", f" (in {name}, which {kind} ports take from qos.{name})"
        for name in ("vlarb_high", "vlarb_low"):
            for vl, w in getattr(p, name):
                # an entry of weight 0 is skipped by the arbiter (the source's own opensm.conf
                # lists VLs 0..14 with weight 0 beyond its VLs); one with a weight must exist
                if vl >= p.max_vls and w > 0:
                    field, inherited = where(name)
                    raise _FieldError(field, f"VL {vl}{inherited} is beyond max_vls {p.max_vls} "
                                             f"(VLs 0..{p.max_vls - 1})")
        for sl, vl in enumerate(p.sl2vl):
            if vl != 15 and vl >= p.max_vls:
                field, inherited = where("sl2vl")
                raise _FieldError(field, f"SL {sl} is mapped to VL {vl}{inherited}, beyond max_vls {p.max_vls}")
    names: set[str] = set()
    for i, c in enumerate(q.classes):
        if c.name in names:
            raise _FieldError(f"classes.{i}.name", f"class name {c.name!r} is used twice")
        names.add(c.name)
    for i, ch in enumerate(q.changes):
        if (ch.job is None) == (ch.traffic_class is None):
            raise _FieldError(f"changes.{i}", "a priority change names a job or a class (one of them)")
        if ch.traffic_class is not None and ch.traffic_class not in names:
            raise _FieldError(f"changes.{i}.class", f"no class named {ch.traffic_class!r} in qos.classes")
    hosts: dict[int, int] = {}
    for i, d in enumerate(q.devices):
        if d.host in hosts:
            raise _FieldError(f"devices.{i}.host", f"host {d.host} has a device already (devices.{hosts[d.host]})")
        hosts[d.host] = i


def unserved(q: QosConfig, sl: int) -> tuple[str, str] | None:
    """Why SL ``sl`` gets no bandwidth, and the key of the ``qos:`` section that
    causes it, as ``(reason, field)``; None when every port type serves it.

    >>> unserved(parse_qos({"max_vls": 2, "vlarb_low": "0:64"}), 1)
    ('SL 1 maps to VL 1, which has no weight in vlarb_high or vlarb_low on ca ports', 'qos.vlarb_low')
    >>> unserved(parse_qos({"max_vls": 2}), 1) is None
    True
    """
    for kind in PORT_TYPES:
        p, o = q.port(kind), q.ports.get(kind)
        vl = p.sl2vl[sl]
        if vl == 15:
            key = "sl2vl"
            reason = f"SL {sl} maps to VL 15 (not usable) in sl2vl on {kind} ports"
        elif vl not in p.served():
            key = "vlarb_low"
            reason = f"SL {sl} maps to VL {vl}, which has no weight in vlarb_high or vlarb_low on {kind} ports"
        else:
            continue
        own = o is not None and (getattr(o, key) is not None or (key == "vlarb_low" and o.vlarb_high is not None))
        return reason, f"qos.ports.{kind}.{key}" if own else f"qos.{key}"
    return None


def check_sl_served(q: QosConfig, sl: int, *, file=None, field="qos") -> None:
    """An SL in use must reach a VL that some table serves on every port type."""
    for kind in PORT_TYPES:
        p = q.port(kind)
        vl = p.sl2vl[sl]
        if vl == 15:
            raise NetsteerError(f"SL {sl} is used but sl2vl maps it to VL 15 (not usable) on {kind} ports",
                                file=file, field=field)
        if vl not in p.served():
            raise NetsteerError(f"SL {sl} is used and maps to VL {vl}, which has no weight in vlarb_high or "
                                f"vlarb_low on {kind} ports: its packets would never leave", file=file, field=field)


def check_partition_sls(q: QosConfig, partitions, partition_sl: dict[int, int], *, file=None) -> None:
    """Every SL a partition-aware routing (pFTree) gives a partition must get bandwidth
    under the ``qos:`` tables; else a :class:`NetsteerError` naming the partition, its
    SL and the key of the ``qos:`` section that leaves it none."""
    from ..topology.partitions import pkey_text

    for p in partitions or []:
        sl = partition_sl.get(p.pkey)
        why = unserved(q, int(sl)) if sl is not None else None
        if why is not None:
            raise NetsteerError(
                f"the routing puts partition {p.name or pkey_text(p.pkey)!r} ({pkey_text(p.pkey)}) on SL {sl} "
                f"(its lane, in partitions.conf as sl={sl}), but {why[0]}: its traffic would get no bandwidth; "
                f"give that VL a weight in {why[1]}, or set max_vls so that SL {sl} shares a VL that has one",
                file=file, field=why[1])


class _FieldError(ValueError):
    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field


def shared_vls(q: QosConfig) -> list[str]:
    """Notes on classes with different SLs that the switch ports' SL2VL puts on one
    VL (by default ``max_vls`` is 1: every SL on VL 0): they share that VL's
    arbitration as if they were one class, which a user who gave them SLs of their
    own rarely means, so a run says so.

    >>> shared_vls(parse_qos({"classes": [{"name": "a", "sl": 0}, {"name": "b", "sl": 1}]}))
    ['classes a (SL 0) and b (SL 1) share VL 0 (max_vls 1): set max_vls, or sl2vl, to give them VLs of their own']
    >>> shared_vls(parse_qos({"max_vls": 2, "classes": [{"name": "a", "sl": 0}, {"name": "b", "sl": 1}]}))
    []
    """
    p = q.port("swe")
    by_vl: dict[int, list] = {}
    for c in q.classes:
        by_vl.setdefault(p.sl2vl[c.sl], []).append(c)
    out = []
    for vl, cs in sorted(by_vl.items()):
        first = {}
        for c in cs:
            first.setdefault(c.sl, c)
        if len(first) > 1:
            names = " and ".join(f"{c.name} (SL {sl})" for sl, c in sorted(first.items()))
            out.append(f"classes {names} share VL {vl} (max_vls {p.max_vls}): set max_vls, or sl2vl, to give them "
                       "VLs of their own")
    return out


def parse_qos(data: Any, *, file: str | None = None, field: str = "qos") -> QosConfig:
    """Validate a ``qos:`` section; an error names the file and the field."""
    if not isinstance(data, dict):
        raise NetsteerError("qos is a mapping (max_vls, high_limit, vlarb_high, vlarb_low, sl2vl, ...)",
                            file=file, field=field)
    try:
        q = QosConfig.model_validate(data)
        _check(q)
    except _FieldError as exc:
        raise NetsteerError(str(exc), file=file, field=f"{field}.{exc.field}") from None
    except ValidationError as exc:
        e = exc.errors()[0]
        where, msg = key_loc(e["loc"], plain_words(e))
        loc = ".".join(str(p) for p in where if not (isinstance(p, str) and p[:1].isupper()))
        if e["type"] == "extra_forbidden":
            known = keys_at(QosConfig, clean_loc(e["loc"])[:-1])
            raise NetsteerError(unknown_key_reason([e["loc"][-1]], known=known), file=file,
                                field=f"{field}.{loc}") from None
        raise NetsteerError(msg, file=file, field=f"{field}.{loc}" if loc else field) from None
    return q


__all__ = ["Device", "KINDS", "PORT_TYPES", "PriorityChange", "QosConfig", "ResolvedPort", "TrafficClass",
           "check_partition_sls", "check_sl_served", "packet_keys", "parse_qos", "parse_sl2vl", "parse_vlarb",
           "shared_vls", "unserved"]
