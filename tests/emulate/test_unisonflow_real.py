"""Unmodified MPICH programs on the emulated fat-tree (real Open vSwitch bridges).

Marked ``ovs``: in CI these run (scripts/setup.sh installs Open vSwitch, MPICH,
clang and libbpf). Each run checks that it left nothing behind.
"""

from __future__ import annotations

import os
import shutil

import pytest

from netsteer.errors import NetsteerError
from netsteer.emulate.mpi import check_program, compile_program

pytestmark = pytest.mark.ovs

needs_testbed = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ovs-vsctl") is None or shutil.which("mpicc") is None,
    reason="needs root, Open vSwitch and MPICH (scripts/setup.sh)")


@needs_testbed
def test_bcast_reduce_runs_across_namespaces_and_its_traffic_crosses_the_spines():
    from netsteer.emulate.testbed import leftovers
    from netsteer.emulate.unisonflow_real import compare, run

    iters, nbytes = 200, 1000
    rep = run(iters, nbytes)
    assert not leftovers(rep["testbed"])
    assert rep["ranks"] == 24 and rep["peer_table"]["peers_of_rank0"] == 24
    # a line per change of primitive, not per call (barrier, bcast, barrier, reduce, ...)
    assert rep["peer_table"]["primitive_changes_rank0"] < 12
    for ph in ("bcast", "reduce"):
        e = rep[ph]
        # each call moves at least 3 x nbytes between leaves (rank 0's leaf and the three
        # others): the spines' own counters must have seen at least that much
        assert e["spine1_bytes"] + e["spine2_bytes"] >= 3 * nbytes * iters, f"{ph}: {e}"
        assert e["end_s"] > e["start_s"]
    assert rep["reduce"]["start_s"] >= rep["bcast"]["end_s"] - 1e-9
    c = compare(rep)
    # payload in the model against frames on the wire: the same order of magnitude
    assert 0.5 < c["bcast"]["bytes_ratio"] < 2.0


@needs_testbed
@pytest.mark.skipif(shutil.which("clang-14") is None, reason="needs clang-14 and libbpf-dev")
def test_with_host_tags_and_pinned_rules_each_phase_uses_mostly_its_spine():
    """The source's controller (bcast via spine1, reduce via spine2) with every packet
    tagged at its host by the eBPF writer from the PMPI library's primitive."""
    from netsteer.emulate.testbed import leftovers
    from netsteer.emulate.unisonflow_real import run

    rep = run(200, 1000, routing="pinned")
    assert not leftovers(rep["testbed"])
    b, r = rep["bcast"], rep["reduce"]
    # the traffic arrived (tags rewritten back at the last switch), so MPI completed
    assert b["spine1_bytes"] + b["spine2_bytes"] >= 3 * 1000 * 200
    # most of each phase on its spine: ECMP would split them about evenly
    assert b["spine1_bytes"] > 2 * b["spine2_bytes"]
    assert r["spine2_bytes"] > 2 * r["spine1_bytes"]
    # the reduce's eager bytes were still queued when ranks entered the closing barrier:
    # changes of primitive waited for them (the drain), most within the bound
    d = rep["peer_table"]
    assert d["drains"] > 0 and d["drain_timeouts"] < d["drains"]


@needs_testbed
@pytest.mark.skipif(shutil.which("clang-14") is None, reason="needs clang-14 and libbpf-dev")
def test_the_reactive_controller_moves_each_phase_onto_its_spine_without_losing_frames():
    """The switches start with ECMP only; frames of new tags tell the os-ken app while
    going on by default; the interconnect controller's pin module answers with rules.
    Each phase's first frames go by ECMP until its rules land, then by its spine."""
    from netsteer.emulate.testbed import leftovers
    from netsteer.emulate.unisonflow_real import run

    rep = run(400, 1000, routing="controller")
    assert not leftovers(rep["testbed"])
    c = rep["controller"]
    assert c["errors"] == [] and c["dropped"] == 0 and c["resent"] == 0
    # bcast and reduce tags went to the pin module; the barrier's to the default
    assert c["by_module"].get("pin", 0) > 0 and c["by_module"].get("ecmp", 0) > 0
    assert c["tags"] <= c["packet_ins"]
    b, r = rep["bcast"], rep["reduce"]
    assert b["spine1_bytes"] + b["spine2_bytes"] >= 3 * 1000 * 400
    # each phase's first frames go by ECMP until its rules land: how long that took
    # (bundle rounds) says whether a miss is the controller's or the machine's load
    why = f"bcast {b}, reduce {r}, bundle rounds median {c['install_s_median']:.2f} s, max {c['install_s_max']:.2f} s"
    assert b["spine1_bytes"] > 2 * b["spine2_bytes"], why
    assert r["spine2_bytes"] > 2 * r["spine1_bytes"], why


