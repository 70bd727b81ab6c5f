"""The control loop: a controller in the loop with a driver.

The driver runs to the next control instant (a controller's wakeup, or an intent in
progress taking effect); the controller reads what it needs, decides, and the driver
applies. Decisions at one instant repeat until the controller has nothing more to
say, so a controller can react to what its own intents changed.
"""

from __future__ import annotations

from .core import Controller, Inputs

# decision rounds at one instant before the loop gives up on a controller that
# keeps answering its own changes
MAX_ROUNDS = 64


def decide_and_apply(driver, controller: Controller, changes=None) -> int:
    """Let ``controller`` decide at ``driver.now`` until it is quiet; returns the
    number of intents applied."""
    applied, n = [], 0
    changes = driver.reports() if changes is None else changes
    for _ in range(MAX_ROUNDS):
        inp = Inputs(driver.now, driver.view(), changes, applied, read_counters=driver.counters)
        intents = controller.decide(inp)
        if not intents:
            return n
        applied = [driver.apply(i) for i in intents]
        n += len(intents)
        changes = driver.reports()
    raise RuntimeError(f"the controller did not settle after {MAX_ROUNDS} rounds at t={driver.now} ns")


def run_loop(driver, controller: Controller) -> str:
    """Run ``driver`` to the end with ``controller`` in the loop.

    Returns the final status: ``"done"``, or ``"stalled"`` when flows remain that
    nothing can finish (no event in the network, no intent in progress, and the
    controller has nothing to change).
    """
    decide_and_apply(driver, controller)
    while True:
        if driver.idle():
            # nothing moves: polling cannot see anything new, only scripted changes can
            wake = controller.next_scheduled(driver.now)
            if wake is None:
                return driver.advance(None)
        else:
            wake = controller.next_wakeup(driver.now)
        if wake is not None and wake <= driver.now:
            raise RuntimeError(f"{controller.name} asked to wake at {wake} ns, not after now ({driver.now} ns)")
        status = driver.advance(wake)
        if status in ("done", "stalled"):
            return status
        decide_and_apply(driver, controller)
