"""The testbed's bookkeeping without building it: commands are recorded, none runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import netsteer.emulate.testbed as testbed

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("interrupt_at,name_at", [("netns add", 3), ("link add", 3), ("add-br", 2)])
def test_an_interrupt_mid_build_leaves_nothing_behind(monkeypatch, interrupt_at, name_at):
    """Ctrl-C reaches the ``ip`` child too: a namespace, veth or bridge whose creation
    was interrupted may exist half made. Each name is recorded before it is created,
    so close() deletes it (deleting what does not exist is tolerated)."""
    from netsteer.scenario import build_scenario, load_scenario

    topo = build_scenario(load_scenario(ROOT / "scenarios" / "hybrid-congestion.yaml")).topology
    calls, half = [], []

    def run(*cmd, check=True, input=None):
        line = " ".join(cmd)
        calls.append(line)
        if interrupt_at in line and sum(interrupt_at in c for c in calls) == 2:
            half.append(cmd[name_at])  # it may exist: the signal came while it was made
            raise KeyboardInterrupt
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(testbed, "_run", run)
    monkeypatch.setattr(testbed, "check_machine", lambda topo, **k: 0.01)
    monkeypatch.setattr(testbed, "ensure_ovs", lambda: None)
    with pytest.raises(KeyboardInterrupt):
        with testbed.Testbed(topo):
            pass
    deleted = [c.split()[-1] for c in calls if c.split()[1:3] in (["netns", "del"], ["link", "del"])
               or "del-br" in c]
    assert half and half[0] in deleted, (half, deleted)
