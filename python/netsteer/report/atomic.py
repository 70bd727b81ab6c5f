"""Results are written atomically: a reader sees the old file or the new, never half.

Files get the usual permissions (0666 less the umask), whichever writer made them;
a temporary file is removed on any exit that does not complete the write. A path
that cannot be written (a directory, a missing or read-only parent) is a
:class:`~netsteer.errors.NetsteerError` naming it, raised before anything is written.
"""

from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import NetsteerError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def is_stream(path: str | Path) -> bool:
    """True for an existing output that is not a regular file: a device or a pipe
    (``/dev/stdout``, ``/dev/null``). Such a path is written into, never replaced: a
    rename over it would put a regular file where ``/dev/stdout`` was.

    >>> is_stream("/dev/null"), is_stream(__file__), is_stream("/no/such/file")
    (True, False, False)
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_writable(path: str | Path, *, field: str | None = None) -> Path:
    """Refuse an output file path that is empty, a directory, or in a directory that
    cannot be created."""
    raw = os.fspath(path)
    if not raw.strip():
        raise NetsteerError("the output path is empty; name a file", field=field)
    p = Path(raw)
    if p.is_dir():
        raise NetsteerError("is a directory; name a file to write", file=raw, field=field)
    if is_stream(p):
        if not os.access(p, os.W_OK):
            raise NetsteerError("cannot write to it: permission denied", file=raw, field=field)
        return p
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NetsteerError(f"cannot create its directory: {exc.strerror}", file=raw, field=field) from None
    if not os.access(p.parent, os.W_OK | os.X_OK):
        raise NetsteerError("cannot write in its directory: permission denied", file=raw, field=field)
    return p


@contextmanager
def atomic_file(path: str | Path, *, field: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``.

    For writers that want a file name (Parquet, PNG). The temporary file keeps
    ``path``'s suffix, so format detection by extension works.
    """
    path = check_writable(path, field=field)
    if is_stream(path):  # written straight into: a device or pipe has no "old file" to keep
        try:
            yield path
        except OSError as exc:  # /dev/full, a closed pipe
            raise NetsteerError(f"cannot write: {exc.strerror or exc}", file=str(path), field=field) from None
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    except OSError as exc:
        raise NetsteerError(f"cannot write: {exc.strerror}", file=str(path), field=field) from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", *, field: str | None = None) -> Iterator:
    """Open a temporary file beside ``path``; on success it replaces ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_write(d / "x.txt") as f:
    ...     _ = f.write("hello")
    >>> (d / "x.txt").read_text(), oct((d / "x.txt").stat().st_mode & 0o666) == oct(0o666 & ~_umask())
    ('hello', True)
    """
    with atomic_file(path, field=field) as tmp:
        with open(tmp, mode) as f:
            yield f
            f.flush()
            if stat.S_ISREG(os.fstat(f.fileno()).st_mode):  # a pipe cannot be synced
                os.fsync(f.fileno())


def atomic_path(path: str | Path) -> Path:
    """A temporary name beside ``path`` for writers that want a filename.

    Prefer :func:`atomic_file`, which also removes it when the write fails.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.tmp{os.getpid()}")
