"""Plain values for scenario data: what the API builders keep is what a scenario
file holds (the user's unit strings, lists, ints), so it writes back as YAML."""

from __future__ import annotations

import os
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from ..errors import NetsteerError


def plain(value: Any) -> Any:
    """``value`` as YAML-ready Python: numpy scalars and arrays, tuples and paths
    become ints, floats, lists and strings.

    >>> plain({"down": (np.int64(4), 4), "path": __import__("pathlib").Path("a.net")})
    {'down': [4, 4], 'path': 'a.net'}
    """
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def given(**kw: Any) -> dict[str, Any]:
    """The keyword arguments that were given (not None), as plain values."""
    return {k: plain(v) for k, v in kw.items() if v is not None}


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: dict[str, Any], where: str | None = None) -> M:
    """``model.model_validate(data)``; a failure is a :class:`NetsteerError` naming
    the field (prefixed by ``where``) and the reason, as scenario files get."""
    from ..scenario import _pydantic_error

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = _pydantic_error(exc, None, model)
        raise err.located(prefix=where) from None


def require(ok: bool, reason: str, field: str) -> None:
    """Raise ``NetsteerError(reason, field=field)`` unless ``ok``."""
    if not ok:
        raise NetsteerError(reason, field=field)
