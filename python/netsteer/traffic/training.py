"""Synchronous data-parallel training: per iteration a compute phase (forward and
backward pass), then a ring all-reduce of the gradients (the model's size in bytes).

A training job is an MPI program, so it runs wherever MPI jobs run (scenarios,
:func:`netsteer.traffic.mpi.build_job`)::

    jobs:
      - name: mobilenet
        ranks: 16
        placement: [0, 3, 5, ...]
        program:
          - {op: compute, duration: 40ms}
          - {op: allreduce, bytes: 13.9MB, algorithm: ring}
        repeat: 1000

MobileNetV2 (Sandler et al., CVPR 2018), the source's example, has 3.4 million
parameters (width 1.0, 224 x 224): :data:`MOBILENETV2_BYTES` in 32-bit floats.

Examples
--------
>>> job = training_job(4, model_bytes=1_000_000, compute_ns=5_000_000, iterations=3)
>>> [s.op for s in job.program], job.repeat
(['compute', 'allreduce'], 3)
>>> x = expand_training(job, n_hosts=4)
>>> len(x.spans), x.spans[1].algorithm
(6, 'ring')
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import NetsteerError
from .mpi import JobExpansion, MpiJob, build_job

#: MobileNetV2 1.0 (224): 3.4 million parameters (Sandler et al., Table 4), 4 bytes each.
MOBILENETV2_PARAMS = 3_400_000
MOBILENETV2_BYTES = 4 * MOBILENETV2_PARAMS


def training_job(
    ranks: int,
    *,
    model_bytes: int,
    compute_ns: int,
    iterations: int,
    placement: str | Sequence[int] = "linear",
    algorithm: str = "ring",
    name: str = "training",
) -> MpiJob:
    """A data-parallel training job as an MPI job.

    Parameters
    ----------
    ranks : int
        Workers, one model replica each.
    model_bytes : int
        Gradient bytes all-reduced per iteration (the model size).
    compute_ns : int
        Forward and backward pass per iteration, on every rank.
    iterations : int
    placement : "linear", "random" or list of host indices
    algorithm : str
        All-reduce algorithm (``ring`` as in the source; any registered one).

    Raises
    ------
    NetsteerError
        A negative size or time, no iterations, or a placement with more ranks
        than hosts (when expanded).
    """
    for key, v, low in (("model_bytes", model_bytes, 0), ("compute_ns", compute_ns, 0),
                        ("iterations", iterations, 1), ("ranks", ranks, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise NetsteerError(f"{key} must be an integer >= {low}, got {v!r}", field=key)
    program = [{"op": "compute", "duration": f"{int(compute_ns)}ns"},
               {"op": "allreduce", "bytes": f"{int(model_bytes)}B", "algorithm": algorithm}]
    return MpiJob(name=name, ranks=int(ranks), placement=placement, program=program, repeat=int(iterations))


def expand_training(job: MpiJob, n_hosts: int, dag=None) -> JobExpansion:
    """The job's flow DAG (see :func:`netsteer.traffic.mpi.build_job`)."""
    return build_job(job.ranks, job.placement, job.program, job.repeat, n_hosts, job.seed,
                     job_label=job.name, dag=dag)


def iteration_demand(job: MpiJob, n_hosts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src_hosts, dst_hosts, bytes)`` of one iteration's messages: the traffic
    a steering controller plans for.

    >>> s, d, b = iteration_demand(training_job(4, model_bytes=4000, compute_ns=0, iterations=9), 4)
    >>> sorted(set(zip(s.tolist(), d.tolist())))  # the ring 0 -> 1 -> 2 -> 3 -> 0
    [(0, 1), (1, 2), (2, 3), (3, 0)]
    """
    one = job.model_copy(update={"repeat": 1})
    c = expand_training(one, n_hosts).dag.columns()
    moving = (c.src != c.dst) & (c.bytes > 0)
    return c.src[moving], c.dst[moving], c.bytes[moving].astype(np.float64)
