"""ibnetdiscover reader: real output (captured from ibsim), rates, names, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from netsteer.errors import NetsteerError
from netsteer.topology import HOST, read_ibnetdiscover
from netsteer.topology.ibnetdiscover import ib_rate, ib_rate_for

# `ibnetdiscover` against `ibsim -s net.2sw2path4hca` (ibsim 0.10, infiniband-diags).
REAL = '''\
#
# Topology file: generated on Sun Nov 22 05:33:34 2026
#
# Initiated from node 0000000000200000 port 0000000000200000

vendid=0x0
devid=0x0
sysimgguid=0x200001
switchguid=0x200001(200001)
Switch	8 "S-0000000000200001"		# "Switch2" base port 0 lid 0 lmc 0
[1]	"H-0000000000100003"[1](100004) 		# "Hca2" lid 0 4xSDR
[2]	"H-0000000000100009"[1](10000a) 		# "Hca4" lid 0 4xSDR
[3]	"S-0000000000200000"[3]		# "Switch1" lid 0 4xSDR
[5]	"S-0000000000200000"[5]		# "Switch1" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x200000
switchguid=0x200000(200000)
Switch	8 "S-0000000000200000"		# "Switch1" base port 0 lid 0 lmc 0
[1]	"H-0000000000100000"[1](100001) 		# "Hca1" lid 0 4xSDR
[2]	"H-0000000000100006"[1](100007) 		# "Hca3" lid 0 4xSDR
[3]	"S-0000000000200001"[3]		# "Switch2" lid 0 4xSDR
[5]	"S-0000000000200001"[5]		# "Switch2" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100009
caguid=0x100009
Ca	2 "H-0000000000100009"		# "Hca4"
[1](10000a) 	"S-0000000000200001"[2]		# lid 0 lmc 0 "Switch2" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100003
caguid=0x100003
Ca	2 "H-0000000000100003"		# "Hca2"
[1](100004) 	"S-0000000000200001"[1]		# lid 0 lmc 0 "Switch2" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100006
caguid=0x100006
Ca	2 "H-0000000000100006"		# "Hca3"
[1](100007) 	"S-0000000000200000"[2]		# lid 0 lmc 0 "Switch1" lid 0 4xSDR

vendid=0x0
devid=0x0
sysimgguid=0x100000
caguid=0x100000
Ca	2 "H-0000000000100000"		# "Hca1"
[1](100001) 	"S-0000000000200000"[1]		# lid 0 lmc 0 "Switch1" lid 0 4xSDR
'''


def write(tmp_path: Path, text: str, name: str = "fabric.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def adjacency(t):
    return {frozenset(((t.node_names[a], int(pa)), (t.node_names[b], int(pb))))
            for a, pa, b, pb in zip(t.link_a, t.link_a_port, t.link_b, t.link_b_port)}


def test_real_output(tmp_path):
    t = read_ibnetdiscover(write(tmp_path, REAL), link_latency_ns=250)
    assert t.n_hosts == 4 and t.n_switches == 2 and t.n_links == 6
    assert sorted(t.node_names) == ["Hca1", "Hca2", "Hca3", "Hca4", "Switch1", "Switch2"]
    assert (t.node_level == -1)[t.switches].all()
    assert int(t.node_guid[t.node("Switch1")]) == 0x200000
    assert int(t.node_guid[t.node("Hca4")]) == 0x100009
    assert set(t.link_bandwidth.tolist()) == {8e9}  # 4xSDR: 4 lanes x 2 Gbit/s data
    assert set(t.link_latency_ns.tolist()) == {250}
    assert adjacency(t) == {
        frozenset({("Switch1", 1), ("Hca1", 1)}), frozenset({("Switch1", 2), ("Hca3", 1)}),
        frozenset({("Switch1", 3), ("Switch2", 3)}), frozenset({("Switch1", 5), ("Switch2", 5)}),
        frozenset({("Switch2", 1), ("Hca2", 1)}), frozenset({("Switch2", 2), ("Hca4", 1)}),
    }
    assert t.meta["kind"] == "ibnetdiscover"
    assert t.meta["ident"][t.node("Switch2")] == "S-0000000000200001"


@pytest.mark.parametrize("w,s,gbps", [
    (4, "SDR", 8), (4, "DDR", 16), (4, "QDR", 32), (1, "QDR", 8), (12, "QDR", 96),
    (4, "FDR", 4 * 14.0625 * 64 / 66), (4, "EDR", 100), (4, "HDR", 200), (2, "NDR", 200),
])
def test_rates(w, s, gbps):
    assert ib_rate(w, s) == pytest.approx(gbps * 1e9)
    assert ib_rate_for(ib_rate(w, s), widths=(w,), speeds=(s, "SDR")) == (w, s)


def test_rate_for_prefers_4x_on_ties():
    assert ib_rate_for(32e9) == (4, "QDR")
    assert ib_rate_for(100e9) == (4, "EDR")


SMALL = '''\
# hand-written, in ibnetdiscover's format
switchguid=0x10(10)
Switch\t4 "S-0000000000000010"\t\t# "leaf" enhanced port 0 lid 1 lmc 0
[1]\t"H-0000000000000100"[1](101) \t\t# "node mlx5_0" lid 2 4xEDR
[2]\t"H-0000000000000200"[1](201) \t\t# "node mlx5_0" lid 3 4xQDR
[3]\t"S-0000000000000020"[1]\t\t# "spine" lid 4 4xHDR

Switch\t2 "S-0000000000000020"\t\t# "spine" base port 0 lid 4 lmc 0
[1]\t"S-0000000000000010"[3]\t\t# "leaf" lid 1 4xHDR

Ca\t1 "H-0000000000000100"\t\t# "node mlx5_0"
[1](101) \t"S-0000000000000010"[1]\t\t# lid 2 lmc 0 "leaf" lid 1 4xEDR

Ca\t1 "H-0000000000000200"\t\t# "node mlx5_0"
[1](201) \t"S-0000000000000010"[2]\t\t# lid 3 lmc 0 "leaf" lid 1 4xEDR
'''


def test_shared_descriptions_get_identifiers_and_lower_rate_wins(tmp_path):
    t = read_ibnetdiscover(write(tmp_path, SMALL))
    assert t.node_names == ["leaf", "spine", "node mlx5_0 H-0000000000000100",
                            "node mlx5_0 H-0000000000000200"]
    bw = {frozenset((t.node_names[a], t.node_names[b])): float(x)
          for a, b, x in zip(t.link_a, t.link_b, t.link_bandwidth)}
    assert bw[frozenset(("leaf", "spine"))] == 200e9
    assert bw[frozenset(("leaf", "node mlx5_0 H-0000000000000100"))] == 100e9
    # QDR on one end, EDR on the other: the link trains at QDR
    assert bw[frozenset(("leaf", "node mlx5_0 H-0000000000000200"))] == 32e9
    assert [int(g) for g in t.node_guid] == [0x10, 0x20, 0x100, 0x200]
    assert list(t.node_kind == HOST) == [False, False, True, True]


@pytest.mark.parametrize("old,new,line,match", [
    ('"S-0000000000000020"[1]\t\t# "spine" lid 4 4xHDR', '"S-0000000000000099"[1]', 6,
     'cabled to "S-0000000000000099", which has no Switch or Ca block'),
    ('[1]\t"S-0000000000000010"[3]', '[1]\t"S-0000000000000010"[4]', 6,
     "but that port says it is cabled to port 4"),
    ("4xHDR\n\nSwitch", "4xZDR\n\nSwitch", 6, "bad link rate 4xZDR"),
    ('[3]\t"S-', '[7]\t"S-', 6, r"port 7 of \"S-0000000000000010\" is outside 1..4"),
    ("Switch\t2", "Rt\t2", 8, "router nodes"),
    ("[2]\t\"H-0000000000000200\"[1](201)", "[1]\t\"H-0000000000000200\"[1](201)", 5,
     "listed twice"),
    ("Ca\t1", "Cq\t1", 11, "cannot read line"),
])
def test_errors_name_file_and_line(tmp_path, old, new, line, match):
    assert old in SMALL
    p = write(tmp_path, SMALL.replace(old, new, 1))
    with pytest.raises(NetsteerError, match=match) as e:
        read_ibnetdiscover(p)
    assert e.value.file == str(p)
    assert e.value.field == f"line {line}"


def test_missing_rate_needs_a_default(tmp_path):
    text = SMALL.replace(" 4xHDR", "")
    with pytest.raises(NetsteerError, match="no link rate"):
        read_ibnetdiscover(write(tmp_path, text))
    t = read_ibnetdiscover(write(tmp_path, text), default_bandwidth=1e9)
    assert sorted(set(t.link_bandwidth.tolist())) == [1e9, 32e9, 100e9]


def test_unreadable_and_empty_files(tmp_path):
    with pytest.raises(NetsteerError, match="cannot read file"):
        read_ibnetdiscover(tmp_path / "nope.txt")
    with pytest.raises(NetsteerError, match="no Switch or Ca blocks"):
        read_ibnetdiscover(write(tmp_path, "# nothing\n"))


def test_two_nodes_on_one_guid_are_refused(tmp_path):
    # explorer's fault 1: two nodes on one GUID were read, and route wrote tables
    # naming both on one port GUID (which route-eval then refused)
    text = REAL.replace("H-0000000000100009", "hca4").replace("caguid=0x100009", "caguid=0x100003")
    p = write(tmp_path, text)
    with pytest.raises(NetsteerError, match=r'GUID 0x100003 of "H-0000000000100003" is "hca4"\'s') as e:
        read_ibnetdiscover(p)
    assert e.value.file == str(p) and e.value.field.startswith("line ")
