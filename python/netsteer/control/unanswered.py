"""Switches that did not answer counter readings: which, since when, how many.

A switch whose statistics request failed leaves its readings NaN in
:class:`~netsteer.control.driver.Counters` (missing, never 0), and a controller skips
what is missing. :class:`Unanswered` keeps count so that the controller can say so:
a switch that misses ``SILENT_READINGS`` readings in a row or more is *silent*; the
controller's report lists each silence (from, last missed reading, how many, when the
switch answered again) and the run's notes name the switch once per run, however
often it misses, with its recovery. A missed reading or two are only counted in the
report: a reply lost now and then is no news.

A channel's reading belongs to the switch that sends on it (a host's NIC: the switch
it enters), and row ``a`` of ``pair_bytes`` to rack ``a``'s ToR, as the openflow
driver reads them (:meth:`netsteer.drivers.openflow.driver.OpenFlowDriver.counters`).

Examples
--------
>>> import numpy as np
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.control.driver import Counters
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> u = Unanswered(t)
>>> gone = np.zeros(t.n_channels)
>>> gone[t.channel_src() == t.node("s1_0")] = np.nan
>>> [u.see(Counters(s * 10**8, gone)) for s in (1, 2, 3)] + [u.see(Counters(4 * 10**8, np.zeros(t.n_channels)))]
['missing', 'missing', 'missing', 'back']
>>> u.notes("controller.x", 10**9, lambda spans: "nothing was planned")
['controller.x: switch s1_0 did not answer 3 counter readings in a row, from 100 ms to 300 ms; it answered again at 400 ms; meanwhile nothing was planned']
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..topology.model import HOST

#: readings in a row a switch must miss to be named in the notes (one or two are counted only)
SILENT_READINGS = 3
#: switches named in one note; the rest are counted
NAMED = 8


class Unanswered:
    """Who did not answer the counter readings a controller took (module text).

    Parameters
    ----------
    topo : Topology
        The network the counters are of.
    tors : sequence of int, optional
        The ToR node of each rack (``pair_bytes`` rows); default ``topo.meta["tors"]``.
    """

    def __init__(self, topo, tors=None):
        src, dst = topo.channel_src(), topo.channel_dst()
        host = np.asarray(topo.node_kind) == HOST
        self._owner = np.where(host[src], dst, src)  # the switch that reports channel c
        self._tors = [int(x) for x in (topo.meta.get("tors", ()) if tors is None else tors)]
        self._names = topo.node_names
        self.readings = 0  # readings with something missing
        self.missed: dict[int, int] = {}  # switch -> readings it missed
        self._open: dict[int, list[int]] = {}  # switch -> [from_ns, last_ns, readings] (silent now)
        self._closed: dict[int, list[tuple]] = {}  # switch -> [(from_ns, last_ns, readings, back_ns)]
        self._last: tuple[int, str] | None = None  # (time, status) of the last reading seen

    def see(self, c) -> str:
        """Record the reading ``c``: ``"missing"`` (a switch did not answer),
        ``"back"`` (whole, and the first since a switch's silence ended) or
        ``"whole"``. A reading at the same instant as the last is not counted again."""
        if self._last is not None and self._last[0] == c.time_ns:
            return self._last[1]
        now = int(c.time_ns)
        gone = set(int(s) for s in np.unique(self._owner[np.isnan(c.port_bytes)]))
        if c.pair_bytes is not None and self._tors:
            gone |= {self._tors[a] for a in np.flatnonzero(np.isnan(c.pair_bytes).any(axis=1))}
        back = False
        for s in [s for s in self._open if s not in gone]:
            f, last, n = self._open.pop(s)
            self._closed.setdefault(s, []).append((f, last, n, now))
            back |= n >= SILENT_READINGS
        for s in gone:
            self.missed[s] = self.missed.get(s, 0) + 1
            run = self._open.setdefault(s, [now, now, 0])
            run[1], run[2] = now, run[2] + 1
        # a missing value no switch is known for (no ToR list) still makes the reading incomplete
        missing = bool(gone) or bool(np.isnan(c.port_bytes).any()) or (
            c.pair_bytes is not None and bool(np.isnan(c.pair_bytes).any()))
        self.readings += missing
        status = "missing" if missing else "back" if back else "whole"
        self._last = (now, status)
        return status

    def silences(self) -> dict[int, list[tuple]]:
        """Switch -> its silences of ``SILENT_READINGS`` or more readings:
        ``(from_ns, last_ns, readings, answered again at ns or None)``."""
        out: dict[int, list[tuple]] = {}
        for s in sorted(set(self._open) | set(self._closed)):
            runs = self._closed.get(s, []) + ([(*self._open[s], None)] if s in self._open else [])
            runs = [r for r in runs if r[2] >= SILENT_READINGS]
            if runs:
                out[s] = runs
        return out

    def report(self) -> dict[str, Any] | None:
        """For the controller's report (None if every reading was whole)."""
        if not self.readings:
            return None
        sil = self.silences()
        return {
            "silent_after_readings": SILENT_READINGS,
            "readings_incomplete": self.readings,
            "switches": [{"switch": self._names[s], "readings_missed": n,
                          "silences": [{"from_s": f / 1e9, "last_missed_s": last / 1e9, "readings": k,
                                        "answered_again_s": None if back is None else back / 1e9}
                                       for f, last, k, back in sil.get(s, [])]}
                         for s, n in sorted(self.missed.items())],
        }

    def notes(self, who: str, end_ns: int, meanwhile: Callable[[list[tuple[int, int]]], str]) -> list[str]:
        """One note per switch that was silent (switches silent at the same readings
        share one), saying since when, for how many readings, whether it answered
        again, and ``meanwhile(spans)``: what the controller did over the silences
        (``(from_ns, answered again or end_ns)`` each)."""
        from ..units import format_seconds as fs

        groups: dict[tuple, list[int]] = {}
        for s, runs in self.silences().items():
            groups.setdefault(tuple(runs), []).append(s)
        out = []
        for runs, switches in groups.items():
            names = [self._names[s] for s in switches]
            if len(names) > NAMED:
                names = names[:NAMED] + [f"{len(switches) - NAMED} more"]
            who_ = (f"switch {names[0]}" if len(names) == 1
                    else f"switches {', '.join(names[:-1])} and {names[-1]}")
            f, last, n, back = runs[-1]
            what = f"{n} counter readings in a row, from {fs(f / 1e9)} to {fs(last / 1e9)}"
            if len(runs) > 1:
                what = (f"counter readings {len(runs)} times for {SILENT_READINGS} or more in a row "
                        f"({sum(r[2] for r in runs)} readings, the first silence from {fs(runs[0][0] / 1e9)}); "
                        f"the last time {what}")
            after = (f"it answered again at {fs(back / 1e9)}" if back is not None
                     else f"it had not answered again when the run ended at {fs(end_ns / 1e9)}")
            if len(switches) > 1:
                after = after.replace("it answered", "they answered").replace("it had", "they had")
            spans = [(r[0], end_ns if r[3] is None else r[3]) for r in runs]
            out.append(f"{who}: {who_} did not answer {what}; {after}; meanwhile {meanwhile(spans)}")
        return out
