"""Operations of an MPI program, for :func:`netsteer.mpi_job`.

Each builder returns the step as a scenario file writes it (a dict with the
user's units), checked at once: a bad size, root or algorithm raises
:class:`netsteer.NetsteerError` naming the parameter. The collective algorithms and
their defaults are in ``docs/collectives.md``.

Examples
--------
>>> allreduce("16MiB", algorithm="ring")
{'op': 'allreduce', 'bytes': '16MiB', 'algorithm': 'ring'}
>>> [compute("1ms"), barrier()]
[{'op': 'compute', 'duration': '1ms'}, {'op': 'barrier'}]
>>> bcast("-1MiB")
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: bytes: size must not be negative, got '-1MiB'
>>> allreduce("1MiB", algorithm="carrier-pigeon")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: algorithm: unknown algorithm 'carrier-pigeon' for allreduce; known: ring, ...
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ..traffic.mpi import BarrierStep, ComputeStep, RootedStep, SendStep, UnrootedStep, validation_error
from ._values import given

Size = str | int
"""A size with its unit (``"16MiB"``) or a number of bytes."""
Duration = str | int
"""A duration with its unit (``"1ms"``; ``0`` needs none)."""
Step = dict[str, Any]
"""One step of a program, as a scenario file holds it."""


def _step(model: type[BaseModel], **kw: Any) -> Step:
    data = given(**kw)
    try:
        model.model_validate(data)
    except ValidationError as exc:
        err = validation_error(exc)
        if err.field is None:  # a check of the whole step: name the parameter it is about
            err = err.located(prefix="algorithm" if "algorithm" in (err.reason or "") else data["op"])
        raise err from None
    return data


def allreduce(bytes: Size, *, algorithm: str | None = None, elem_bytes: int | None = None) -> Step:
    """``MPI_Allreduce`` of a ``bytes`` buffer (``algorithm``: ``ring``,
    ``recursive_doubling``, ``rabenseifner``, ...; default as SMPI picks)."""
    return _step(UnrootedStep, op="allreduce", bytes=bytes, algorithm=algorithm, elem_bytes=elem_bytes)


def alltoall(bytes: Size, *, algorithm: str | None = None) -> Step:
    """``MPI_Alltoall``: ``bytes`` from every rank to every other rank (``algorithm``:
    ``pairwise``, ``bruck``, ``ring``)."""
    return _step(UnrootedStep, op="alltoall", bytes=bytes, algorithm=algorithm)


def allgather(bytes: Size, *, algorithm: str | None = None) -> Step:
    """``MPI_Allgather`` of each rank's ``bytes`` block (``algorithm``: ``ring``,
    ``recursive_doubling``, ``bruck``)."""
    return _step(UnrootedStep, op="allgather", bytes=bytes, algorithm=algorithm)


def bcast(bytes: Size, *, root: int | None = None, algorithm: str | None = None) -> Step:
    """``MPI_Bcast`` of a ``bytes`` buffer from ``root`` (default 0)."""
    return _step(RootedStep, op="bcast", bytes=bytes, root=root, algorithm=algorithm)


def reduce(bytes: Size, *, root: int | None = None, algorithm: str | None = None,
           elem_bytes: int | None = None) -> Step:
    """``MPI_Reduce`` of a ``bytes`` buffer to ``root``."""
    return _step(RootedStep, op="reduce", bytes=bytes, root=root, algorithm=algorithm, elem_bytes=elem_bytes)


def gather(bytes: Size, *, root: int | None = None, algorithm: str | None = None) -> Step:
    """``MPI_Gather`` of each rank's ``bytes`` block to ``root``."""
    return _step(RootedStep, op="gather", bytes=bytes, root=root, algorithm=algorithm)


def scatter(bytes: Size, *, root: int | None = None, algorithm: str | None = None) -> Step:
    """``MPI_Scatter`` of a ``bytes`` block to each rank from ``root``."""
    return _step(RootedStep, op="scatter", bytes=bytes, root=root, algorithm=algorithm)


def barrier(*, algorithm: str | None = None) -> Step:
    """``MPI_Barrier``."""
    return _step(BarrierStep, op="barrier", algorithm=algorithm)


def compute(duration: Duration) -> Step:
    """Every rank computes for ``duration`` (a pure delay)."""
    return _step(ComputeStep, op="compute", duration=duration)


def send(src: int, dst: int, bytes: Size) -> Step:
    """``MPI_Send`` from rank ``src`` matched by ``MPI_Recv`` at rank ``dst``; the
    other ranks go on."""
    return _step(SendStep, op="send", src=src, dst=dst, bytes=bytes)


__all__ = ["allgather", "allreduce", "alltoall", "barrier", "bcast", "compute", "gather", "reduce",
           "scatter", "send"]
