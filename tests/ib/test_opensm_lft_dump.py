"""LFT dump reader/writer against texts OpenSM and ibroute really print (no ibsim)."""

from __future__ import annotations

import numpy as np
import pytest
from ib_samples import IBROUTE_SWITCH2, OPENSM_DUMP, two_switch_fabric
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netsteer.drivers.opensm.lft_dump import (
    format_lft_dump,
    minhop_port_lft,
    minhop_switch_lft,
    parse_lft_dump,
    parse_lft_tables,
    read_lft_dump,
    write_lft_dump,
)
from netsteer.drivers.opensm.lids import LidMap, opensm_lids, sequential_lids
from netsteer.errors import NetsteerError


def test_reads_opensm_dump_into_host_routes(fabric):
    t = parse_lft_tables(OPENSM_DUMP, fabric)
    s1, s2 = fabric.node("Switch1"), fabric.node("Switch2")
    h = {n: fabric.host_index[fabric.node(n)] for n in ("Hca1", "Hca2", "Hca3", "Hca4")}
    assert t.hosts[s1, h["Hca1"]] == 1 and t.hosts[s1, h["Hca3"]] == 2
    assert t.hosts[s1, h["Hca2"]] == 3 and t.hosts[s1, h["Hca4"]] == 5
    assert t.hosts[s2, h["Hca1"]] == 3 and t.hosts[s2, h["Hca4"]] == 2
    # host rows mean "my only port", as in a Routing
    assert (t.hosts[fabric.hosts] == -1).all()
    sw = {int(s): i for i, s in enumerate(fabric.switches)}
    assert t.switches[s1, sw[s2]] == 3 and t.switches[s2, sw[s1]] == 3
    assert t.switches[s1, sw[s1]] == 0
    assert {fabric.node_names[n]: int(l) for n, l in enumerate(t.lids.lid)} == {
        "Switch1": 1, "Switch2": 3, "Hca1": 2, "Hca2": 4, "Hca3": 5, "Hca4": 6,
    }


def test_predicted_lids_match_what_opensm_assigned(fabric):
    # OpenSM assigned these on ibsim (SM on Switch1): not file order, not GUID order
    assert opensm_lids(fabric, sm_node=fabric.node("Switch1")) == parse_lft_tables(OPENSM_DUMP, fabric).lids


def test_writer_reproduces_opensm_dump_byte_for_byte(fabric):
    t = parse_lft_tables(OPENSM_DUMP, fabric)
    assert format_lft_dump(fabric, t.hosts, t.lids, t.switches) == OPENSM_DUMP


def test_ibroute_output_reads_like_the_dump(fabric):
    t = parse_lft_tables(IBROUTE_SWITCH2, fabric, allow_missing=True)
    full = parse_lft_tables(OPENSM_DUMP, fabric)
    s2 = fabric.node("Switch2")
    assert np.array_equal(t.hosts[s2], full.hosts[s2])
    assert (t.hosts[fabric.node("Switch1")] == -1).all()


def test_file_round_trip_through_disk(fabric, tmp_path):
    t = parse_lft_tables(OPENSM_DUMP, fabric)
    path = tmp_path / "lfts.dump"
    write_lft_dump(fabric, t.hosts, t.lids, path, switch_lft=t.switches)
    lft, lids = read_lft_dump(path, fabric)
    assert np.array_equal(lft, t.hosts) and lids == t.lids


def test_entries_without_portguid_need_a_lid_map(fabric):
    bare = "\n".join(l.split(" #")[0] for l in OPENSM_DUMP.splitlines())
    with pytest.raises(NetsteerError, match="no portguid and no LID map"):
        parse_lft_tables(bare, fabric)
    lids = parse_lft_tables(OPENSM_DUMP, fabric).lids
    assert np.array_equal(parse_lft_tables(bare, fabric, lids=lids).hosts, parse_lft_tables(OPENSM_DUMP, fabric).hosts)


