"""One sweep point, as a worker runs it: the base scenario with the point's values
set, validated and simulated exactly as ``netsteer run`` does it.

This module is what Dask ships to workers, so it imports nothing from Dask and its
functions take and return plain data.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import yaml

from ..errors import NetsteerError
from .paths import set_path


def _set_seeds(node: Any, seed: int) -> Any:
    """Set every ``seed`` key already in the scenario, in place."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "seed":
                node[k] = seed
            else:
                _set_seeds(v, seed)
    elif isinstance(node, list):
        for v in node:
            _set_seeds(v, seed)
    return node


def point_scenario(base_raw: dict, overrides: dict[str, Any], seed: int | None = None) -> dict:
    """The base scenario with ``overrides`` set (shallow paths first, so a deeper
    path refines a subtree that a shallower one replaced) and, given ``seed``,
    every MPI job's seed and every other ``seed`` key set to it."""
    raw = base_raw
    for path in sorted(overrides, key=lambda p: p.count(".")):
        raw = set_path(raw, path, overrides[path])
    if raw is base_raw:
        raw = copy.deepcopy(base_raw)  # seeds are set in place below
    if seed is not None:
        _set_seeds(raw, seed)
        for job in raw.get("jobs") or []:
            # an MPI job without one runs with the default 0; a flow job has no seed
            # (the scenario refuses one: it draws nothing)
            if isinstance(job, dict) and "program" in job:
                job["seed"] = seed
    return raw


def point_scenario_text(base_raw: dict, overrides: dict[str, Any], seed: int | None = None) -> str:
    """The point's scenario as YAML: what ``netsteer run`` would read for it."""
    return yaml.safe_dump(point_scenario(base_raw, overrides, seed), sort_keys=False)


def run_scenario_result(sc) -> dict:
    """Simulate a parsed scenario; the dict ``netsteer run --json`` prints.

    Counters are not sampled: ``netsteer run`` without ``--out`` does not sample
    them either, and the sweep keeps only completion times.
    """
    from ..report.result import result_dict
    from ..scenario import build_scenario
    from ..sim import run_scenario

    built = build_scenario(sc)
    return result_dict(built, run_scenario(built, sample=False))


def run_point(base_raw: dict, overrides: dict[str, Any], seed: int | None, base_file: str,
              max_memory: int | None = None) -> dict[str, Any]:
    """Run one point; never raises for the point's own failures.

    Parameters
    ----------
    base_raw : dict
        The base scenario as read from YAML.
    overrides : dict
        Dotted path to value.
    seed : int or None
    base_file : str
        The base scenario's path: relative files in it (partitions) resolve against
        it, and errors name it.
    max_memory : int, optional
        The submitting command's memory limit (``--max-memory``), which a worker
        process does not inherit.

    Returns
    -------
    dict
        ``status`` (``done``, ``stalled`` or ``failed``), ``error``, ``makespan_s``,
        ``jobs`` (name to completion in s, None if never done), ``wall_s`` (building
        and simulating the point) and ``cpu_s`` (the worker process's CPU time for it).
    """
    from ..scenario import parse_scenario

    if max_memory:
        from ..limits import set_max_memory

        set_max_memory(max_memory)
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, Any] = {"status": "failed", "error": None, "makespan_s": None, "jobs": {}}
    try:
        sc = parse_scenario(point_scenario_text(base_raw, overrides, seed), file=base_file)
        res = run_scenario_result(sc)
        from ..report.result import stall_warning

        out.update(status=res["status"], makespan_s=res["makespan_s"],
                   jobs={j["name"]: j["completion_s"] for j in res["jobs"]},
                   error=stall_warning(res))  # a stalled point says why, as netsteer run does
    except NetsteerError as exc:  # a refused combination: a result, not a crash
        out["error"] = exc.message()
    except Exception as exc:  # noqa: BLE001 - one point's bug must not stop the sweep
        out["error"] = f"internal error: {type(exc).__name__}: {exc}"
    out["wall_s"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0  # below wall_s when the worker waited for a core
    return out
