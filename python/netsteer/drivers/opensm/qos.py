"""pFTree's virtual lanes as OpenSM files: ``sl=`` in ``partitions.conf``, QoS lines of ``opensm.conf``.

The routing engine decides which partition gets which service level
(``routing.partition_sl``, with SL *i* on VL *i*); this module only writes it
down the way OpenSM reads it: the partition's ``sl`` flag (OpenSM hands that SL
out in path records for the partition's P_Key), and ``qos_*`` options mapping
SL *i* to VL *i* with equal VL arbitration weights.
"""

from __future__ import annotations

from collections.abc import Sequence

from netsteer.topology.partitions import Partition

__all__ = ["opensm_qos_conf", "partitions_with_sl"]


def partitions_with_sl(partitions: Sequence[Partition], sl: dict[int, int]) -> list[Partition]:
    """Copies of ``partitions`` with the ``sl`` flag set from ``sl`` (PKey -> SL)."""
    out = []
    for p in partitions:
        q = Partition(p.name, p.pkey, dict(p.members), dict(p.flags), p.ipoib, p.indx0,
                      p.self_membership, list(p.mgroups), p.line)
        if p.pkey in sl:
            q.flags["sl"] = int(sl[p.pkey])
        out.append(q)
    return out


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
