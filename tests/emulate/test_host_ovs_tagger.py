"""The host OVS tag writer (the fallback where no eBPF program attaches).

The protocol and the fallback choice run against recording switches; the test
marked ``ovs`` runs the UnisonFlow program with every host's own bridge tagging.
"""

from __future__ import annotations

import os
import shutil
import socket
from types import SimpleNamespace

import pytest

from netsteer.emulate.hosttag.host_ovs import BASE_LINES, HostOvsTagger
from netsteer.errors import NetsteerError


class Recording:
    def __init__(self, fail: bool = False):
        self.tables, self.fail = [], fail

    def swap_flows(self, flows):
        if self.fail:
            raise RuntimeError("refused")
        self.tables.append(list(flows))


def _ask(path, *lines):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(path))
        f = s.makefile("rb")
        out = []
        for line in lines:
            s.sendall(line.encode() + b"\n")
            out.append(f.readline().decode().strip())
        return out


def test_each_base_swaps_in_one_rule_per_peer_with_its_rank_in_the_mac(tmp_path):
    sw = Recording()
    t = HostOvsTagger("br", tmp_path / "t.sock", switch=sw).start()
    try:
        base = (3 << 42) | (1 << 41) | (5 << 15)
        got = _ask(t.path, "peer 1 10.64.0.2", "peer 7 10.64.1.2", f"base {base}", "base 0")
    finally:
        t.close()
    assert got == ["ok"] * 4
    tagged, untagged = sw.tables
    assert untagged == BASE_LINES and tagged[:2] == BASE_LINES
    rules = {line.split("nw_dst=")[1].split()[0]: line.split("set_field:")[1].split("->")[0] for line in tagged[2:]}
    assert set(rules) == {"10.64.0.2", "10.64.1.2"}
    for ip, rank in (("10.64.0.2", 1), ("10.64.1.2", 7)):
        assert int(rules[ip].replace(":", ""), 16) == base | rank
    assert t.changes == 2 and not os.path.exists(t.path)


def test_a_refused_swap_is_answered_and_reported_and_the_tagger_stays_up(tmp_path):
    t = HostOvsTagger("br", tmp_path / "t.sock", switch=Recording(fail=True)).start()
    try:
        got = _ask(t.path, "peer 1 10.64.0.2", "base 4398046511104", "frobnicate", "peer 2 10.64.0.3")
    finally:
        t.close()
    assert got[0] == "ok" and got[1].startswith("err") and got[2].startswith("err") and got[3] == "ok"
    assert len(t.errors) == 2 and "refused" in t.errors[0]


def _hosts(tmp_path, tagger, bridges):
    from netsteer.emulate.mpi import MpiHosts

    tb = SimpleNamespace(prefix="nsx", host_dev={0: "eth0"}, host_bridges={0: "br0"} if bridges else {})
    m = MpiHosts(tb, tags=True, tagger=tagger)
    m.dir = str(tmp_path)
    return m


def test_auto_falls_back_to_the_host_bridge_where_ebpf_cannot_attach_and_ebpf_alone_refuses(tmp_path, monkeypatch):
    import netsteer.emulate.hosttag.writer as writer

    def cannot(*a, **k):
        raise NetsteerError("the tag writer cannot attach to eth0: no bpf here", field="hosttag")

    monkeypatch.setattr(writer, "build", cannot)
    m = _hosts(tmp_path, "auto", bridges=True)
    env = m._tagger(0, "ns0")
    try:
        assert m.taggers == {0: "ovs"} and env["NETSTEER_TAG_SOCK"].endswith("tag-h0.sock")
        assert m.tagger_report()["ovs_hosts"] == [0]
    finally:
        for t in m.host_taggers:
            t.close()
    with pytest.raises(NetsteerError, match="cannot attach"):
        _hosts(tmp_path, "ebpf", bridges=True)._tagger(0, "ns0")
    with pytest.raises(NetsteerError, match="cannot attach"):  # auto without host bridges: nothing to fall back to
        _hosts(tmp_path, "auto", bridges=False)._tagger(0, "ns0")
    with pytest.raises(NetsteerError, match="host_bridges"):
        _hosts(tmp_path, "ovs", bridges=False)
    with pytest.raises(NetsteerError, match="tag writer"):
        _hosts(tmp_path, "tc", bridges=True)


@pytest.mark.ovs
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ovs-vsctl") is None or shutil.which("mpicc") is None,
                    reason="needs root, Open vSwitch and MPICH (scripts/setup.sh)")
def test_host_bridges_tag_every_phase_onto_its_pinned_spine():
    from netsteer.emulate.testbed import leftovers
    from netsteer.emulate.unisonflow_real import run

    rep = run(150, 1000, routing="pinned", tagger="ovs")
    assert not leftovers(rep["testbed"])
    tg = rep["tagger"]
    assert tg["ovs_hosts"] == list(range(24)) and tg["ebpf_hosts"] == []
    assert tg["ovs_changes"] >= 24 and tg["ovs_errors"] == []
    b, r = rep["bcast"], rep["reduce"]
    assert b["spine1_bytes"] > 2 * b["spine2_bytes"]
    assert r["spine2_bytes"] > 2 * r["spine1_bytes"]
