"""The 48-bit tag: round trips, the address bits, limits refused, the CLI."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from netsteer.cli import run_cli
from netsteer.unisonflow import tags
from netsteer.unisonflow.tags import Tag, TagError, decode, encode, format_mac, host_mac, is_tag, parse_mac

prims = st.sampled_from(sorted(tags.PRIMITIVES))
jobs = st.integers(0, tags.MAX_JOBS - 1)
comms = st.integers(0, tags.MAX_COMMS - 1)
ranks = st.integers(0, tags.MAX_RANKS - 1)


@given(prims, jobs, comms, ranks, ranks)
def test_round_trip_through_the_mac_text(p, j, c, s, d):
    t = Tag(p, j, c, s, d)
    v = encode(t)
    assert 0 <= v < 1 << 48
    assert decode(format_mac(v)) == t
    assert decode(v) == t


@given(prims, jobs, comms, ranks, ranks)
def test_every_tag_is_locally_administered_unicast_and_no_host(p, j, c, s, d):
    first_octet = encode(Tag(p, j, c, s, d)) >> 40
    assert first_octet & 0b10, "U/L bit set"
    assert not first_octet & 0b01, "I/G bit clear: never multicast"
    assert is_tag(encode(Tag(p, j, c, s, d)))


@given(st.integers(0, 2**32 - 1))
def test_host_addresses_are_never_tags(h):
    assert not is_tag(host_mac(h))
    with pytest.raises(TagError, match="host address"):
        decode(host_mac(h))


@given(prims, jobs, comms, ranks, ranks, st.sampled_from(["job", "comm", "src", "dst"]), st.integers(1, 2**20))
def test_values_past_a_field_are_refused_never_wrapped(p, j, c, s, d, name, over):
    values = dict(primitive=p, job=j, comm=c, src=s, dst=d)
    width = tags.LAYOUT[name][1]
    values[name] = (1 << width) - 1 + over
    with pytest.raises(TagError) as e:
        encode(Tag(**values))
    assert e.value.field == name and "does not fit" in e.value.reason
    values[name] = -over
    with pytest.raises(TagError):
        encode(Tag(**values))


def test_distinct_contexts_give_distinct_tags():
    seen = {encode(Tag(p, j, c, s, d)) for p in tags.PRIMITIVES for j in (0, 63) for c in (0, 15)
            for s in (0, 1, 32767) for d in (0, 2, 32767)}
    assert len(seen) == len(tags.PRIMITIVES) * 2 * 2 * 3 * 3


def test_refusals_name_the_field():
    with pytest.raises(TagError, match="unknown primitive 'bogus'"):
        encode(Tag("bogus", 0, 0, 0, 1))
    with pytest.raises(TagError, match="unknown primitive code 63"):
        decode("fe:00:00:00:00:01")
    with pytest.raises(TagError, match="multicast"):
        decode("0b:00:00:00:00:01")
    with pytest.raises(TagError, match="not locally administered"):
        decode("08:00:00:00:00:01")
    with pytest.raises(TagError, match="rank 9 is outside the communicator of 8"):
        decode(encode(Tag("send", 0, 0, 9, 1)), comm_size=8)
    for bad in ("0a:04:00:00:00", "0a:04:00:00:00:0g", "0a:04:00:00:00:05:06", "0a.04.00.00.00.05"):
        with pytest.raises(TagError, match="not a MAC"):
            parse_mac(bad)


def test_cli_encode_decode(capsys):
    assert run_cli(["tag", "encode", "--primitive", "reduce", "--job", "3", "--comm", "2",
                    "--src", "1000", "--dst", "7"]) == 0
    mac = capsys.readouterr().out.strip()
    assert run_cli(["tag", "decode", mac, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"primitive": "reduce", "job": 3, "comm": 2, "src": 1000, "dst": 7}


@pytest.mark.parametrize("argv, words", [
    (["tag", "decode", "fe:04:00:00:00:05"], "unknown primitive code 63"),
    (["tag", "decode", "0a:04:00:00:00:05", "--size", "4"], "rank 5 is outside the communicator of 4 ranks"),
    (["tag", "encode", "-p", "bcast", "-j", "64", "-c", "0", "-s", "0", "-d", "1"], "job: 64 does not fit"),
    (["tag", "decode", "nonsense"], "is not a MAC address"),
    # a size the 15-bit ranks cannot hold, or no size at all, is named as --size
    *[([*cmd, "--size", n], f"--size: communicator size must be 1..32768 (the tag's ranks have 15 bits), got {n}")
      for n in ("32769", "0", "-1")
      for cmd in (["tag", "encode", "-p", "send", "-j", "0", "-c", "0", "-s", "0", "-d", "1"],
                  ["tag", "decode", "06:00:00:00:00:01"])],
    # explorer's fault 12: the errors named the tag's fields (dst:), cli.md the options (--dst)
    (["tag", "encode", "-p", "send", "-j", "1", "-c", "0", "-s", "0", "-d", "99", "--size", "8"],
     "error: --dst: rank 99 is outside the communicator of 8 ranks"),
    (["tag", "encode", "-p", "foo", "-j", "1", "-c", "0", "-s", "0", "-d", "1"], "error: --primitive: unknown primitive"),
    (["tag", "encode", "-p", "send", "-j", "1", "-c", "16", "-s", "0", "-d", "1"], "error: --comm: 16 does not fit"),
    (["tag", "decode", "0a:04:00:00:00:05", "--size", "4"], "error: MAC's dst: rank 5 is outside"),
    (["tag", "decode", "nonsense"], "error: MAC: 'nonsense' is not a MAC address"),
])
def test_cli_refusals_are_one_line_and_exit_2(capsys, argv, words):
    assert run_cli(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_comm_size_is_refused_past_the_ranks_the_tag_holds():
    t = Tag("send", 0, 0, 0, tags.MAX_RANKS - 1)
    assert decode(encode(t, tags.MAX_RANKS), tags.MAX_RANKS) == t  # the largest size fits
    for bad in (tags.MAX_RANKS + 1, 0, True, 2.5):
        with pytest.raises(TagError) as e:
            encode(Tag("send", 0, 0, 0, 0), bad)
        assert e.value.field == "comm_size"
        with pytest.raises(TagError):
            decode(encode(Tag("send", 0, 0, 0, 0)), bad)


def test_layout_ranges_are_the_values_a_tag_carries():
    # each range's ends are accepted and the values just past them refused, by the codec itself
    for row in tags.layout_table():
        if row["field"] not in tags.LAYOUT:
            continue
        lo, hi = (int(x) for x in row["range"].split()[0].split(".."))
        assert hi == (1 << row["width"]) - 1
        shift = tags.LAYOUT[row["field"]][0]
        if row["field"] == "primitive":
            assert is_tag(lo << shift | tags.LOCAL_BIT) and not is_tag((lo - 1) << shift | tags.LOCAL_BIT)
            continue
        base = dict(primitive="send", job=0, comm=0, src=0, dst=0)
        for ok in (lo, hi):
            assert decode(encode(Tag(**base | {row["field"]: ok}))).as_dict()[row["field"]] == ok
        for bad in (lo - 1, hi + 1):
            with pytest.raises(TagError):
                encode(Tag(**base | {row["field"]: bad}))


def test_reproduce_refuses_more_iterations_than_memory_allows():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "netsteer", "reproduce", "unisonflow", "--iterations", str(10**20)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and "--iterations" in p.stderr and "memory limit" in p.stderr


def test_numpy_integers_are_the_same_numbers():
    import numpy as np

    t = Tag("bcast", np.int64(1), np.int32(0), np.int64(0), np.uint16(5))
    assert t == Tag("bcast", 1, 0, 0, 5) and type(t.dst) is int
    assert encode(t) == encode(Tag("bcast", 1, 0, 0, 5)) == decode(np.int64(encode(t)), np.int64(8)).value()
    with pytest.raises(TagError, match="must be an integer"):
        encode(Tag("bcast", 1.0, 0, 0, 5))


def test_a_mac_with_mixed_separators_is_refused():
    for text in ("0a:04-00:00:00:05", "0a-04:00-00:00-05"):
        with pytest.raises(TagError, match="not a MAC address"):
            parse_mac(text)
    assert parse_mac("0a-04-00-00-00-05") == parse_mac("0a:04:00:00:00:05")


@pytest.mark.parametrize("argv", [[], ["tag"], ["reproduce"], ["plan"]])
def test_a_command_group_without_a_subcommand_prints_its_usage_once(argv):
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "netsteer", *argv], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout.count("Usage:") == 1 and p.stderr == "", p.stdout
