"""Rank placement: which host each MPI rank runs on.

Three policies, as a job's ``placement`` field names them:

``linear``
    rank ``r`` on host ``first + r``: consecutive ranks share leaf switches, as
    ``smpirun`` does with a hostfile listing the hosts in order.
``random``
    ``ranks`` distinct hosts drawn without replacement, reproducibly from ``seed``.
``explicit``
    a list of host indices, one per rank; a host may appear more than once (several
    ranks on one node: their messages move nothing).

Examples
--------
>>> place(4, "linear", n_hosts=8)
[0, 1, 2, 3]
>>> place(3, [7, 2, 2], n_hosts=8)
[7, 2, 2]
>>> place(4, "random", n_hosts=8, seed=1) == place(4, "random", n_hosts=8, seed=1)
True
"""

from __future__ import annotations

import operator
from numbers import Integral
from typing import Any, Sequence

from ..errors import NetsteerError

POLICIES = ("linear", "random", "explicit")


def linear(ranks: int, n_hosts: int, first: int = 0) -> list[int]:
    """Rank ``r`` on host ``first + r``.

    >>> linear(3, 4, first=1)
    [1, 2, 3]
    """
    _check_count(ranks, n_hosts - first, "linear", n_hosts)
    return list(range(first, first + ranks))


def random(ranks: int, n_hosts: int, seed: int = 0) -> list[int]:
    """``ranks`` distinct hosts, in a random order fixed by ``seed``.

    The first ``ranks`` items of ``numpy.random.default_rng(seed).permutation(n_hosts)``,
    bit for bit, as placement always drew them; computed in Rust
    (:func:`netsteer._core.permutation`) because importing ``numpy.random`` costs
    a whole-process streamed 256-rank run about a tenth of its wall time.

    Parameters
    ----------
    ranks : int
        Hosts to draw, at most ``n_hosts``.
    n_hosts : int
        Hosts in the topology.
    seed : int
        Any non-negative integer, as numpy takes it (above 2**64 too).

    Raises
    ------
    NetsteerError
        More ranks than hosts, or a seed that is not a non-negative integer.

    Examples
    --------
    >>> random(4, 8, seed=1)
    [5, 0, 1, 4]
    >>> sorted(random(8, 8, seed=3))
    [0, 1, 2, 3, 4, 5, 6, 7]
    >>> random(2, 8, seed=-1)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: seed must be a non-negative integer, got -1
    """
    _check_count(ranks, n_hosts, "random", n_hosts)
    from .._core import permutation

    return permutation(_seed(seed), n_hosts)[:ranks]


def explicit(ranks: int, hosts: Sequence[int], n_hosts: int) -> list[int]:
    """The given hosts, checked: one per rank, each below ``n_hosts``.

    >>> explicit(2, [1, 0], 2)
    [1, 0]
    """
    hosts = list(hosts)
    if len(hosts) != ranks:
        raise NetsteerError(
            f"explicit placement lists {len(hosts)} hosts for {ranks} ranks; give one per rank"
        )
    for r, h in enumerate(hosts):
        if not _is_int(h):
            raise NetsteerError(f"rank {r} is placed on {h!r}, which is not a host index")
        if not 0 <= h < n_hosts:
            raise NetsteerError(
                f"rank {r} is placed on host {h}, but the topology has hosts 0..{n_hosts - 1}"
            )
    return [int(h) for h in hosts]


def place(
    ranks: int,
    placement: str | Sequence[int],
    n_hosts: int,
    seed: int = 0,
) -> list[int]:
    """Host index of each rank.

    Parameters
    ----------
    ranks : int
        Number of ranks, at least 1.
    placement : str or sequence of int
        ``"linear"``, ``"random"``, or an explicit list of hosts.
    n_hosts : int
        Hosts in the topology.
    seed : int
        Seed of ``random``.

    Raises
    ------
    NetsteerError
        Unknown policy, ranks beyond the hosts, or a host outside the topology.

    >>> place(5, "linear", n_hosts=4)
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: 5 ranks do not fit on 4 hosts with linear placement
    """
    if not _is_int(ranks) or ranks < 1:
        raise NetsteerError(f"ranks must be a positive integer, got {ranks!r}")
    if isinstance(placement, str):
        if placement == "linear":
            return linear(ranks, n_hosts)
        if placement == "random":
            return random(ranks, n_hosts, seed)
        raise NetsteerError(
            f"unknown placement {placement!r}; use linear, random, or a list of host indices"
        )
    return explicit(ranks, placement, n_hosts)


def error_field(placement: Any) -> str:
    """The job field an error of :func:`place` belongs to: the placement when it is a
    host list or an unknown policy, else the rank count (``linear`` and ``random``
    fail only on the ranks).

    >>> error_field("random"), error_field([0, 1]), error_field("spread")
    ('ranks', 'placement', 'placement')
    """
    return "ranks" if isinstance(placement, str) and placement in ("linear", "random") else "placement"


def _check_count(ranks: int, room: int, policy: str, n_hosts: int) -> None:
    if ranks > room:
        raise NetsteerError(
            f"{ranks} ranks do not fit on {n_hosts} hosts with {policy} placement"
        )


def _is_int(x: Any) -> bool:
    """An integer (Python's or numpy's, which register as ``Integral``), not a bool."""
    return isinstance(x, Integral) and not isinstance(x, bool)


def _seed(seed: Any) -> int:
    """``seed`` as a Python int; refused, as numpy refuses it, when negative or not an
    integer, and when a bool (numpy took ``True`` as 1)."""
    if _is_int(seed) and operator.index(seed) >= 0:
        return operator.index(seed)
    raise NetsteerError(f"seed must be a non-negative integer, got {seed!r}")
