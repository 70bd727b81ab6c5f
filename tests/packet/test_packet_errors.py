"""Bad packet-fidelity input: one line naming the file, the field and the reason,
exit code 2; a parameter of the other fidelity is named, never ignored."""

from __future__ import annotations

import textwrap

import pytest

from netsteer.cli import run_cli

# one switch of four hosts; %s: the scenario's fidelity keys
HEAD = textwrap.dedent(
    """
    name: t
    topology: {kind: pgft, levels: 1, down: [4], up: [1], parallel: [1],
               link_bandwidth: 32Gbps, link_latency: 100ns}
    routing: {engine: dmodk}
    %s
    jobs:
    """
)
BASE = HEAD + "  - name: j\n    flows:\n      - {src: 0, dst: 3, bytes: 1MiB, class: %d}\n"

CASES = [
    ("fidelity: packet\npacket: {mtu: 3000}", 0, "packet.mtu", "power of two from 256 B to 4 KiB"),
    ("fidelity: packet\npacket: {mtu: 8KiB}", 0, "packet.mtu", "power of two"),
    ("fidelity: packet\npacket: {mtu: 128}", 0, "packet.mtu", "power of two"),
    ("fidelity: packet\npacket: {buffer: 1KiB}", 0, "packet.buffer", "smaller than one packet"),
    ("fidelity: packet\npacket: {mtu: 4KiB, buffer: 4KiB}", 0, "packet.buffer", "smaller than one packet"),
    ("fidelity: packet\npacket: {vls: 2, sl2vl: '0,1,2,0,0,0,0,0,0,0,0,0,0,0,0,0'}", 0, "packet.sl2vl",
     "SL 2 is mapped to VL 2, beyond the 2 VLs"),
    ("fidelity: packet\npacket: {vls: 2, vlarb_low: '0:64,1:300'}", 0, "packet.vlarb_low", "outside 0..255"),
    ("fidelity: packet\npacket: {vls: 2, vlarb_high: '0:-1'}", 0, "packet.vlarb_high", "outside 0..255"),
    ("fidelity: packet\npacket: {vls: 2, vlarb_low: '0:64,3:64'}", 0, "packet.vlarb_low", "VL 3 is beyond"),
    ("fidelity: packet\npacket: {vls: 16}", 0, "packet.vls", "15"),
    ("fidelity: packet\npacket: {mtuu: 2KiB}", 0, "packet", "unknown packet parameter 'mtuu'"),
    ("fidelity: packet\npacket: {vls: 2, vlarb_low: '0:64'}", 1, "packet.vlarb_low",
     "SL 1 is used by flows and maps to VL 1, which has no weight"),
    ("fidelity: packet\npacket: {sl2vl: '0,15,0,0,0,0,0,0,0,0,0,0,0,0,0,0'}", 1, "packet.sl2vl", "VL 15"),
    ("fidelity: packet", 16, "jobs.0.flows.0.class", "class 16 is not an InfiniBand SL (0..15)"),
    ("fidelity: packet\npacket: {header: 100000, buffer: 1MiB}", 0, "packet.header",
     "100000 B is not an InfiniBand packet header"),
    ("fidelity: packet\npacket: {header: 100000}", 0, "packet.header", "give at most 128 B"),
    ("fidelity: packet\npacket: {rc_timeout: 0}", 0, "packet.rc_timeout", "would never be sent again"),
    ("fidelity: packet\npacket: {rc_timeout: -1us}", 0, "packet.rc_timeout", "negative"),
    ("fidelity: packet\npacket: {rc_timeout: 5}", 0, "packet.rc_timeout", "unit"),
    ("fidelity: packet\npacket: {rc_timeout: 500ps}", 0, "packet.rc_timeout", "whole number of nanoseconds"),
    ("fidelity: packet\npacket: {rc_timeout: 3h}", 0, "packet.rc_timeout", "unit"),
    ("fidelity: packet\npacket: {rc_timeout: 150min}", 0, "packet.rc_timeout",
     "longer than InfiniBand's longest local ACK timeout"),
    ("fidelity: packet\npacket: {rc_timeout: true}", 0, "packet.rc_timeout", "expected a duration"),
    # a parameter of the other fidelity
    ("packet: {mtu: 2KiB}", 0, "packet", "apply to the packet fidelity"),
    ("fidelity: packet\nsharing: cm02", 0, "sharing", "flow-level model"),
    ("fidelity: packets", 0, "fidelity", "'flow' or 'packet'"),
]


