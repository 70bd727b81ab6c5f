"""docs/tutorial.ipynb is committed executed, and scripts/notebook_outputs.py (run by scripts/test.sh on a
fresh execution) fails when a number it shows moves, and only then."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "tutorial.ipynb"


def _script():
    spec = importlib.util.spec_from_file_location("notebook_outputs", ROOT / "scripts" / "notebook_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_tutorial_has_its_outputs():
    nb = json.loads(NOTEBOOK.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c["outputs"] for c in code), "docs/tutorial.ipynb is committed without outputs"
    assert all(c["execution_count"] for c in code)
    assert not any("execution" in c["metadata"] for c in nb["cells"])  # no timestamps to churn
    assert "makespan 0.242344 s" in "\n".join(_script().visible_outputs(nb))


def test_a_moved_number_fails_the_check_and_machine_noise_does_not():
    mod = _script()
    committed = json.loads(NOTEBOOK.read_text())
    assert mod.diff(committed, committed) == ""

    noisy = copy.deepcopy(committed)
    for n, cell in enumerate(c for c in noisy["cells"] if c["cell_type"] == "code"):
        cell["execution_count"] = n + 40
        cell["metadata"]["execution"] = {"iopub.execute_input": "2030-01-01T00:00:00Z"}
        for out in cell["outputs"]:
            data = out.get("data", {})
            if "image/png" in data:
                data["image/png"] = "AAAA"
                data["text/plain"] = ["<Figure size 1x1 with 1 Axes>"]
            data.pop("text/html", None)
    noisy["metadata"]["language_info"] = {"name": "python", "version": "3.99"}
    assert mod.diff(committed, noisy) == ""

    moved = copy.deepcopy(committed)
    cell = next(c for c in moved["cells"] if "makespan 0.242344 s" in json.dumps(c.get("outputs")))
    out = cell["outputs"][0]
    out["data"]["text/plain"] = [t.replace("0.242344", "0.242345") for t in out["data"]["text/plain"]]
    found = mod.diff(committed, moved)
    assert "-<Result 'scenario': done, makespan 0.242344 s, 1 jobs>" in found
    assert "+<Result 'scenario': done, makespan 0.242345 s, 1 jobs>" in found
