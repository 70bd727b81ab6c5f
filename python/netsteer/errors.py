"""User-facing errors. The CLI turns each into one line and exit code 2."""

import re
import reprlib

#: The longest reason and field an error message carries: a message is one line
#: a user reads, never a dump of the input (an alias bomb's repr is gigabytes).
MAX_REASON = 400
MAX_FIELD = 160

_REPR = reprlib.Repr()
for _k, _v in dict(maxlevel=2, maxdict=4, maxlist=4, maxtuple=4, maxset=4, maxstring=60, maxother=60, maxlong=40).items():
    setattr(_REPR, _k, _v)


def short_repr(value) -> str:
    """A bounded ``repr`` for messages: nested and long values are elided.

    >>> short_repr("x" * 1000)[:12], len(short_repr(list(range(10**6)))) < 80
    ("'xxxxxxxxxxx", True)
    """
    return _REPR.repr(value)


def _clip(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    text = " ".join(str(text).split())  # one line
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_loc(loc, msg: str) -> tuple[tuple, str]:
    """A pydantic error location and message, with a mapping's bad key named in the
    message instead of pydantic's ``[key]`` marker in the field path.

    >>> key_loc(("qos", "ports", "foo", "[key]"), "Input should be 'ca' or 'swe'")
    (('qos', 'ports', 'foo'), "key 'foo': Input should be 'ca' or 'swe'")
    """
    loc = tuple(loc)
    if len(loc) >= 2 and loc[-1] == "[key]":
        return loc[:-1], f"key {loc[-2]!r}: {msg}"
    return loc, msg


def did_you_mean(word, choices) -> str:
    """``"; did you mean 'x'?"`` for the one of ``choices`` closest to ``word``, if
    any is close, else ``""``: a message's hint at a misspelt key or name.

    >>> did_you_mean("byts", ["src", "dst", "bytes"]), did_you_mean("colour", ["bytes"])
    ("; did you mean 'bytes'?", '')
    """
    import difflib  # only when a message needs it

    # above difflib's 0.6: 'bytes' is not a misspelt 'elem_bytes' (0.67); 'byts' is 'bytes' (0.89)
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key_reason(unknown, missing=(), known=()) -> str:
    """The reason for unknown keys found where required keys are ``missing`` and
    ``known`` keys are taken: a misspelt key is both unknown and missing, or close to
    an optional key; the message names the key the user wrote, and the one it is
    close to (a missing one first), not only the one the schema wants.

    >>> unknown_key_reason(["byts"], ["bytes"]), unknown_key_reason(["colour"], ["bytes"])
    ("unknown key 'byts'; did you mean 'bytes'?", "unknown key 'colour'; required key 'bytes' is missing")
    >>> unknown_key_reason(["wieght"], known=["src", "dst", "bytes", "weight"])
    "unknown key 'wieght'; did you mean 'weight'?"
    """
    for choices in (missing, known):
        for k in unknown:
            hint = did_you_mean(k, choices)
            if hint:
                return f"unknown key {k!r}{hint}"
    return f"unknown key {unknown[0]!r}" + (f"; required key {missing[0]!r} is missing" if missing else "")


def keys_at(model, loc) -> list[str]:
    """The keys (as written: aliases) of the mapping at ``loc`` (a field path without
    union branches, :func:`clean_loc`) in pydantic ``model``, for a misspelt key's
    hint; ``[]`` where no model says (a free mapping, no model).

    >>> from netsteer.scenario import ScenarioModel
    >>> keys_at(ScenarioModel, ("sharing",)), "class" in keys_at(ScenarioModel, ("jobs", 0, "flows", 3))
    (['model', 'tcp_gamma', 'merge_window', 'ticks_per_ns'], True)
    """
    from typing import get_args

    from pydantic import BaseModel

    def models(tp) -> list:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return [tp]
        return [m for a in get_args(tp) for m in models(a)]  # Optional, list, union, Annotated

    here = [model] if model is not None else []
    for part in loc:
        if isinstance(part, int):  # a list's entry: the list's type already gave its model
            continue
        here = [m for h in here for n, f in h.model_fields.items() if part in (n, f.alias)
                for m in models(f.annotation)]
    return [f.alias or n for h in here for n, f in h.model_fields.items()]


#: pydantic's comparisons, by error type, as the house writes them.
_COMPARE = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
#: What a value must be, by pydantic's error type for a value of the wrong type.
_MUST_BE = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number", "finite_number": "a finite number",
    "bool_type": "true or false", "bool_parsing": "true or false", "string_type": "a string",
    "list_type": "a list", "tuple_type": "a list", "set_type": "a list", "none_required": "null",
}


