"""The controller in the simulator: first-packet delay, tables, fallbacks, jobs."""

import numpy as np
import pytest

from netsteer.errors import NetsteerError
from netsteer.topology.pgft import pgft
from netsteer.unisonflow import modules
from netsteer.unisonflow.dataplane import TableModel
from netsteer.unisonflow.fabric import Fabric
from netsteer.unisonflow.run import simulate
from netsteer.unisonflow.tags import decode
from netsteer.unisonflow.workload import TaggedWorkload

BW = 1e9  # bit/s
LAT = 1_000  # ns per cable


@pytest.fixture(scope="module")
def topo():
    # 2 leaves of 4 hosts, 2 spines
    return pgft(2, [4, 2], [1, 2], link_bandwidth=BW, link_latency_ns=LAT)


@pytest.fixture(scope="module")
def fabric(topo):
    return Fabric(topo)


def one_message(nbytes=125_000, repeat=1, overhead_ns=0, hosts=(0, 4), job=0):
    w = TaggedWorkload()
    w.collective("bcast", "binomial", hosts=list(hosts), nbytes=nbytes, repeat=repeat, overhead_ns=overhead_ns, job=job)
    return w


PIN0 = {0: [{"module": "pin", "primitive": "bcast", "via": "s2_0"}]}


@pytest.mark.parametrize("push, rule_ns, switches", [("parallel", 7_000, 1), ("sequential", 7_000, 3), ("parallel", 0, 1)])
def test_first_packet_pays_round_trip_and_installation(topo, fabric, push, rule_ns, switches):
    w = one_message(repeat=2)
    rtt = 300_000
    base = simulate(topo, w, None)
    r = simulate(topo, w, PIN0, tables=TableModel(controller_rtt_ns=rtt, rule_time_ns=rule_ns, push=push), fabric=fabric)
    assert r.status == "done" and r.driver["packet_ins"] == 1
    # the first message waits for the controller; the second finds the rules
    assert r.completion_ns[0] - base.completion_ns[0] == rtt + switches * rule_ns
    assert r.completion_ns[1] - r.completion_ns[0] == base.completion_ns[1] - base.completion_ns[0]
    assert r.first_packet_ns == [rtt + switches * rule_ns]


def test_idle_timeout_makes_the_next_message_miss_again(topo, fabric):
    # messages 2 ms apart (software overhead); rules idle for 1 ms are gone
    w = one_message(repeat=3, overhead_ns=2_000_000, nbytes=1000)
    keep = simulate(topo, w, PIN0, tables=TableModel(controller_rtt_ns=100_000), fabric=fabric)
    drop = simulate(topo, w, PIN0, tables=TableModel(controller_rtt_ns=100_000, idle_timeout_ns=1_000_000), fabric=fabric)
    assert keep.driver["packet_ins"] == 1 and keep.driver["expired"] == 0
    assert drop.driver["packet_ins"] == 3 and drop.driver["expired"] == 2  # the last outlives the run
    assert drop.makespan_ns - keep.makespan_ns == 2 * 100_000
    longer = simulate(topo, w, PIN0, tables=TableModel(controller_rtt_ns=100_000, idle_timeout_ns=3_000_000), fabric=fabric)
    assert longer.driver["packet_ins"] == 1 and longer.makespan_ns == keep.makespan_ns


def test_full_table_evicts_idle_rules_and_refuses_busy_ones(topo, fabric):
    # a binomial bcast from host 0 over 8 hosts: the root's leaf sees 3 tags one after another
    w = TaggedWorkload()
    w.collective("bcast", "binomial", hosts=list(range(8)), nbytes=10_000, repeat=2)
    free = simulate(topo, w, {0: []}, tables=TableModel(controller_rtt_ns=50_000), fabric=fabric)
    tight = simulate(topo, w, {0: []}, tables=TableModel(controller_rtt_ns=50_000, capacity=2), fabric=fabric)
    assert free.driver["evicted"] == 0 and free.driver["max_rules_per_switch"] > 2
    assert tight.driver["max_rules_per_switch"] <= 2
    assert tight.driver["evicted"] + tight.driver["table_full"] > 0
    assert tight.driver["packet_ins"] > free.driver["packet_ins"] or tight.driver["table_full"] > 0
    assert tight.status == "done"


