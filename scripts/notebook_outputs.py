"""Keep docs/tutorial.ipynb's committed outputs equal to what the model gives now.

    python scripts/notebook_outputs.py check COMMITTED EXECUTED   # exit 1 and a diff if they differ
    python scripts/notebook_outputs.py update COMMITTED EXECUTED  # copy EXECUTED's outputs into COMMITTED

EXECUTED is a fresh ``jupyter nbconvert --to notebook --execute`` of COMMITTED (scripts/test.sh makes one).
Only the text the reader sees is compared: stream output, errors, and the ``text/plain`` of results. What
depends on the machine is left out: images (and the text that stands for a figure), HTML (the same table as
the text), execution counts, timestamps, kernel metadata and object addresses. ``update`` writes the notebook
without the per-cell timestamps, so re-executing it changes the file only where a number moved.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def visible_outputs(nb: dict) -> list[str]:
    """One string per code cell: the text of its outputs, as compared."""
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            kind = out["output_type"]
            if kind == "stream":
                parts.append(f"[{out['name']}]\n{_text(out['text'])}")
            elif kind == "error":
                parts.append(f"[error]\n{out['ename']}: {out['evalue']}")
            else:  # execute_result, display_data
                data = out.get("data", {})
                if any(key.startswith("image/") for key in data):
                    parts.append("[figure]")
                elif "text/plain" in data:
                    parts.append(f"[{kind}]\n{_text(data['text/plain'])}")
        cells.append(_ADDRESS.sub(" at 0x…", "\n".join(parts)))
    return cells


def diff(committed: dict, executed: dict) -> str:
    """Empty when the two notebooks show the same text; else a readable diff, cell by cell."""
    a, b = visible_outputs(committed), visible_outputs(executed)
    if len(a) != len(b):
        return f"the notebooks have {len(a)} and {len(b)} code cells"
    lines = []
    for i, (old, new) in enumerate(zip(a, b)):
        if old != new:
            lines += difflib.unified_diff(old.splitlines(), new.splitlines(), f"committed, code cell {i + 1}",
                                          f"executed, code cell {i + 1}", lineterm="")
    return "\n".join(lines)


def strip_volatile(nb: dict) -> dict:
    """The notebook without per-cell execution timestamps (they change on every run)."""
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("execution", None)
    return nb


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("check", "update"):
        print(__doc__, file=sys.stderr)
        return 2
    command, committed_path, executed_path = argv[0], Path(argv[1]), Path(argv[2])
    committed = json.loads(committed_path.read_text())
    executed = json.loads(executed_path.read_text())
    if command == "update":
        executed["metadata"] = committed["metadata"]  # not the executing machine's Python version
        committed_path.write_text(json.dumps(strip_volatile(executed), indent=1, ensure_ascii=False) + "\n")
        return 0
    found = diff(committed, executed)
    if found:
        print(f"{committed_path}: its committed outputs are not what the model gives now:\n{found}\n"
              f"Re-execute it and commit the result: jupyter nbconvert --to notebook --execute {committed_path}"
              f" --output-dir DIR && python scripts/notebook_outputs.py update {committed_path} DIR/"
              f"{committed_path.name}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