def plain_words(e: dict) -> str:
    """A pydantic error (an entry of ``exc.errors()``) as a reason in plain words, not
    pydantic's ("Input should be greater than or equal to 0"); a check's own message
    (a ``ValueError``'s) as it is.

    >>> plain_words({"type": "greater_than_equal", "msg": "Input should be greater than or equal to 0",
    ...              "ctx": {"ge": 0}, "input": -2})
    'must be >= 0, got -2'
    >>> plain_words({"type": "too_short", "msg": "List should have at least 1 item after validation, not 0",
    ...              "ctx": {"field_type": "List", "min_length": 1, "actual_length": 0}, "input": []})
    'must not be empty'
    """
    t, ctx, got = e["type"], e.get("ctx") or {}, short_repr(e.get("input"))
    if t in _COMPARE:
        limit = next(iter(ctx.values()))  # {"ge": 0}; a float field's 0.0 reads as 0
        return f"must be {_COMPARE[t]} {int(limit) if float(limit).is_integer() else limit}, got {got}"
    if t in ("too_short", "string_too_short"):
        n, what = ctx.get("min_length"), "characters" if t.startswith("string") else "entries"
        return "must not be empty" if n == 1 else f"must have at least {n} {what}, got {got}"
    if t in ("too_long", "string_too_long"):
        return f"must have at most {ctx.get('max_length')} " + ("characters" if t.startswith("string") else
                                                                 f"entries, got {ctx.get('actual_length')}")
    if t == "literal_error":
        return f"must be {ctx.get('expected')}, got {got}"
    if t == "multiple_of":
        return f"must be a multiple of {ctx.get('multiple_of')}, got {got}"
    if t in _MUST_BE:
        return f"must be {_MUST_BE[t]}, got {got}"
    return e["msg"].removeprefix("Value error, ")


#: Names pydantic puts in an error's location for the branches of a union
#: (``sharing.SharingModel``, ``placement.literal['linear','random']``,
#: ``placement.list[int].1``): not fields a user wrote.
_UNION_TAG = re.compile(r"^(function-|literal\[|json-or-python|lax-or-strict|constrained-)|^[A-Z]\w*Model$"
                        r"|^(int|str|float|bool|list|dict|tuple|none)(\[.*\])?$")

#: A value that must be a mapping, by the key that holds it: an example the message shows.
#: A model validated on its own may add or override entries with a ``mapping_examples``
#: class attribute.
MAPPING_EXAMPLES = {
    "routing": "{engine: dmodk}",
    "topology": "{kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps}",
    "jobs": "{name: a, flows: [{src: 0, dst: 1, bytes: 1MiB}]}",
    "flows": "{src: 0, dst: 1, bytes: 1MiB}",
    "bulk": "{src: 0, dst: 1, duration: 1s}",
    "events": "{at: 1ms, link_down: [{node: s1_0, port: 5}]}",
    "link_down": "{node: s1_0, port: 5}",
    "link_up": "{node: s1_0, port: 5}",
    "circuit": "{switch: ocs0, pairs: [[1, 9]]}",
    "program": "{op: allreduce, bytes: 1MiB}",
}


def clean_loc(loc, tags=()) -> tuple:
    """A pydantic error location as the field path a user wrote: without the union
    branches pydantic inserts, nor, after a list index, the tag of a discriminated
    union (``program.0.bcast.root``; ``tags`` are the tags' values).

    >>> clean_loc(("sharing", "SharingModel", "tcp_gamma")), clean_loc(("program", 0, "bcast", "root"), {"bcast"})
    (('sharing', 'tcp_gamma'), ('program', 0, 'root'))
    """
    return tuple(p for i, p in enumerate(loc)
                 if not (isinstance(p, str) and (_UNION_TAG.search(p)
                                                 or (p in tags and i > 0 and isinstance(loc[i - 1], int)))))


