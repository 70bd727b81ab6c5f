"""What the controllers did in a run, as the text lines ``netsteer run`` prints.

The run's ``--json`` object holds each controller's summary under ``controller``
(:func:`netsteer.report.result.result_dict`); the text output says the same in
short: the hybrid controller's reconfigurations, UnisonFlow's packet-ins, rules
and tag tables, and each bandwidth-steering plan.
"""

from __future__ import annotations

from typing import Any

from ..units import format_seconds


def controller_lines(controller: dict[str, Any] | None) -> list[str]:
    """One line per reconfiguration or steering plan (or steering time the run did not
    reach), two for UnisonFlow, plus the first failure or refusal of each kind when
    there is one (plain text, no markup).

    Parameters
    ----------
    controller : dict or None
        The ``controller`` entry of a run's result, by controller name.

    Examples
    --------
    >>> uf = {"packet_ins": 3, "rules": 7, "by_module": {"bcast-multicast": 3}, "failures": 0, "failed": [],
    ...       "tables": {"installed_tags": 3, "max_rules_per_switch": 4, "expired": 0, "evicted": 0,
    ...                  "table_full": 0, "refused": 0}, "refusals": []}
    >>> st = {"plans": [{"at_s": 0.0, "method": "exhaustive", "routing": "ecmp", "evaluated": 16, "moved_ports": 4,
    ...                  "before": {"max_channel_busy_s": 0.2}, "after": {"max_channel_busy_s": 0.1}}],
    ...       "not_reached_s": [100.0]}
    >>> print("\\n".join(controller_lines({"unisonflow": uf, "steering": st})))
      unisonflow: 3 packet-ins (bcast-multicast 3), 7 rules, 0 failures
      unisonflow tables: 3 tags installed, at most 4 rules per switch, 0 expired, 0 evicted, 0 refused
      steering at 0 s (exhaustive, 16 configurations): 4 ports moved, busiest channel under ecmp for all steered bytes at once 200 ms -> 100 ms
      steering at 100 s: not done, the run ended before it
    >>> hy = {"reconfigurations": [{"id": 0, "trigger": "schedule", "method": "make-before-break",
    ...       "start_s": 0.2, "end_s": 2.38, "status": "done",
    ...       "failure_detours": [{"at_s": 0.5, "pairs": [[0, 1]]}]}]}
    >>> print("\\n".join(controller_lines({"hybrid": hy})))
      reconfiguration 0 (schedule, make-before-break): 200 ms - 2.38 s, done
        at 500 ms: 1 rack pair(s) detoured to the electrical network, their circuit failed: 0->1
    >>> controller_lines(None)
    []
    """
    c = controller or {}
    out: list[str] = []
    for r in (c.get("hybrid") or {}).get("reconfigurations", []):
        end = "-" if r["end_s"] is None else format_seconds(r["end_s"])
        out.append(f"  reconfiguration {r['id']} ({r['trigger']}, {r['method']}): "
                   f"{format_seconds(r['start_s'])} - {end}, {r['status']}")
        for d in r.get("failure_detours", []):  # pairs moved off a circuit that failed meanwhile
            out.append(f"    at {format_seconds(d['at_s'])}: {len(d['pairs'])} rack pair(s) detoured to the electrical "
                       f"network, their circuit failed: {', '.join(f'{a}->{b}' for a, b in d['pairs'])}")
    uf = c.get("unisonflow")
    if uf is not None:
        mods = ", ".join(f"{m} {n}" for m, n in uf.get("by_module", {}).items())
        out.append(f"  unisonflow: {uf['packet_ins']} packet-ins{f' ({mods})' if mods else ''}, "
                   f"{uf['rules']} rules, {uf['failures']} failures")
        if uf.get("failed"):
            f = uf["failed"][0]
            out.append(f"    first failure at {format_seconds(f['at_s'])}: {f['reason']}")
        t = uf.get("tables")
        if t is not None:
            full = f" ({t['table_full']} on a full table)" if t.get("table_full") else ""
            out.append(f"  unisonflow tables: {t['installed_tags']} tags installed, at most "
                       f"{t['max_rules_per_switch']} rules per switch, {t['expired']} expired, "
                       f"{t['evicted']} evicted, {t['refused']} refused{full}")
            if uf.get("refusals"):
                f = uf["refusals"][0]
                out.append(f"    first refusal at {format_seconds(f['at_s'])}: {f['reason']}")
    for p in (c.get("steering") or {}).get("plans", []):
        moved = f"{p['moved_ports']} ports moved" if p["moved_ports"] else "no circuit moved"
        # the score rates all the bytes at once (no phases): the job times say whether it helped
        out.append(f"  steering at {format_seconds(p['at_s'])} ({p['method']}, {p['evaluated']} configurations): {moved}, "
                   f"busiest channel under {p.get('routing', 'dor')} for all steered bytes at once "
                   f"{format_seconds(p['before']['max_channel_busy_s'])} -> {format_seconds(p['after']['max_channel_busy_s'])}")
    for t in (c.get("steering") or {}).get("not_reached_s", []):
        out.append(f"  steering at {format_seconds(t)}: not done, the run ended before it")
    return out
