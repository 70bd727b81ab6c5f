"""A sweep's points checked as ``netsteer run`` checks a file, for ``netsteer sweep --check``.

Reading a sweep file checks its paths; this checks its values: each point's scenario
is validated and then *built* as ``netsteer run`` builds it before simulating
(topology units and shapes, MPI programs, routing engines and their parameters, ranks
against hosts, memory), without simulating. Building is cheap (milliseconds for the
shipped scenarios), but a sweep may be large: the points that hold every value of
every path are always built, then others while the building has taken less than
``BUILD_BUDGET_S`` seconds (and up to ``MAX_BUILT``); the rest of the checked points
(all, or a sample past ``MAX_CHECKED``) are validated against the schema only.

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
>>> r["checked"], r["built"], r["refused"]
(4, 1, 3)
>>> r["examples"][0]["point"]
'{"jobs.0.flows.0.bytes":"-2GB","routing.engine":"dmodk"}'
"""

from __future__ import annotations

from typing import Any

from ..errors import NetsteerError
from .point import point_scenario
from .spec import Sweep, column_value

MAX_CHECKED = 20_000  # about 1 s of validation; past it, a sample with every value in it
MAX_BUILT = 2_000  # points built at most (each as netsteer run builds it)
BUILD_BUDGET_S = 30.0  # building goes on past the points holding every value while under this
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


def _path_of(overrides: dict, field: str | None) -> str | None:
    """The point's path an error at ``field`` is about: the path at or above the
    field, else one inside it (``jobs.0.program.0`` for ``...program.0.algorithm``),
    else the one sharing most of its leading keys (``topology.levels`` for an error
    at ``topology.down``, which a new ``levels`` made wrong); None if none shares any."""
    if not field:
        return None
    keys = field.split(".")
    best, most = None, 0
    for k in overrides:
        if (field + ".").startswith(k + ".") or k.startswith(field + "."):
            return k
        common = 0
        for a, b in zip(k.split("."), keys):
            if a != b:
                break
            common += 1
        if common > most:
            best, most = k, common
    return best


def _blamed(sweep: Sweep, p, field: str | None) -> str:
    """Where the sweep file gives what an error at the scenario's ``field`` is about:
    ``repeat_seeds.N`` for a ``seed`` that no path of the point sets (repeat_seeds
    set it), else the point's path (:func:`_path_of`) under its origin."""
    if field and field.split(".")[-1] == "seed" and p.seed is not None and field not in p.overrides:
        seeds = list(dict.fromkeys(q.seed for q in sweep.points))
        return f"repeat_seeds.{seeds.index(p.seed)}"
    path = _path_of(p.overrides, field)
    return p.origin + (f".{path}" if path else "")


def refused_points(sweep: Sweep, limit: int = MAX_CHECKED, *, build_limit: int = MAX_BUILT,
                   budget_s: float = BUILD_BUDGET_S) -> dict:
    """Check the points' scenarios as ``netsteer run`` does before simulating.

    Returns
    -------
    dict
        ``checked`` (points checked: all of them, or a sample past ``limit``),
        ``built`` (how many of those passed the schema and were then built, as
        ``netsteer run`` builds them), ``refused``
        (how many of those the scenario refuses) and ``examples``: up to five
        ``{"point": key, "error": message, "field": where the sweep file gives it}``
        (``grid.jobs.0.ranks``, ``points.2``).
    """
    import time

    from ..scenario import build_scenario, validate_scenario

    sample = _sample(sweep, limit)
    # the points that hold every value of every path are built first, whatever it takes
    first = {p.key for p in _sample(sweep, 0)} if sweep.points else set()
    order = sorted(range(len(sample)), key=lambda i: sample[i].key not in first)
    refused, built, examples = 0, 0, []
    t0 = time.perf_counter()
    for i in order:
        p = sample[i]
        build = p.key in first or (built < build_limit and time.perf_counter() - t0 < budget_s)
        try:
            sc = validate_scenario(point_scenario(sweep.base_raw, p.overrides, p.seed), file=sweep.base_file)
            if build:
                built += 1
                build_scenario(sc)
        except NetsteerError as exc:
            refused += 1
            if len(examples) < EXAMPLES:
                examples.append({"i": i, "point": p.label, "error": exc.message(),
                                 "field": _blamed(sweep, p, exc.field)})
    examples.sort(key=lambda e: e.pop("i"))  # in the sweep's order, as before
    return {"checked": len(sample), "built": built, "refused": refused, "examples": examples}
