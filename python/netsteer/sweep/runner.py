"""Running a sweep on Dask distributed: a local cluster by default, or the cluster
behind a scheduler address.

Dask schedules; this module only submits the points not yet recorded, records each
result as it arrives, and reports progress. When a worker dies, the scheduler runs
its points again elsewhere; a point whose workers kept dying is recorded as ``lost``
and runs again on the next invocation. A point whose task the scheduler dropped with
the dead worker (its future ``cancelled``, not by us, or ``lost``) is submitted again
at once, up to :data:`RESUBMIT` times.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import time
import uuid
from concurrent.futures import CancelledError
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import NetsteerError
from ..report.atomic import atomic_write
from .point import run_point
from .results import RESULTS, ResultStore
from .spec import Sweep

MANIFEST = "sweep.json"
LOCK = ".sweep.lock"
POLL_S = 0.5  # how often the running count is refreshed while no point finishes
WINDOW = 256  # points submitted ahead at least (more on clusters with more threads)
WINDOW_BYTES = 256 * 2**20  # ... unless their base scenarios in flight would pass this
RESUBMIT = 3  # times a point dropped with a dead worker is submitted again in one sweep


@dataclass
class Progress:
    """Counts over all points of the sweep (recorded earlier ones included)."""

    total: int
    done: int = 0
    running: int = 0
    failed: int = 0


@contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None) -> Iterator:
    """A Dask client: to ``scheduler`` if given, else to a new local cluster of
    ``workers`` single-threaded worker processes (one per core by default)."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise NetsteerError(f"cannot reach the Dask scheduler {scheduler}: {exc}", field="--scheduler") from None
        with client:
            yield client
        return
    from ..limits import check_workers, default_workers

    if workers is not None:
        check_workers(workers)  # --workers 10**20 would start processes until the machine gives out
    n = workers or default_workers(os.cpu_count() or 1)
    # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536 to hand memory back early;
    # a point allocates and frees large arrays all along, which that makes ~17% slower
    # (None unsets it). Processes, not threads: a point holds the GIL while it builds its
    # scenario; any free port: two sweeps (or other Dask users) must not collide on 8787
    with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}), \
            LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                         silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client


def _check_manifest(sweep: Sweep, out: Path, store: ResultStore) -> None:
    """Refuse to mix results of two different base scenarios in one folder: the base
    file, or a file it names (:func:`netsteer.sweep.spec.referenced_files`), changed."""
    path = out / MANIFEST
    if path.exists() and store.rows:
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError):
            old = {}
        if not isinstance(old, dict):
            old = {}
        if old.get("base_sha256") not in (None, sweep.base_sha256):
            raise NetsteerError(
                f"the base scenario {sweep.base_file} changed since these results were recorded; "
                "give another --out (or remove the folder) to start afresh",
                file=str(out / RESULTS),
            )
        # the files the base scenario names (topology.path, partitions): a point's
        # result depends on them as much as on the base file itself. A manifest from
        # before they were recorded says nothing about them.
        before = old.get("files_sha256") if isinstance(old.get("files_sha256"), dict) else {}
        for name, digest in before.items():
            now = sweep.files_sha256.get(name)
            # (a file missing then gave only failed points: nothing to mix with)
            if digest and now is not None and now != digest:
                what = "is gone" if not now else "changed"
                raise NetsteerError(
                    f"{name}, which the base scenario {sweep.base_file} (or a point) refers to, {what} since these "
                    "results were recorded; give another --out (or remove the folder) to start afresh",
                    file=str(out / RESULTS),
                )
        files = {**before, **sweep.files_sha256}  # files of points not in this sweep file stay recorded
        sweeps = [s for s in old.get("sweeps") or [] if isinstance(s, dict)]
        if not sweeps and old.get("sweep_file"):  # a manifest from before sweeps were listed
            sweeps = [{"sweep_file": old["sweep_file"], "name": Path(str(old["sweep_file"])).stem,
                       "params": old.get("params") or [], "points": old.get("points")}]
    else:
        files = dict(sweep.files_sha256)
        sweeps = []
    # every sweep file run into the folder, the latest last: the results hold all their points
    sweeps = [s for s in sweeps if s.get("sweep_file") != sweep.file]
    sweeps.append({"sweep_file": sweep.file, "name": sweep.name, "params": sweep.params, "points": len(sweep.points)})
    params = list(dict.fromkeys([*_param_columns(store), *sweep.params]))
    with atomic_write(path) as f:
        json.dump({"sweep_file": sweep.file, "base": sweep.base_file, "base_sha256": sweep.base_sha256,
                   "files_sha256": files, "params": params, "points": len(sweep.points), "sweeps": sweeps},
                  f, indent=2)


