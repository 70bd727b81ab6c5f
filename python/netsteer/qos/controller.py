"""Priority changes during a run, as the controller core decides them.

:class:`QosChanges` replays a scenario's ``qos.changes``: at each time it asks the
driver, through a :class:`~netsteer.control.intents.SetQos` intent, to move a job's
(or a class's) traffic to another SL; the simulator, OpenSM or any driver carries it
out. Like every controller here it reads no clock: ``now`` is given.
"""

from __future__ import annotations

from ..control.core import Controller, Inputs
from ..control.intents import SetQos


class QosChanges(Controller):
    """Scripted SL changes (the source's dynamic priority selection).

    Examples
    --------
    >>> from netsteer.control.driver import NetworkView
    >>> from netsteer.qos.config import parse_qos
    >>> from netsteer.qos.scenario import QosPlan
    >>> import numpy as np
    >>> plan = QosPlan(parse_qos({"max_vls": 2}), np.zeros(2, dtype=int), [(5, "io", (1,), 1)])
    >>> c = QosChanges(plan)
    >>> c.next_wakeup(0), [(i.job, i.sl, i.flows) for i in c.decide(Inputs(5, NetworkView(5, frozenset())))]
    (5, [('io', 1, (1,))])
    >>> c.next_wakeup(5) is None
    True
    """

    name = "qos"

    def __init__(self, plan):
        super().__init__()
        self.plan = plan
        self.steps = sorted(plan.changes, key=lambda s: s[0])
        self._next = 0

    def next_wakeup(self, now: int) -> int | None:
        return self.steps[self._next][0] if self._next < len(self.steps) else None

    def decide(self, inp: Inputs) -> list:
        out = []
        for a in inp.applied:
            if isinstance(a.intent, SetQos) and a.failed:
                i = a.intent
                who = {"class": i.traffic_class} if i.traffic_class else {"job": i.job}
                self.history.append({"at_s": inp.now / 1e9, "what": "qos", **who, "failed": a.failed})
        while self._next < len(self.steps) and self.steps[self._next][0] <= inp.now:
            at, (by, who), flows, sl, *hosts = self.steps[self._next]
            self._next += 1
            # the tables stay as configured: only the SL moves (config None); flows for
            # the simulator, hosts for a subnet manager (the job's partition)
            named = {"traffic_class": who} if by == "class" else {"job": who}
            out.append(SetQos(sl=sl, flows=flows, hosts=tuple(hosts[0]) if hosts else (), **named))
            self.history.append({"at_s": inp.now / 1e9, "what": "qos", by: who, "sl": sl, "flows": len(flows)})
        return out

    def unplayed(self, end_ns: int) -> list[str]:
        """Notes for the priority changes the run ended before.

        >>> from netsteer.qos.config import parse_qos
        >>> from netsteer.qos.scenario import QosPlan
        >>> import numpy as np
        >>> c = QosChanges(QosPlan(parse_qos({"max_vls": 2}), np.zeros(2, dtype=int), [(10**10, "io", (1,), 1)]))
        >>> c.unplayed(2 * 10**9)
        ['qos.changes: the change of job io to SL 1 at 10 s never happened: the run ended at 2 s']
        """
        from ..units import format_seconds

        return [f"qos.changes: the change of {by} {who} to SL {sl} at {format_seconds(at / 1e9)} never happened: "
                f"the run ended at {format_seconds(end_ns / 1e9)}"
                for at, (by, who), _flows, sl, *_ in self.steps[self._next:]]

    def report(self):
        return {"changes": self.history} if self.history else None


__all__ = ["QosChanges"]
