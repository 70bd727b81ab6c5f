"""Ctrl-C (and SIGTERM) while ``netsteer`` is still importing: one line, exit 130 (143).

The signal is sent at a known moment, not after a guessed delay: the child process
installs an import hook that signals the process itself when a given module starts
to import, then starts netsteer the way ``python -m netsteer`` does. Importing
``netsteer.cli`` from a program of one's own leaves that program's signals alone.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

#: The child: signal ourselves when MODULE is first imported, then run ``python -m netsteer``.
CHILD = """
import os, runpy, signal, sys

module, signum = sys.argv[1], int(sys.argv[2])

class SignalOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signum)
        return None

sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["netsteer", *sys.argv[3:]]
runpy.run_module("netsteer", run_name="__main__", alter_sys=True)
"""

ARGS = ["topo", "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps", "--json"]


def _run(module: str, signum: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, module, str(int(signum)), *ARGS],
                          capture_output=True, text=True, timeout=120)


# modules the command line imports on its way up: typer and rich (cli.py's own imports),
# the command modules, and what the command itself imports once it runs
@pytest.mark.parametrize("module", ["typer", "rich.table", "netsteer.commands.sweep", "netsteer.topology.spec"])
@pytest.mark.parametrize("signum,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signal_while_importing_is_one_line(module, signum, code, word):
    p = _run(module, signum)
    assert p.returncode == code, (p.returncode, p.stderr[-500:])
    assert p.stderr == f"netsteer: {word}: stopped by signal {signal.Signals(signum).name}\n"
    assert p.stdout == ""


def test_the_hook_really_fires_and_the_command_otherwise_runs():
    # a module the command never imports: the signal never comes and the command succeeds
    p = _run("no.such.module.anywhere", signal.SIGINT)
    assert p.returncode == 0, p.stderr
    assert '"hosts": 16' in p.stdout


def test_importing_the_cli_leaves_a_programs_signals_alone():
    code = ("import signal; before = signal.getsignal(signal.SIGINT); import netsteer.cli; "
            "assert signal.getsignal(signal.SIGINT) is before is signal.default_int_handler; "
            "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL; print('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout) == (0, "ok\n"), p.stderr


#: The child for the other end: signal ourselves inside a garbage-collection callback while
#: the command runs (where Python swallows exceptions), or in an exit hook once it is done.
CHILD_LATER = """
import atexit, gc, os, runpy, signal, sys

where, signum = sys.argv[1], int(sys.argv[2])

def in_gc(phase, info):
    gc.callbacks.remove(in_gc)
    os.kill(os.getpid(), signum)
    for _ in range(1000):  # Python code after the signal: its handler runs here, in the callback
        pass

class CollectOnImport:  # once the command runs (it imports the topology parser), collect
    def find_spec(self, name, path=None, target=None):
        if name == "netsteer.topology.spec":
            sys.meta_path.remove(self)
            gc.callbacks.append(in_gc)
            gc.collect()
        return None

if where == "gc":
    sys.meta_path.insert(0, CollectOnImport())
else:
    atexit.register(os.kill, os.getpid(), signum)  # runs after the command's output
sys.argv = ["netsteer", *sys.argv[3:]]
runpy.run_module("netsteer", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("signum,code,word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_signal_in_a_callback_that_swallows_exceptions_still_stops_the_command(signum, code, word):
    p = subprocess.run([sys.executable, "-c", CHILD_LATER, "gc", str(int(signum)), *ARGS],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == code, (p.returncode, p.stderr[-500:])
    assert p.stderr == f"netsteer: {word}: stopped by signal {signal.Signals(signum).name}\n"


def test_signal_after_the_output_during_teardown_is_one_line():
    p = subprocess.run([sys.executable, "-c", CHILD_LATER, "exit", str(int(signal.SIGINT)), *ARGS],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 130, (p.returncode, p.stderr[-500:])
    assert p.stderr == "netsteer: interrupted: stopped by signal SIGINT\n"
    assert json.loads(p.stdout)["hosts"] == 16  # the output was whole before the signal
