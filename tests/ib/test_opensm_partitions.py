"""partitions.conf reader/writer, on the grammar of ``man opensm`` (no ibsim)."""

from __future__ import annotations

import numpy as np
import pytest
from ib_samples import two_switch_fabric
from hypothesis import given, settings
from hypothesis import strategies as st

from netsteer.drivers.opensm.partitions import (
    Partition,
    can_communicate,
    format_partitions_conf,
    parse_partitions_conf,
    read_partitions_conf,
    with_default,
    write_partitions_conf,
)
from netsteer.errors import NetsteerError

# port GUIDs of the fixture (node GUID + 1): Hca1..Hca4
G1, G2, G3, G4 = 0x100001, 0x100004, 0x100007, 0x10000A


def names(topo, members):
    return {topo.node_names[n]: m for n, m in members.items()}


def test_man_page_style_file(fabric):
    text = f"""
# comment line
Default=0x7fff : ALL, SELF=full ;
NewPartition , ipoib : {G1:#x}=full, {G2:#x}=limi,  {G3:#x} ;   # trailing comment
ShareIO = 0x80 , defmember=full : {G1:#x}, {G2:#x};
ShareIO = 0x80 : {G3:#x}, {G4:#x}=full;
Multi=0x9000,ipoib,mtu=4,rate=0x7,sl=2,scope=2,scope=5,Q_Key=0x0b1b,TClass=1,FlowLabel=7:
       mgid=ff12:401b::0707,sl=1 # random IPv4 group
       mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2
       {G1:#x}=both,
       {G4:#x};
"""
    parts = parse_partitions_conf(text, fabric, sm_node=fabric.node("Switch1"))
    by = {p.pkey: p for p in parts}
    assert [p.pkey for p in parts] == [0x7FFF, 0x0001, 0x0080, 0x1000]
    d = by[0x7FFF]
    assert names(fabric, d.members) == {
        "Switch1": "full", "Switch2": "limited",
        "Hca1": "limited", "Hca2": "limited", "Hca3": "limited", "Hca4": "limited",
    }
    # no PKey given: generated as OpenSM does, the first unused from 1
    assert by[1].name == "NewPartition" and by[1].ipoib
    assert names(fabric, by[1].members) == {"Hca1": "full", "Hca2": "limited", "Hca3": "limited"}
    # same PKey twice: merged; defmember applies only to its own definition
    assert names(fabric, by[0x80].members) == {"Hca1": "full", "Hca2": "full", "Hca3": "limited", "Hca4": "full"}
    m = by[0x1000]  # 0x9000: only the low 15 bits count
    assert m.flags == {"mtu": 4, "rate": 7, "sl": 2, "scope": [2, 5], "Q_Key": 0x0B1B, "TClass": 1, "FlowLabel": 7}
    assert m.mgroups == ["mgid=ff12:401b::0707,sl=1", "mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2"]
    assert names(fabric, m.members) == {"Hca1": "both", "Hca4": "limited"}


def test_definitions_share_lines_and_span_lines(fabric):
    text = f"a=1:{G1:#x}=full;b=2:{G2:#x}=full;\nc=3 :\n  {G3:#x}=full,\n\n  {G4:#x}\n;"
    parts = parse_partitions_conf(text, fabric)
    assert [(p.name, p.pkey) for p in parts] == [("a", 1), ("b", 2), ("c", 3)]
    assert names(fabric, parts[2].members) == {"Hca3": "full", "Hca4": "limited"}


def test_last_definition_may_lack_its_semicolon_as_in_opensm(fabric):
    # OpenSM adds members as it reads them: an unterminated last definition applies
    # (checked against OpenSM on ibsim in test_opensm_fabric.py)
    parts = parse_partitions_conf(f"a=1: {G1:#x}=full;\nb=2 :\n  {G2:#x}=full,\n  {G3:#x}\n", fabric)
    assert [(p.name, p.pkey) for p in parts] == [("a", 1), ("b", 2)]
    assert names(fabric, parts[1].members) == {"Hca2": "full", "Hca3": "limited"}
    assert parse_partitions_conf("a=1:", fabric)[0].members == {}
    # a ';' missing before another definition: OpenSM reads the header as a port and
    # refuses it ("bad PortGUID"); netsteer says which ';' is missing
    for text in (f"a=1: {G1:#x}\nb=2: {G2:#x};", f"a=1: {G1:#x}\n b : {G2:#x};"):
        with pytest.raises(NetsteerError) as e:
            parse_partitions_conf(text, fabric, file="p.conf")
        assert e.value.message().startswith("p.conf: line 2: ")
        assert "inside the definition of 'a': the ';' that ends that definition is missing" in e.value.reason


