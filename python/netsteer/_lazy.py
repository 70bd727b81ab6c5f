"""Lazy attributes for a package's ``__init__``: names load on first use.

A streamed MPI run needs a few modules of :mod:`netsteer.sim` and
:mod:`netsteer.topology`; importing every driver, importer and report with them
doubled the start-up of a small job. A package built with :func:`lazy_package`
imports a name's module when the name is first read.

A name can be its own module's name (``netsteer.sim.simulate`` is the function
``simulate`` of the submodule ``simulate``). Python sets the submodule on its
package when the submodule is first imported, from wherever; the package's
class keeps the function there instead, as an eager ``from .simulate import
simulate`` did.

Examples
--------
>>> import netsteer.sim, netsteer.sim.simulate
>>> callable(netsteer.sim.simulate)
True
>>> from netsteer.topology import pgft
>>> callable(pgft)
True
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Callable


def lazy_package(name: str, table: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Make package ``name`` load ``table``'s names (name -> submodule, relative) on use.

    Parameters
    ----------
    name : str
        The package (``__name__`` of its ``__init__``).
    table : dict of str to str
        Each public name and the submodule that defines it (``".driver"``).

    Returns
    -------
    (__getattr__, __dir__)
        The module-level functions the package binds.
    """
    package = sys.modules[name]
    shadowed = {n for n, mod in table.items() if mod.lstrip(".") == n}

    class _Package(types.ModuleType):
        def __setattr__(self, attr: str, value: Any) -> None:
            # a submodule named as the function it defines must not hide the function
            if attr in shadowed and isinstance(value, types.ModuleType):
                value = getattr(value, attr)
            super().__setattr__(attr, value)

    if shadowed:
        package.__class__ = _Package

    def __getattr__(attr: str) -> Any:
        try:
            module = table[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None
        value = getattr(importlib.import_module(module, name), attr)
        setattr(package, attr, value)  # once loaded, a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(package)) | set(table))

    return __getattr__, __dir__
