"""MPI collectives expanded into their real algorithms, as flow DAGs.

Each algorithm is written the way SMPI (SimGrid's MPI) runs it: a *program per rank*,
a list of blocking operations (``send``, ``recv``, ``sendrecv``), with the same
partners, the same message sizes and the same order as SimGrid's
``src/smpi/colls/*``. :func:`run_programs` then matches sends with receives the way
MPI does (in order, per pair of ranks) and adds one flow per message.

Dependencies
------------
Every rank has a *frontier*: the flows it last took part in. A blocking operation is
posted when the rank's previous operation is over, so its messages depend on the
poster's frontier; when it completes, the rank's frontier becomes the flows it sent
and received in it. Under ``rendezvous=True`` (the default) a message also waits for
the receiver to post its receive, so it depends on the receiver's frontier too: this
is how SMPI moves every message (its ``smpi/async-small-thresh`` is 0 by default)
and how MPI moves large ones. ``rendezvous=False`` is the eager protocol: the sender
alone decides when bytes leave.

Sizes follow MPI's count semantics: for ``alltoall``, ``allgather``, ``gather`` and
``scatter`` ``nbytes`` is what each rank sends to each peer; for ``bcast``,
``reduce`` and ``allreduce`` it is the buffer size. Buffers split into chunks the
way SimGrid splits them: by *elements* of ``elem_bytes`` each, with the remainder
where SimGrid puts it.

Messages between two ranks on the same host become flows with ``src == dst``: they
move nothing and cost nothing (loopback is free), but still order the DAG.

Examples
--------
>>> from netsteer.traffic.dag import FlowDag
>>> dag = FlowDag()
>>> front = expand(dag, "bcast", "binomial", hosts=list(range(8)), nbytes=1000)
>>> len(dag), dag_depth(dag)
(7, 3)
>>> sorted(dag.dst)
[1, 2, 3, 4, 5, 6, 7]
"""

from .allgather import allgather_bruck, allgather_recursive_doubling, allgather_ring
from .allreduce import allreduce_rabenseifner, allreduce_recursive_doubling, allreduce_ring
from .alltoall import alltoall_bruck, alltoall_pairwise, alltoall_ring
from .barrier import barrier_bruck, barrier_recursive_doubling
from .bcast import bcast_binomial, bcast_scatter_allgather
from .gather_scatter import gather_binomial, gather_linear, scatter_binomial, scatter_linear
from .programs import MPI_ENVELOPE_BYTES, Frontier, Op, Program, recv, run_programs, send, sendrecv
from .reduce import reduce_binomial, reduce_rabenseifner
from .registry import (
    ALIASES,
    DEFAULTS,
    OPS,
    REGISTRY,
    Algorithm,
    algorithms,
    dag_depth,
    expand,
    lookup,
    point_to_point,
    register,
)
from .steps import Steps, run_steps

__all__ = [
    "ALIASES", "DEFAULTS", "MPI_ENVELOPE_BYTES", "OPS", "REGISTRY", "Algorithm", "Frontier", "Op",
    "Program", "Steps", "algorithms", "allgather_bruck", "allgather_recursive_doubling",
    "allgather_ring", "allreduce_rabenseifner", "allreduce_recursive_doubling", "allreduce_ring",
    "alltoall_bruck", "alltoall_pairwise", "alltoall_ring",
    "barrier_bruck", "barrier_recursive_doubling", "bcast_binomial", "bcast_scatter_allgather",
    "dag_depth", "expand", "gather_binomial", "gather_linear", "lookup", "point_to_point", "recv",
    "reduce_binomial", "reduce_rabenseifner", "register", "run_programs", "run_steps",
    "scatter_binomial", "scatter_linear", "send", "sendrecv",
]
