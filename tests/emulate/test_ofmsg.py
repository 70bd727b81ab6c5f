"""The os-ken channel's encoding of the driver's lines, without a switch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("os_ken")

from netsteer.control.intents import PairRule, VlanPath  # noqa: E402
from netsteer.drivers.openflow.flows import HybridState, Table, diff, ocs_table, switch_table, tor_table  # noqa: E402
from netsteer.drivers.openflow.ofmsg import Encoder, match_text, parse_message, wipe_lines  # noqa: E402

from .test_flows import built  # noqa: E402


def every_line():
    """Every kind of line the driver writes: a ToR with single and weighted paths,
    tags, extra rules; a core switch; a circuit switch."""
    b = built()
    from netsteer.drivers.openflow.flows import HybridLayout
    lay = HybridLayout.of(b.topology, b.routing)
    st = HybridState()
    st.rules[1] = {(0, 1): PairRule(0, 1, (VlanPath(5, (0, 1), (0,), 1.0),)),
                   (0, 2): PairRule(0, 2, (VlanPath(6, (0, 2), (0,), 0.25), VlanPath(7, (0, 2), (1,), 0.75))),
                   (1, 0): PairRule(1, 0)}
    tor = lay.tors[0]
    st.tags[(tor, int(lay.tor_port_of[0][0]))] = frozenset({5, 6})
    st.extra[tor] = (3, 2)
    tables = [tor_table(lay, st, tor), switch_table(lay, b.topology.n_hosts + 0), ocs_table([(1, 2)])]
    lines = []
    for t in tables:
        lines += diff(Table(), t) + diff(t, Table())
    lines += [f"flow modify_strict {f}" for f in tables[0].flow_lines()[:3]]
    return lines


def test_the_cached_encoding_is_os_kens_own_bytes():
    enc = Encoder()
    lines = every_line()
    assert {ln.split(" ")[0] + " " + ln.split(" ")[1] for ln in lines} >= {
        "flow add", "flow delete_strict", "flow modify_strict", "group add", "group delete"}
    for xid, line in enumerate(lines * 2, 1):  # the second round comes from the cache
        msg = enc.message(line)
        msg.set_xid(xid)
        msg.serialize()
        assert enc.encode(line, xid) == bytes(msg.buf), line


def test_decoded_messages_carry_the_lines_meaning():
    enc = Encoder()
    fm = parse_message(enc.encode("flow add table=1,priority=101,ip,nw_dst=10.64.2.0/24 actions=group:77", 3))
    assert (fm.xid, fm.table_id, fm.priority) == (3, 1, 101)
    assert match_text(fm.match) == "ip,nw_dst=10.64.2.0/24"
    assert fm.instructions[0].actions[0].group_id == 77
    gm = parse_message(enc.encode("group add group_id=9,type=select,bucket=weight:250,actions=push_vlan:0x8100,"
                                  "set_field:4102->vlan_vid,resubmit(,2),bucket=weight:750,actions=output:3", 4))
    assert gm.group_id == 9 and [b.weight for b in gm.buckets] == [250, 750]
    assert gm.buckets[0].actions[2].table_id == 2 and gm.buckets[1].actions[0].port == 3
    tagged = parse_message(enc.encode("flow add table=0,priority=600,ip,in_port=2,dl_vlan=5,nw_dst=10.64.0.0/24 "
                                      "actions=pop_vlan,goto_table:3", 5))
    assert match_text(tagged.match) == "ip,in_port=2,dl_vlan=5,nw_dst=10.64.0.0/24"
    assert tagged.instructions[1].table_id == 3


def test_a_bundle_is_open_adds_commit_with_consecutive_xids():
    enc = Encoder()
    lines = ["flow add table=0,priority=0 actions=drop", *wipe_lines()]
    chunks = enc.bundle(lines, bundle_id=4, first_xid=100)
    xids = [int.from_bytes(c[4:8], "big") for c in chunks]
    assert xids == [100, 101, 102, 103, 104]
    assert [c[1] for c in chunks] == [33, 34, 34, 34, 33]
    assert parse_message(chunks[0]).type == 0 and parse_message(chunks[-1]).type == 4  # open, commit
    inner = parse_message(chunks[2][16:])
    assert inner.xid == 102 and inner.table_id == 0xFF and inner.command == 3  # delete in every table


@pytest.mark.parametrize("line, word", [
    ("flow add table=0,priority=1,tcp_dst=80 actions=drop", "tcp_dst=80"),
    ("flow add table=0,priority=1 actions=controller", "controller"),
    ("flow frobnicate table=0,priority=1 actions=drop", "frobnicate"),
    ("meter add meter=1", "meter"),
])
def test_what_the_channel_does_not_understand_is_named(line, word):
    with pytest.raises(ValueError, match=word):
        Encoder().encode(line, 1)


ROOT = Path(__file__).parents[2]


def refused(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    """``netsteer ARGS`` in a fresh process, asserted refused: exit 2, one line on
    stderr, no traceback."""
    p = subprocess.run([sys.executable, "-m", "netsteer", *args], capture_output=True, text=True, cwd=cwd,
                       timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    return p


@pytest.mark.parametrize("args", [["emulate", "scenarios/hybrid-congestion.yaml", "--channel", "netconf"],
                                  ["reproduce", "--emulate", "hybrid-reconfig", "--channel", "netconf"]])
def test_an_unknown_channel_is_one_line_and_exit_2(args):
    p = refused(*args)
    assert "--channel" in p.stderr and "osken, ofctl" in p.stderr


@pytest.mark.parametrize("rate, reason", [("1Gbps", "outside 0.5 to 100 Mbit/s"), ("0.1Mbps", "outside"),
                                          ("fast", "not a rate")])
def test_a_max_rate_the_testbed_cannot_hold_is_one_line_and_exit_2(rate, reason):
    p = refused("emulate", "scenarios/hybrid-congestion.yaml", "--max-rate", rate)
    assert "--max-rate" in p.stderr and reason in p.stderr


@pytest.mark.parametrize("args, option", [(["--json", "pftree", "--quick"], "--json"),
                                          (["--out", "x.json", "pftree"], "--out"),
                                          (["--rules", "5", "hybrid-shifting"], "--rules")])
def test_emulate_options_before_a_reproduction_are_refused_not_dropped(args, option, tmp_path):
    """``reproduce --json pftree`` printed the table and ``--out`` wrote nothing, exit 0."""
    p = refused("reproduce", *args, cwd=tmp_path)
    assert f"{option}: applies with --emulate NAME only" in p.stderr, p.stderr
    assert p.stdout == ""
    assert not (tmp_path / "x.json").exists()


def builders_lines() -> dict[str, list[str]]:
    """The exact lines the fabric table builders and the reactive path write: whole
    tables as a resync sends them, and their diffs."""
    from netsteer.emulate.fabric_routes import ecmp_tables, notify_tables, routing_tables, tag_tables
    from netsteer.emulate.reactive_tags import rule_lines
    from netsteer.routing.ecmp import ecmp
    from netsteer.topology.pgft import pgft
    from netsteer.unisonflow.controller import InterconnectController
    from netsteer.unisonflow.fabric import Fabric
    from netsteer.unisonflow.modules import JobView
    from netsteer.unisonflow.tags import Tag

    t = pgft(2, [6, 4], [1, 2], [1, 4], link_bandwidth=1e9, link_latency_ns=1000)
    out = {}
    for name, tabs in (("ecmp_tables", ecmp_tables(t)),
                       ("tag_tables", tag_tables(t, list(range(24)), {2: "s2_0", 3: "s2_1"})),
                       ("notify_tables", notify_tables(t, list(range(24)))),
                       ("routing_tables", routing_tables(ecmp(t)))):
        lines = []
        for tab in tabs.values():
            lines += [f"group add {g}" for g in tab.group_lines()] + [f"flow add {f}" for f in tab.flow_lines()]
            lines += diff(tab, Table()) + wipe_lines()
        out[name] = lines
    f = Fabric(t)
    c = InterconnectController(f, {0: (JobView(0, {0: list(range(24))}), [{"module": "bcast-multicast"}])})
    d = c.handle(Tag("bcast", 0, 0, 0, 0).value())
    assert any(len(r.outputs) > 1 for r in d.rules)  # switch multicast: groups of type all
    out["reactive rule_lines"] = [ln for ls in rule_lines(d.rules, {}).values() for ln in ls]
    return out


@pytest.mark.parametrize("name", ["ecmp_tables", "tag_tables", "notify_tables", "routing_tables",
                                  "reactive rule_lines"])
def test_the_os_ken_channel_encodes_every_line_the_table_builders_write(name):
    enc = Encoder()
    lines = builders_lines()[name]
    assert any(ln.startswith("group add") for ln in lines)
    for line in lines:
        msg = enc.message(line)
        msg.set_xid(1)
        msg.serialize()
        assert enc.encode(line, 1) == bytes(msg.buf), line
        if line.startswith("group add"):
            kind = "select" if "type=select" in line else "all"
            weights = {b.weight for b in parse_message(bytes(msg.buf)).buckets}
            # ovs-ofctl's defaults: a select bucket without weight weighs 1, others 0
            assert weights == ({1} if kind == "select" else {0}), line


def test_a_flow_cookie_is_set_on_add_and_matched_on_delete():
    enc = Encoder()
    add = parse_message(enc.encode("flow add table=0,priority=2,cookie=0x4e0001,in_port=1,ip "
                                   "actions=CONTROLLER:128,resubmit(,1)", 1))
    assert (add.cookie, add.cookie_mask) == (0x4E0001, 0) and match_text(add.match) == "ip,in_port=1"
    gone = parse_message(enc.encode("flow delete_strict table=0,priority=2,cookie=0x4e0001,in_port=1,ip", 2))
    assert (gone.cookie, gone.cookie_mask) == (0x4E0001, (1 << 64) - 1)


# a command that passes its checks stops here (exit 99) before building anything:
# a refusal that regressed must not start a testbed in the offline tier
_TRIPWIRE = """
import os, sys
import netsteer.emulate.testbed as tb
def trip(*a, **k):
    sys.stderr.write("the command passed its checks\\n"); os._exit(99)
