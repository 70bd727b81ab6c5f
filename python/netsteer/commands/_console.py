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
#: Width of ``--help`` and usage errors off a terminal: their panels fill the console's
#: whole width, so at :data:`PLAIN_WIDTH` every line would be padded to 1000 columns.
HELP_WIDTH = 100


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


def plain_width_for_all() -> bool:
    """Off a terminal, give every rich console of this process :data:`PLAIN_WIDTH`
    (and typer's help :data:`HELP_WIDTH`).

    Consoles made with ``Console()`` (a command that does not use
    :func:`output_console`) read ``COLUMNS`` whenever they measure themselves; with no
    terminal on stdin, stdout or stderr they would otherwise assume 80. A ``COLUMNS``
    the user set is kept. Returns whether it set it; the entry point calls it once.

    >>> import os
    >>> old = os.environ.get("COLUMNS")
    >>> os.environ["COLUMNS"] = "123"
    >>> plain_width_for_all(), os.environ["COLUMNS"]
    (False, '123')
    >>> _ = os.environ.pop("COLUMNS") if old is None else os.environ.update(COLUMNS=old)
    """
    import os

    if "COLUMNS" in os.environ:
        return False
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                return False  # rich measures that terminal
        except OSError:
            pass
    os.environ["COLUMNS"] = str(PLAIN_WIDTH)
    # typer reads TERMINAL_WIDTH when it loads its help renderer (at the first --help)
    os.environ.setdefault("TERMINAL_WIDTH", str(HELP_WIDTH))
    return True