def test_minhop_switch_routes(fabric):
    r = minhop_switch_lft(fabric)
    s1, s2 = fabric.node("Switch1"), fabric.node("Switch2")
    col = {int(s): i for i, s in enumerate(fabric.switches)}
    assert r[s1, col[s2]] == 3  # lowest of the two parallel ports (3 and 5)
    assert r[s2, col[s1]] == 3 and r[s1, col[s1]] == 0
    assert (r[fabric.hosts] == -1).all()  # hosts do not forward


def _replace_line(text: str, lineno: int, new: str) -> str:
    lines = text.splitlines()
    lines[lineno - 1] = new
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "lineno, new, reason, line",
    [
        (4, "0x0003 009 # Switch portguid 0x0000000000200001: 'Switch2'", "port 9 of switch Switch1 is not cabled", 4),
        (4, "0x0003 003 # Switch portguid 0x0000000000abcdef: 'X'", "port GUID 0x0000000000abcdef is not in the topology", 4),
        (9, "Unicast lids [0-6] of switch Lid 3 guid 0x0000000000999999 ('Switch2'):", "switch GUID 0x0000000000999999", 9),
        (9, "Unicast lids [0-6] of switch Lid 3 guid 0x0000000000100001 ('Switch2'):", "is host Hca1, not a switch", 9),
        (5, "0x0004 three", "unrecognised line", 5),
        (5, "0xc004 003", "not a unicast LID", 5),
        (5, "0x0004 300", "above 255", 5),
        (5, "0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'Hca1'", "given twice", 5),
        (5, "0x0004 000 # Channel Adapter portguid 0x0000000000100004: 'Hca2'", "port 0 (the switch itself)", 5),
        (1, "Unicast lids [0-6] of switch Lid 1", "cannot parse switch header", 1),
        (1, "Multicast mlids [0xc000-0xc01f] of switch Lid 1 guid 0x0000000000200000", "multicast", 1),
        (5, "0x0004 003 # Channel Adapter portguid 0x0000000000100007: 'Hca3'", "Hca3 has LID 0x0005 here but 0x0004", 6),
        (11, "0x0002 003 # Switch portguid 0x0000000000200000: 'Switch1'", "Switch1 has LID 0x0002 here but 0x0001", 11),
    ],
)
def test_bad_input_names_file_line_and_reason(fabric, lineno, new, reason, line):
    text = _replace_line(OPENSM_DUMP, lineno, new)
    with pytest.raises(NetsteerError) as e:
        parse_lft_tables(text, fabric, file="lfts.dump")
    assert reason in e.value.reason
    assert e.value.file == "lfts.dump" and e.value.field == f"line {line}"


def test_missing_destination_is_an_error_unless_allowed(fabric):
    text = _replace_line(OPENSM_DUMP, 13, "")  # Switch2's entry for Hca2 (LID 4)
    with pytest.raises(NetsteerError, match=r"Switch2 has no entry for 1 host\(s\): Hca2") as e:
        parse_lft_tables(text, fabric)
    assert e.value.field == "line 9"
    t = parse_lft_tables(text, fabric, allow_missing=True)
    assert t.hosts[fabric.node("Switch2"), fabric.host_index[fabric.node("Hca2")]] == -1


def test_missing_switch_is_an_error(fabric):
    text = "\n".join(OPENSM_DUMP.splitlines()[:8]) + "\n"
    with pytest.raises(NetsteerError, match="no table for switch Switch2"):
        parse_lft_tables(text, fabric)


def test_unreadable_file_is_a_netsteer_error(fabric, tmp_path):
    with pytest.raises(NetsteerError, match="cannot read LFT dump") as e:
        read_lft_dump(tmp_path / "nope.dump", fabric)
    assert e.value.file.endswith("nope.dump")


def test_writer_refuses_ecmp_groups_and_uncabled_ports(fabric):
    lids = sequential_lids(fabric)
    lft = np.full((fabric.n_nodes, fabric.n_hosts), -1, dtype=np.int32)
    lft[fabric.node("Switch1"), 0] = -2
    with pytest.raises(ValueError, match="ECMP"):
        format_lft_dump(fabric, lft, lids)
    lft[fabric.node("Switch1"), 0] = 7
    with pytest.raises(ValueError, match="not cabled"):
        format_lft_dump(fabric, lft, lids)