def _param_columns(store: ResultStore) -> list[str]:
    """The parameter columns recorded (``seed`` included)."""
    from .results import FIXED

    return [c for c in getattr(store, "columns", ()) if c not in FIXED and not c.startswith("job.")]


def _identities(sweep: Sweep, store: ResultStore) -> dict[str, str]:
    """Each recorded row's point as :attr:`Point.key` gives it now (the scenario it
    ran), to the key it is recorded under: a folder written by an earlier version,
    or by a sweep file that set a path to the base's own value, is matched by scenario."""
    from .spec import canonical_key

    return {canonical_key(sweep.base_raw, k): k for k in store.rows}


def _fill_base_values(sweep: Sweep, store: ResultStore) -> None:
    """Give every recorded row a value in every parameter column: a path a row's point
    leaves alone (the column is new, from a grid extended by a path, or from another
    sweep file over the same base) shows the base scenario's value, as for the
    points of the sweep that added it."""
    from .paths import get_path
    from .spec import column_value

    params = [c for c in dict.fromkeys([*_param_columns(store), *sweep.params]) if c != "seed"]
    if not store.rows or not params:
        return
    base = {c: column_value(get_path(sweep.base_raw, c)) for c in params}
    changed = False
    for key, row in store.rows.items():
        missing = [c for c in params if row.get(c) is None and base[c] is not None]
        if not missing:
            continue
        try:
            paths = list(json.loads(key))
        except (ValueError, TypeError):
            continue
        for c in missing:  # a path the point set (or one above or under it) keeps its value
            if not any(c == k or c.startswith(k + ".") or k.startswith(c + ".") for k in paths):
                row[c] = base[c]
                changed = True
    for c in params:
        if c not in store.columns:
            store.columns.append(c)
            changed = True
    if changed:
        store.unwritten += 1


def _outcome(fut) -> dict:
    """A finished future's result as :func:`run_point` returns it; Dask's own
    failures (a worker killed too often, a cancelled task) become ``lost``."""
    from distributed import KilledWorker

    if fut.status == "finished":
        return fut.result()
    exc = fut.exception() if fut.status == "error" else None
    if exc is None or isinstance(exc, KilledWorker):
        return {"status": "lost", "error": f"lost: {exc or 'cancelled'}"}
    return {"status": "failed", "error": f"internal error: {type(exc).__name__}: {exc}"}


def _running(client, keys: set[str]) -> int:
    """Points executing now: the scheduler's "processing" also counts a few queued on
    each worker ahead of time, so a worker counts at most one per thread."""
    try:
        threads = client.nthreads()
        return sum(min(sum(k in keys for k in ks), threads.get(w, 1)) for w, ks in client.processing().items())
    except (OSError, TimeoutError):
        return 0


#: a ``sweep report`` plot (``<metric>_vs_<parameter>.png``), and the temporary file
#: of one of the sweep's files that a killed writer left (``.results.parquet.XXXX.parquet``)
_OWN_PLOT = re.compile(r"^[^./][^/]*_vs_[^/]+\.png$")
_OWN_TEMP = re.compile(r"^\.(results\.parquet|sweep\.json|[^/]+_vs_[^/]+\.png)\..+")


def foreign_entries(d: Path) -> list[str]:
    """The entries of ``d`` that a sweep's output directory does not hold: a sweep
    writes ``results.parquet``, ``sweep.json`` and ``.sweep.lock``, and ``sweep
    report`` its plots; anything else (a user's files, another command's result) is
    foreign. Plots count as the sweep's only beside its ``sweep.json`` or results.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "results.parquet").write_bytes(b""); _ = (d / "makespan_s_vs_a.b.png").write_bytes(b"")
    >>> foreign_entries(d)
    []
    >>> _ = (d / "notes.txt").write_text("mine")
    >>> foreign_entries(d)
    ['notes.txt']
    """
    from ..report.outdir import _foreign_entries

    _foreign_entries(d)  # refuses an unreadable directory as the other commands do
    names = sorted(os.listdir(d))
    ours = {RESULTS, MANIFEST, LOCK}
    sweep_dir = bool(ours & set(names))
    return [n for n in names
            if n not in ours and not (sweep_dir and (_OWN_PLOT.match(n) or _OWN_TEMP.match(n)))]


