"""Checks the studies' parameter dataclasses share (``Reconfig``, ``Study``, ``Setup``):
each error's field is the parameter, which the commands name as their option
(:meth:`netsteer.errors.NetsteerError.as_options`).

>>> from dataclasses import dataclass
>>> @dataclass
... class P:
...     ranks: int = 0
...     period: str = "1 parsec"
>>> check_ints(P(), {"ranks": 1})
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: ranks: must be an integer >= 1, got 0
>>> from netsteer.units import parse_duration
>>> parsed(P(), "period", parse_duration)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: period: ...
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import NetsteerError


def check_ints(params: Any, least: dict[str, int]) -> None:
    """Refuse a field of ``params`` named in ``least`` that is not an integer (a bool
    is not one) at least its bound, in ``least``'s order."""
    for key, low in least.items():
        v = getattr(params, key)
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise NetsteerError(f"must be an integer >= {low}, got {v!r}", field=key)


def parsed(params: Any, key: str, parse: Callable[[Any], Any]) -> Any:
    """Field ``key`` of ``params`` read with ``parse`` (a unit parser); its
    ``ValueError`` becomes the field's error."""
    try:
        return parse(getattr(params, key))
    except ValueError as exc:
        raise NetsteerError(str(exc), field=key) from None


def provenance(values: dict[str, Any], source: dict[str, tuple[Any, str]], assumed: dict[str, str]) -> dict[str, Any]:
    """A study's parameters with where each comes from, as the reports carry them
    (``setup``/``parameters`` in ``--json``, as qos-staging's ``setup.assumptions``):
    ``values`` plus ``source`` (parameter: where the source gives it), ``assumptions``
    (parameter: why this value, not in the source) and ``changed`` (a parameter the
    source gives, set to another value by an option: ``{"value", "source"}``).

    ``source`` maps a parameter to ``(the source's value, where it says so)``; every
    parameter of ``values`` must be in ``source`` or ``assumed``.

    >>> p = provenance({"racks": 32, "jobs": 8}, {"racks": (320, "Fig. 1")}, {"jobs": "beyond the source"})
    >>> p["changed"], p["assumptions"], p["source"]
    ({'racks': {'value': 32, 'source': 320}}, {'jobs': 'beyond the source'}, {})
    """
    missing = [k for k in values if k not in source and k not in assumed]
    if missing:
        raise ValueError(f"parameters with no provenance: {', '.join(missing)}")
    out: dict[str, Any] = dict(values)
    out["source"] = {k: note for k, (v, note) in source.items() if k in values and values[k] == v}
    out["assumptions"] = {k: note for k, note in assumed.items() if k in values}
    out["changed"] = {k: {"value": values[k], "source": v} for k, (v, _) in source.items()
                      if k in values and values[k] != v}
    return out


def show_value(key: str, value: Any) -> str:
    """``key value`` for the text output: ``*_ns`` as a duration, a numeric
    ``*bandwidth`` in Gbit/s, anything else as it is.

    >>> show_value("overhead_ns", 25_000), show_value("link_bandwidth", 1e9), show_value("rules", (100, 5000))
    ('overhead 25 us', 'link bandwidth 1 Gbit/s', 'rules 100,5000')
    """
    from ..units import format_seconds

    name = key[:-3] if key.endswith("_ns") else key
    if key.endswith("_ns") and isinstance(value, (int, float)):
        text = format_seconds(value / 1e9)
    elif "bandwidth" in key and isinstance(value, (int, float)):
        text = f"{value / 1e9:g} Gbit/s"
    elif isinstance(value, (tuple, list)):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    return f"{name.replace('_', ' ')} {text}"


def provenance_lines(block: dict[str, Any], show: Callable[[str, Any], str] = show_value) -> list[str]:
    """The text of a :func:`provenance` block: one line for what comes from the
    source, one for what is assumed (with why), one for what an option changed.

    >>> p = provenance({"racks": 32, "jobs": 8}, {"racks": (320, "Fig. 1")}, {"jobs": "beyond the source"})
    >>> print("\\n".join(provenance_lines(p)))
    assumed (not in the source): jobs 8 (beyond the source)
    changed by an option from the source's value: racks 32 (the source: racks 320)
    """
    out = []
    if block["source"]:
        out.append("from the source: " + "; ".join(f"{show(k, block[k])} ({n})" for k, n in block["source"].items()))
    if block["assumptions"]:
        out.append("assumed (not in the source): " + "; ".join(f"{show(k, block[k])} ({n})"
                                                               for k, n in block["assumptions"].items()))
    if block["changed"]:
        out.append("changed by an option from the source's value: " + "; ".join(
            f"{show(k, c['value'])} (the source: {show(k, c['source'])})" for k, c in block["changed"].items()))
    return out