def test_lid_map_equality_is_by_value():
    a = LidMap(np.array([1, 2], dtype=np.int32), np.array([5, 6], dtype=np.uint64))
    assert a == LidMap(a.lid.copy(), a.guid.copy())
    assert a != LidMap(np.array([2, 1], dtype=np.int32), a.guid.copy())


# -- fuzzing ------------------------------------------------------------------------
_TOPO = two_switch_fabric()
_SOURCES = [OPENSM_DUMP, IBROUTE_SWITCH2]
_ALPHABET = "0123456789abcdefx :#()'[]-_\nSwitchLdguportUnca\t"


@st.composite
def mutated_dump(draw):
    text = draw(st.sampled_from(_SOURCES))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "dup_line", "drop_line"]))
        if op in ("dup_line", "drop_line"):
            lines = text.splitlines()
            i = draw(st.integers(0, len(lines) - 1))
            lines = lines[: i + 1] + lines[i:] if op == "dup_line" else lines[:i] + lines[i + 1 :]
            text = "\n".join(lines) + "\n"
            continue
        i = draw(st.integers(0, len(text)))
        chunk = draw(st.text(alphabet=_ALPHABET, min_size=1, max_size=4))
        if op == "insert":
            text = text[:i] + chunk + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + len(chunk) :]
        else:
            text = text[:i] + chunk + text[i + len(chunk) :]
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_dump(), st.booleans())
def test_fuzzed_dumps_parse_or_raise_netsteer_error(text, allow_missing):
    try:
        t = parse_lft_tables(text, _TOPO, allow_missing=allow_missing, file="fuzz")
    except NetsteerError as e:
        assert e.file == "fuzz" and e.reason
        return
    # what parsed is consistent: ports are cabled or 0 (self) or -1 (none)
    rows = t.hosts[_TOPO.switches]
    cabled = _TOPO.out_channel[_TOPO.switches] >= 0
    for r, sw_row in enumerate(rows):
        for p in sw_row:
            assert p == -1 or (p > 0 and cabled[r, p])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_parses_or_raises_netsteer_error(text):
    try:
        parse_lft_dump(text, "fuzz")
    except NetsteerError as e:
        assert e.file == "fuzz"


def test_sample_fabric_matches_ibsims_numbering(fabric):
    from ib_samples import NET_EXAMPLES

    from netsteer.topology.ibsim_net import read_ibsim_net

    net = NET_EXAMPLES / "net.2sw2path4hca"
    if not net.exists():
        pytest.skip("ibsim-utils net examples not installed")
    t = read_ibsim_net(net)
    guid = lambda topo: {topo.node_names[n]: int(topo.node_guid[n]) for n in range(topo.n_nodes)}  # noqa: E731
    assert guid(t) == guid(fabric)
    # and the OpenSM dump taken on that very file reads against it
    assert parse_lft_tables(OPENSM_DUMP, t).lids.lid.max() == 6


# -- dual-port HCAs -------------------------------------------------------------------
def test_second_hca_ports_get_their_lids_and_routes():
    from ib_samples import OPENSM_DUMP_2PORT, dual_port_fabric

    from netsteer.routing import build_routing

    t = dual_port_fabric()
    lids = opensm_lids(t, sm_node=t.node("Switch1"))
    # the endpoints (port 1) and the second ports, as OpenSM numbered them on ibsim
    assert lids.lid.tolist() == [1, 3, 2, 5]
    assert [(t.node_names[p.node], p.port, p.lid, p.guid) for p in lids.ports] == [
        ("Hca1", 2, 4, 0x100002), ("Hca2", 2, 6, 0x100005)]
    read = parse_lft_tables(OPENSM_DUMP_2PORT, t)
    assert read.lids == lids and read.lids.max_lid() == 6
    s1, s2 = t.node("Switch1"), t.node("Switch2")
    assert read.ports[s1].tolist() == [2, 5] and read.ports[s2].tolist() == [5, 2]
    # netsteer's own min-hop routing: the dump routes the second ports too, and the
    # header's highest LID is 6, byte for byte what OpenSM's min-hop wrote
    text = format_lft_dump(t, build_routing(t, "minhop"), lids)
    assert text == OPENSM_DUMP_2PORT
    assert format_lft_dump(t, read.hosts, read.lids, read.switches, read.ports) == OPENSM_DUMP_2PORT