def check_out(out: str | Path) -> Path:
    """The output-directory rule of ``run``/``reproduce`` (:func:`netsteer.report.outdir.check_out_path`)
    for a sweep: ``out`` must be new, empty or a sweep's own output directory
    (which the sweep resumes); the current directory (``--out .``) or one above it,
    a file, or a directory holding anything else is refused (exit 2)."""
    from ..report.outdir import check_out_path

    return check_out_path(out, field="--out", foreign=foreign_entries)


def plan(sweep: Sweep, out: str | Path, *, retry_failed: bool = False) -> dict:
    """What a run into ``out`` would do, without running or writing anything:
    ``{"sweep", "base", "params", "points", "recorded", "to_run"}``."""
    check_out(out)
    path = Path(out) / RESULTS
    skip: set[str] = set()
    if path.exists():
        store = ResultStore(path)
        finished = store.finished(retry_failed)
        skip = {c for c, k in _identities(sweep, store).items() if k in finished}
    to_run = sum(p.key not in skip for p in sweep.points)
    return {"sweep": sweep.name, "base": sweep.base_file, "params": sweep.params, "points": len(sweep.points),
            "recorded": len(sweep.points) - to_run, "to_run": to_run}


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    client=None,
    retry_failed: bool = False,
    progress: Callable[[Progress], None] | None = None,
) -> dict:
    """Run every point of ``sweep`` not yet recorded in ``out/results.parquet``.

    Parameters
    ----------
    sweep : Sweep
        From :func:`netsteer.sweep.load_sweep`.
    out : str or Path
        Folder of ``results.parquet`` and ``sweep.json``.
    scheduler : str, optional
        A Dask scheduler's address; default: a local cluster.
    workers : int, optional
        Worker processes of the local cluster (default: one per core).
    client : distributed.Client, optional
        Use this client instead (tests, notebooks); ``scheduler`` and ``workers`` are ignored.
    retry_failed : bool
        Run points recorded as ``failed`` again (``lost`` ones always run again).
    progress : callable, optional
        Called with a :class:`Progress` whenever a count changes.

    Returns
    -------
    dict
        The summary ``netsteer sweep --json`` prints.
    """
    check_out(out)
    out = Path(out)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NetsteerError(f"cannot make the results folder: {exc.strerror}", file=str(out), field="--out") from None
    try:
        return _run_into(sweep, out, scheduler, workers, client, retry_failed, progress)
    except BaseException:
        if created:  # refused (a scheduler out of reach) or interrupted before any point was recorded
            _remove_if_no_results(out)
        raise


def _remove_if_no_results(out: Path) -> None:
    if (out / RESULTS).exists():
        return
    for name in (MANIFEST, LOCK):
        (out / name).unlink(missing_ok=True)
    try:
        out.rmdir()
    except OSError:  # something else appeared in it: not ours to remove
        pass


def _run_into(sweep, out, scheduler, workers, client, retry_failed, progress) -> dict:
    with _only_writer(out):
        store = ResultStore(out / RESULTS)
        _check_manifest(sweep, out, store)
        _fill_base_values(sweep, store)
        ident = _identities(sweep, store)
        finished = store.finished(retry_failed)
        skip = {c for c, k in ident.items() if k in finished}
        todo = [p for p in sweep.points if p.key not in skip]
        prog = Progress(total=len(sweep.points), done=len(sweep.points) - len(todo))
        prog.failed = sum(1 for p in sweep.points if p.key in skip and store.rows[ident[p.key]]["status"] == "failed")
        t0 = time.perf_counter()
        n_workers = 0
        if progress is not None:
            progress(prog)  # the bar shows the whole sweep while a cluster starts
        if todo:
            ctx = nullcontext(client) if client is not None else dask_client(scheduler, workers)
            with ctx as cl:
                n_workers = _submit_and_record(cl, sweep, todo, store, prog, progress, ident)
        if store.unwritten:  # base values filled in with nothing left to run
            store.write()
    keys = [p.key if p.key in store.rows else ident.get(p.key) for p in sweep.points]
    statuses = [store.rows[k]["status"] for k in keys if k in store.rows]
    return {
        "sweep": sweep.name,
        "out": str(out),
        "results": str(out / RESULTS),
        "points": len(sweep.points),
        "skipped": len(sweep.points) - len(todo),
        "ran": len(todo),
        **{s: statuses.count(s) for s in ("done", "stalled", "failed", "lost")},
        "workers": n_workers,
        "scheduler": scheduler or ("given client" if client is not None else "local"),
        "wall_s": time.perf_counter() - t0,
    }


