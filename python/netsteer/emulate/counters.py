"""Switch counters sampled while a real program runs, read back at any instant.

Examples
--------
>>> s = Sampler(lambda: {"a": 0})
>>> s.samples = [(0, {"a": 0}), (10, {"a": 100})]
>>> s.at(5, "a"), s.at(-1, "a"), s.at(99, "a")
(50.0, 0, 100)
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Callable

SAMPLE_S = 0.05


class Sampler(threading.Thread):
    """Every ``period_s``: ``(wall ns, read())``, where ``read`` returns named
    cumulative counters (bytes through some switch ports), stamped at the middle of
    the read. Start it, stop it (``stop.set(); join()``), and call :meth:`read` once
    before and after for the exact ends. Counters read one after another are best
    sampled each by its own sampler, so each has its own stamp."""

    def __init__(self, read: Callable[[], dict[str, float]], period_s: float = SAMPLE_S):
        super().__init__(daemon=True)
        self._read, self.period_s = read, period_s
        self.samples: list[tuple[int, dict[str, float]]] = []
        self.stop = threading.Event()

    def read(self) -> None:
        # stamped at the middle of the read: a read is an ``ovs-ofctl`` process,
        # tens of ms on a loaded machine, and a stamp taken before it would shift
        # every phase window by that much
        t0 = time.time_ns()
        values = self._read()
        self.samples.append(((t0 + time.time_ns()) // 2, values))

    def run(self) -> None:
        while not self.stop.is_set():
            self.read()
            self.stop.wait(self.period_s)

    def at(self, t_ns: int, name: str) -> float:
        """Counter ``name`` at ``t_ns``, linear between the samples around it."""
        s = self.samples
        i = bisect.bisect_left([x[0] for x in s], t_ns)
        if i <= 0:
            return s[0][1][name]
        if i >= len(s):
            return s[-1][1][name]
        (t0, a), (t1, b) = s[i - 1], s[i]
        return a[name] + (b[name] - a[name]) * (t_ns - t0) / max(t1 - t0, 1)


__all__ = ["Sampler", "SAMPLE_S"]
