"""VL arbitration approximated by the flow engine's priorities and weights.

The flow engine shares a link by weighted max-min, classes of strict priority filled
in order. A port's VL arbiter (IBA VLArbitrationTable, as the packet engine runs it)
maps onto that as follows, for flows that are all backlogged:

- Inside a table, each entry sends packets while its weight (64-byte units) lasts, the
  last packet may overdraw it: an entry of weight ``w`` sends ``ceil(64 w / P)``
  packets of ``P`` bytes per turn. The VL's share of its table is that, over the
  table's sum (a VL listed twice counts twice). A flow's weight is its VL's share.
- High before low: with ``high_limit`` 255 the high table is strict priority over the
  low one (two priority classes). Otherwise the high table sends ``L`` bytes in a row
  (``high_limit`` x 4 KiB, at least one packet, rounded up to whole packets), then one
  low packet gets its chance: the high table's share is ``L / (L + P)`` and the low
  table's ``P / (L + P)``, both in one priority class, so a table that does not use its
  share leaves it to the other (max-min is work-conserving, as the arbiter is).
- Only VLs that carry traffic count: the arbiter skips an entry whose VL has no packet
  ready, so a table's shares are over its busy VLs, and a table with no busy VL leaves
  the whole port to the other (high table ``0:4``, low ``1:4,2:4,3:4``, limit 0, flows
  on VLs 0 and 1 only: 50/50, not 50/16.7). The busy VLs are those of the run's flows
  (a QoS change re-counts them among the flows not finished).

Where it differs from the packet engine (tests/qos/test_flow_vs_packet.py measures it):
a VL's share is split among its flows on a port by the arbiter, here each flow carries
the VL's weight, so a VL with more flows at a port gets more; the weights of one port
type (switch external ports by default) hold on every hop; a VL counts as busy on every
port and for the whole run if any flow uses it, so a port where some of the run's VLs
have no flow (or a time when they have none left) is shared as if they were there,
which only matters when both tables have flows (the split between VLs of one table is
the same); no queueing, no credits, no head-of-line blocking.

Examples
--------
>>> from netsteer.qos.config import parse_qos
>>> q = parse_qos({"max_vls": 2, "high_limit": 0, "vlarb_high": [[0, 4]], "vlarb_low": [[1, 64]]})
>>> s = vl_shares(q.port())
>>> s[0], s[1]                       # limit 0: one high packet, then one low packet
(('high', 0.5), ('low', 0.5))
>>> pri, w = flow_priority_weight(q.port(), [0, 1, 1])
>>> pri.tolist(), w.tolist()
([0, 0, 0], [0.5, 0.5, 0.5])
"""

from __future__ import annotations

import numpy as np

from .config import ResolvedPort

