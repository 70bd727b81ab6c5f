"""A signal that reaches ``--out``'s commit: sent before the result is in place, it
wins (the directory stays old); a handler that returns lets the commit go on; a signal
the caller itself holds cannot stall it; and one sent after the commit is reported
with the directory it found written.

Each signal is real and sent at a known moment: from inside the commit, by wrapping
the function that reads what is pending (or the one that replaces the directory).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading

import pytest

from netsteer import cli
from netsteer.report import outdir


class Stop(BaseException):
    pass


def _raise(signum, frame):
    raise Stop(signum)


@contextlib.contextmanager
def _handler(fn):
    old = signal.signal(signal.SIGINT, fn)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _old_dir(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text(json.dumps({"scenario": "old", "files": ["result.json"]}))
    return out


def _write_new(d):
    (d / "result.json").write_text(json.dumps({"scenario": "new", "files": ["result.json"]}))


def _scenario_of(out):
    return json.loads((out / "result.json").read_text())["scenario"]


def _temps(out):
    return [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]


def _signal_once_when(monkeypatch, name):
    """Send SIGINT to the main thread the first time ``outdir.<name>`` is called.

    To the main thread, which holds it by then, so it is pending when the commit looks.
    Sent to the process (``os.kill``), the kernel may hand it to any other thread not
    holding it (the engine's, a library's), and it reaches the main thread's handler at
    no fixed moment: the commit may already have looked, and then it rightly reports
    the signal after the directory it wrote (CI saw exactly that)."""
    real = getattr(outdir, name)
    sent = []

    def wrapped(*args):
        if not sent:
            sent.append(True)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(outdir, name, wrapped)
    return sent


def test_a_signal_sent_as_the_commit_begins_keeps_the_old_directory(tmp_path, monkeypatch):
    out = _old_dir(tmp_path)
    sent = _signal_once_when(monkeypatch, "_pending")  # signals are held by then: it waits, pending
    with _handler(_raise), pytest.raises(Stop):
        with outdir.output_dir(out) as d:
            _write_new(d)
    assert sent and _scenario_of(out) == "old" and not _temps(out)


def test_a_handler_that_returns_lets_the_commit_go_on(tmp_path, monkeypatch):
    out = _old_dir(tmp_path)
    _signal_once_when(monkeypatch, "_pending")
    seen = []
    with _handler(lambda s, f: seen.append(s)):
        with outdir.output_dir(out) as d:
            _write_new(d)
    assert seen == [signal.SIGINT] and _scenario_of(out) == "new" and not _temps(out)


def test_a_signal_the_caller_holds_does_not_stall_the_commit(tmp_path):
    out = _old_dir(tmp_path)
    seen = []
    with _handler(lambda s, f: seen.append(s)):
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with outdir.output_dir(out) as d:
                _write_new(d)
                # to this thread, which holds it (sent to the process, another thread of
                # pytest's could take it: the caller's hold is this thread's)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            assert _scenario_of(out) == "new" and seen == []  # committed; still held
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
    assert seen == [signal.SIGINT]


SCENARIO = """\
name: small
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps}
routing: {engine: dmodk}
jobs:
  - {name: a2a, ranks: 8, program: [{op: alltoall, bytes: 4KiB}]}
"""


def test_a_signal_taken_by_another_thread_still_waits_for_the_commit(tmp_path, monkeypatch):
    """A process-wide signal that the kernel hands to a thread not holding it: Python
    runs the handler in the main thread, inside the commit, unless it is noted and
    raised again at the end."""
    out = _old_dir(tmp_path)
    real = outdir._replace
    order = []

    go, sent = threading.Event(), threading.Event()

    def other_thread():  # started before the commit holds signals, so it does not hold them
        go.wait(30)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        sent.set()

    def replace_with_a_signal_from_a_thread(tmp, final):
        go.set()
        assert sent.wait(30)
        real(tmp, final)
        order.append("replaced")

    t = threading.Thread(target=other_thread)
    t.start()

    monkeypatch.setattr(outdir, "_replace", replace_with_a_signal_from_a_thread)
    with _handler(lambda s, f: order.append("signal")):
        with outdir.output_dir(out) as d:
            _write_new(d)
    t.join()
    assert order == ["replaced", "signal"] and _scenario_of(out) == "new"


def test_a_signal_after_the_commit_names_the_directory_written(tmp_path, monkeypatch, capsys):
    sc = tmp_path / "small.yaml"
    sc.write_text(SCENARIO)
    out = tmp_path / "res"
    real_replace = outdir._replace

    def replace_then_signal(tmp, final):
        real_replace(tmp, final)
        os.kill(os.getpid(), signal.SIGINT)  # held until the commit's block ends

    monkeypatch.setattr(outdir, "_replace", replace_then_signal)
    with _handler(cli._on_signal):
        rc = cli.run_cli(["run", str(sc), "--out", str(out), "--json", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 130
    assert err.count("\n") == 1 and f"after writing {out} (whole, new)" in err, err
    assert json.loads((out / "result.json").read_text())["scenario"] == "small"


def test_a_signal_before_any_commit_says_nothing_was_written(tmp_path, monkeypatch, capsys):
    sc = tmp_path / "small.yaml"
    sc.write_text(SCENARIO)
    out = _old_dir(tmp_path)
    _signal_once_when(monkeypatch, "_pending")
    with _handler(cli._on_signal):
        rc = cli.run_cli(["run", str(sc), "--out", str(out), "--json", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 130 and "after writing" not in err, err
    assert _scenario_of(out) == "old" and not _temps(out)
