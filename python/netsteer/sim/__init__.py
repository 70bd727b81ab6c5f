"""The simulator driver: carries a routing and a workload into the Rust engine."""

from .events import CircuitChange, LinkChange, RoutingChange, StopFlows
from .network import CircuitState
from .driver import SimDriver
from .run import run_scenario
from .simulate import SimResult, simulate

__all__ = [
    "CircuitChange",
    "CircuitState",
    "LinkChange",
    "RoutingChange",
    "SimDriver",
    "SimResult",
    "run_scenario",
    "StopFlows",
    "simulate",
]