@contextmanager
def _only_writer(out: Path) -> Iterator:
    """Hold ``out``'s lock: two sweeps rewriting one results file would drop each other's rows."""
    import fcntl

    with open(out / LOCK, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise NetsteerError("another sweep is writing its results here; wait for it, or give another --out",
                                file=str(out)) from None
        yield  # the lock goes with the file's closing, and with the process


def _submit_and_record(client, sweep, todo, store, prog, progress, ident=None) -> int:
    from distributed import wait

    from ..limits import current

    token = uuid.uuid4().hex[:8]
    max_memory = current().max_memory
    info = client.scheduler_info().get("workers", {})
    n_workers = len(info)
    # points in flight at most: every thread busy with one queued behind it, never the whole
    # sweep (a million-point grid would be a million tasks held by the scheduler)
    threads = sum(w.get("nthreads", 1) for w in info.values())
    window = max(WINDOW, 2 * threads)
    # each task carries the base scenario: a large one (a million explicit flows) gets a
    # smaller window, so that what is in flight stays near WINDOW_BYTES (yet every thread busy)
    import pickle

    per_task = len(pickle.dumps(sweep.base_raw, protocol=pickle.HIGHEST_PROTOCOL))
    window = max(min(window, WINDOW_BYTES // max(per_task, 1)), 2 * threads, 1)
    queue = iter(enumerate(todo))
    # the parameter columns of other sweeps into the folder: the base's value (the point leaves them alone)
    from .paths import get_path
    from .spec import column_value

    others = {c: column_value(get_path(sweep.base_raw, c)) for c in _param_columns(store)
              if c not in sweep.params and c != "seed"}
    futs: dict = {}
    pending: set = set()

    tries: dict[int, int] = {}  # point index -> submissions so far

    def submit_one(i: int, p) -> None:
        tries[i] = tries.get(i, 0) + 1
        key = f"netsteer-point-{i}-{token}" + (f"-{tries[i]}" if tries[i] > 1 else "")
        f = client.submit(run_point, sweep.base_raw, p.overrides, p.seed, sweep.base_file, max_memory,
                          key=key, pure=False)
        futs[f] = (i, p)
        pending.add(f)

    def submit(k: int) -> None:
        for i, p in itertools.islice(queue, k):
            submit_one(i, p)

    submit(window)
    try:
        while pending:
            try:
                done, still = wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done, still = set(), pending
            except CancelledError:  # wait refuses cancelled futures: they are the ones done
                done = {f for f in pending if f.status == "cancelled"}
                still = pending - done
            pending.intersection_update(still)
            ended = 0
            for f in done:
                i, p = futs.pop(f)  # dropping the future frees its result on the worker
                if f.status not in ("finished", "error") and tries[i] <= RESUBMIT:
                    # dropped with a worker that died: cancelled (we cancel only in the
                    # finally below) or its result lost with it
                    submit_one(i, p)
                    continue
                ended += 1
                res = _outcome(f)
                old = (ident or {}).get(p.key)
                if old is not None and old != p.key:  # recorded before under another key: replaced
                    store.rows.pop(old, None)
                store.add(p.key, {**others, **sweep.columns(p)}, res, write=False)
                prog.done += res["status"] != "lost"
                prog.failed += res["status"] in ("failed", "lost")
            submit(ended)
            store.write_due(time.monotonic())
            prog.running = _running(client, {f.key for f in pending})
            if progress is not None:
                progress(prog)
    finally:
        if pending:  # interrupted: a shared cluster must not keep running abandoned points
            client.cancel(list(pending))
        if store.unwritten:  # finished points are kept, whatever stopped the sweep
            store.write()
    return n_workers
