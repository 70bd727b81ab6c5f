"""Sweep files: a base scenario and the points to run it at.

Everything a sweep file can get wrong is found here, before a cluster starts: unknown
keys, paths that name nothing in the base scenario, empty lists, repeated points.
Each error names the file, the field and the reason.

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
... grid: {routing.engine: [dmodk, minhop], jobs.0.flows.0.bytes: [1GB, 2GB]}
... repeat_seeds: [1, 2]
... ''')
>>> sw = load_sweep(d / "s.yaml")
>>> len(sw.points), sw.params
(8, ['routing.engine', 'jobs.0.flows.0.bytes', 'seed'])
>>> sw.points[7].key
'{"jobs.0.flows.0.bytes":"2GB","routing.engine":"minhop","seed":2}'
>>> sw.points[1].key  # the base's own values change nothing: the base scenario, seed 2
'{"seed":2}'
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NetsteerError
from .paths import check_path, get_path

KEYS = ("base", "grid", "points", "repeat_seeds", "name", "description")
MAX_POINTS = 1_000_000  # a grid that multiplies out beyond this is a typo, not a plan


@dataclass(frozen=True)
class Point:
    """One run of the base scenario.

    Attributes
    ----------
    overrides : dict
        Dotted path to value, as the sweep file gives them.
    seed : int or None
        Set on every ``seed`` of the scenario (every job's), from ``repeat_seeds``.
    origin : str
        ``grid`` or ``points.N``: the sweep file's field it comes from.
    """

    overrides: dict[str, Any]
    seed: int | None = None
    origin: str = field(default="grid", compare=False)  # where the sweep file gives it: grid or points.N
    #: the paths of ``overrides`` that set the base scenario's own value (:func:`same_as_base`)
    same: frozenset = field(default=frozenset(), compare=False)

    @property
    def key(self) -> str:
        """Identity of the point in ``results.parquet``: the scenario it runs, as the
        values it changes in the base scenario (a path set to the base's own value
        changes nothing and is left out), so a resumed sweep, an extended grid or
        another sweep file over the same base recognises what is recorded."""
        return point_key({k: v for k, v in self.overrides.items() if k not in self.same}, self.seed)

    @property
    def label(self) -> str:
        """The point as the sweep file gives it (every path it sets), for messages."""
        return point_key(self.overrides, self.seed)


def point_key(overrides: dict[str, Any], seed: int | None = None) -> str:
    """``overrides`` (and ``seed``) as compact JSON, keys sorted: a point's key."""
    d = dict(overrides)
    if seed is not None:
        d["seed"] = seed
    return json.dumps(d, sort_keys=True, separators=(",", ":"), default=str)


_ABSENT = object()


def same_as_base(base_raw: Any, overrides: dict[str, Any]) -> frozenset:
    """The paths of ``overrides`` that set the value the base scenario already has
    there, and are not under another path of them that changes something (which
    would have replaced the base's subtree).

    >>> base = {"sharing": "maxmin", "jobs": [{"ranks": 16, "placement": "linear"}]}
    >>> sorted(same_as_base(base, {"sharing": "maxmin", "jobs.0.ranks": 8, "jobs.0.placement": "linear"}))
    ['jobs.0.placement', 'sharing']
    >>> sorted(same_as_base(base, {"jobs.0": {"ranks": 8}, "jobs.0.placement": "linear"}))
    []
    """
    same: set[str] = set()
    changed: list[str] = []
    for path in sorted(overrides, key=lambda p: p.count(".")):
        if any(path.startswith(c + ".") for c in changed):
            changed.append(path)
        elif get_path(base_raw, path, _ABSENT) == overrides[path]:
            same.add(path)
        else:
            changed.append(path)
    return frozenset(same)


def canonical_key(base_raw: Any, key: str) -> str:
    """A key recorded in ``results.parquet`` (by this version or an earlier one,
    which kept paths set to the base's value) as :attr:`Point.key` gives it now.

    >>> canonical_key({"sharing": "maxmin"}, '{"sharing":"maxmin","seed":3}')
    '{"seed":3}'
    """
    try:
        d = json.loads(key)
    except ValueError:
        return key
    if not isinstance(d, dict):
        return key
    seed = d.pop("seed", None)
    same = same_as_base(base_raw, d)
    return point_key({k: v for k, v in d.items() if k not in same}, seed) if same else key


@dataclass
class Sweep:
    """A validated sweep file.

    Attributes
    ----------
    file : str
        The sweep file.
    base_file : str
        The base scenario, resolved against the sweep file's folder.
    base_raw : dict
        The base scenario as read (points are copies of it with paths set).
    params : list of str
        Parameter columns: every path, then ``seed`` when seeds repeat.
    points : list of Point
    """

    file: str
    base_file: str
    base_raw: dict
    params: list[str]
    points: list[Point]
    base_sha256: str = ""
    #: The files the base scenario (or a point) names, by path: their contents' checksums.
    files_sha256: dict[str, str] = field(default_factory=dict)
    name: str = ""
    description: str = ""
    extra: dict = field(default_factory=dict)

    def columns(self, point: Point) -> dict[str, Any]:
        """The point's parameter values, one per column; a path the point does not
        set shows the base scenario's value there (None where the base has none)."""
        out = {}
        for p in self.params:
            if p == "seed":
                out[p] = point.seed
            else:
                out[p] = column_value(point.overrides.get(p, get_path(self.base_raw, p)))
        return out


def column_value(v: Any) -> Any:
    """Scalars as they are; lists and mappings as compact JSON, so a column keeps one type."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"), default=str)


#: How deep ibsim's own include directives nest (ibsim_net.MAX_INCLUDE); deeper is the reader's error.
_MAX_INCLUDE = 9


def referenced_files(raw: Any, file: str | Path) -> list[tuple[str, Path]]:
    """The files a scenario ``raw`` (as read from ``file``) names, each with the
    field naming it: ``topology.path`` (kinds json, ibsim, ibnetdiscover; an ibsim
    file's ``include`` files too), ``routing.partitions``, ``events.N.routing.partitions``;
    relative paths resolved as building does, against the scenario's folder.

    >>> referenced_files({"topology": {"kind": "json", "path": "p.json"},
    ...                   "routing": {"engine": "pftree", "partitions": "/etc/p.conf"}}, "/d/s.yaml")
    [('topology.path', PosixPath('/d/p.json')), ('routing.partitions', PosixPath('/etc/p.conf'))]
    """
    from ..topology.ibsim_net import _INCLUDE

    out: list[tuple[str, Path]] = []

    def add(fld: str, value: Any) -> Path | None:
        if not isinstance(value, str) or not value:
            return None
        p = Path(value)
        p = p if p.is_absolute() else Path(file).parent / p
        out.append((fld, p))
        return p

    def includes(path: Path, depth: int, seen: set) -> None:
        if depth > _MAX_INCLUDE or path in seen:
            return
        seen.add(path)
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            m = _INCLUDE.match(line.strip())
            if m:
                inc = Path(m.group(1))
                inc = inc if inc.is_absolute() else path.parent / inc
                out.append(("topology.path (include)", inc))
                includes(inc, depth + 1, seen)

    if not isinstance(raw, dict):
        return out
    topo = raw.get("topology")
    if isinstance(topo, dict):
        p = add("topology.path", topo.get("path"))
        if p is not None and topo.get("kind") == "ibsim":
            includes(p, 1, set())
    if isinstance(raw.get("routing"), dict):
        add("routing.partitions", raw["routing"].get("partitions"))
    for i, ev in enumerate(raw.get("events") or []):
        if isinstance(ev, dict) and isinstance(ev.get("routing"), dict):
            add(f"events.{i}.routing.partitions", ev["routing"].get("partitions"))
    return out


#: The top-level keys under which a scenario names files (:func:`referenced_files`).
_FILE_ROOTS = ("topology", "routing", "events")


def file_digests(files) -> dict[str, str]:
    """``{path: sha256 of its contents}`` of ``(field, path)`` pairs; ``""`` for a
    file that cannot be read (building says why)."""
    out: dict[str, str] = {}
    for _, p in files:
        key = str(p)
        if key in out:
            continue
        try:
            out[key] = hashlib.sha256(p.read_bytes()).hexdigest()
        except OSError:
            out[key] = ""
    return out


def _point_files(base_raw: dict, base_file: str, points) -> list[tuple[str, Path]]:
    """The files the base scenario names, and those points name in its stead (a grid
    over ``topology.path``): only points that set a path under ``topology``,
    ``routing`` or ``events`` are looked at, each distinct setting once."""
    from .paths import set_path

    files = referenced_files(base_raw, base_file)
    sub = {k: base_raw[k] for k in _FILE_ROOTS if isinstance(base_raw, dict) and k in base_raw}
    seen: set[str] = set()
    for pt in points:
        mine = {k: v for k, v in pt.overrides.items() if k.split(".")[0] in _FILE_ROOTS}
        if not mine:
            continue
        key = json.dumps(mine, sort_keys=True, default=str)
        if key in seen:
            continue
        seen.add(key)
        raw = sub
        try:
            for path in sorted(mine, key=lambda p: p.count(".")):
                raw = set_path(raw, path, mine[path])
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # the point is refused when it runs
        files += referenced_files(raw, base_file)
    return files


def _read_yaml(path: Path) -> tuple[Any, str]:
    """The parsed file and its text, read as strictly as scenarios are (UTF-8, size,
    duplicate keys: a grid path given twice is refused, not silently the last)."""
    from ..inputs import load_yaml, read_text

    text = read_text(path, file=str(path))
    return load_yaml(text, file=str(path)), text


def _values(v: Any, file: str, fld: str) -> list:
    if not isinstance(v, list):
        raise NetsteerError(f"give a list of values, not {v!r}", file=file, field=fld)
    if not v:
        raise NetsteerError("the list of values is empty: a sweep over it has no points", file=file, field=fld)
    return v


def _same_value(v: Any) -> Any:
    """What a value amounts to, so that one written twice differently is seen: a text
    with a unit as its kind and SI value (``1MiB`` and ``1024KiB``), a size also as a
    plain byte count (``1048576``); anything else as written.

    >>> _same_value("1MiB") == _same_value("1024KiB") == _same_value(1048576), _same_value("1Gbps")
    (True, ('bandwidth', 1000000000.0))
    """
    from ..units import UnitError, parse_bandwidth, parse_duration, parse_size

    if isinstance(v, str):
        for kind, parse in (("bandwidth", parse_bandwidth), ("duration", parse_duration), ("size", parse_size)):
            try:
                n = parse(v)
            except UnitError:
                continue
            return n if kind == "size" else (kind, n)
    return column_value(v)


def _no_repeats(vals: list, file: str, fld: str) -> None:
    """Refuse a value listed twice, also written differently (``[1MiB, 1048576]``)."""
    seen: dict = {}
    for v in vals:
        k = ("bool", v) if isinstance(v, bool) else _same_value(v)  # true is not 1
        if k in seen:
            same = "" if column_value(seen[k]) == column_value(v) else f" ({seen[k]!r} and {v!r} are the same value)"
            raise NetsteerError(f"a value is listed twice{same}", file=file, field=fld)
        seen[k] = v


def _check(base_raw, model, path: str, file: str, fld: str, seeded: bool) -> None:
    if not isinstance(path, str):
        raise NetsteerError(f"a path is a string like routing.engine, not {path!r}", file=file, field=fld)
    try:
        check_path(base_raw, model, path)
    except ValueError as exc:
        raise NetsteerError(str(exc), file=file, field=fld) from None
    if seeded and path.split(".")[-1] == "seed":
        raise NetsteerError("repeat_seeds sets every seed already; drop one of the two", file=file, field=fld)


def _seeds(v: Any, file: str) -> list[int | None]:
    if v is None:
        return [None]
    seeds = _values(v, file, "repeat_seeds")
    for i, s in enumerate(seeds):
        if isinstance(s, bool) or not isinstance(s, int):
            raise NetsteerError(f"a seed is an integer, not {s!r}", file=file, field=f"repeat_seeds.{i}")
        if s < 0:  # as the scenario's seed: refused here, not blamed on a path of each point
            raise NetsteerError(f"a seed is an integer >= 0 (as a job's seed), not {s}", file=file,
                                field=f"repeat_seeds.{i}")
    if len(set(seeds)) != len(seeds):
        raise NetsteerError("a seed is listed twice", file=file, field="repeat_seeds")
    return seeds


def _looks_like_scenario(data: dict) -> bool:
    """Whether a mapping holds keys only a scenario has (``topology``, ``jobs``, ...).

    >>> _looks_like_scenario({"name": "x", "topology": {}, "jobs": []})
    True
    >>> _looks_like_scenario({"name": "x", "grid": {}})
    False
    """
    from ..scenario import ScenarioModel

    return any(k in ScenarioModel.model_fields and k not in KEYS for k in data)


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file; nothing runs.

    Parameters
    ----------
    path : str or Path
        YAML with ``base`` (a scenario file, relative to this file), ``grid`` (dotted
        path to list of values: the product is swept) and/or ``points`` (a list of
        path-to-value mappings), and optionally ``repeat_seeds``.

    Raises
    ------
    NetsteerError
        Naming the file, the field and the reason.
    """
    from ..scenario import parse_scenario

    path = Path(path)
    file = str(path)
    data, _ = _read_yaml(path)
    if not isinstance(data, dict):
        raise NetsteerError("a sweep file is a mapping with base, and grid or points", file=file)
    if "base" not in data and _looks_like_scenario(data):
        raise NetsteerError("this is a scenario, not a sweep file (a sweep file has base: and grid:/points:; "
                            "see docs/sweeps.md)", file=file)
    for k in data:
        if k not in KEYS:
            raise NetsteerError(f"unknown key {k!r}; known keys: {', '.join(KEYS)}", file=file, field=str(k))
    base = data.get("base")
    if not isinstance(base, str) or not base:
        raise NetsteerError("give the base scenario file, relative to this file", file=file, field="base")
    base_path = (path.parent / base).resolve()
    if not base_path.is_file():
        raise NetsteerError(f"no scenario file {base_path}", file=file, field="base")
    base_raw, base_text = _read_yaml(base_path)
    sc = parse_scenario(base_text, file=str(base_path))  # a bad base is refused here, naming its own file
    seeds = _seeds(data.get("repeat_seeds"), file)
    seeded = seeds != [None]

    grid = data.get("grid")
    listed = data.get("points")
    if grid is None and listed is None:
        raise NetsteerError("a sweep needs a grid, a list of points, or both", file=file, field="grid")
    combos: list[tuple[str, dict]] = []  # (field to blame for a repeat, point)
    paths: list[str] = []
    if grid is not None:
        if not isinstance(grid, dict):
            raise NetsteerError("grid maps dotted paths to lists of values", file=file, field="grid")
        if not grid:
            raise NetsteerError("the grid is empty: give at least one path with its values", file=file, field="grid")
        size = 1
        for p, vals in grid.items():
            _check(base_raw, sc.model, p, file, f"grid.{p}", seeded)
            vals = _values(vals, file, f"grid.{p}")
            _no_repeats(vals, file, f"grid.{p}")
            size *= len(vals)
        if size * len(seeds) > MAX_POINTS:
            raise NetsteerError(f"the grid has {size * len(seeds)} points; at most {MAX_POINTS}", file=file, field="grid")
        paths += list(grid)
        combos += [("grid", dict(zip(grid, vals))) for vals in itertools.product(*grid.values())]
    if listed is not None:
        for i, pt in enumerate(_values(listed, file, "points")):
            if not isinstance(pt, dict):
                raise NetsteerError("a point maps dotted paths to values", file=file, field=f"points.{i}")
            for p in pt:
                _check(base_raw, sc.model, p, file, f"points.{i}.{p}", seeded)
                if p not in paths:
                    paths.append(p)
            combos.append((f"points.{i}", dict(pt)))

    points: list[Point] = []
    seen: dict[str, str] = {}  # key -> the first point's label
    same_cache: dict[str, bool] = {}  # (path, value) as JSON -> the base's own value there
    nested_cache: dict[tuple, bool] = {}
    for fld, combo in combos:
        paths_of = tuple(combo)
        nested = nested_cache.get(paths_of)
        if nested is None:  # a path under another: the shallower one may replace the base's subtree
            nested = nested_cache[paths_of] = any(q.startswith(p + ".") for p in paths_of for q in paths_of)
        if nested:
            same = same_as_base(base_raw, combo)
        else:
            same_set = set()
            for p, v in combo.items():
                ck = p + "\0" + json.dumps(v, sort_keys=True, default=str)
                hit = same_cache.get(ck)
                if hit is None:
                    hit = same_cache[ck] = get_path(base_raw, p, _ABSENT) == v
                if hit:
                    same_set.add(p)
            same = frozenset(same_set)
        for s in seeds:
            pt = Point(combo, s, fld, same)
            if pt.key in seen:
                first = seen[pt.key]
                same = "" if first == pt.label else \
                    f" (as {first}: the paths at the base scenario's own value change nothing)"
                raise NetsteerError(f"this point is already in the sweep: {pt.label}{same}", file=file, field=fld)
            seen[pt.key] = pt.label
            points.append(pt)
    return Sweep(
        file=file,
        base_file=str(base_path),
        base_raw=base_raw,
        params=paths + (["seed"] if seeded else []),
        points=points,
        base_sha256=hashlib.sha256(base_text.encode()).hexdigest(),
        files_sha256=file_digests(_point_files(base_raw, str(base_path), points)),
        name=str(data.get("name") or path.stem),
        description=str(data.get("description") or ""),
    )
