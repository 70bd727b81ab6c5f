"""The documented surface: every top-level name loads and is documented, the API
modules' examples run (doctest), and the compiled module's stubs match it
(mypy's stubtest)."""

from __future__ import annotations

import doctest
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import netsteer as ns

ROOT = Path(__file__).resolve().parents[2]
API_MODULES = ["netsteer", "netsteer.api.topology", "netsteer.api.routing", "netsteer.api.op",
               "netsteer.api.workload", "netsteer.api.event", "netsteer.api.scenario", "netsteer.api.result",
               "netsteer.api.frames", "netsteer.api._values", "netsteer.report.figures"]


@pytest.mark.parametrize("name", sorted(set(ns.__all__) - {"__version__"}))
def test_every_top_level_name_loads_and_is_documented(name):
    value = getattr(ns, name)
    assert inspect.getdoc(value), f"netsteer.{name} has no docstring"
    assert name in dir(ns)


def test_functions_have_type_hints_on_every_parameter():
    for name in ns.__all__:
        f = getattr(ns, name)
        if inspect.isfunction(f) and f.__module__.startswith("netsteer.api"):
            sig = inspect.signature(f)
            missing = [p for p, v in sig.parameters.items() if v.annotation is inspect.Parameter.empty]
            assert not missing, f"netsteer.{name}: no type hint for {missing}"
            assert sig.return_annotation is not inspect.Signature.empty, f"netsteer.{name}: no return type"


def test_importing_netsteer_loads_no_heavy_module():
    code = "import sys, netsteer; print(sorted(m for m in ('pandas', 'matplotlib', 'netsteer._core') if m in sys.modules))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[]"


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'simulat'"):
        ns.simulat


@pytest.mark.parametrize("module", API_MODULES)
def test_examples_run(module):
    mod = importlib.import_module(module)
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS, verbose=False)
    assert res.attempted > 0, f"{module} has no examples"
    assert res.failed == 0


def test_compiled_module_stubs_match():
    p = subprocess.run([sys.executable, "-m", "mypy.stubtest", "netsteer._core"], capture_output=True, text=True,
                       cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr


def test_api_type_checks():
    p = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
                        "python/netsteer/api", "python/netsteer/__init__.py", "python/netsteer/_core.pyi"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
