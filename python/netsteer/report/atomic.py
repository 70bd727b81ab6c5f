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
    cannot be created or written in. Nothing is created: a missing directory is made
    when the file is written (the nearest existing one must be writable)."""
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
    parent = p.parent
    while not parent.exists():
        if parent.is_symlink():  # a dangling link: mkdir would fail on it
            raise NetsteerError(f"cannot create its directory: {parent} is a dangling link", file=raw, field=field)
        parent = parent.parent
    if not parent.is_dir():
        raise NetsteerError(f"cannot create its directory: {parent} is not a directory", file=raw, field=field)
    if not os.access(parent, os.W_OK | os.X_OK):
        what = "write in its directory" if parent == p.parent else f"create its directory in {parent}"
        raise NetsteerError(f"cannot {what}: permission denied", file=raw, field=field)
    return p


def _make_parent(path: Path, field: str | None) -> list[Path]:
    """Create ``path``'s missing directories; the ones made, outermost first."""
    made = []
    d = path.parent
    while not d.exists():
        made.append(d)
        d = d.parent
    made.reverse()
    try:
        for d in made:
            d.mkdir()
    except OSError as exc:
        _remove_dirs(made)
        raise NetsteerError(f"cannot create its directory: {exc.strerror}", file=str(path), field=field) from None
    return made


def _remove_dirs(made: list[Path]) -> None:
    for d in reversed(made):
        try:
            d.rmdir()
        except OSError:
            pass


def check_distinct(items) -> None:
    """Refuse two outputs that name one file: ``items`` are ``(path, field)``, ``None``
    paths skipped. The second would silently replace the first; the error names both
    options. A device or pipe (``/dev/null``) may take several outputs.

    >>> check_distinct([("a.dump", "--out"), (None, "--qos-out"), ("/dev/null", "--x"), ("/dev/null", "--y")])
    >>> check_distinct([("a.dump", "--out"), ("./a.dump", "--sl-out")])
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: ./a.dump: --sl-out: is the file --out writes too; give each output its own file
    """
    seen: dict[str, str] = {}
    for path, field in items:
        if path is None or is_stream(path):
            continue
        key = os.path.realpath(os.fspath(path))
        if key in seen:
            raise NetsteerError(f"is the file {seen[key]} writes too; give each output its own file",
                                file=os.fspath(path), field=field)
        seen[key] = field


def write_all(items, mode: str = "w") -> list[str]:
    """Write several outputs all or none: ``items`` are ``(path, field, content)``.

    Every path is checked first (:func:`check_distinct`, :func:`check_writable`), then every content goes to a
    temporary file beside its path (a device or pipe: to one in the temporary
    directory), and only when all are written do they replace their paths. A path
    refused or a write failing leaves every output as it was (directories made for
    it removed again). Returns the paths written.
    """
    check_distinct([(p, f) for p, f, _ in items])
    items = [(check_writable(p, field=f), f, c) for p, f, c in items]
    temps: list[tuple[Path, Path, str | None, bool]] = []  # (tmp, path, field, stream)
    made: list[Path] = []
    try:
        for path, field, content in items:
            stream = is_stream(path)
            if not stream:
                made += _make_parent(path, field)
            try:
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix,
                                           dir=None if stream else path.parent)
            except OSError as exc:
                raise NetsteerError(f"cannot write: {exc.strerror}", file=str(path), field=field) from None
            temps.append((Path(tmp), path, field, stream))
            try:
                with os.fdopen(fd, mode) as f:
                    f.write(content)
                    f.flush()
                    os.fsync(f.fileno())
                if not stream:
                    os.chmod(tmp, 0o666 & ~_umask())
            except OSError as exc:
                raise NetsteerError(f"cannot write: {exc.strerror or exc}", file=str(path), field=field) from None
        for tmp, path, field, stream in temps:
            if stream:
                try:
                    with open(path, "ab" if "b" in mode else "a") as out, open(tmp, "rb" if "b" in mode else "r") as f:
                        out.write(f.read())
                except OSError as exc:
                    raise NetsteerError(f"cannot write: {exc.strerror or exc}", file=str(path), field=field) from None
                os.unlink(tmp)
            else:
                os.replace(tmp, path)
    except BaseException:
        for tmp, *_ in temps:
            if tmp.exists():
                tmp.unlink()
        _remove_dirs(made)
        raise
    return [str(p) for p, _, _ in items]


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
    made = _make_parent(path, field)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    except OSError as exc:
        _remove_dirs(made)
        raise NetsteerError(f"cannot write: {exc.strerror}", file=str(path), field=field) from None
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        _remove_dirs(made)
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
