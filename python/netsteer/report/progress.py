"""The progress bar of a simulation, for ``netsteer run`` and ``Scenario.run``.

A run of flows knows its total and shows ``done/total flows``. A run with streamed MPI
jobs does not (their messages are made as the ranks reach them): the bar pulses and
shows the flows done (streamed jobs' messages and compute steps included: what the
result's ``flows`` counts) and the simulated time.

>>> import io
>>> from rich.console import Console
>>> console = Console(file=io.StringIO(), force_terminal=True, width=100)
>>> bar, update = simulation_progress(console)
>>> with bar:
...     update(5, 10, 2_000)
...     line = bar.tasks[0].fields["count"]
>>> line
'5/10 flows  t=2us'
>>> with bar:
...     update(24_689, None, 14_800_000)
...     line, total = bar.tasks[0].fields["count"], bar.tasks[0].total
>>> line, total
('24,689 flows done (messages and compute steps)  t=14.8ms', None)
"""

from __future__ import annotations

from typing import Callable

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from ..units import format_duration


def simulation_progress(console: Console) -> tuple[Progress, Callable[[int, int | None, int], None]]:
    """A transient bar on ``console`` and its ``update(done, total, now_ns)``
    (``total`` None while MPI jobs stream: no total is known)."""
    bar = Progress(TextColumn("[bold]simulating"), BarColumn(), TextColumn("{task.fields[count]}"),
                   TimeElapsedColumn(), console=console, transient=True)
    # no total until one is given: the bar pulses (rich keeps the total when given None)
    task = bar.add_task("sim", total=None, count="0 flows  t=0s")

    def update(done: int, total: int | None, now_ns: int) -> None:
        t = format_duration(now_ns)
        if total is None:
            # rich's update keeps the total when given None: the task is told directly
            next(x for x in bar.tasks if x.id == task).total = None
            bar.update(task, completed=done, count=f"{done:,} flows done (messages and compute steps)  t={t}")
        else:
            bar.update(task, completed=done, total=max(total, 1), count=f"{done}/{total} flows  t={t}")

    return bar, update

