"""pFTree's virtual lanes as OpenSM files: ``sl=`` in ``partitions.conf``, QoS lines of ``opensm.conf``.

The routing engine decides which partition gets which service level
(``routing.partition_sl``, with SL *i* on VL *i*); this module only writes it
down the way OpenSM reads it: the partition's ``sl`` flag (OpenSM hands that SL
out in path records for the partition's P_Key), and ``qos_*`` options mapping
SL *i* to VL *i* with equal VL arbitration weights.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from netsteer.topology.partitions import Partition, pkey_text

__all__ = ["job_partition", "job_sl_partitions", "opensm_qos_conf", "partition_vls", "partitions_with_sl",
           "qos_conf_lines", "parse_qos_conf"]


def job_partition(job: str, nodes, sl: int, taken: Sequence[Partition]) -> Partition:
    """A partition of a job's nodes (full members) with ``sl=``, under a PKey (from
    0x100) and a name that no partition in ``taken`` has.

    >>> p = job_partition("io job", [3, 4], 1, [Partition("io_job", 0x100)])
    >>> p.name, hex(p.pkey), p.flags, p.members
    ('io_job_101', '0x101', {'sl': 1}, {3: 'full', 4: 'full'})
    """
    pkeys, names = {p.pkey for p in taken}, {p.name for p in taken}
    pkey = next(k for k in range(0x100, 0x7FFF) if k not in pkeys)
    name = re.sub(r"[^A-Za-z0-9_]", "_", job) or f"job{pkey:x}"
    if name in names:
        name = f"{name}_{pkey:x}"
    return Partition(name=name, pkey=pkey, members={int(n): "full" for n in nodes}, flags={"sl": int(sl)})


def job_sl_partitions(topo, job_names, job_of_flow, src, dst, sl, taken: Sequence[Partition] = (), base=None):
    """How the jobs' traffic gets its SLs from OpenSM: a partition with ``sl=`` per job.

    OpenSM hands a partition's ``sl`` out in path records for its P_Key, so a job whose
    flows are all on one SL other than the one they get anyway (``base``: each flow's SL
    from its partition, pFTree's lanes; else 0, every partition's default) gets a
    partition of its hosts with that SL (:func:`job_partition`). A job on several SLs
    cannot be said so (one SL per P_Key). Returns ``(partitions, notes)``, the notes
    saying what the user must do for each job.
    """
    out, notes = [], []
    job_of_flow = np.asarray(job_of_flow)
    base = np.zeros(len(job_of_flow), dtype=np.int64) if base is None else np.asarray(base)
    for j, job in enumerate(job_names):
        mine = job_of_flow == j
        sls = sorted({int(x) for x in np.asarray(sl)[mine]})
        if not sls or (np.asarray(sl)[mine] == base[mine]).all():
            continue
        if len(sls) > 1:
            notes.append(f"job {job!r} has flows on SLs {', '.join(map(str, sls))} (its qos classes): a partition "
                         "gives all of a job's QPs on its P_Key one SL, so none is written for it; set the SL on "
                         "each QP in the application (UCX: UCX_IB_SL) or match its traffic in a qos-policy.conf")
            continue
        hosts = np.unique(np.r_[np.asarray(src)[mine], np.asarray(dst)[mine]])
        p = job_partition(job, [int(topo.hosts[h]) for h in hosts], sls[0], [*taken, *out])
        out.append(p)
        full = f"{p.pkey | 0x8000:#06x}"
        notes.append(f"job {job!r} runs on SL {sls[0]}: partitions.conf puts its {len(hosts)} hosts in partition "
                     f"{p.name!r} ({pkey_text(p.pkey)}) with sl={sls[0]}; OpenSM hands that SL out in path records "
                     f"for that P_Key only, so the job's QPs must use P_Key {full} (UCX: UCX_IB_PKEY={full}); on "
                     "another P_Key they get that partition's SL")
    return out, notes


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
