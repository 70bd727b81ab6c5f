"""Jobs: point-to-point flows, iperf-like bulk flows and MPI programs.

The builders return a job as a scenario file writes it under ``jobs:`` (a dict
with the user's units), checked at once against the scenario schema; hosts are
checked against the topology when a :class:`netsteer.Scenario` is built. Hosts are
indices (``0..hosts-1``) or names (``"h17"``).

Examples
--------
>>> from netsteer.api import op
>>> j = mpi_job(64, [op.allreduce("16MiB", algorithm="ring"), op.compute("1ms")],
...             placement="random", seed=1)
>>> j["ranks"], j["placement"], len(j["program"])
(64, 'random', 2)
>>> job([flow(0, 17, "1GiB"), flow(1, 17, "1GiB", start="10ms")], name="bulk")["flows"][1]
{'src': 1, 'dst': 17, 'bytes': '1GiB', 'start': '10ms'}
>>> flow(0, 1, "1GiB", weight=0)
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: weight: must be > 0, got 0
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from pydantic import ValidationError

from ..errors import NetsteerError
from ..scenario import BulkModel, FlowModel, JobModel
from ._values import given, validated

Host = int | str
"""A host index or a host name (``"h17"``)."""
Job = dict[str, Any]
"""A job as a scenario file holds it."""


def flow(
    src: Host,
    dst: Host,
    bytes: str | int,
    *,
    id: str | None = None,
    start: str | int | None = None,
    after: Sequence[str] | None = None,
    delay: str | int | None = None,
    weight: float | None = None,
    traffic_class: int | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    """A point-to-point flow of ``bytes`` from ``src`` to ``dst``.

    Parameters
    ----------
    id : str, optional
        Names the flow for ``after`` (flows of the same job it waits for).
    start : str, optional
        Earliest release.
    delay : str, optional
        Paid after release, before sending (compute).
    weight : float, optional
        Max-min share weight (default 1), from 0.001 to 1000 (beyond a ratio of
        10^6 the engine's floating point could lose the light flow's share).
    traffic_class, priority : int, optional
        Class for routing overrides and QoS (the SL at packet level); strict priority
        (0 first).

    A weight and a priority are flow-fidelity shares: a scenario run at packet
    fidelity refuses them (its traffic takes its share from its class's VL).
    """
    data = given(id=id, src=src, dst=dst, bytes=bytes, start=start, after=after, delay=delay,
                 weight=weight, priority=priority)
    if traffic_class is not None:
        data["class"] = traffic_class
    validated(FlowModel, data)
    return data


def bulk(
    src: Host,
    dst: Host,
    *,
    start: str | int | None = None,
    duration: str | int | None = None,
    weight: float | None = None,
    traffic_class: int | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    """An iperf-like flow: sends as fast as it can from ``start`` for ``duration``,
    or, without one, until every other flow of the scenario is done. ``weight`` and
    ``priority`` are flow-fidelity shares, as :func:`flow`'s."""
    data = given(src=src, dst=dst, start=start, duration=duration, weight=weight, priority=priority)
    if traffic_class is not None:
        data["class"] = traffic_class
    validated(BulkModel, data)
    return data


def job(flows: Sequence[dict[str, Any]] = (), bulk: Sequence[dict[str, Any]] = (), *,
        name: str | None = None) -> Job:
    """A job of flows (:func:`flow`) and bulk flows (:func:`bulk`).

    Its completion time is when its last flow that is not bulk finishes. Without a
    ``name`` the scenario names it ``job<i>`` by its position.
    """
    data: dict[str, Any] = {"name": name} if name is not None else {}
    if not flows and not bulk:
        raise NetsteerError("a job needs flows or bulk flows (an MPI program: netsteer.mpi_job)", field="flows")
    if flows:
        data["flows"] = _entries(flows, "flows", "flows", "netsteer.flow")
    if bulk:
        data["bulk"] = _entries(bulk, "bulk", "bulk flows", "netsteer.bulk")
    _check_job(data)
    return data


def mpi_job(
    ranks: int,
    program: Sequence[dict[str, Any]],
    *,
    name: str | None = None,
    placement: str | Sequence[int] | None = None,
    seed: int | None = None,
    repeat: int | None = None,
    start: str | int | None = None,
    traffic_class: int | None = None,
    priority: int | None = None,
    stream: bool | None = None,
) -> Job:
    """An MPI job: ``ranks`` placed on hosts, running ``program`` ``repeat`` times.

    Parameters
    ----------
    ranks : int
    program : list of steps
        Built with :mod:`netsteer.op` (or dicts as in a scenario file).
    placement : {"linear", "random"} or list of int, optional
        Rank ``r`` on host ``placement[r]``; default ``"linear"``.
    seed : int, optional
        Seed of the random placement.
    repeat : int, optional
        Iterations of the program (default 1).
    start : str, optional
        When the ranks start.
    traffic_class, priority : int, optional
        The class of its messages (the SL at packet level); strict priority (0 first),
        a flow-fidelity share as :func:`flow`'s.
    stream : bool, optional
        Run streamed through the engine (True) or as a flow DAG (False); default:
        streamed from 128 ranks when the scenario allows it (docs/streaming.md).
    """
    if not program:
        raise NetsteerError("a program needs at least one step", field="program")
    data = given(name=name, ranks=ranks, placement=placement, seed=seed,
                 program=_entries(program, "program", "steps", "netsteer.op.allreduce"),
                 repeat=repeat, start=start, priority=priority, stream=stream)
    if traffic_class is not None:
        data["class"] = traffic_class
    _check_job(data)
    from ..traffic.mpi import MpiJob, check_ranks, parse_program, validation_error

    try:
        job = MpiJob.model_validate({k: v for k, v in data.items() if k not in ("class", "stream")})
    except ValidationError as exc:
        raise validation_error(exc) from None
    check_ranks(parse_program(job.program), job.ranks)  # the rank count is known here, not only at simulate
    return data


def _entries(items: Any, field: str, what: str, builder: str) -> list[dict[str, Any]]:
    """``items`` as a list of mappings (copies), or a NetsteerError naming ``field``:
    one entry where a list was expected is the usual slip (``job(flow(...))``).

    >>> _entries({"src": 0, "dst": 1, "bytes": 1}, "flows", "flows", "netsteer.flow")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: flows: expected a list of flows ([netsteer.flow(...), ...]), got one entry, not a list
    """
    if isinstance(items, (dict, str, bytes)) or not isinstance(items, Iterable):
        got = "one entry, not a list" if isinstance(items, dict) else type(items).__name__
        raise NetsteerError(f"expected a list of {what} ([{builder}(...), ...]), got {got}", field=field)
    out = []
    for i, x in enumerate(items):
        if not isinstance(x, dict):
            raise NetsteerError(f"expected a mapping ({builder}(...)), got {type(x).__name__}", field=f"{field}.{i}")
        out.append(dict(x))
    return out


def _check_job(data: dict[str, Any]) -> None:
    validated(JobModel, {"name": "job", **data})


__all__ = ["bulk", "flow", "job", "mpi_job"]
