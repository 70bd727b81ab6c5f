"""User-facing errors. The CLI turns each into one line and exit code 2."""

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
