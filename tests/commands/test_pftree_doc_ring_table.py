"""docs/pftree.md's random ring / EBB table is what ``netsteer reproduce pftree`` gives (four of
its gains had been worked out from rounded throughputs and were 1% short)."""

from __future__ import annotations

import re
from pathlib import Path

from netsteer.reproduce.pftree import RING_TREES, _gain, run

DOC = (Path(__file__).resolve().parents[2] / "docs" / "pftree.md").read_text()


def _cell(cell: str) -> tuple[str, str | None]:
    m = re.fullmatch(r"\*{0,2}([\d.]+)\*{0,2}(?: \(([+-]\d+%)\))?", cell.strip())
    assert m, cell
    return m.group(1), m.group(2)


def test_the_ring_and_ebb_table_is_the_product_s():
    rep = run(seeds=4, only=[])["ring_ebb"]
    table = DOC[DOC.index("| tree | metric | ftree | pftree | pftree + VL split |"):].split("\n\n", 1)[0]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in table.splitlines()[2:]]
    assert len(rows) == 2 * len(RING_TREES)
    tree = None
    for cells in rows:
        tree = next(name for name in RING_TREES if cells[0].startswith(name + " (")) if cells[0] else tree
        key = {"random ring": "random_ring", "EBB": "effective_bisection_bandwidth"}[cells[1]]
        v = rep[tree][key]
        assert _cell(cells[2]) == (f"{v['ftree']:.3f}", None), (tree, cells)
        for cell, engine in ((cells[3], "pftree"), (cells[4], "pftree+vl")):
            value, gain = _cell(cell)
            assert value == f"{v[engine]:.3f}", (tree, cells)
            assert gain in (None, _gain(v["ftree"], v[engine])), (tree, cells)
        if cells[5]:
            sh = rep[tree]["shared_channels"]
            assert cells[5] == f"{sh['ftree']:g} → {sh['pftree']:g}", (tree, cells)
