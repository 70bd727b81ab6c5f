"""Field types shared by the input schemas (scenarios, MPI programs): values with
units, checked and parsed once, at the edge, into SI integers.

Examples
--------
>>> from pydantic import TypeAdapter
>>> TypeAdapter(Size).validate_python("16MiB"), TypeAdapter(Duration).validate_python("1ms")
(16777216, 1000000)
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator

from .units import UnitError, parse_duration, parse_size

#: The largest flow or message: 1 EiB (the engine counts bytes in f64).
MAX_BYTES = 2**60


def _not_negative(value: Any, what: str) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    if isinstance(value, str) and value.strip().startswith("-"):
        raise ValueError(f"{what} must not be negative, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}")


def size(value: Any) -> int:
    """Bytes from ``16MiB`` or a bare non-negative integer, at most :data:`MAX_BYTES`."""
    _not_negative(value, "size")
    try:
        n = parse_size(value)
    except (UnitError, OverflowError) as exc:
        raise ValueError(str(exc)) from None
    if n > MAX_BYTES:
        raise ValueError(f"size {value!r} is larger than the {MAX_BYTES} bytes (1 EiB) a flow may carry")
    return n


def duration(value: Any) -> int:
    """Integer nanoseconds from ``1ms`` (``0`` needs no unit)."""
    _not_negative(value, "duration")
    try:
        return parse_duration(value)
    except (UnitError, OverflowError) as exc:
        raise ValueError(str(exc)) from None


Size = Annotated[int, BeforeValidator(size)]
"""Bytes, from ``16MiB`` or a bare non-negative integer."""
Duration = Annotated[int, BeforeValidator(duration)]
"""Nanoseconds, from ``1ms``."""
