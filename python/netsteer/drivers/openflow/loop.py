"""The control loop on the wall clock.

:func:`netsteer.control.loop.run_loop` steps a simulated clock, where a wakeup
asked for is never already past. On real switches time moves while the
controller decides and switches answer, so a wakeup that has passed means
"decide now", not a controller error.
"""

from __future__ import annotations

from ...control.loop import decide_and_apply


def run_wall_loop(driver, controller) -> str:
    """Run ``driver`` until it reports ``"done"`` with ``controller`` in the loop."""
    decide_and_apply(driver, controller)
    while True:
        wake = controller.next_wakeup(driver.now)
        # a past wakeup sleeps not at all, but the driver still brings in what
        # took effect meanwhile (a circuit lit) before the controller decides
        status = driver.advance(wake)
        if status == "done":
            return status
        decide_and_apply(driver, controller)
