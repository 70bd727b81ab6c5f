"""A QoS intent (:class:`netsteer.control.intents.SetQos`) carried out by the simulator.

At flow fidelity a flow whose SL changes gets the new SL's priority class and weight
in place (``Engine.set_priority_weight``): it keeps its id, the bytes it has sent, its
release, the latency and delay it has paid or is paying, the flows waiting for it and
its timed stop; its component is re-solved at that instant. A flow not yet released
starts with the new values. At ``fidelity: packet`` the sim driver changes a flow's SL
in place (``Engine.set_sl``) and does not come here.
"""

from __future__ import annotations

import numpy as np

from .flowshare import flow_priority_weight


class QosRefused(Exception):
    """The simulator cannot carry this QoS intent out; the text says why."""


def apply_qos(driver, intent, now: int) -> int:
    """Apply ``intent`` to ``driver`` (a :class:`netsteer.sim.driver.SimDriver`) at
    ``now``; returns when it took effect (now)."""
    eng = driver.engine
    flows = np.asarray(intent.flows, dtype=np.int64)
    n = len(driver.dag)
    if len(flows) and (flows.min() < 0 or flows.max() >= n):
        raise QosRefused(f"flow {int(flows[(flows < 0) | (flows >= n)][0])} does not exist")
    if intent.sl is None:
        raise QosRefused("a QoS intent for the simulator names the new SL")
    before = getattr(driver, "qos_config", None)
    config = intent.config if intent.config is not None else before
    if config is None:
        raise QosRefused("no QoS configuration: give the scenario a qos section or the intent a config")
    # the tables the DAG's weights were made with: the scenario's (else the first intent's)
    weighted_by = getattr(driver, "qos_weighted_by", None)
    if weighted_by is None:
        weighted_by = driver.qos_weighted_by = before if before is not None else config
    driver.qos_config = config
    c = driver.dag.columns()
    sl_now = getattr(driver, "qos_sl", None)
    if sl_now is None:
        sl_now = driver.qos_sl = c.traffic_class.copy()
    keep = eng.completion_ns()[flows] < 0 if len(flows) else np.zeros(0, dtype=bool)
    if intent.config is None:
        keep &= sl_now[flows] != int(intent.sl)  # already on that SL, the same tables: untouched
    flows = flows[keep]
    if not len(flows):
        return now
    port = config.port("swe")
    sl_after = sl_now.copy()
    sl_after[flows] = int(intent.sl)
    # VLs with traffic after the change (flows not finished): an idle VL's turns go to
    # the busy ones (flowshare.vl_shares), so moving flows can change everyone's share;
    # under unchanged tables every unfinished flow is reweighted, under new tables only
    # the intent's flows (the others keep the weights of the tables they were set by)
    unfinished = np.flatnonzero(eng.completion_ns() < 0)
    todo = flows if intent.config is not None else np.union1d(flows, unfinished)
    try:
        # the scenario's own priority and weight, before QoS (see flowshare: 2p + tier,
        # base x share), from the DAG's SLs under the tables its weights came from
        _, share = flow_priority_weight(weighted_by.port("swe"), c.traffic_class[todo],
                                        active_sls=c.traffic_class)
        base_pri, base_w = c.priority[todo] // 2, c.weight[todo] / share
        pri, w = flow_priority_weight(port, sl_after[todo], base_priority=base_pri, base_weight=base_w,
                                      active_sls=sl_after[unfinished] if len(unfinished) else sl_after[todo])
    except ValueError as exc:
        raise QosRefused(str(exc)) from None
    eng.set_priority_weight(todo, pri.astype(np.int64), w.astype(np.float64))
    sl_now[flows] = int(intent.sl)
    return now


__all__ = ["QosRefused", "apply_qos"]