def test_one_pkey_under_two_names_merges_as_in_opensm(fabric):
    parts = parse_partitions_conf(f"a=0x10,ipoib: {G1:#x}=full; b=0x10,sl=3: {G2:#x}, {G1:#x}=limited;", fabric)
    assert len(parts) == 1
    p = parts[0]
    assert (p.name, p.pkey, p.ipoib, p.flags) == ("a", 0x10, True, {"sl": 3})
    # Hca1's last mention (limited) wins, as OpenSM's osm_prtn_add_port overwrites
    assert names(fabric, p.members) == {"Hca1": "limited", "Hca2": "limited"}


@pytest.mark.parametrize("text, want", [
    # one definition: the last mention wins, whichever is stronger (ibsim: smpquery pkeys)
    (f"a=0x10: {G1:#x}=full, {G1:#x}=limited, {G2:#x}=limited, {G2:#x}=full;",
     {"Hca1": "limited", "Hca2": "full"}),
    (f"a=0x10: {G1:#x}=both, {G1:#x}=limi;", {"Hca1": "limited"}),
    # across two definitions of one PKey
    (f"a=0x10: {G1:#x}=full, {G2:#x}=full; a2=0x10: {G1:#x}=limited, {G2:#x}=limited;",
     {"Hca1": "limited", "Hca2": "limited"}),
    # keywords expand where they stand
    (f"c=0x30: ALL_CAS=full, {G3:#x}=limited, {G4:#x}=limited;",
     {"Hca1": "full", "Hca2": "full", "Hca3": "limited", "Hca4": "limited"}),
    (f"c=0x30: {G3:#x}=limited, ALL_CAS=full;", {"Hca1": "full", "Hca2": "full", "Hca3": "full", "Hca4": "full"}),
    (f"c=0x30: ALL=full, ALL_SWITCHES=limited, SELF=both;",
     {"Hca1": "full", "Hca2": "full", "Hca3": "full", "Hca4": "full", "Switch1": "both", "Switch2": "limited"}),
])
def test_a_port_mentioned_twice_keeps_its_last_mention_as_in_opensm(fabric, text, want):
    parts = parse_partitions_conf(text, fabric, sm_node=fabric.node("Switch1"))
    assert len(parts) == 1 and names(fabric, parts[0].members) == want


def test_last_mention_decides_who_may_talk(fabric):
    # the tester's case: two limited members left, so Hca3 and Hca4 may not talk
    parts = parse_partitions_conf(f"c=0x30: ALL_CAS=full, {G3:#x}=limited, {G4:#x}=limited;", fabric)
    h3, h4 = (fabric.host_index[fabric.node(n)] for n in ("Hca3", "Hca4"))
    assert not can_communicate(parts, fabric)[h3, h4]


@pytest.mark.parametrize("text, sl", [
    (f"a=0x10,sl=3: {G1:#x}; b=0x10: {G2:#x};", None),  # the later header: no sl, so 0
    (f"a=0x10: {G1:#x}; b=0x10,sl=2: {G2:#x};", 2),
    (f"a=0x10,sl=3: {G1:#x}; b=0x10,sl=1: {G2:#x};", 1),
])
def test_same_pkey_twice_takes_sl_from_the_later_header_as_in_opensm(fabric, text, sl):
    # osm_prtn_config.c partition_create: p_prtn->sl = conf->flags.sl on every header,
    # and flags.sl starts at OSM_DEFAULT_SL (0) for each definition
    p = parse_partitions_conf(text, fabric)[0]
    assert p.flags.get("sl") == sl


@pytest.mark.parametrize("text", [
    "Default=0x7fff : ALL=limited, SELF=full ;",
    "Default=0x7fff : SELF=full, ALL=limited ;",
    f"p=1: {G1:#x}=full, SELF=limited, {G2:#x}=full, ALL_SWITCHES=both ;",
    f"p=1: SELF=full, {G1:#x}=limited ; p=1: {G2:#x}=full, SELF=limited, {G3:#x}=full ;",
    f"p=1: ALL=full, SELF=limited, ALL_CAS=limited, SELF=both, {G4:#x}=full ;",
])
def test_self_kept_symbolic_writes_back_what_opensm_would_apply(fabric, text):
    # read without the SM's node (as route does), written, read back: every port, the
    # SM's included wherever it runs, keeps the membership the input gave it
    parts = parse_partitions_conf(text, fabric)
    written = format_partitions_conf(parts, fabric)
    assert parse_partitions_conf(written, fabric) == parts
    for sm in range(fabric.n_nodes):
        want = [p.members for p in parse_partitions_conf(text, fabric, sm_node=sm)]
        assert [p.members for p in parse_partitions_conf(written, fabric, sm_node=sm)] == want, sm