def test_second_port_routes_balance_like_opensm_minhop():
    from ib_samples import dual_port_fabric

    t = dual_port_fabric()
    lids = opensm_lids(t, sm_node=t.node("Switch1"))
    s1, s2 = t.node("Switch1"), t.node("Switch2")
    host = np.full((t.n_nodes, t.n_hosts), -1, dtype=np.int32)
    h1, h2 = t.host_index[t.node("Hca1")], t.host_index[t.node("Hca2")]
    host[s1, h1], host[s2, h2] = 1, 1
    host[s1, h2], host[s2, h1] = 5, 5  # endpoints over the second cable this time
    # walking the LIDs: Switch2's LID 4 (Hca1 port 2) comes after LID 2 went out of
    # port 5, so it takes port 3; Switch1's LID 6 comes after LID 5 on port 5: port 3
    got = minhop_port_lft(t, lids, host)
    assert got[s1].tolist() == [2, 3] and got[s2].tolist() == [3, 2]
    # without endpoint routes to count, the lowest min-hop port
    assert minhop_port_lft(t, lids)[[s1, s2]].tolist() == [[2, 3], [3, 2]]
    assert (minhop_port_lft(t, lids)[t.hosts] == -1).all()


def test_old_dumps_without_second_ports_still_read():
    # dumps netsteer wrote before it routed second HCA ports have no entries for
    # them: the endpoints' tables are all that route-eval needs
    from ib_samples import OPENSM_DUMP_2PORT, dual_port_fabric

    t = dual_port_fabric()
    old = "".join(l + "\n" for l in OPENSM_DUMP_2PORT.splitlines() if "0x0004" not in l and "0x0006" not in l)
    tables = parse_lft_tables(old, t)
    assert tables.lids.ports == () and tables.ports.shape == (t.n_nodes, 0)
    assert np.array_equal(tables.hosts, parse_lft_tables(OPENSM_DUMP_2PORT, t).hosts)


@pytest.mark.parametrize(
    "old, new, reason",
    [
        ("0x0004 002 # Channel Adapter portguid 0x0000000000100002: 'Hca1'",
         "0x0004 000 # Channel Adapter portguid 0x0000000000100002: 'Hca1'", "port 0 (the switch itself) for LID 0x0004, which is Hca1 port 2"),
        ("0x0004 002 # Channel Adapter portguid 0x0000000000100002: 'Hca1'",
         "0x0004 007 # Channel Adapter portguid 0x0000000000100002: 'Hca1'", "port 7 of switch Switch1 is not cabled"),
        ("0x0006 005 # Channel Adapter portguid 0x0000000000100005: 'Hca2'",
         "0x0006 005 # Channel Adapter portguid 0x0000000000100002: 'Hca2'", "Hca1 port 2 has LID 0x0006 here but 0x0004"),
        ("0x0006 005 # Channel Adapter portguid 0x0000000000100005: 'Hca2'",
         "0x0006 005 # Channel Adapter portguid 0x0000000000100004: 'Hca2'", "Hca2 has LID 0x0006 here but 0x0005"),
        ("0x0004 005 # Channel Adapter portguid 0x0000000000100002: 'Hca1'",
         "0x0004 005 # Channel Adapter portguid 0x0000000000100001: 'Hca1'", "Hca1 has LID 0x0004 here but 0x0002"),
    ],
)
def test_bad_second_port_entries_name_file_line_and_reason(old, new, reason):
    from ib_samples import OPENSM_DUMP_2PORT, dual_port_fabric

    t = dual_port_fabric()
    assert old in OPENSM_DUMP_2PORT
    text = OPENSM_DUMP_2PORT.replace(old, new, 1)
    with pytest.raises(NetsteerError) as e:
        parse_lft_tables(text, t, file="lfts.dump")
    assert reason in e.value.reason
    assert e.value.file == "lfts.dump" and e.value.field.startswith("line ")
