"""pFTree's virtual lanes as OpenSM files: ``sl=`` in ``partitions.conf``, QoS lines of ``opensm.conf``.

The routing engine decides which partition gets which service level
(``routing.partition_sl``, with SL *i* on VL *i*); this module only writes it
down the way OpenSM reads it: the partition's ``sl`` flag (OpenSM hands that SL
out in path records for the partition's P_Key), and ``qos_*`` options mapping
SL *i* to VL *i* with equal VL arbitration weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from netsteer.topology.partitions import Partition

__all__ = ["opensm_qos_conf", "partition_vls", "partitions_with_sl", "qos_conf_lines", "parse_qos_conf"]


def partitions_with_sl(partitions: Sequence[Partition], sl: dict[int, int]) -> list[Partition]:
    """Copies of ``partitions`` with the ``sl`` flag set from ``sl`` (PKey -> SL)."""
    out = []
    for p in partitions:
        q = replace(p, members=dict(p.members), flags=dict(p.flags), mgroups=list(p.mgroups),
                    after_self=set(p.after_self), other_ports=dict(p.other_ports))
        if p.pkey in sl:
            q.flags["sl"] = int(sl[p.pkey])
        out.append(q)
    return out


def partition_vls(partitions: Sequence[Partition]) -> dict[int, int]:
    """Each partition's VL, read back from its ``sl`` flag: the inverse of :func:`partitions_with_sl`.

    SL2VL is taken to be the identity, as pFTree assigns lanes and
    :func:`opensm_qos_conf` maps them (SL *i* on VL *i*); a partition without ``sl``
    is on SL 0, OpenSM's default, so VL 0.

    Parameters
    ----------
    partitions : sequence of Partition

    Returns
    -------
    dict of int to int
        PKey -> VL, for the partitions that have an ``sl`` flag.

    Examples
    --------
    >>> parts = [Partition("victim", 0x10, flags={"sl": 0}), Partition("aggressor", 0x11, flags={"sl": 1}),
    ...          Partition("other", 0x12)]
    >>> partition_vls(parts)
    {16: 0, 17: 1}
    """
    return {p.pkey: int(p.flags["sl"]) for p in partitions if "sl" in p.flags}  # type: ignore[call-overload]


def opensm_qos_conf(vls: int) -> str:
    """``opensm.conf`` lines enabling QoS with SL ``i`` on VL ``i`` (the pFTree lanes).

    >>> print(opensm_qos_conf(4), end="")
    qos TRUE
    qos_max_vls 4
    qos_high_limit 0
    qos_vlarb_high 0:0
    qos_vlarb_low 0:64,1:64,2:64,3:64
    qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3
    """
    sl2vl = ",".join(str(sl % vls) for sl in range(16))
    low = ",".join(f"{v}:64" for v in range(vls))
    return (
        "qos TRUE\n"
        f"qos_max_vls {vls}\n"
        "qos_high_limit 0\n"
        "qos_vlarb_high 0:0\n"
        f"qos_vlarb_low {low}\n"
        f"qos_sl2vl {sl2vl}\n"
    )


def _table(t) -> str:
    return ",".join(f"{vl}:{w}" for vl, w in t) or "0:0"


def qos_conf_lines(q) -> str:
    """The QoS options of ``opensm.conf`` for a :class:`netsteer.qos.config.QosConfig`:
    the base ``qos_*`` keys, then ``qos_ca_``, ``qos_swe_``, ``qos_sw0_`` and ``qos_rtr_``
    for every port type the configuration overrides (OpenSM falls back to the base
    keys for the others). Every value is written out, defaults included, so the
    file says exactly what netsteer simulated.

    >>> from netsteer.qos.config import parse_qos
    >>> q = parse_qos({"max_vls": 2, "high_limit": 255, "vlarb_high": "0:4", "vlarb_low": "1:64",
    ...                "ports": {"ca": {"high_limit": 10}}})
    >>> print(qos_conf_lines(q), end="")
    qos TRUE
    qos_max_vls 2
    qos_high_limit 255
    qos_vlarb_high 0:4
    qos_vlarb_low 1:64
    qos_sl2vl 0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1
    qos_ca_max_vls 2
    qos_ca_high_limit 10
    qos_ca_vlarb_high 0:4
    qos_ca_vlarb_low 1:64
    qos_ca_sl2vl 0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1
    """
    lines = ["qos TRUE"]
    kinds = [None] + [k for k in ("ca", "swe", "sw0", "rtr") if k in q.ports]
    for kind in kinds:
        p = q.port(kind)
        pre = "qos_" if kind is None else f"qos_{kind}_"
        lines += [f"{pre}max_vls {p.max_vls}", f"{pre}high_limit {p.high_limit}",
                  f"{pre}vlarb_high {_table(p.vlarb_high)}", f"{pre}vlarb_low {_table(p.vlarb_low)}",
                  f"{pre}sl2vl " + ",".join(str(v) for v in p.sl2vl)]
    return "\n".join(lines) + "\n"


def parse_qos_conf(text: str) -> dict[str, str]:
    """The ``qos*`` options of an ``opensm.conf`` text, name -> value (comments skipped).

    >>> parse_qos_conf("# x\\nqos TRUE\\nqos_max_vls 4\\nsm_priority 1\\n")
    {'qos': 'TRUE', 'qos_max_vls': '4'}
    """
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        if key.startswith("qos"):
            out[key] = value.strip()
    return out