#: Bytes on the wire of a full packet: the packet fidelity's defaults (2 KiB MTU,
#: 26 bytes of headers), in whole 64-byte credits.
DEFAULT_PACKET = -(-(2048 + 26) // 64) * 64


def entry_bytes(weight: int, packet: int = DEFAULT_PACKET) -> int:
    """Bytes an entry of ``weight`` (64-byte units) sends per turn, full packets.

    >>> entry_bytes(4), entry_bytes(64), entry_bytes(0)
    (2112, 4224, 0)
    """
    return 0 if weight <= 0 else -(-(64 * weight) // packet) * packet


def high_fraction(high_limit: int, packet: int = DEFAULT_PACKET) -> float:
    """The high table's share of a port when both tables have packets ready.

    >>> high_fraction(255), high_fraction(0), round(high_fraction(10), 3)
    (1.0, 0.5, 0.952)
    """
    if high_limit >= 255:
        return 1.0
    run = max(1, -(-(high_limit * 4096) // packet)) * packet
    return run / (run + packet)


def vl_shares(port: ResolvedPort, packet: int = DEFAULT_PACKET,
              active=None) -> dict[int, tuple[str, float]]:
    """VL -> (table, share of the port when every served VL in ``active`` is
    backlogged (None: every VL the tables serve).

    A VL with nothing to send is skipped by the arbiter (IBA: an entry whose VL has no
    packet ready gives its turn to the next one), so the tables' entries for VLs not in
    ``active`` count for nothing, and a table with no active VL leaves the whole port
    to the other one.

    With ``high_limit`` 255 the high shares are of the whole port and the low
    ones of what the high table leaves (a VL in both tables is served from the high
    one while it has packets). Otherwise a VL in both tables gets its share of each.

    >>> from netsteer.qos.config import parse_qos
    >>> q = parse_qos({"max_vls": 2, "high_limit": 0, "vlarb_high": "0:4", "vlarb_low": "0:64,1:64"})
    >>> {vl: (t, round(x, 3)) for vl, (t, x) in vl_shares(q.port()).items()}
    {0: ('high', 0.75), 1: ('low', 0.25)}
    >>> q = parse_qos({"max_vls": 4, "high_limit": 0, "vlarb_high": "0:4", "vlarb_low": "1:4,2:4,3:4"})
    >>> {vl: (t, round(x, 3)) for vl, (t, x) in vl_shares(q.port(), active={0, 1}).items()}
    {0: ('high', 0.5), 1: ('low', 0.5)}
    """
    tables = {}
    for name, table in (("high", port.vlarb_high), ("low", port.vlarb_low)):
        per_vl: dict[int, int] = {}
        for vl, w in table:
            if w > 0 and (active is None or vl in active):
                per_vl[vl] = per_vl.get(vl, 0) + entry_bytes(w, packet)
        tables[name] = per_vl
    hi, lo = tables["high"], tables["low"]
    h_total, l_total = sum(hi.values()), sum(lo.values())
    strict = port.high_limit >= 255
    if not h_total or not l_total:
        f = 1.0 if h_total else 0.0  # one table only: it has the port
    else:
        f = high_fraction(port.high_limit, packet)
    out: dict[int, tuple[str, float]] = {}
    for vl in sorted(set(hi) | set(lo)):
        if vl in hi:
            share = hi[vl] / h_total if strict else f * hi[vl] / h_total + (
                (1.0 - f) * lo.get(vl, 0) / l_total if l_total else 0.0)
            out[vl] = ("high", share)
        else:
            out[vl] = ("low", lo[vl] / l_total if strict else (1.0 - f) * lo[vl] / l_total)
    return out


def flow_priority_weight(port: ResolvedPort, sls, *, base_priority=None, base_weight=None,
                         packet: int = DEFAULT_PACKET, active_sls=None) -> tuple[np.ndarray, np.ndarray]:
    """Engine priority class and weight of flows on SLs ``sls``.

    The VLs counted busy are those of ``active_sls`` (default: ``sls`` itself, the
    flows given are all the traffic); pass the SLs of every flow of the run when
    ``sls`` is only some of them. A VL no flow uses leaves its turns to the others
    (see :func:`vl_shares`).

    ``base_priority``/``base_weight`` are the flows' own (the scenario's); the QoS
    tier goes below them: priority ``2 * base + tier`` (tier 1: the low table under
    a strict high table), weight ``base * share``. An SL whose VL no table serves
    raises ValueError (its packets would never leave)."""
    sls = np.asarray(sls, dtype=np.int64)
    active_sls = sls if active_sls is None else np.asarray(active_sls, dtype=np.int64)
    shares = vl_shares(port, packet, active={port.sl2vl[int(s)] for s in np.unique(active_sls)})
    strict = port.high_limit >= 255
    tier = np.zeros(len(sls), dtype=np.int64)
    share = np.zeros(len(sls))
    served = vl_shares(port, packet)
    for s in np.unique(sls):
        vl = port.sl2vl[int(s)]
        if vl not in served:
            raise ValueError(f"SL {int(s)} maps to VL {vl}, which no VL arbitration table serves")
        if vl not in shares:
            raise ValueError(f"SL {int(s)} (VL {vl}) is not among the busy SLs given")
        table, x = shares[vl]
        m = sls == s
        share[m] = x
        tier[m] = 1 if (strict and table == "low") else 0
    bp = np.zeros(len(sls), dtype=np.int64) if base_priority is None else np.asarray(base_priority, dtype=np.int64)
    bw = np.ones(len(sls)) if base_weight is None else np.asarray(base_weight, dtype=np.float64)
    return 2 * bp + tier, bw * share


__all__ = ["DEFAULT_PACKET", "entry_bytes", "flow_priority_weight", "high_fraction", "vl_shares"]
