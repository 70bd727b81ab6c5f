"""What a run gives back: the summary ``netsteer run --json`` prints, DataFrames of
jobs, operations, events and port counters, and the figures of ``--out``.

Examples
--------
>>> import netsteer as ns
>>> topo = ns.pgft(1, [4], [1], link_bandwidth="8Gbps", link_latency="0us")
>>> r = ns.simulate(topo, "dmodk", [ns.job([ns.flow(0, 3, "1GB"), ns.flow(1, 3, "1GB")], name="two")])
>>> r.jobs
   job  completion_s  flows       bytes
0  two           2.0      2  2000000000
>>> c = r.counters
>>> round(float(c[c.to_node == "h3"].gbps.max()), 6)  # the shared host link, full
8.0
"""

from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.figure import Figure

from ..errors import NetsteerError
from . import frames

if TYPE_CHECKING:  # pragma: no cover
    from .scenario import Scenario


class Result:
    """A run's result.

    Attributes
    ----------
    scenario : Scenario
        What ran (``result.scenario.to_yaml()`` makes it a file).
    built : BuiltScenario
        The scenario resolved against its topology (topology, routing, flow DAG).
    raw : SimResult
        The engine's arrays (per-flow completion times, counter samples).
    """

    def __init__(self, scenario: "Scenario", built: Any, raw: Any, *, sampled: bool = True) -> None:
        from ..report.result import result_dict

        self.scenario = scenario
        self.built = built
        self.raw = raw
        self.sampled = sampled
        self.summary: dict[str, Any] = result_dict(built, raw)

    @property
    def status(self) -> str:
        """``"done"``, or ``"stalled"`` when flows were left that nothing could finish."""
        return str(self.summary["status"])

    @property
    def makespan_s(self) -> float | None:
        """When the last flow finished; None when a stalled run finished none."""
        m = self.summary["makespan_s"]
        return None if m is None else float(m)

    @property
    def wall_s(self) -> float:
        """The simulation's own wall time."""
        return float(self.summary["wall_s"])

    @property
    def notes(self) -> list[str]:
        """What the run wants you to know (what ``netsteer run`` prints on stderr, ``notes`` in
        ``--json``), then the warning of a stalled run as ``netsteer run`` words it (``--json`` has
        it as ``stalled``): a re-route of given tables, flows no partition allows, ignored keys;
        ``[]`` when there is nothing to say.

        >>> import netsteer as ns
        >>> topo = ns.pgft(1, [4], [1], link_bandwidth="8Gbps", link_latency="0us")
        >>> ns.simulate(topo, "dmodk", [ns.job([ns.flow(0, 3, "1MB")])], sample=False).notes
        []
        """
        from ..report.result import stall_warning

        warning = stall_warning(self.summary)  # netsteer run's warning of a stall, word for word
        return list(self.summary.get("notes", [])) + ([warning] if warning else [])

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``netsteer run --json`` prints."""
        return json.loads(json.dumps(self.summary))

    def to_json(self) -> str:
        return json.dumps(self.summary)

    @cached_property
    def jobs(self) -> pd.DataFrame:
        """One row per job: ``job, completion_s, flows, bytes``."""
        return frames.jobs_frame(self.summary["jobs"])

    @cached_property
    def operations(self) -> pd.DataFrame:
        """One row per (job, operation): ``count, time_s, bytes, algbw_Bps, busbw_Bps`` for MPI
        operations, ``flows, span_s`` for flow labels."""
        return frames.operations_frame(self.summary["jobs"])

    @cached_property
    def events(self) -> pd.DataFrame:
        """Every change applied during the run: ``intent, at_s, done_s`` and details."""
        return frames.events_frame(self.summary["events"])

    @cached_property
    def counters(self) -> pd.DataFrame:
        """Port counters in long form (see :func:`netsteer.api.frames.counters_frame`):
        the same frame :func:`netsteer.read_counters` reads from ``counters.parquet``."""
        from ..report.counters import counters_table

        self._need_samples("counters")
        return frames.counters_frame(counters_table(self.built.topology, self.raw.sample_times_ns,
                                                    self.raw.channel_bytes))

    def write(self, out: str | os.PathLike) -> Path:
        """Write the directory ``netsteer run --out`` writes (result.json,
        counters.parquet, the two figures), as a whole."""
        from ..report.outdir import check_out_path, write_run_dir

        self._need_samples("out")
        check_out_path(out, field="out")
        write_run_dir(out, self.built, self.raw, self.summary)
        return Path(out)

    @property
    def plot(self) -> "Plots":
        """The figures of ``netsteer run --out``: ``plot.links()``, ``plot.jobs()``."""
        return Plots(self)

    def _need_samples(self, what: str) -> None:
        if not self.sampled:
            raise NetsteerError("the run sampled no port counters; run it with sample=True", field=what)

    def __repr__(self) -> str:
        m = "none" if self.makespan_s is None else f"{self.makespan_s:.6g} s"
        return (f"<Result {self.summary['scenario']!r}: {self.status}, makespan {m}, "
                f"{len(self.summary['jobs'])} jobs>")


class Plots:
    """Figures of a result, the same drawings ``netsteer run --out`` saves."""

    def __init__(self, result: Result) -> None:
        self._r = result

    def links(self, *, top: int = 8, title: str | None = None) -> Figure:
        """Throughput over time of the ``top`` busiest ports (``link_throughput.png``)."""
        from ..report.figures import ShownFigure, link_throughput_figure

        r = self._r
        r._need_samples("plot")
        return link_throughput_figure(r.built.topology, r.raw.sample_times_ns, r.raw.channel_bytes, top=top,
                                      title=r.built.name if title is None else title, figure_class=ShownFigure)

    def jobs(self, *, title: str | None = None) -> Figure:
        """Job completion times (``job_completion.png``)."""
        from ..report.figures import ShownFigure, job_completion_figure, run_end_s

        r = self._r
        return job_completion_figure(r.summary["jobs"], title=r.built.name if title is None else title,
                                     end_s=run_end_s(r.summary), figure_class=ShownFigure)
