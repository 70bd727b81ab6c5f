"""A QoS intent (:class:`netsteer.control.intents.SetQos`) carried out by the simulator.

The flow engine fixes a flow's priority class and weight when the flow is added, so
a flow whose SL changes is *continued*: it is stopped where it is and a new flow
with its unsent bytes, the new SL's priority and weight, and the same path goes on
from that instant (a flow not yet released keeps its dependencies and start). Its
timed stop moves to the continuation. A flow that other flows wait for cannot be
continued this way (stopping it would release them early): such an intent is
refused with a reason. At ``fidelity: packet`` the sim driver changes a flow's SL in
place (``Engine.set_sl``), for every flow, and does not come here.
"""

from __future__ import annotations

import heapq

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
    config = intent.config if intent.config is not None else getattr(driver, "qos_config", None)
    if config is None:
        raise QosRefused("no QoS configuration: give the scenario a qos section or the intent a config")
    driver.qos_config = config
    cont = getattr(driver, "qos_continued", None)
    if cont is None:
        cont = driver.qos_continued = {}
    sl_now = getattr(driver, "qos_sl", None)
    if sl_now is None:
        sl_now = driver.qos_sl = driver.dag.columns().traffic_class.copy()
    live = np.array([cont.get(int(f), int(f)) for f in flows], dtype=np.int64)
    done = eng.completion_ns()
    keep = done[live] < 0 if len(live) else np.zeros(0, dtype=bool)
    if intent.config is None:
        # a flow already on that SL, under the same tables, is left alone: a
        # continuation would pay its path's latency again for nothing
        keep &= sl_now[flows] != int(intent.sl)
    flows, live = flows[keep], live[keep]
    if not len(flows):
        return now
    c = driver.dag.columns()
    waited = np.zeros(n, dtype=bool)
    waited[c.deps] = True
    blocked = flows[waited[flows]]
    if len(blocked):
        raise QosRefused(f"flow {int(blocked[0])} has flows waiting for it: the flow engine cannot change its SL "
                         "mid-run without releasing them early; use fidelity packet")
    port = config.port("swe")
    old_pri, old_w = flow_priority_weight(port, sl_now[flows])
    # the scenario's own priority and weight, before QoS (see flowshare: 2p + tier, base x share)
    base_pri, base_w = c.priority[flows] // 2, c.weight[flows] / old_w
    new_sl = np.full(len(flows), int(intent.sl), dtype=np.int64)
    try:
        pri, w = flow_priority_weight(port, new_sl, base_priority=base_pri, base_weight=base_w)
    except ValueError as exc:
        raise QosRefused(str(exc)) from None
    sent = eng.sent_bytes()
    released_at = eng.release_ns()[live]
    released = released_at >= 0
    remaining = np.maximum(c.bytes[flows] - sent[live], 0.0)
    offsets, channels = driver._flow_paths(flows)
    offsets, channels = np.asarray(offsets, dtype=np.int64), np.asarray(channels, dtype=np.int64)
    # a released flow still in its delay (compute) keeps what is left of it: the
    # continuation, which pays its path's latency again, waits for the rest
    lat = driver.channel_latency_ns
    delays = getattr(driver, "qos_delay", None)
    if delays is None:
        delays = driver.qos_delay = {}
    wait = np.zeros(len(flows), dtype=np.int64)
    for k, (f, g) in enumerate(zip(flows.tolist(), live.tolist())):
        if released[k]:
            send_at = int(released_at[k]) + int(lat[eng.flow_path(g).astype(np.int64)].sum()) \
                + delays.get(g, int(c.delay_ns[f]))
            wait[k] = max(0, send_at - now - int(lat[channels[offsets[k]:offsets[k + 1]]].sum()))
    dep_off, deps = [0], []
    for k, f in enumerate(flows):
        if not released[k]:
            deps += [cont.get(int(d), int(d)) for d in c.deps[c.dep_offsets[f]:c.dep_offsets[f + 1]]]
        dep_off.append(len(deps))
    start = np.where(released, now, np.maximum(c.start_ns[flows], now))
    start = np.where(~released & (c.start_ns[flows] < 0), -1, start)
    eng.stop_flows(live)
    first = eng.n_flows
    eng.add_flows(remaining, offsets, channels, start.astype(np.int64),
                  np.where(released, wait, c.delay_ns[flows]).astype(np.int64), w.astype(np.float64),
                  pri.astype(np.int64), np.asarray(dep_off, dtype=np.int64), np.asarray(deps, dtype=np.int64))
    new = np.arange(first, first + len(flows), dtype=np.int64)
    bg = getattr(driver, "_qos_background", None)
    if bg is None:
        bg = driver._qos_background = set()
    back = [int(g) for g, f, l in zip(new, flows, live) if int(l) in bg or _is_background(driver, int(f))]
    if back:
        eng.set_background(np.asarray(back, dtype=np.int64))
        bg.update(back)
    moved = dict(zip(live.tolist(), new.tolist()))
    pieces = getattr(driver, "qos_pieces", None)
    if pieces is None:
        pieces = driver.qos_pieces = {}
    for k, (f, g) in enumerate(zip(flows.tolist(), new.tolist())):
        cont[f] = g
        delays[g] = int(wait[k]) if released[k] else int(c.delay_ns[f])
        pieces.setdefault(f, []).append(g)
    sl_now[flows] = int(intent.sl)
    # timed stops of the old flows now end their continuations
    pend = []
    for at, seq, what, payload in driver._pending:
        if what == "stop":
            payload = tuple(moved.get(int(x), int(x)) for x in payload)
        pend.append((at, seq, what, payload))
    heapq.heapify(pend)
    driver._pending = pend
    return now


def fold_continuations(pieces: dict[int, list[int]], completion: np.ndarray, sent: np.ndarray):
    """Per original flow: its completion is its last continuation's, its bytes sent
    are those of every piece (the engine's arrays, continuations past the DAG).

    >>> c, s = fold_continuations({0: [2]}, np.array([5, 9, 12]), np.array([4.0, 8.0, 6.0]))
    >>> c.tolist(), s.tolist()
    ([12, 9, 12], [10.0, 8.0, 6.0])
    """
    completion, sent = completion.copy(), sent.copy()
    for f, gs in pieces.items():
        completion[f] = completion[gs[-1]]
        sent[f] += sum(float(sent[g]) for g in gs)
    return completion, sent


def _is_background(driver, f: int) -> bool:
    bg = getattr(driver, "background_flows", None)
    return bool(bg is not None and f < len(bg) and bg[f])


__all__ = ["QosRefused", "apply_qos", "fold_continuations"]
