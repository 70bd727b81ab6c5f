"""Dotted paths into a scenario: ``routing.engine``, ``jobs.0.ranks``.

A path is checked against the base scenario once, when the sweep file is read, so a
typo is refused before anything runs; setting it on a copy is then plain dict work.

Examples
--------
>>> raw = {"routing": {"engine": "dmodk"}, "jobs": [{"name": "a", "ranks": 4}]}
>>> set_path(raw, "jobs.0.ranks", 8)["jobs"][0]["ranks"], raw["jobs"][0]["ranks"]
(8, 4)
>>> get_path(raw, "routing.engine")
'dmodk'
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import did_you_mean

_MISSING = object()


def _index(node: list, seg: str, where: str) -> int:
    if not seg.isdigit():
        raise ValueError(f"{where or 'the scenario'} is a list: use an index 0..{len(node) - 1}, not {seg!r}")
    i = int(seg)
    if i >= len(node):
        n = len(node)
        raise ValueError(f"{where} has {n} entr{'y' if n == 1 else 'ies'}; there is no index {i}")
    return i


def _key(node: dict, seg: str) -> Any:
    """The key of ``node`` that ``seg`` names (YAML may give integer keys)."""
    if seg in node:
        return seg
    if seg.isdigit() and int(seg) in node:
        return int(seg)
    return _MISSING


def get_path(raw: Any, path: str, default: Any = None) -> Any:
    """The value at ``path`` in ``raw``, or ``default`` where it is absent."""
    node = raw
    for seg in path.split("."):
        if isinstance(node, list) and seg.isdigit() and int(seg) < len(node):
            node = node[int(seg)]
        elif isinstance(node, dict) and _key(node, seg) is not _MISSING:
            node = node[_key(node, seg)]
        else:
            return default
    return node


def set_path(raw: dict, path: str, value: Any) -> dict:
    """A deep copy of ``raw`` with ``path`` set to ``value`` (the path was checked)."""
    out = copy.deepcopy(raw)
    segs = path.split(".")
    node: Any = out
    last = segs[-1]
    if len(segs) == 2 and isinstance(node, dict) and segs[0] in _SECTIONS and _key(node, segs[0]) is _MISSING:
        node = node.setdefault(segs[0], {})  # a section the base leaves out: created
        last = segs[1]
        node[last] = copy.deepcopy(value)
        return out
    for seg in segs[:-1]:
        node = node[int(seg)] if isinstance(node, list) else node[_key(node, seg)]
    if isinstance(node, list):
        node[int(last)] = copy.deepcopy(value)
    else:
        key = _key(node, last)
        node[last if key is _MISSING else key] = copy.deepcopy(value)
    return out


def _packet_params() -> type[BaseModel]:
    from ..sim.packet import PacketParams

    return PacketParams


#: Top-level sections a sweep may set keys of though the base file leaves them out:
#: the point creates the mapping (``packet.mtu`` on a base without ``packet:``).
_SECTIONS = {"packet": _packet_params}


def _sub_schemas() -> dict[tuple[str, ...], type[BaseModel]]:
    """The schemas of mappings the scenario model keeps free-form (``controller``,
    ``driver``): their builders check them, and know their defaults."""
    from ..control.scenario import ControllerModel, DriverModel
    from ..unisonflow.scenario import UnisonFlowModel

    return {("controller",): ControllerModel, ("driver",): DriverModel,
            ("controller", "unisonflow"): UnisonFlowModel}


def _schema_knows(model: BaseModel, segs: list[str], name: str) -> bool:
    """Whether the validated scenario has a schema field ``name`` at ``segs``.

    Fields left at their defaults are absent from the file but still settable
    (``jobs.0.seed``, ``controller.hybrid.method``); free-form mappings
    (``topology``) only take keys they have.
    """
    obj: Any = model
    schemas = _sub_schemas()
    for i, seg in enumerate(segs):
        if isinstance(obj, BaseModel):
            fields = type(obj).model_fields
            attr = next((n for n, f in fields.items() if seg in (n, f.alias)), None)
            if attr is None:
                return False
            obj = getattr(obj, attr)
        elif isinstance(obj, list) and seg.isdigit() and int(seg) < len(obj):
            obj = obj[int(seg)]
        elif isinstance(obj, dict) and seg in obj:
            obj = obj[seg]
        else:
            return False
        schema = schemas.get(tuple(segs[:i + 1]))
        if schema is not None and isinstance(obj, dict):
            try:
                obj = schema.model_validate(obj)
            except ValidationError:
                return False  # the run refuses the base scenario itself, naming the field
    if not isinstance(obj, BaseModel):
        return False
    return any(name in (n, f.alias) for n, f in type(obj).model_fields.items())


def check_path(raw: dict, model: BaseModel, path: str) -> None:
    """Raise ``ValueError`` (the reason) unless ``path`` names a place in the scenario.

    Parameters
    ----------
    raw : dict
        The base scenario as read from YAML.
    model : BaseModel
        The same scenario, validated (knows the keys left at their defaults).
    path : str
        Dotted path; list entries by index.

    >>> from netsteer.scenario import parse_scenario
    >>> sc = parse_scenario('''{name: x, topology: {kind: pgft}, routing: {engine: dmodk},
    ...                       jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1B}]}]}''')
    >>> raw = sc.model.model_dump(by_alias=True, exclude_unset=True)
    >>> check_path(raw, sc.model, "jobs.0.seed")  # absent from the file, known to the schema
    >>> check_path(raw, sc.model, "jobs.3.seed")
    Traceback (most recent call last):
    ...
    ValueError: jobs has 1 entry; there is no index 3
    """
    if not path or any(not s for s in path.split(".")):
        raise ValueError("a path is dot-separated keys and indices, like routing.engine or jobs.0.ranks")
    segs = path.split(".")
    node: Any = raw
    for i, seg in enumerate(segs):
        where = ".".join(segs[:i])
        last = i == len(segs) - 1
        if isinstance(node, list):
            node = node[_index(node, seg, where)]
        elif isinstance(node, dict):
            key = _key(node, seg)
            if key is not _MISSING:
                node = node[key]
            elif last and model is not None and _schema_knows(model, segs[:-1], seg):
                return
            elif i == 0 and seg in _SECTIONS and len(segs) == 2 and model is not None:
                # a section the base leaves out (packet:): the point creates it
                schema = _SECTIONS[seg]()
                sub = segs[1]
                if any(sub in (n, f.alias) for n, f in schema.model_fields.items()):
                    return
                keys = ", ".join(schema.model_fields)
                raise ValueError(f"{seg} has no key {sub!r} (keys: {keys})" + (did_you_mean(sub, list(schema.model_fields)) or ""))
            elif not last and model is not None and i == 0 and seg in type(model).model_fields:
                raise ValueError(f"the base scenario has no {seg!r} section, and a sweep path must go into a mapping the "
                                 f"base file has: add {seg}: {{}} (or the keys you sweep) to the base scenario")
            else:
                known = ", ".join(map(str, node)) or "none"
                raise ValueError(f"the scenario has no key {seg!r} under {where or 'its top level'} (keys: {known})")
        else:
            raise ValueError(f"{where} is {node!r}, which has no {seg!r}")
