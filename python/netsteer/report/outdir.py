"""Whole output directories: a command's ``--out DIR`` is all old or all new.

:func:`output_dir` checks ``DIR`` before any work (so an unwritable path is refused
at once, not after a long run), then yields a temporary directory beside it, named
``.DIR.tmp-<pid>-<random>``. The command writes every file there; when it is done,
the temporary directory takes ``DIR``'s place in one atomic step (Linux
``renameat2(RENAME_EXCHANGE)``; elsewhere two renames) and the old content is
removed. On any exit before that (an error, Ctrl-C, SIGTERM) the temporary
directory is removed and ``DIR`` is untouched. A signal that arrives while the
exchange is being prepared wins: ``DIR`` stays old. One that arrives after the
exchange finds the result written; :data:`COMMITTED` lists what was, so the command
line can say so when it reports the signal. After a SIGKILL, ``DIR`` is still
whole; the stale temporary directory is removed by the next run into ``DIR``.

``DIR`` is replaced only if it is empty or holds a previous result: a
``result.json`` whose ``files`` list names everything else in it. Anything else
(``--out .``, ``--out ~``) is refused rather than deleted.

Files are created with the usual permissions (0666 less the umask), the directory
with 0777 less the umask.

Examples
--------
>>> import json, pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp()) / "out"
>>> with output_dir(d) as tmp:
...     _ = (tmp / "a.txt").write_text("new")
...     _ = (tmp / "result.json").write_text(json.dumps({"files": ["result.json", "a.txt"]}))
>>> sorted(p.name for p in d.iterdir())
['a.txt', 'result.json']
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import secrets
import shutil
import signal
import threading
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from ..errors import NetsteerError

MANIFEST = "result.json"
_TMP_TAG = ".tmp-"

#: Output directories this process has replaced whole (the command line clears it per command).
COMMITTED: list[Path] = []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_out_path(path: str | os.PathLike, *, field: str = "--out",
                   foreign: Optional[Callable[[Path], list[str]]] = None) -> Path:
    """Refuse an output directory that cannot be one: empty, an existing file, a
    directory holding other things, a parent that does not exist and cannot be made.

    ``foreign(d)`` lists the entries of an existing directory ``d`` that are not the
    command's own (default: those a previous result's ``result.json`` does not list;
    ``netsteer sweep`` gives its own rule, :func:`netsteer.sweep.runner.foreign_entries`)."""
    raw = os.fspath(path)
    if not raw.strip():
        raise NetsteerError("the output directory is empty; name a directory", field=field)
    p = Path(os.path.abspath(raw))
    cwd = Path(os.getcwd())
    if p == cwd or p in cwd.parents:
        raise NetsteerError("is the current directory or holds it (an empty --out is the current "
                            "directory); name a new directory", file=raw, field=field)
    if p.exists() and not p.is_dir():
        raise NetsteerError("exists and is not a directory", file=raw, field=field)
    _parent_not_a_file(p, raw, field)
    if p.is_dir():
        others = (foreign or _foreign_entries)(p)
        if others:
            raise NetsteerError(
                f"the directory holds {len(others)} entries that are not a netsteer result "
                f"(such as {others[0]!r}); name a new or empty directory, so nothing else is replaced",
                file=raw, field=field,
            )
    return p


def _parent_not_a_file(p: Path, raw: str, field: str) -> None:
    """Refuse a path below a regular file (``afile/sub``): no directory can be made there,
    and ``mkdir`` would only say "File exists" or "Not a directory"."""
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NetsteerError(f"cannot create the directory: {parent} is a file, not a directory",
                                    file=raw, field=field)
            return


def _foreign_entries(d: Path) -> list[str]:
    """Entries of ``d`` a previous result does not account for (stale temporary
    directories of this writer excepted)."""
    try:
        names = sorted(os.listdir(d))
    except OSError as exc:
        raise NetsteerError(f"cannot list the directory: {exc.strerror}", file=str(d), field="--out") from None
    if not names:
        return []
    listed: set[str] = set()
    if MANIFEST in names:
        try:
            with open(d / MANIFEST, encoding="utf-8") as f:
                files = json.load(f).get("files", [])
            listed = {str(x) for x in files if isinstance(x, str)}
        except (OSError, ValueError, AttributeError):
            listed = set()
    listed.add(MANIFEST)
    return [n for n in names if n not in listed]


@contextlib.contextmanager
def output_dir(path: str | os.PathLike, *, field: str = "--out") -> Iterator[Path]:
    """Yield a temporary directory; on success it replaces ``path`` as a whole."""
    final = check_out_path(path, field=field)
    parent = final.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NetsteerError(f"cannot create the directory: {exc.strerror}", file=str(final), field=field) from None
    _remove_stale(parent, final.name)
    tmp = parent / f".{final.name}{_TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        # made with signals held, inside the try: no moment where it exists unowned
        with _signals_blocked():
            try:
                tmp.mkdir(mode=0o700)
            except OSError as exc:
                raise NetsteerError(f"cannot write here: {exc.strerror}", file=str(final), field=field) from None
        yield tmp
        _commit(tmp, final)
    except BaseException:
        with _signals_blocked():
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def _commit(tmp: Path, final: Path) -> None:
    """Put ``tmp`` in ``final``'s place in one step; signals wait until it is done.

    A SIGINT or SIGTERM already pending once the signals are held was sent before the
    result was in place: it is let through first (as the block ends), and a handler
    that raises stops the commit, so ``DIR`` stays old. A handler that returns lets
    the commit go on."""
    while True:
        with _signals_blocked() as held:
            # one the caller itself holds would not be let through: it cannot stop us
            if not held.interrupted():
                _replace(tmp, final)
                return


def _replace(tmp: Path, final: Path) -> None:
    mode = 0o777 & ~_umask()
    os.chmod(tmp, mode)
    for entry in tmp.iterdir():
        if entry.is_file():
            os.chmod(entry, 0o666 & ~_umask())
    _fsync_dir(tmp)
    # re-check: the directory may have changed while the command ran
    check_out_path(final)
    if final.is_dir():
        if _exchange(tmp, final):
            shutil.rmtree(tmp, ignore_errors=True)  # now the old content
        else:
            old = final.with_name(f".{final.name}{_TMP_TAG}{os.getpid()}-old-{secrets.token_hex(4)}")
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, final)
    COMMITTED.append(final)
    _fsync_dir(final.parent)


def _pending() -> set:
    """SIGINT and SIGTERM sent and held, not yet delivered."""
    try:
        return signal.sigpending() & set(_SIGS)
    except (AttributeError, OSError):
        return set()


def _remove_stale(parent: Path, name: str) -> None:
    """Remove temporary directories that dead processes left for ``name``."""
    prefix = f".{name}{_TMP_TAG}"
    try:
        entries = [e for e in os.listdir(parent) if e.startswith(prefix)]
    except OSError:
        return
    for e in entries:
        pid = e[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(parent / e, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_RENAME_EXCHANGE = 2
_renameat2 = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories atomically (Linux renameat2); False where unsupported."""
    global _renameat2
    if _renameat2 is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _renameat2 = libc.renameat2
            _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        except (OSError, AttributeError):
            _renameat2 = False
    if not _renameat2:
        return False
    at_fdcwd = -100
    rc = _renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class _Held:
    """What :func:`_signals_blocked` held back: signals the process had blocked before
    (``before``) and SIGINT/SIGTERM that arrived inside the block (``caught``)."""

    def __init__(self, before: set) -> None:
        self.before = before
        self.caught: list[int] = []

    def interrupted(self) -> bool:
        """A SIGINT or SIGTERM is waiting that the end of the block will deliver."""
        # pending first: a signal another thread takes meanwhile may be in caught by then
        pending = _pending() - self.before
        return bool(pending) or bool(self.caught)