tb.ensure_ovs = trip
tb.Testbed.__init__ = trip
from netsteer.cli import main
main(sys.argv[1:])
"""


@pytest.mark.parametrize("args, option", [
    (["emulate", "scenarios/hybrid-congestion.yaml", "--time-scale", "inf"], "--time-scale"),
    (["emulate", "scenarios/hybrid-congestion.yaml", "--time-scale", "nan"], "--time-scale"),
    (["emulate", "scenarios/hybrid-congestion.yaml", "--time-scale", "1e-300"], "--time-scale"),
    (["emulate", "scenarios/hybrid-congestion.yaml", "--time-scale", "0"], "--time-scale"),
    (["reproduce", "--emulate", "hybrid-reconfig", "--period", "inf"], "--period"),
    (["reproduce", "--emulate", "hybrid-reconfig", "--period", "nan"], "--period"),
    (["reproduce", "--emulate", "hybrid-reconfig", "--duration", "nan"], "--duration"),
    (["reproduce", "--emulate", "hybrid-reconfig", "--duration", "inf"], "--duration"),
])
def test_a_float_option_that_is_not_a_finite_number_in_range_is_refused_before_anything_starts(args, option):
    p = subprocess.run([sys.executable, "-c", _TRIPWIRE, *args], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert option in p.stderr and "finite" in p.stderr


def test_emulate_refuses_a_time_scale_that_is_not_finite_before_anything_starts():
    from netsteer.emulate.run import emulate
    from netsteer.errors import NetsteerError
    from netsteer.scenario import build_scenario, load_scenario

    built = build_scenario(load_scenario(ROOT / "scenarios/hybrid-congestion.yaml"))
    with pytest.raises(NetsteerError, match="time_scale"):
        emulate(built, time_scale=float("inf"), switch_factory=lambda br: pytest.fail("started"))


def test_the_app_gives_a_bundle_one_timeout_and_the_driver_waits_longer(monkeypatch):
    """The app's barrier and commit share TIMEOUT_S (they had 10 s each, 20 s in all,
    while the driver gave up after 15 s and rolled the others back under a commit
    still in flight); the driver waits longer than the app's whole limit."""
    from netsteer.drivers.openflow import osken, osken_app

    assert osken.REPLY_WAIT_S > osken_app.TIMEOUT_S
    clock = [1000.0]
    waits = []

    class Event:
        def wait(self, timeout):
            waits.append(timeout)
            clock[0] += 7.0  # the switch takes 7 s to answer each
            return True

        def set(self):
            pass

    class Dp:
        xid = 0

        def send(self, data):
            pass

    monkeypatch.setattr(osken_app.hub, "Event", Event)
    monkeypatch.setattr(osken_app.time, "monotonic", lambda: clock[0])
    app = object.__new__(osken_app.NetsteerApp)
    app.dps, app.waiting, app.encoder, app.bundle_ids = {5: Dp()}, {}, Encoder(), 0
    with pytest.raises(RuntimeError):  # no commit reply: this fake switch answers nothing
        app._handle({"op": "bundle", "dpid": 5, "lines": ["flow add table=0,priority=0 actions=drop"]})
    assert waits == [osken_app.TIMEOUT_S, osken_app.TIMEOUT_S - 7.0]


@pytest.mark.parametrize("args, option", [
    (["unisonflow", "--channel", "foo"], "--channel"),
    (["unisonflow", "--rules", "7"], "--rules"),
    (["unisonflow", "--bytes", "5"], "--bytes"),
    (["hybrid-reconfig", "--iterations", "3"], "--iterations"),
    (["hybrid-reconfig", "--during"], "--during"),
    (["hybrid-reconfig", "--plot", "figs"], "--plot"),
    (["hyperx-steering", "--rules", "5"], "--rules"),
    (["hyperx-steering", "--period", "2"], "--period"),
    (["hyperx-steering", "--tagger", "ebpf"], "--tagger"),
])
def test_a_reproduction_refuses_options_it_does_not_use(args, option, tmp_path):
    """``reproduce --emulate unisonflow --channel foo --rules 7 --bytes 5`` started
    building its testbed: the options were silently ignored."""
    p = refused("reproduce", "--emulate", *args, cwd=tmp_path)
    assert p.stderr.startswith(f"netsteer: error: {option}: {args[0]} does not use it"), p.stderr
