"""The simulator driver: carries a routing and a workload into the Rust engine.

Names load on first use (:mod:`netsteer._lazy`): a streamed MPI run
(:mod:`netsteer.sim.stream`) does not import the driver and the controller core.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

_LAZY = {
    "CircuitChange": ".events",
    "LinkChange": ".events",
    "RoutingChange": ".events",
    "StopFlows": ".events",
    "CircuitState": ".network",
    "SimDriver": ".driver",
    "run_scenario": ".run",
    "SimResult": ".simulate",
    "simulate": ".simulate",
}

__all__ = sorted(_LAZY)
__getattr__, __dir__ = lazy_package(__name__, _LAZY)

if TYPE_CHECKING:  # what type checkers and editors see
    from .driver import SimDriver
    from .events import CircuitChange, LinkChange, RoutingChange, StopFlows
    from .network import CircuitState
    from .run import run_scenario
    from .simulate import SimResult, simulate
