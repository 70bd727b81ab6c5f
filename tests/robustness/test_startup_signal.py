"""Ctrl-C (and SIGTERM) while ``netsteer`` is still importing: one line, exit 130 (143).

The signal is sent at a known moment, not after a guessed delay: the child process
installs an import hook that signals the process itself when a given module starts
to import, then starts netsteer the way ``python -m netsteer`` does. Importing
``netsteer.cli`` from a program of one's own leaves that program's signals alone.
"""

from __future__ import annotations

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
