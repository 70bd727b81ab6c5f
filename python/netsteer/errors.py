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


def unknown_key_reason(unknown, missing=()) -> str:
    """The reason for unknown keys found where required keys are ``missing``: a
    misspelt key is both, and the message names the key the user wrote (with the
    missing key it is close to), not only the one the schema wants.

    >>> unknown_key_reason(["byts"], ["bytes"]), unknown_key_reason(["colour"], ["bytes"])
    ("unknown key 'byts'; did you mean 'bytes'?", "unknown key 'colour'; required key 'bytes' is missing")
    """
    for k in unknown:
        hint = did_you_mean(k, missing)
        if hint:
            return f"unknown key {k!r}{hint}"
    return f"unknown key {unknown[0]!r}" + (f"; required key {missing[0]!r} is missing" if missing else "")


#: Names pydantic puts in an error's location for the branches of a union
#: (``sharing.SharingModel``, ``placement.literal['linear','random']``,
#: ``placement.list[int].1``): not fields a user wrote.
_UNION_TAG = re.compile(r"^(function-|literal\[|json-or-python|lax-or-strict|constrained-)|^[A-Z]\w*Model$"
                        r"|^(int|str|float|bool|list|dict|tuple|none)(\[.*\])?$")

#: A value that must be a mapping, by the key that holds it: an example the message shows.
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


def pydantic_error(errors, *, file: str | None = None, tags=()) -> "NetsteerError":
    """The errors of a pydantic ``ValidationError`` (``exc.errors()``) as one
    :class:`NetsteerError` in the house words: the field path without pydantic's
    union branches, ``unknown key 'x'`` at the mapping that holds it, ``must be a
    mapping`` for a value that is not one, no model class names.

    >>> pydantic_error([{"type": "missing", "loc": ("bytes",), "msg": "Field required", "input": {}},
    ...                 {"type": "extra_forbidden", "loc": ("byts",), "msg": "Extra inputs are not permitted",
    ...                  "input": 1}], file="s.yaml").message()
    "s.yaml: unknown key 'byts'; did you mean 'bytes'?"
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
            return NetsteerError(unknown_key_reason(unknown, missing), file=file, field=parent)
        return NetsteerError("required key is missing", file=file, field=field)
    if e["type"] in ("model_type", "model_attributes_type", "dict_type"):
        # pydantic says "a valid dictionary or instance of RoutingModel": name the
        # key and show what a mapping there looks like
        holder = next((p for p in reversed(loc) if isinstance(p, str)), None)
        what = loc[-1] if loc and isinstance(loc[-1], str) else f"each entry of {holder}" if holder else "this"
        such = f" such as {MAPPING_EXAMPLES[holder]}" if holder in MAPPING_EXAMPLES else ""
        return NetsteerError(f"{what} must be a mapping{such}, got {short_repr(e.get('input'))}",
                             file=file, field=field)
    where, msg = key_loc(loc, e["msg"].removeprefix("Value error, "))
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


class LimitError(NetsteerError):
    """Input that would need more memory than the limit (``--max-memory``) allows."""


class RoutingError(NetsteerError):
    """A routing table set is incomplete, loops or deadlocks; names switch and destination."""
