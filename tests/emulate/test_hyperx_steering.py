"""Bandwidth steering on real switches: a routing's tables as OpenFlow, and the
flexible-HyperX source's ring all-reduce with MPICH before and after steering.

The tests marked ``ovs`` build the testbed (scripts/setup.sh installs Open vSwitch
and MPICH); in CI they run. The others walk the OpenFlow tables in Python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from netsteer.control.steering import plan_steering, switch_demand
from netsteer.emulate.fabric_routes import routing_tables
from netsteer.emulate.testbed import host_mac
from netsteer.routing import dmodk
from netsteer.routing.dor import dor
from netsteer.routing.ecmp import ecmp
from netsteer.topology.hyperx import CircuitSpec, hyperx, paired_lines
from netsteer.topology.pgft import pgft

needs_testbed = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ovs-vsctl") is None or shutil.which("mpicc") is None,
    reason="needs root, Open vSwitch and MPICH (scripts/setup.sh)")


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "netsteer", *args], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], timeout=timeout)


def _walks(topo, tabs, src: int, dst: int) -> list[list[int]]:
    """Every node sequence a frame for ``dst`` can take from ``src`` through the
    OpenFlow tables (each bucket of a select group followed)."""
    peer = topo.port_peer
    port = topo.neighbors(src)[0][0]
    done = []

    def go(node, in_port, seen):
        if node == dst:
            done.append(seen)
            return
        assert node != src or len(seen) == 1, "the frame came back to its source"
        assert len(seen) < 2 * topo.n_nodes, f"loop: {seen}"
        t = tabs[node]
        act = t.flows.get((0, 10, f"dl_dst={host_mac(dst)}")) or t.flows.get((0, 10, f"in_port={in_port}"))
        assert act is not None, f"{topo.node_names[node]} has no rule for h{dst} (in port {in_port})"
        if act.startswith("group:"):
            outs = [int(b.split(":")[1]) for b in t.groups[int(act[6:])].split(",")[1:]]
        else:
            outs = [int(act.split(":")[1])]
        for p in outs:
            nxt, nport = peer(node, p)
            go(nxt, nport, seen + [nxt])

    nxt, nport = peer(src, port)
    go(nxt, nport, [src, nxt])
    return done


def _nodes_of(topo, routing, src, dst, circuits=None):
    dst_of = topo.channel_dst()
    return [src] + [int(dst_of[c]) for c in routing.path(src, dst, circuits=circuits)]


def _flexible(S, T):
    return hyperx(S, 1, T, link_bandwidth=1e9, link_latency_ns=0, circuits=paired_lines(S, 2, 0))


@pytest.mark.parametrize("make", [
    lambda: hyperx([2, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0, circuits=[CircuitSpec(dim=0, switching_time_ns=0)]),
    lambda: _flexible([4, 4], 1),
    lambda: _flexible([4, 2], 2),
])
def test_dor_tables_as_openflow_take_the_routings_path_before_and_after_steering(make):
    topo = make()
    rng = np.random.default_rng(3)
    src = rng.integers(0, topo.n_hosts, 200)
    dst = (src + rng.integers(1, topo.n_hosts, 200)) % topo.n_hosts
    steered = _planned(topo)
    for circuits in (None, steered):
        r = dor(topo, circuits=circuits)
        tabs = routing_tables(r, circuits)
        for s, d in zip(src.tolist(), dst.tolist()):
            assert _walks(topo, tabs, s, d) == [_nodes_of(topo, r, s, d, circuits)]


def test_steered_circuits_change_the_crossbar_and_the_packet_switches_rules():
    topo = hyperx([2, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0, circuits=[CircuitSpec(dim=0, switching_time_ns=0)])
    sip = topo.node("sip0")
    arr = np.asarray(topo.meta["initial_circuits"][sip]).copy()
    arr[[1, 8, 2, 7]] = [8, 1, 7, 2]
    before, after = routing_tables(dor(topo)), routing_tables(dor(topo, circuits={sip: arr}), {sip: arr})
    assert before[sip].flows[(0, 10, "in_port=1")] != after[sip].flows[(0, 10, "in_port=1")] == "output:8"
    assert any(before[n].flows != after[n].flows for n in before if n != sip)


def test_ecmp_groups_become_select_groups_and_every_bucket_reaches_the_host():
    topo = pgft(2, [4, 4], [1, 3], link_bandwidth=1e9, link_latency_ns=0)
    r = ecmp(topo)
    tabs = routing_tables(r)
    assert any(t.groups for t in tabs.values())
    for s, d in ((0, 15), (5, 2), (12, 13)):
        walks = _walks(topo, tabs, s, d)
        want = 1 if topo.node_names[s][:4] == topo.node_names[d][:4] else None
        assert all(w[-1] == d for w in walks)
        assert len({tuple(w) for w in walks}) == (want or len(walks))
    # a deterministic routing gives exactly its own path
    r2 = dmodk(topo)
    t2 = routing_tables(r2)
    assert _walks(topo, t2, 0, 15) == [_nodes_of(topo, r2, 0, 15)]


@pytest.mark.parametrize("args,field", [
    (["--bytes", "1000"], "--bytes"),
    (["--bytes", "0"], "--bytes"),
    (["--iterations", "0"], "--iterations"),
    (["--channel", "netconf"], "--channel"),
    (["--during", "--iterations", "1"], "--iterations"),  # ran ~19 s, then could only be refused
])
def test_bad_hyperx_steering_options_are_refused_before_anything_starts(args, field):
    p = _cli("reproduce", "--emulate", "hyperx-steering", *args, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith(f"netsteer: error: {field}:"), p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


@needs_testbed
def test_a_run_the_testbed_could_not_finish_is_refused_with_an_estimate_before_anything_starts():
    p = _cli("reproduce", "--emulate", "hyperx-steering", "--bytes", str(1 << 26), "--iterations", "4")
    assert p.returncode == 2 and "--bytes:" in p.stderr and "would take about" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.ovs
@needs_testbed
def test_steering_a_running_mpich_ring_allreduce_speeds_it_up_as_the_simulator_predicts(tmp_path):
    """One job of six all-reduces, steered make-before-break after the third: the
    ring keeps running through the change (every sum checked) and is faster after."""
    from netsteer.emulate.testbed import leftovers

    out, figs = tmp_path / "hx.json", tmp_path / "figs"
    p = _cli("reproduce", "--emulate", "hyperx-steering", "--during", "--json", "--bytes", str(1 << 20), "--iterations", "3",
             "--out", str(out), "--plot", str(figs), timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    rep = json.loads(out.read_text())
    assert json.loads(p.stdout) == rep
    assert not leftovers(rep["testbed"])
    std, st, cmp = rep["standard"], rep["steered"], rep["compare"]
    assert std["check"] == st["check"] == "ok"  # every element of every rank's sum
    n_std, n_st = len(std["allreduce_s"]), len(st["allreduce_s"])
    assert n_std >= 1 and n_st >= 1 and n_std + n_st + len(rep["during"]["allreduce_s"]) == 6
    steer = rep["steering"]
    assert rep["inputs"]["steered"] == "during the job" and 0 < steer["at_s"][0] < steer["at_s"][1]
    assert steer["at_s"][0] >= sum(std["allreduce_s"])  # after the first three had ended
    assert [x["step"].split()[0] for x in steer["steps"]] == ["routes", "circuits", "routes"] * (len(steer["steps"]) // 3)
    # no all-reduce stalled across the change (a lost path would cost TCP's
    # retransmission timeouts: seconds)
    assert max(rep["during"]["allreduce_s"] or [0]) < 3 * max(std["allreduce_s"])
    # the controller's plan was carried out: the circuits the second run ran on
    assert st["circuits"] == rep["steering"]["circuits"] != std["circuits"]
    assert rep["steering"]["after_max_channel_busy_s"] < rep["steering"]["before_max_channel_busy_s"]
    # the model: steering doubles the ring here; the real ring must gain clearly too
    assert cmp["speedup_simulated"] > 1.5
    assert cmp["speedup_emulated"] > 1.2
    # real TCP over tc-shaped links cannot beat the fluid model by more than noise,
    # and should reach a good part of it
    for key in ("standard", "steered"):
        assert 0.4 < cmp[f"{key}_emulated_over_simulated"] < 1.1
    # the sampled counters: the EPS7-EPS8 cable carried traffic in both runs
    t = np.array(rep["links"]["t_s"])
    for key in ("standard", "steered"):
        a, b = rep["links"]["runs"][key]
        busy = np.array(rep["links"]["bps"]["EPS7->EPS8"])[(t >= a) & (t <= b)]
        assert busy.max() > 0
    # the figures directory is written as a whole, with its manifest (report.outdir)
    assert sorted(p.name for p in figs.iterdir()) == ["fig3c_standard.png", "fig3d_steered.png", "result.json"]
    assert rep["figures"] == [str(figs / "fig3c_standard.png"), str(figs / "fig3d_steered.png")]


def _planned(topo, n=200, seed=3, ring=False):
    rng = np.random.default_rng(seed)
    if ring:  # a ring over the hosts in a random order, as a training job placed at random
        src = rng.permutation(topo.n_hosts)
        dst = np.roll(src, -1)
        n = len(src)
    else:
        src = rng.integers(0, topo.n_hosts, n)
        dst = (src + rng.integers(1, topo.n_hosts, n)) % topo.n_hosts
    return plan_steering(topo, switch_demand(topo, src, dst, np.full(n, 1e6))).arrays(topo)


@pytest.mark.parametrize("make,seed", [
    (lambda: hyperx([2, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0,
                    circuits=[CircuitSpec(dim=0, switching_time_ns=0)]), 3),
    (lambda: _flexible([4, 4], 2), 3),  # several circuit switches, five moves
])
def test_every_step_of_a_make_before_break_steer_delivers_every_pair(make, seed):
    """The switches' state after each step (the packet switches' tables of one step
    with the crossbar of that step) carries every host pair: no step darkens a path."""
    from netsteer.control.circuit_moves import moves

    topo = make()
    old = {n: np.asarray(a) for n, a in topo.meta["initial_circuits"].items()}
    new = _planned(topo, seed=seed, ring=True)
    ms = moves(old, new)
    assert ms  # the plan changes something
    xbar = routing_tables(dor(topo, circuits=old), old)
    for mv in ms:
        detour = routing_tables(dor(topo, circuits=mv.detour), mv.detour)
        after = routing_tables(dor(topo, circuits=mv.after), mv.after)
        crossbar_before = {n: xbar[n] for n in new}
        # the switches cabled to the ports that move: while they switch (dark on a real
        # SiP switch) no path may cross them
        moving = {topo.port_peer(mv.switch, p)[0] for p in mv.ports}
        for k, (packet, cross) in enumerate(((detour, crossbar_before), (detour, {n: after[n] for n in new}),
                                             (after, {n: after[n] for n in new}))):
            tabs = {**{n: t for n, t in packet.items() if n not in new}, **cross}
            for s in range(topo.n_hosts):
                for d in range(topo.n_hosts):
                    if s == d:
                        continue
                    walks = _walks(topo, tabs, s, d)
                    assert all(w[-1] == d for w in walks)
                    if k < 2:
                        for w in walks:
                            for i, node in enumerate(w):
                                if node == mv.switch:
                                    assert w[i - 1] not in moving and w[i + 1] not in moving, (mv.ports, w)
        xbar = after
    for n in new:
        assert np.array_equal(ms[-1].after[n], new[n])


class _Rec:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def bundle(self, lines):
        self.log.append((self.name, len(lines)))


def test_steer_bundles_routes_off_then_the_crossbar_then_routes_on_and_ends_in_the_plan():
    from netsteer.emulate.hyperx_steering import steer

    topo = hyperx([2, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0, circuits=[CircuitSpec(dim=0, switching_time_ns=0)])
    sip = topo.node("sip0")
    old = {sip: np.asarray(topo.meta["initial_circuits"][sip])}
    new = _planned(topo, ring=True)
    log = []
    switches = {int(n): _Rec(int(n), log) for n in topo.switches}
    tables, steps = steer(switches, topo, routing_tables(dor(topo, circuits=old), old), old, new,
                          settle=lambda: log.append(("settle", 0)))
    want = routing_tables(dor(topo, circuits=new), new)
    assert {n: (t.flows, t.groups) for n, t in tables.items()} == {n: (t.flows, t.groups) for n, t in want.items()}
    kinds = [s["step"].split()[0] for s in steps]
    assert kinds == ["routes", "circuits", "routes"] * (len(kinds) // 3) and len(kinds) >= 3
    # every crossbar bundle comes after a packet-switch bundle and before the next ones
    # every step that changed something is settled before the next step starts
    settles = [i for i, (n, _) in enumerate(log) if n == "settle"]
    assert len(settles) == sum(1 for s in steps if s["changes"]) and settles[-1] == len(log) - 1
    log = [x for x in log if x[0] != "settle"]
    names = [n for n, _ in log]
    firsts = [i for i, n in enumerate(names) if n == sip]
    assert firsts and firsts[0] > 0 and all(names[i - 1] != sip for i in firsts)
    assert sum(k for _, k in log) == sum(s["changes"] for s in steps)
