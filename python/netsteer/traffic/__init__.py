"""Workloads: flow DAGs, point-to-point and bulk flows, MPI programs."""

from .dag import FlowDag

__all__ = ["FlowDag"]