def test_a_program_that_is_not_mpich_is_refused_before_anything_starts(tmp_path):
    with pytest.raises(NetsteerError, match="does not link MPICH"):
        check_program(shutil.which("true"))
    with pytest.raises(NetsteerError, match="not an executable"):
        check_program(tmp_path / "missing")


@pytest.mark.skipif(shutil.which("mpicc") is None, reason="needs MPICH")
def test_a_source_that_does_not_compile_is_one_error(tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int main( {")
    with pytest.raises(NetsteerError, match="mpicc failed"):
        compile_program(bad, tmp_path)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("clang-14") is None or not os.path.exists("/usr/include/bpf/bpf_helpers.h"),
                    reason="needs root, clang-14 and libbpf-dev (scripts/setup.sh)")
def test_the_tag_writer_rewrites_each_packet_from_the_map_and_stops_when_untagged(tmp_path):
    """A namespace sends pings to a peer; the eBPF writer on its egress puts the tag
    (base | destination rank) in the destination MAC, read on the wire; after the
    base is set to 0 the true MAC goes out again."""
    import secrets
    import socket
    import subprocess

    from netsteer.emulate.hosttag.writer import TagWriter, build
    from netsteer.unisonflow.tags import Tag, encode

    pfx = "tw" + secrets.token_hex(2)
    ns, inner, outer = f"{pfx}-h0", f"{pfx}b", f"{pfx}a"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    w = None
    try:
        subprocess.run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns], check=True)
        subprocess.run(["ip", "link", "set", outer, "up"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", inner, "up"], check=True)
        subprocess.run(["ip", "-n", ns, "addr", "add", "10.64.0.1/24", "dev", inner], check=True)
        subprocess.run(["ip", "-n", ns, "neigh", "replace", "10.64.0.2", "lladdr", "02:4e:00:00:00:01", "dev", inner,
                        "nud", "permanent"], check=True)
        w = TagWriter(ns, inner, build(tmp_path), tmp_path / "bpf").attach()
        w.set_ranks({"10.64.0.2": 5})
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
        s.bind((outer, 0))
        s.settimeout(3)

        def dst_of_next_ping():
            subprocess.run(["ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "0.2", "10.64.0.2"], capture_output=True)
            while True:
                f = s.recv(2000)
                if f[30:34] == socket.inet_aton("10.64.0.2"):
                    return int.from_bytes(f[:6], "big")

        tag = Tag("reduce", job=3, comm=1, src=2, dst=5)
        w.set(encode(tag) & ~0x7FFF)  # the library's base: everything but the destination rank
        assert dst_of_next_ping() == encode(tag)
        w.set(0)
        assert dst_of_next_ping() == 0x024E00000001
    finally:
        if w is not None:
            w.close()
        subprocess.run(["ip", "link", "del", outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert not (tmp_path / "bpf" / "tc").exists()  # unmounted


@needs_testbed
@pytest.mark.skipif(shutil.which("clang-14") is None, reason="needs clang-14 and libbpf-dev")
def test_osu_like_with_and_without_tags_on_real_switches():
    """The source's Figs. 11-13 method: the same two hosts, plain then tagged frames.
    The tagged run's frames carried tags (the last switch wrote the true MAC back for
    them), the plain run's did not; both stay under the shaped link rate, and the
    tags cost no large-message bandwidth to speak of."""
    import json

    from netsteer.emulate.osu_overhead import run
    from netsteer.emulate.testbed import leftovers

    # alternated three times, medians: one short window is at the mercy of the shared cores
    rep = run(max_bytes=16384, lat_iters=20, bw_iters=40, window=8, repeat=3)
    assert not leftovers(rep["testbed"])
    json.dumps(rep)  # the report is plain JSON
    sizes = [r["bytes"] for r in rep["sizes"]]
    assert sizes == [2 ** k for k in range(15)]
    moved = sum(r["bytes"] for r in rep["sizes"])
    assert rep["restored_bytes"]["plain"] == 0 and rep["restored_bytes"]["tagged"] > 20 * moved
    big = rep["sizes"][-1]
    for mode in ("plain", "tagged"):
        assert all(r[mode]["latency_us"] > 0 for r in rep["sizes"])
        # shaped: unshaped veths carry about 60 MB/s here; a short window may ride the
        # token bucket's burst above the rate, so the bound is twice the rate
        assert 0 < big[mode]["bandwidth_mbs"] <= rep["link_mbs"] * 2
    assert big["bandwidth_ratio"] > 0.5
    # the simulator's figures for the same fabric and rates sit beside them
    assert big["simulated"]["plain"]["bandwidth_mbs"] <= rep["link_mbs"] * 1.0001
