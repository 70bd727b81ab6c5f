"""Fuzz both importers: any mutation of a valid file parses or raises NetsteerError."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from netsteer.errors import NetsteerError
from netsteer.topology import pgft, read_ibnetdiscover, read_ibsim_net, write_ibsim_net
from netsteer.topology.model import Topology

from test_topo_ibnetdiscover import REAL, SMALL  # noqa: E402  (same directory)
from test_topo_ibsim_net import NET_2SW  # noqa: E402


def _written() -> str:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "w.net"
        write_ibsim_net(pgft(2, [2, 2], [1, 2], link_bandwidth=32e9, link_latency_ns=0), p)
        return p.read_text()


SEEDS = [REAL, SMALL, NET_2SW, _written()]
ALPHABET = st.sampled_from(list('[]()"#@=x \t\n0123456789SwitchCaHdlQDRE-+wsinclude'))


@st.composite
def mutated(draw) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        lines = text.split("\n")
        op = draw(st.sampled_from(["insert", "delete", "replace", "dup_line", "drop_line",
                                   "swap_lines", "truncate", "digits"]))
        i = draw(st.integers(0, max(0, len(text) - 1)))
        j = draw(st.integers(0, len(lines) - 1))
        k = draw(st.integers(0, len(lines) - 1))
        if op == "insert":
            text = text[:i] + draw(st.text(ALPHABET, min_size=1, max_size=6)) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        elif op == "replace":
            text = text[:i] + draw(ALPHABET) + text[i + 1:]
        elif op == "dup_line":
            lines.insert(k, lines[j])
            text = "\n".join(lines)
        elif op == "drop_line":
            del lines[j]
            text = "\n".join(lines)
        elif op == "swap_lines":
            lines[j], lines[k] = lines[k], lines[j]
            text = "\n".join(lines)
        elif op == "truncate":
            text = text[:i]
        else:  # huge or odd numbers where digits were
            text = text[:i] + draw(st.sampled_from(["0", "99999999999999999999", "-1", "256"])) \
                + text[i + 1:]
    return text


def _check(reader, text: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f"
        p.write_text(text)
        try:
            t = reader(p)
        except NetsteerError as e:
            assert e.file and e.reason
            return
        assert isinstance(t, Topology)
        # whatever parsed is a consistent topology
        assert t.n_links == 0 or int(t.out_channel.max()) == 2 * t.n_links - 1
        assert (t.link_bandwidth > 0).all()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_ibnetdiscover_reader_never_crashes(text):
    _check(read_ibnetdiscover, text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_ibsim_reader_never_crashes(text):
    _check(read_ibsim_net, text)


@given(st.binary(max_size=300))
@settings(max_examples=100, deadline=None)
def test_random_bytes(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "f"
        p.write_bytes(data)
        for reader in (read_ibnetdiscover, read_ibsim_net):
            try:
                reader(p)
            except NetsteerError:
                pass


@pytest.mark.parametrize("reader,line", [(read_ibsim_net, 2), (read_ibnetdiscover, 1)])
def test_oversized_guids_are_reported(tmp_path, reader, line):
    p = tmp_path / "g.net"
    p.write_text('switchguid=0x1ffffffffffffffffff\nSwitch 2 "s"\n')
    with pytest.raises(NetsteerError, match="does not fit in 64 bits") as e:
        reader(p)
    assert e.value.field == f"line {line}"
