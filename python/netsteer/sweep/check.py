"""A sweep's points against the scenario schema, for ``netsteer sweep --check``.

Reading a sweep file checks its paths; this checks its values: each point's scenario
is validated as ``netsteer run`` validates a file (units, ranges, engine names), without
building it. What only building finds (more ranks than hosts, an engine that does not
fit the topology) still shows as a ``failed`` point when the sweep runs.

Examples
--------
>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "base.yaml").write_text('''
... name: tiny
... topology: {kind: pgft, levels: 1, down: [4], up: [1], parallel: [1],
...            link_bandwidth: 8Gbps, link_latency: 0us}
... routing: {engine: dmodk}
... jobs: [{name: a, flows: [{src: 0, dst: 3, bytes: 1GB}]}]
... ''')
>>> _ = (d / "s.yaml").write_text('''
... base: base.yaml
... grid: {routing.engine: [dmodk, dmodkk], jobs.0.flows.0.bytes: [1GB, -2GB]}
... ''')
>>> from netsteer.sweep import load_sweep
>>> r = refused_points(load_sweep(d / "s.yaml"))
>>> r["checked"], r["refused"]
(4, 3)
>>> r["examples"][0]["point"]
'{"jobs.0.flows.0.bytes":"-2GB","routing.engine":"dmodk"}'
"""

from __future__ import annotations

from typing import Any

from ..errors import NetsteerError
from .point import point_scenario
from .spec import Sweep, column_value

MAX_CHECKED = 20_000  # about 1 s of validation; past it, a sample with every value in it
EXAMPLES = 5


def _sample(sweep: Sweep, limit: int) -> list:
    """Every point if there are at most ``limit``; else one point for each value of
    each path (so a bad value cannot hide), then points spread evenly to ``limit``."""
    pts = sweep.points
    if len(pts) <= limit:
        return list(pts)
    seen: set = set()
    chosen: dict[int, Any] = {}
    for i, p in enumerate(pts):
        keys = {(k, column_value(v)) for k, v in p.overrides.items()} | {("seed", p.seed)}
        if not keys <= seen:
            seen |= keys
            chosen[i] = p
    step = max(len(pts) // max(limit - len(chosen), 1), 1)
    for i in range(0, len(pts), step):
        if len(chosen) >= limit:
            break
        chosen.setdefault(i, pts[i])
    return [chosen[i] for i in sorted(chosen)]


def refused_points(sweep: Sweep, limit: int = MAX_CHECKED) -> dict:
    """Validate the points' scenarios.

    Returns
    -------
    dict
        ``checked`` (points validated: all of them, or a sample past ``limit``),
        ``refused`` (how many of those the scenario refuses) and ``examples``: up to
        five ``{"point": key, "error": message, "field": where the sweep file gives
        it}`` (``grid.jobs.0.ranks``, ``points.2``).
    """
    from ..scenario import validate_scenario

    sample = _sample(sweep, limit)
    refused, examples = 0, []
    for p in sample:
        try:
            validate_scenario(point_scenario(sweep.base_raw, p.overrides, p.seed), file=sweep.base_file)
        except NetsteerError as exc:
            refused += 1
            if len(examples) < EXAMPLES:
                # the sweep file's field: the point's path the error is about, if one is
                path = next((k for k in p.overrides if exc.field and (exc.field + ".").startswith(k + ".")), None)
                examples.append({"point": p.key, "error": exc.message(),
                                 "field": p.origin + (f".{path}" if path else "")})
    return {"checked": len(sample), "refused": refused, "examples": examples}
