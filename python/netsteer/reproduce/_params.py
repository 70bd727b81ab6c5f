"""Checks the studies' parameter dataclasses share (``Reconfig``, ``Study``, ``Setup``):
each error's field is the parameter, which the commands name as their option
(:meth:`netsteer.errors.NetsteerError.as_options`).

>>> from dataclasses import dataclass
>>> @dataclass
... class P:
...     ranks: int = 0
...     period: str = "1 parsec"
>>> check_ints(P(), {"ranks": 1})
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: ranks: must be an integer >= 1, got 0
>>> from netsteer.units import parse_duration
>>> parsed(P(), "period", parse_duration)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: period: ...
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import NetsteerError


def check_ints(params: Any, least: dict[str, int]) -> None:
    """Refuse a field of ``params`` named in ``least`` that is not an integer (a bool
    is not one) at least its bound, in ``least``'s order."""
    for key, low in least.items():
        v = getattr(params, key)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise NetsteerError(f"must be an integer >= {low}, got {v!r}", field=key)


def parsed(params: Any, key: str, parse: Callable[[Any], Any]) -> Any:
    """Field ``key`` of ``params`` read with ``parse`` (a unit parser); its
    ``ValueError`` becomes the field's error."""
    try:
        return parse(getattr(params, key))
    except ValueError as exc:
        raise NetsteerError(str(exc), field=key) from None
