"""Field types shared by the input schemas (scenarios, MPI programs): values with
units, checked and parsed once, at the edge, into SI integers.

Examples
--------
>>> from pydantic import TypeAdapter
>>> TypeAdapter(Size).validate_python("16MiB"), TypeAdapter(Duration).validate_python("1ms")
(16777216, 1000000)
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator

from .units import MAX_BYTES, checked_duration as duration, checked_size as size

__all__ = ["MAX_BYTES", "Duration", "Size", "duration", "size"]

Size = Annotated[int, BeforeValidator(size)]
"""Bytes, from ``16MiB`` or a bare non-negative integer."""
Duration = Annotated[int, BeforeValidator(duration)]
"""Nanoseconds, from ``1ms``."""