def pydantic_error(errors, *, file: str | None = None, tags=(), model=None) -> "NetsteerError":
    """The errors of a pydantic ``ValidationError`` (``exc.errors()``) as one
    :class:`NetsteerError` in the house words: the field path without pydantic's
    union branches, ``unknown key 'x'`` at the mapping that holds it (with the key of
    ``model`` there it is close to, if any, :func:`keys_at`), ``must be a mapping``
    for a value that is not one, the rest in plain words (:func:`plain_words`), no
    model class names.

    >>> pydantic_error([{"type": "missing", "loc": ("bytes",), "msg": "Field required", "input": {}},
    ...                 {"type": "extra_forbidden", "loc": ("byts",), "msg": "Extra inputs are not permitted",
    ...                  "input": 1}], file="s.yaml").message()
    "s.yaml: unknown key 'byts'; did you mean 'bytes'?"
    >>> pydantic_error([{"type": "invalid_key", "loc": ("jobs", 0, "flows", 0, 0), "msg": "Keys should be strings",
    ...                  "input": 0}]).message()[:45]
    'jobs.0.flows.0: key 0 is not a name (keys are'
    """
    def at(x):
        return clean_loc(x["loc"], tags)

    # of a union's failed branches, the one that got furthest names the real problem
    # (sharing: {model: cm02, tcp_gamma: -4MiB} is about tcp_gamma, not the literal)
    e = max(errors, key=lambda x: len(at(x)))
    loc = at(e)
    field = ".".join(str(p) for p in loc) or None
    parent = ".".join(str(p) for p in loc[:-1]) or None
    if e["type"] == "missing" and loc and isinstance(loc[-1], int):
        # an entry of a fixed-length list ([plane, rack, rack]) is not a key
        return NetsteerError(f"{short_repr(e.get('input'))} has too few entries", file=file, field=parent)
    if e["type"] in ("missing", "extra_forbidden") and loc:
        # the keys that are unknown, and missing, in the same mapping
        here = [(x["type"], at(x)[-1]) for x in errors if at(x) and at(x)[:-1] == loc[:-1]]
        unknown = [k for t, k in here if t == "extra_forbidden"]
        missing = [k for t, k in here if t == "missing" and isinstance(k, str)]
        if unknown:
            return NetsteerError(unknown_key_reason(unknown, missing, keys_at(model, loc[:-1])), file=file,
                                 field=parent)
        return NetsteerError("required key is missing", file=file, field=field)
    if e["type"] == "invalid_key":
        # a key that is no word: in YAML's {a: 1,000} the comma split the value, and
        # 000 became a key of its own
        return NetsteerError(f"key {short_repr(e.get('input'))} is not a name (keys are words); inside {{...}} a "
                             "comma separates entries, so a number written with a thousands separator (1,000) "
                             "splits in two: write 1000 (or 1kB)", file=file, field=parent)
    if e["type"] in ("model_type", "model_attributes_type", "dict_type"):
        # pydantic says "a valid dictionary or instance of RoutingModel": name the
        # key and show what a mapping there looks like
        holder = next((p for p in reversed(loc) if isinstance(p, str)), None)
        what = loc[-1] if loc and isinstance(loc[-1], str) else f"each entry of {holder}" if holder else "this"
        # a model whose key shares a scenario key's name has its own example (unisonflow's jobs)
        examples = {**MAPPING_EXAMPLES, **getattr(model, "mapping_examples", {})}
        such = f" such as {examples[holder]}" if holder in examples else ""
        return NetsteerError(f"{what} must be a mapping{such}, got {short_repr(e.get('input'))}",
                             file=file, field=field)
    where, msg = key_loc(loc, plain_words(e))
    return NetsteerError(msg, file=file, field=".".join(str(p) for p in where) or None)


class NetsteerError(Exception):
    """Bad input: names where (file, field or line) and why.

    Parameters
    ----------
    reason : str
        What is wrong, in words a user can act on.
    file : str, optional
        The file that holds the bad input.
    field : str, optional
        The dotted field path (``jobs.0.flows.1.dst``) or ``line N``.
    """

    def __init__(self, reason: str, *, file: str | None = None, field: str | None = None):
        self.reason = _clip(reason, MAX_REASON)
        self.file = _clip(file, 4 * MAX_FIELD)
        self.field = _clip(field, MAX_FIELD)
        super().__init__(self.message())

    def message(self) -> str:
        where = ": ".join(p for p in (self.file, self.field) if p)
        return f"{where}: {self.reason}" if where else self.reason

    def located(self, file: str | None = None, prefix: str | None = None) -> "NetsteerError":
        """Return a copy that names ``file`` and prefixes the field path."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return type(self)(self.reason, file=self.file or file, field=field)

    def as_options(self, renamed: dict[str, str] | None = None) -> "NetsteerError":
        """Return a copy whose fields (comma-separated parameter names of a study) are
        named as a command's options: ``vlan_tag_time`` is ``--vlan-tag-time``, or the
        option ``renamed`` gives it.

        >>> NetsteerError("too slow", field="link_bps, ssd_rate").as_options({"link_bps": "--link-bandwidth"}).message()
        '--link-bandwidth, --ssd-rate: too slow'
        """
        renamed = renamed or {}
        fields = [f.strip() for f in (self.field or "").split(",")]
        return type(self)(self.reason, field=", ".join(renamed.get(f, "--" + f.replace("_", "-")) for f in fields))


class LimitError(NetsteerError):
    """Input that would need more memory than the limit (``--max-memory``) allows."""


class TopologyBuildError(NetsteerError, ValueError):
    """A bad value given to :class:`netsteer.TopologyBuilder`; ``field`` names the
    parameter. Also a ``ValueError``: the readers that build a topology catch those
    and name their own file and field."""


class RoutingError(NetsteerError):
    """A routing table set is incomplete, loops or deadlocks; names switch and destination."""
