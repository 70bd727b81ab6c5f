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
import os
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

SAMPLE_S = 0.05


class Sampler(threading.Thread):
    """Every ``period_s``: ``(wall ns, read())``, where ``read`` returns named
    cumulative counters (bytes through some switch ports), stamped at the middle of
    the read. Start it, stop it (``stop.set(); join()``), and call :meth:`read` once
    before and after for the exact ends. Counters read one after another are best
    sampled each by its own sampler, so each has its own stamp.

    A read that fails while sampling (a switch busy or going away) is a gap, not the
    sampler's end: ``gaps`` keeps ``(wall ns, reason)`` and sampling goes on; once
    stopping (the run ended or was interrupted), a failed read ends it quietly."""

    def __init__(self, read: Callable[[], dict[str, float]], period_s: float = SAMPLE_S):
        super().__init__(daemon=True)
        self._read, self.period_s = read, period_s
        self.samples: list[tuple[int, dict[str, float]]] = []
        self.gaps: list[tuple[int, str]] = []
        self.stop = threading.Event()

    def read(self) -> None:
        # stamped at the middle of the read: a read is an ``ovs-ofctl`` process,
        # tens of ms on a loaded machine, and a stamp taken before it would shift
        # every phase window by that much
        t0 = time.time_ns()
        values = self._read()
        self.samples.append(((t0 + time.time_ns()) // 2, values))

    def run(self) -> None:
        # ahead of the busy-polling ranks (niced) and anything else on the machine:
        # a starved sampler leaves long gaps, and a phase between two samples gets
        # a share of their bytes by time, not what crossed in it. The ovs-ofctl
        # processes it starts inherit this. Needs root (the testbed does).
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -5)
        except PermissionError:
            pass
        while not self.stop.is_set():
            try:
                self.read()
            except Exception as exc:  # noqa: BLE001 -- any failed read: a gap, never a traceback
                if self.stop.is_set():  # shutting down: the switches go with the run
                    return
                self.gaps.append((time.time_ns(), " ".join(str(exc).split())[:200]))
            self.stop.wait(self.period_s)

    def within(self, a_ns: int, b_ns: int) -> int:
        """Samples taken between ``a_ns`` and ``b_ns``: how finely a window is measured."""
        return sum(a_ns <= t <= b_ns for t, _ in self.samples)

    def at(self, t_ns: int, name: str) -> float:
        """Counter ``name`` at ``t_ns``, linear between the samples around it."""
        s = self.samples
        i = bisect.bisect_left(s, t_ns, key=lambda x: x[0])  # (no list of the stamps per call)
        if i <= 0:
            return s[0][1][name]
        if i >= len(s):
            return s[-1][1][name]
        (t0, a), (t1, b) = s[i - 1], s[i]
        return a[name] + (b[name] - a[name]) * (t_ns - t0) / max(t1 - t0, 1)


@contextmanager
def sampling(samplers: Iterable[Sampler]) -> Iterator[None]:
    """The samplers running for the block: each read once before it starts, and once
    more after all of them stopped (the exact ends), when the block ended without an
    error."""
    samplers = list(samplers)
    for x in samplers:
        x.read()
        x.start()
    try:
        yield
    finally:
        for x in samplers:
            x.stop.set()
        for x in samplers:
            x.join()
    for x in samplers:
        x.read()


__all__ = ["Sampler", "SAMPLE_S", "sampling"]
