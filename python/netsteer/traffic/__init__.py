"""Workloads: flow DAGs, point-to-point and bulk flows, MPI programs.

``FlowDag`` loads on first use (:mod:`netsteer._lazy`): a streamed MPI run
(:mod:`netsteer.traffic.program`, :mod:`netsteer.traffic.algorithms`) builds no DAG.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_package

_LAZY = {"FlowDag": ".dag"}

__all__ = ["FlowDag"]
__getattr__, __dir__ = lazy_package(__name__, _LAZY)

if TYPE_CHECKING:  # what type checkers and editors see
    from .dag import FlowDag
