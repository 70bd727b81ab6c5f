"""Parameter sweeps: a base scenario run over a grid of values on Dask distributed.

:func:`load_sweep` reads and checks a sweep file, :func:`run_sweep` runs the points
not yet recorded in ``results.parquet`` (resumable), and :func:`summarize` /
:func:`plot_all` compare them. ``netsteer sweep`` and ``netsteer sweep report`` are
the command-line faces; docs/sweeps.md has the format.
"""

from .point import point_scenario_text, run_point
from .report import plot_all, summarize
from .results import ResultStore, read_results
from .runner import Progress, dask_client, plan, run_sweep
from .spec import Point, Sweep, load_sweep

__all__ = [
    "Point",
    "Progress",
    "ResultStore",
    "Sweep",
    "dask_client",
    "load_sweep",
    "plan",
    "plot_all",
    "point_scenario_text",
    "read_results",
    "run_point",
    "run_sweep",
    "summarize",
]
