"""netsteer: an application-aware control plane for reconfigurable HPC interconnects.

The flow-level simulator (``netsteer._core``, written in Rust) is the default back
end. The documented surface is this top level (``docs/api.md``); the internal
modules stay importable. Names load on first use, so the command line starts fast.

Examples
--------
>>> import netsteer as ns
>>> topo = ns.pgft(levels=2, down=[4, 4], up=[1, 2], link_bandwidth="10Gbps", link_latency="1us")
>>> job = ns.mpi_job(16, [ns.op.allreduce("1MiB", algorithm="ring"), ns.op.compute("1ms")],
...                  placement="random", seed=1)
>>> result = ns.simulate(topo, ns.route(topo, engine="dmodk"), [job], sharing="cm02")
>>> result.status, sorted(result.operations.op)
('done', ['allreduce', 'compute'])
>>> ns.mpi_job(16, [ns.op.allreduce("1MiB")], repeat=0)
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: repeat: must be >= 1, got 0
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

# numpy's OpenBLAS starts a thread per core that busy-waits for about 0.1 s of CPU
# after start-up, beside the simulation; netsteer does no linear algebra. One thread,
# unless the environment says otherwise (Dask's workers do the same).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .errors import LimitError, NetsteerError, RoutingError

__version__ = "0.1.0"

# name -> (module, attribute); None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    # topologies
    "pgft": ("netsteer.api.topology", "pgft"),
    "hyperx": ("netsteer.api.topology", "hyperx"),
    "hybrid": ("netsteer.api.topology", "hybrid"),
    "read_topology": ("netsteer.api.topology", "read_topology"),
    "Topology": ("netsteer.topology.model", "Topology"),
    "TopologyBuilder": ("netsteer.topology.model", "TopologyBuilder"),
    "describe": ("netsteer.topology.metrics", "describe"),
    # routing
    "route": ("netsteer.api.routing", "route"),
    "Routing": ("netsteer.routing.table", "Routing"),
    "ENGINES": ("netsteer.routing", "ENGINES"),
    # workloads and events
    "op": ("netsteer.api.op", None),
    "event": ("netsteer.api.event", None),
    "flow": ("netsteer.api.workload", "flow"),
    "bulk": ("netsteer.api.workload", "bulk"),
    "job": ("netsteer.api.workload", "job"),
    "mpi_job": ("netsteer.api.workload", "mpi_job"),
    # scenarios and results
    "Scenario": ("netsteer.api.scenario", "Scenario"),
    "simulate": ("netsteer.api.scenario", "simulate"),
    "Result": ("netsteer.api.result", "Result"),
    "read_counters": ("netsteer.api.frames", "read_counters"),
    # the controller core and the simulator driver
    "intents": ("netsteer.control.intents", None),
    "Controller": ("netsteer.control.core", "Controller"),
    "ControllerStack": ("netsteer.control.core", "ControllerStack"),
    "Inputs": ("netsteer.control.core", "Inputs"),
    "ReplayController": ("netsteer.control.core", "ReplayController"),
    "ReroutePolicy": ("netsteer.control.core", "ReroutePolicy"),
    "Applied": ("netsteer.control.driver", "Applied"),
    "Counters": ("netsteer.control.driver", "Counters"),
    "NetworkChanged": ("netsteer.control.driver", "NetworkChanged"),
    "NetworkView": ("netsteer.control.driver", "NetworkView"),
    "run_loop": ("netsteer.control.loop", "run_loop"),
    "SimDriver": ("netsteer.sim.driver", "SimDriver"),
}

__all__ = ["LimitError", "NetsteerError", "RoutingError", "__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'netsteer' has no attribute {name!r}") from None
    mod = importlib.import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:  # what type checkers and editors see
    from .api import event, op
    from .api.frames import read_counters
    from .api.result import Result
    from .api.routing import route
    from .api.scenario import Scenario, simulate
    from .api.topology import hybrid, hyperx, pgft, read_topology
    from .api.workload import bulk, flow, job, mpi_job
    from .control import intents
    from .control.core import Controller, ControllerStack, Inputs, ReplayController, ReroutePolicy
    from .control.driver import Applied, Counters, NetworkChanged, NetworkView
    from .control.loop import run_loop
    from .routing import ENGINES
    from .routing.table import Routing
    from .sim.driver import SimDriver
    from .topology.metrics import describe
    from .topology.model import Topology, TopologyBuilder