_SIGS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _signals_blocked():
    """Hold SIGINT and SIGTERM until the block ends, then deliver them; yields a
    :class:`_Held`.

    Blocking them is not enough in a process with other threads: the kernel hands a
    process-wide signal to a thread that does not block it, and Python then runs the
    handler in the main thread anyway. So in the main thread the handlers are swapped
    too, for ones that only note the signal, and the noted signals are raised again
    once the caller's handlers are back."""
    try:
        # the mask as it is, read first: a signal Python has taken but not yet handled
        # is raised by the call that blocks (after it blocked), and the mask must go back
        old = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    except (AttributeError, OSError, ValueError):
        old = None
    held = _Held(set(old) if old is not None else set())
    handlers = _swap_handlers(held)
    try:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_BLOCK, set(_SIGS))
        yield held
    finally:
        try:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)  # held ones reach the noting handlers
        finally:
            for sig, h in handlers.items():
                signal.signal(sig, h)
            for sig in dict.fromkeys(held.caught):  # once each, as the kernel would
                signal.raise_signal(sig)


def _swap_handlers(held: _Held) -> dict:
    """In the main thread, put handlers that note SIGINT/SIGTERM in ``held.caught``;
    returns the ones they replace (none elsewhere, or where Python did not set one)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    swapped = {}
    for sig in _SIGS:
        h = signal.getsignal(sig)
        if h is None or h == signal.SIG_IGN:
            continue  # not set from Python (cannot be put back), or ignored anyway
        swapped[sig] = signal.signal(sig, lambda signum, frame: held.caught.append(signum))
    return swapped


def write_result_dir(path: str | os.PathLike, write: Callable[[Path], Optional[Iterable[str]]], *,
                     result: Optional[dict] = None, field: str = "--out") -> list[str]:
    """Write a command's result directory as a whole (:func:`output_dir`), with the
    manifest that lets the next run into ``path`` replace it.

    Parameters
    ----------
    path
        The directory (``--out DIR``).
    write
        ``write(tmp)`` writes the files into ``tmp``; it may return their names, in
        the order the manifest should list them.
    result
        Written as ``result.json`` with its ``files`` set (in place); without it,
        ``result.json`` holds the ``files`` list alone.
    field
        The option named in errors.

    Returns
    -------
    list of str
        The names the manifest lists, ``result.json`` first.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()) / "out"
    >>> def write(tmp):
    ...     _ = (tmp / "a.txt").write_text("new")
    >>> _ = write_result_dir(d, write)
    >>> write_result_dir(d, write)  # the second run replaces the first
    ['result.json', 'a.txt']
    """
    with output_dir(path, field=field) as tmp:
        named = [str(n) for n in (write(tmp) or ())]
        # everything written is listed, named or not: an unlisted file would make the
        # next run refuse the directory as foreign
        rest = sorted(n for n in os.listdir(tmp) if n not in named and n != MANIFEST)
        files = [MANIFEST, *(n for n in named if n != MANIFEST), *rest]
        manifest = {"files": files} if result is None else result
        manifest["files"] = files
        with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2)
    return files


RUN_FILES = ["result.json", "counters.parquet", "link_throughput.png", "job_completion.png"]


def write_run_dir(out: str | os.PathLike, built, res, result: dict) -> dict:
    """Write a run's ``--out`` directory as a whole: result.json, counters.parquet and
    the two plots; ``result["files"]`` lists them. Returns ``result``."""
    from .counters import write_counters
    from .figures import run_end_s
    from .plots import plot_job_completion, plot_link_throughput

    def write(tmp: Path) -> list[str]:
        write_counters(tmp / "counters.parquet", built.topology, res.sample_times_ns, res.channel_bytes)
        plot_link_throughput(tmp / "link_throughput.png", built.topology, res.sample_times_ns,
                             res.channel_bytes, title=built.name)
        plot_job_completion(tmp / "job_completion.png", result["jobs"], title=built.name,
                            end_s=run_end_s(result))
        if getattr(res, "packet", None) is None:
            return RUN_FILES[1:]
        from .packet import write_packet_files

        return RUN_FILES[1:] + write_packet_files(tmp, built, res)

    write_result_dir(out, write, result=result)
    return result
