"""The management network's check (emulate/mpi.py), with ``ip`` answers faked."""

from __future__ import annotations

import subprocess

import pytest

import netsteer.emulate.mpi as mpi
from netsteer.errors import NetsteerError


def _fake_ip(monkeypatch, alias: str | None):
    def run(*cmd, check=True, input=None):
        if cmd[:4] == ("ip", "-o", "-4", "addr"):
            out = "1: lo    inet 127.0.0.1/8 scope host lo\n9: nsab12mg    inet 10.200.0.254/24 scope global nsab12mg\n"
        elif cmd[:4] == ("ip", "-o", "link", "show"):
            out = "9: nsab12mg: <BROADCAST,UP> mtu 1500 state UP" + (f" \\    alias {alias}" if alias else "") + "\n"
        else:
            raise AssertionError(cmd)
        return subprocess.CompletedProcess(cmd, 0, out, "")

    monkeypatch.setattr(mpi, "_run", run)


def test_a_live_runs_management_bridge_is_not_called_a_leftover(monkeypatch):
    """The advice 'ip link del nsXXXXmg' broke a concurrent run when followed."""
    live = subprocess.Popen(["sleep", "30"])
    try:
        _fake_ip(monkeypatch, f"netsteer-pid={live.pid}")
        with pytest.raises(NetsteerError) as e:
            mpi.check_management_net()
    finally:
        live.kill()
        live.wait()
    msg = e.value.message()
    assert f"for a run still going (process {live.pid})" in msg and "ip link del" not in msg, msg


def test_a_killed_runs_bridge_is_named_with_how_to_delete_it(monkeypatch):
    gone = subprocess.Popen(["true"])
    gone.wait()
    _fake_ip(monkeypatch, f"netsteer-pid={gone.pid}")
    with pytest.raises(NetsteerError) as e:
        mpi.check_management_net()
    assert "is gone" in e.value.message() and "ip link del nsab12mg" in e.value.message()


def test_the_check_comes_before_the_testbed_is_built(monkeypatch):
    """It ran only once the whole testbed (about 7 s) was built."""
    import netsteer.emulate.hyperx_steering as hx

    _fake_ip(monkeypatch, None)
    monkeypatch.setattr(hx, "Testbed", lambda *a, **k: pytest.fail("the testbed was started"))
    monkeypatch.setattr(hx, "compile_program", lambda *a, **k: pytest.fail("the program was built"))
    with pytest.raises(NetsteerError, match="already holds 10.200.0.0/24"):
        hx.run(iterations=1)
