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
        assert e["spine1_bytes"] + e["spine2_bytes"] >= 3 * nbytes * iters
        assert e["end_s"] > e["start_s"]
    assert rep["reduce"]["start_s"] >= rep["bcast"]["end_s"] - 1e-9
    c = compare(rep)
    # payload in the model against frames on the wire: the same order of magnitude
    assert 0.5 < c["bcast"]["bytes_ratio"] < 2.0


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