@pytest.mark.parametrize("extra,cls,field,reason", CASES)
def test_bad_packet_input_is_one_line_with_file_field_and_reason(tmp_path, capsys, extra, cls, field, reason):
    f = tmp_path / "s.yaml"
    f.write_text(BASE % (extra, cls))
    assert run_cli(["run", str(f), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"{f}: {field}:" in err
    assert reason in err


def test_fidelity_flag_of_the_other_kind_leaves_the_parameter_out_and_says_so(tmp_path, capsys):
    """``--fidelity`` runs a scenario the other way: the file's parameters of its own
    fidelity are left out, with a note naming them (text on stderr, ``notes`` in JSON)."""
    import json

    f = tmp_path / "s.yaml"
    f.write_text(BASE % ("sharing: cm02", 0))
    assert run_cli(["run", str(f), "--fidelity", "packet", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "note: sharing: cm02 is a flow-level model; left out at --fidelity packet" in err
    assert run_cli(["run", str(f), "--fidelity", "packet", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sharing"] == "packet" and len(out["notes"]) == 1 and "sharing" in out["notes"][0]
    f.write_text(BASE % ("fidelity: packet\npacket: {mtu: 2KiB}", 0))
    assert run_cli(["run", str(f), "--fidelity", "flow", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sharing"] == "maxmin" and "fidelity" not in out
    assert out["notes"] == ["packet: its parameters apply to the packet fidelity; left out at --fidelity flow"]
    # nothing left out, nothing said
    f.write_text(BASE % ("", 0))
    assert run_cli(["run", str(f), "--fidelity", "packet", "--no-progress", "--json"]) == 0
    assert "notes" not in json.loads(capsys.readouterr().out)
    assert run_cli(["run", str(f), "--fidelity", "packets", "--no-progress"]) == 2
    assert "--fidelity" in capsys.readouterr().err



SHARES = HEAD + "  - {name: a, flows: [{src: 0, dst: 3, bytes: 1MiB}]}\n  - {name: b, %s}\n"

SHARE_CASES = [
    ("flows: [{src: 1, dst: 3, bytes: 1MiB, priority: 1}]", "jobs.1.flows.0.priority", "vlarb_high"),
    ("bulk: [{src: 1, dst: 3, duration: 1ms, weight: 3}]", "jobs.1.bulk.0.weight", "vlarb_low"),
    ("ranks: 2, priority: 2, program: [{op: barrier}]", "jobs.1.priority", "vlarb_high"),
]


@pytest.mark.parametrize("job,field,table", SHARE_CASES)
def test_a_flow_level_share_at_packet_fidelity_is_refused_with_what_to_use_instead(tmp_path, capsys, job, field,
                                                                                   table):
    """A priority or weight means nothing to credits and VL arbitration: a scenario
    at packet fidelity that sets one is refused, naming it and the packet-level way
    (a service level, and its VL's place in the arbitration tables)."""
    f = tmp_path / "s.yaml"
    f.write_text(SHARES % ("fidelity: packet", job))
    assert run_cli(["run", str(f), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"{f}: {field}: " in err
    assert "packet fidelity (fidelity packet)" in err and "service level" in err and table in err
    # the default value is no share of its own: nothing to refuse
    f.write_text(SHARES % ("fidelity: packet", job.replace("priority: 1", "priority: 0")
                           .replace("weight: 3", "weight: 1").replace("priority: 2", "priority: 0")))
    assert run_cli(["run", str(f), "--no-progress", "--json"]) == 0


def test_fidelity_flag_packet_leaves_flow_level_shares_out_with_a_note(tmp_path, capsys):
    """``--fidelity packet`` on a flow scenario with priorities and weights runs it
    packet by packet without them (as it does ``sharing:``), and the notes name them."""
    import json

    f = tmp_path / "s.yaml"
    f.write_text(SHARES % ("", "flows: [" + ", ".join(
        f"{{src: {s}, dst: 3, bytes: 64KiB, priority: 1, weight: 2}}" for s in (1, 2, 1, 2, 1)) + "]"))
    assert run_cli(["run", str(f), "--fidelity", "packet", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fidelity"] == "packet" and out["status"] == "done"
    assert out["notes"] == [
        "jobs.1.flows.0.priority, jobs.1.flows.1.priority, jobs.1.flows.2.priority and 2 more: priority is a "
        "flow-level strict-priority class; left out at --fidelity packet, which shares links by credits and VL "
        "arbitration",
        "jobs.1.flows.0.weight, jobs.1.flows.1.weight, jobs.1.flows.2.weight and 2 more: weight is a flow-level "
        "max-min weight; left out at --fidelity packet, which shares links by credits and VL arbitration"]
    assert run_cli(["run", str(f), "--fidelity", "packet", "--no-progress"]) == 0
    assert "note: jobs.1.flows.0.priority" in capsys.readouterr().err


def test_the_python_api_refuses_a_flow_level_share_at_packet_fidelity_as_the_cli_does():
    import netsteer as ns
    from netsteer.errors import NetsteerError

    topo = ns.pgft(levels=1, down=[4], up=[1], link_bandwidth="32Gbps", link_latency="100ns")
    data = ns.Scenario(topo, "dmodk", [ns.job([ns.flow(0, 3, "1MiB")]),
                                       ns.job([ns.flow(1, 3, "1MiB", priority=1)])]).to_dict()
    with pytest.raises(NetsteerError) as exc:
        ns.Scenario.from_dict({**data, "fidelity": "packet"}).run()
    assert exc.value.field == "jobs.1.flows.0.priority" and "vlarb_high" in exc.value.reason
    assert ns.Scenario.from_dict(data).run().status == "done"  # at flow level it is a share


def test_a_class_above_15_is_named_where_the_scenario_gives_it(tmp_path, capsys):
    f = tmp_path / "s.yaml"
    f.write_text(HEAD % "fidelity: packet" + "  - name: a\n    flows:\n      - {src: 0, dst: 1, bytes: 1MiB}\n"
                 "  - name: b\n    flows:\n      - {src: 0, dst: 3, bytes: 1MiB}\n"
                 "    bulk:\n      - {src: 1, dst: 2, duration: 1ms, class: 20}\n")
    assert run_cli(["run", str(f), "--no-progress"]) == 2
    assert f"{f}: jobs.1.bulk.0.class: class 20 is not" in capsys.readouterr().err
