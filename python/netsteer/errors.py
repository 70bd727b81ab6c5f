"""User-facing errors. The CLI turns each into one line and exit code 2."""


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
        self.reason = reason
        self.file = file
        self.field = field
        super().__init__(self.message())

    def message(self) -> str:
        where = ": ".join(p for p in (self.file, self.field) if p)
        return f"{where}: {self.reason}" if where else self.reason

    def located(self, file: str | None = None, prefix: str | None = None) -> "NetsteerError":
        """Return a copy that names ``file`` and prefixes the field path."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return NetsteerError(self.reason, file=self.file or file, field=field)


class RoutingError(NetsteerError):
    """A routing table set is incomplete, loops or deadlocks; names switch and destination."""