def test_keywords_and_abbreviations_follow_opensm(fabric):
    # OpenSM compares keywords with strncmp(name, KEYWORD, strlen(name))
    parts = parse_partitions_conf("p=5: ALL_C=f, ALL_S=lim, N, ALL_ROUTERS=full;", fabric)
    assert names(fabric, parts[0].members) == {
        "Hca1": "full", "Hca2": "full", "Hca3": "full", "Hca4": "full",
        "Switch1": "limited", "Switch2": "limited",
    }
    # a bare number as the name is the PKey; octal as in strtoul
    assert parse_partitions_conf("010 : ;", fabric)[0].pkey == 8
    # omitted PKey with a known name joins that partition
    parts = parse_partitions_conf(f"x=0x10: {G1:#x}; x: {G2:#x}=full;", fabric)
    assert len(parts) == 1 and names(fabric, parts[0].members) == {"Hca1": "limited", "Hca2": "full"}


def test_self_without_sm_node_is_kept_symbolic(fabric):
    p = parse_partitions_conf("Default=0x7fff: SELF=full;", fabric)[0]
    assert p.members == {} and p.self_membership == "full"
    again = parse_partitions_conf(format_partitions_conf([p], fabric), fabric)
    assert again == [p]


def test_node_guid_is_refused_as_opensm_ignores_it(fabric):
    # OpenSM looks members up by port GUID: a CA's node GUID names no port, and OpenSM
    # leaves the host out (seen on ibsim, test_opensm_fabric.py); it used to be taken
    # as the host
    with pytest.raises(NetsteerError) as e:
        parse_partitions_conf("p=1:\n 0x100003=full;", fabric, file="p.conf")  # Hca2's node GUID
    assert e.value.file == "p.conf" and e.value.field == "line 2"
    assert "node GUID of Hca2" in str(e.value) and f"{G2:#018x} (port 1)" in str(e.value)
    # a switch's node GUID is its port 0's GUID: a member
    assert parse_partitions_conf("p=1: 0x200000=full;", fabric)[0].members == {fabric.node("Switch1"): "full"}


@pytest.mark.parametrize(
    "text, reason, line",
    [
        ("p=1: 0x123456=full;", "port GUID 0x0000000000123456 is not in the topology", 1),
        ("\n\np=1:\n 0x100001,\n 0xdeadbeef;", "port GUID 0x00000000deadbeef is not in the topology", 5),
        ("p=1 0x100001;", "no partition definition found", 1),
        ("p=0x1g: ;", "bad PKey '0x1g'", 1),
        ("p=0x12345: ;", "does not fit in 16 bits", 1),
        ("p=: ;", "has '=' but no PKey", 1),
        ("p=1,bogus: ;", "unknown partition flag 'bogus'", 1),
        ("p=1,,ipoib: ;", "empty partition flag", 1),
        ("p=1,sl=16: ;", "sl=16 is out of range", 1),
        ("p=1,mtu=x: ;", "flag 'mtu' needs a number", 1),
        ("p=1,defmember=most: ;", "defmember needs full, limited or both", 1),
        ("p=1: 0x100001=fulll;", "must be full, limited or both", 1),
        ("p=1: zz;", "bad port GUID 'zz'", 1),
        ("p=1: 0;", "bad port GUID '0'", 1),
        ("p=1: ;\n;", "';' without a partition definition", 2),
    ],
)
def test_bad_input_names_file_line_and_reason(fabric, text, reason, line):
    with pytest.raises(NetsteerError) as e:
        parse_partitions_conf(text, fabric, file="partitions.conf")
    assert reason in e.value.reason
    assert (e.value.file, e.value.field) == ("partitions.conf", f"line {line}")


