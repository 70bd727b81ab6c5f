"""Command modules beyond ``run`` and ``topo``: each has ``register(app)``.

Keeping each command family in its own module lets them grow apart without one
large CLI file.
"""

from __future__ import annotations

import importlib
import pkgutil


def register_all(app) -> None:
    """Import every module of this package and let it add its commands to ``app``."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
