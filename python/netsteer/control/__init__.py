"""The controller core: pure decisions (intents) from network state, measurements
and time; the driver protocol; the control loop; and the controllers (replay of
scripted changes, the re-route policy, the hybrid circuit controller).

See ``docs/control.md``.
"""

from .core import Controller, ControllerStack, Inputs, ReplayController, ReroutePolicy
from .driver import Applied, Counters, Driver, NetworkChanged, NetworkView
from .intents import (
    InstallRouting,
    Intent,
    PairRule,
    PushRules,
    RemoveRules,
    SetCircuits,
    SetLinks,
    TagPorts,
    VlanPath,
)
from .loop import run_loop

__all__ = [
    "Applied", "Controller", "ControllerStack", "Counters", "Driver", "Inputs", "InstallRouting", "Intent",
    "NetworkChanged", "NetworkView", "PairRule", "PushRules", "RemoveRules", "ReplayController",
    "ReroutePolicy", "SetCircuits", "SetLinks", "TagPorts", "VlanPath", "run_loop",
]