def test_routing_follows_the_primitive_and_jobs_stay_apart(topo, fabric):
    w = TaggedWorkload()
    w.collective("bcast", "binomial", hosts=list(range(8)), nbytes=10_000, repeat=2, job=0)
    w.collective("bcast", "binomial", hosts=list(range(8)), nbytes=10_000, repeat=2, job=1)
    mods = {0: [{"module": "pin", "primitive": "bcast", "via": "s2_0"}],
            1: [{"module": "pin", "primitive": "bcast", "via": "s2_1"}]}
    r = simulate(topo, w, mods, tables=TableModel(controller_rtt_ns=10_000), fabric=fabric)
    spine = {topo.node("s2_0"): 0, topo.node("s2_1"): 1}
    cdst, csrc = topo.channel_dst(), topo.channel_src()
    crossed = {0: set(), 1: set()}
    for f, tag in enumerate(w.tags.tolist()):
        job = decode(tag).job
        for ch in r.paths[f].tolist():
            for node in (cdst[ch], csrc[ch]):
                if node in spine:
                    crossed[job].add(spine[node])
    assert crossed == {0: {0}, 1: {1}}
    # one rule set per tag: the two jobs' identical rank pairs never share a rule
    assert r.driver["installed_tags"] == len(set(w.tags.tolist()) - {0})


def write_module(tmp_path, name, body):
    p = tmp_path / f"{name}.py"
    p.write_text(
        "from netsteer.unisonflow.modules import PrimitiveModule, register\n"
        "from netsteer.unisonflow.rules import FlowRule\n"
        f"@register\nclass M(PrimitiveModule):\n    name = {name!r}\n    primitive = 'bcast'\n"
        f"    def rules(self, tag, state):\n        {body}\n")
    modules.load_file(p)


def test_a_failing_module_falls_back_to_default_routing_and_is_reported(tmp_path, topo, fabric):
    write_module(tmp_path, "test-crash", "raise ZeroDivisionError('boom')")
    write_module(tmp_path, "test-ghost", "return [FlowRule(9999, tag.value(), ((1, None),))]")
    w = one_message(repeat=2)
    for name, words in (("test-crash", "ZeroDivisionError: boom"), ("test-ghost", "switch 9999, which does not exist")):
        r = simulate(topo, w, {0: [{"module": name}]}, tables=TableModel(controller_rtt_ns=10_000), fabric=fabric)
        assert r.status == "done"
        assert r.controller["failures"] == 1 and words in r.controller["failed"][0]["reason"]
        assert r.controller["by_module"] == {"ecmp": 1}
        with pytest.raises(NetsteerError, match=words):
            simulate(topo, w, {0: [{"module": name}]}, tables=TableModel(controller_rtt_ns=10_000),
                     fabric=fabric, on_failure="fail")


def test_two_modules_claiming_one_primitive_are_refused(topo, fabric):
    with pytest.raises(NetsteerError, match="two modules claim primitive bcast"):
        simulate(topo, one_message(), {0: [{"module": "bcast-multicast"}, {"module": "pin", "primitive": "bcast", "via": "s2_0"}]},
                 fabric=fabric)
    with pytest.raises(NetsteerError, match="unknown module 'nope'"):
        simulate(topo, one_message(), {0: [{"module": "nope"}]}, fabric=fabric)


def test_module_names_are_unique_across_files(tmp_path):
    write_module(tmp_path, "test-once", "return []")
    other = tmp_path / "other"
    other.mkdir()
    p = other / "x.py"
    p.write_text("from netsteer.unisonflow.modules import PrimitiveModule, register\n"
                 "@register\nclass Other(PrimitiveModule):\n    name = 'test-once'\n")
    with pytest.raises(NetsteerError, match="two modules are named 'test-once'"):
        modules.load_file(p)


def test_ranks_sharing_a_host_need_no_rules(topo, fabric):
    # 4 ranks on 2 hosts: messages within a host never reach a switch
    w = TaggedWorkload()
    w.collective("bcast", "binomial", hosts=[0, 0, 4, 4], nbytes=1000, repeat=2)
    within = [f for f in range(len(w.dag)) if w.dag.src[f] == w.dag.dst[f]]
    assert within and all(w.tags[f] == 0 for f in within)
    r = simulate(topo, w, PIN0, tables=TableModel(controller_rtt_ns=10_000), fabric=fabric)
    assert r.status == "done" and r.driver["packet_ins"] == len(set(w.tags.tolist()) - {0}) == 1
