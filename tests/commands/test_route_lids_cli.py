"""``netsteer route`` on discovered fabrics: the fabric's LIDs, and bad LIDs refused (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from netsteer.drivers.opensm.lft_dump import parse_lft_dump

# ibnetdiscover output of one switch and two CAs, the SM on the second CA (LID 1)
DISCOVERED = """\
switchguid=0x20000a(20000a)
Switch 4 "S-000000000020000a" # "sw" base port 0 lid {sw} lmc 0
[1] "H-0000000000100000"[1](100001) # "a" lid {a} 4xQDR
[2] "H-0000000000100002"[1](100003) # "b" lid {b} 4xQDR

Ca 2 "H-0000000000100000" # "a"
[1](100001) "S-000000000020000a"[1] # lid {a} lmc 0 "sw" lid {sw} 4xQDR

Ca 2 "H-0000000000100002" # "b"
[1](100003) "S-000000000020000a"[2] # lid {b} lmc 0 "sw" lid {sw} 4xQDR
"""


def netsteer(*args):
    p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def test_the_dump_uses_the_discovered_lids(tmp_path):
    f = tmp_path / "disc.txt"
    f.write_text(DISCOVERED.format(sw=7, a=3, b=1))
    out = tmp_path / "lfts.dump"
    rc, stdout, err = netsteer("route", "-t", f, "-e", "minhop", "-o", out, "--json")
    assert rc == 0, err
    assert json.loads(stdout)["lids"] == "fabric (as discovered)"
    (block,) = parse_lft_dump(out.read_text())
    assert block.lid == 7
    assert {e.guid: e.lid for e in block.entries.values()} == {0x20000A: 7, 0x100001: 3, 0x100003: 1}


@pytest.mark.parametrize("lids, args, says", [
    (dict(sw=2, a=2, b=1), (), "LID 2 is given to"),
    (dict(sw=7, a=0, b=1), (), "a has no LID while other nodes have one"),
    (dict(sw=7, a=49153, b=1), (), "not a unicast LID"),
    (dict(sw=7, a=3, b=1), ("--sm-node", "a"), "--sm-node only places the SM on fabrics without LIDs"),
])
def test_bad_lids_are_one_line_and_exit_2(tmp_path, lids, args, says):
    f = tmp_path / "disc.txt"
    f.write_text(DISCOVERED.format(**lids))
    rc, _, err = netsteer("route", "-t", f, "-e", "minhop", "-o", tmp_path / "x.dump", *args)
    assert rc == 2
    assert says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.dump").exists()


def test_unknown_sm_node_is_refused(tmp_path):
    rc, _, err = netsteer("route", "-t", "pgft:levels=2,down=2;2,up=1;2,link_bandwidth=32Gbps", "-e", "ftree",
                          "-o", tmp_path / "x.dump", "--sm-node", "nowhere")
    assert rc == 2 and "--sm-node" in err and "nowhere" in err and len(err.strip().splitlines()) == 1


def test_all_zero_lids_mean_none(tmp_path):
    f = tmp_path / "disc.txt"
    f.write_text(DISCOVERED.format(sw=0, a=0, b=0))
    out = tmp_path / "lfts.dump"
    rc, stdout, err = netsteer("route", "-t", f, "-e", "minhop", "-o", out, "--sm-node", "b", "--json")
    assert rc == 0, err
    assert json.loads(stdout)["lids"] == "assigned as OpenSM would, SM on b"
    (block,) = parse_lft_dump(out.read_text())
    assert {e.guid: e.lid for e in block.entries.values()}[0x100003] == 1
