"""Consoles for command output that stays whole when piped or run in CI.

On a terminal rich fits tables to the window. Anywhere else (a file, a pipe,
CI logs) it would assume 80 columns and cut column titles and cells to ``…``;
there the console is made wide enough for any table, so every name is printed
in full.
"""

from __future__ import annotations

from rich.console import Console

#: Width used off a terminal: wider than any table the commands print.
PLAIN_WIDTH = 1000


def output_console(stderr: bool = False) -> Console:
    """A console for stdout (or stderr): the terminal's width, else :data:`PLAIN_WIDTH`.

    >>> import io
    >>> from rich.table import Table
    >>> c = output_console()
    >>> c.file = io.StringIO()
    >>> t = Table()
    >>> for name in ("a long column title", "another long column title") * 3:
    ...     t.add_column(name)
    >>> c.print(t)
    >>> "another long column title" in c.file.getvalue()
    True
    """
    c = Console(stderr=stderr)
    if not c.is_terminal:
        c = Console(stderr=stderr, width=PLAIN_WIDTH)
    return c