def test_unknown_guid_error_from_a_file(fabric, tmp_path):
    path = tmp_path / "partitions.conf"
    path.write_text("Default=0x7fff: ALL=full;\njob=0x10:\n  0x100001=full,\n  0x2c9000000beef;\n")
    with pytest.raises(NetsteerError) as e:
        read_partitions_conf(path, fabric)
    assert e.value.file == str(path) and e.value.field == "line 4"
    assert "0x0002c9000000beef" in e.value.reason


def test_communication_needs_a_full_member(fabric):
    parts = parse_partitions_conf(f"a=1: {G1:#x}=full, {G2:#x}, {G3:#x};", fabric)
    ok = can_communicate(parts, fabric)
    h = [fabric.host_index[fabric.node(n)] for n in ("Hca1", "Hca2", "Hca3", "Hca4")]
    assert ok[h[0], h[1]] and ok[h[1], h[0]] and ok[h[0], h[2]]
    assert not ok[h[1], h[2]]  # two limited members
    assert not ok[h[3], h[0]] and ok[h[3], h[3]]
    # the implicit default partition lets nobody but the SM talk to everyone
    full = can_communicate(with_default(parts, fabric, sm_node=fabric.node("Switch1")), fabric)
    assert np.array_equal(full, ok)  # the SM is a switch, not a host
    assert with_default(parts, fabric)[0].self_membership == "full"


def test_writer_round_trip_and_refusals(fabric, tmp_path):
    parts = [
        Partition("Default", 0x7FFF, {n: "full" for n in range(fabric.n_nodes)}, ipoib=True),
        Partition("j", 0x12, {fabric.node("Hca1"): "both"}, flags={"sl": 3, "scope": [2, 8], "Q_Key": 5},
                  indx0=True, mgroups=["mgid=ff12::1,sl=1"]),
        Partition("empty", 0x13),
    ]
    path = tmp_path / "p.conf"
    write_partitions_conf(parts, fabric, path)
    assert read_partitions_conf(path, fabric) == parts
    # inner blanks are kept by OpenSM's parse_name_token: written as they are
    spaced = [Partition("my part", 1, {fabric.node("Hca1"): "full"})]
    assert parse_partitions_conf(format_partitions_conf(spaced, fabric), fabric) == spaced
    for name in ("a,b", "a=b", "a;b", "a#b", "a:b", " a", "a ", "a\nb"):
        with pytest.raises(ValueError, match="cannot be written"):
            format_partitions_conf([Partition(name, 1)], fabric)
    with pytest.raises(ValueError, match="not in 1..0x7fff"):
        format_partitions_conf([Partition("a", 0x8000)], fabric)


# -- fuzzing ------------------------------------------------------------------------
_TOPO = two_switch_fabric()
_VALID = f"""Default=0x7fff : ALL=limited, SELF=full ; # c
jobA = 0x8001, ipoib, defmember=full, sl=1 :
   {G1:#x}, {G2:#x}=limi,
   mgid=ff12:401b::1,rate=3
   {G3:#x}=both ;
0x20 : ALL_CAS=full, NONE ;
"""


@st.composite
def mutated_conf(draw):
    text = _VALID
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(text)))
        chunk = draw(st.text(alphabet="0123456789abcdefx=,:;# \n\tALSEFNOfulimtdbh_", min_size=1, max_size=4))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        if op == "insert":
            text = text[:i] + chunk + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + len(chunk) :]
        else:
            text = text[:i] + chunk + text[i + len(chunk) :]
    return text


@settings(max_examples=500, deadline=None)
@given(mutated_conf(), st.booleans())
def test_fuzzed_conf_parses_or_raises_netsteer_error(text, with_sm):
    sm = _TOPO.node("Switch1") if with_sm else None
    try:
        parts = parse_partitions_conf(text, _TOPO, sm_node=sm, file="fuzz")
    except NetsteerError as e:
        assert e.file == "fuzz" and e.field.startswith("line ")
        return
    for p in parts:
        assert 0 < p.pkey <= 0x7FFF
        assert set(p.members.values()) <= {"full", "limited", "both"}
        assert all(0 <= n < _TOPO.n_nodes for n in p.members)
    # whatever parsed can be written and reads back the same
    text2 = format_partitions_conf(parts, _TOPO)
    assert parse_partitions_conf(text2, _TOPO, sm_node=sm) == parts


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_parses_or_raises_netsteer_error(text):
    try:
        parse_partitions_conf(text, _TOPO, file="fuzz")
    except NetsteerError as e:
        assert e.file == "fuzz"
