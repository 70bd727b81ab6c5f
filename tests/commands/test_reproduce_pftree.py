"""``netsteer reproduce pftree``: pFTree's victims never lose to ftree's, and the output reads whole."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from netsteer.reproduce.pftree import RING_TREES, TOPOLOGIES, VICTIM_PATTERNS, run


@pytest.fixture(scope="module")
def report():
    return run()  # the command's defaults: four placements, topologies A-F


def test_victims_do_at_least_as_well_under_pftree_everywhere(report):
    for name in TOPOLOGIES:
        for pat in VICTIM_PATTERNS:
            v = report["victims"][name][pat]
            assert v["pftree"] >= v["ftree"] - 1e-12, (name, pat, v)
            assert v["alone"] >= v["pftree"] - 1e-12, (name, pat, v)
        sh = report["topologies"][name]["shared_channels"]
        assert sh["pftree"] <= sh["ftree"], (name, sh)


def test_bisect_gains_where_links_can_isolate_the_victim(report):
    # the 1:1 and the larger 2:1 trees leave room for the victim's own links
    for name in "CDEF":
        v = report["victims"][name]["bisect"]
        assert v["pftree"] > 1.1 * v["ftree"], (name, v)


def test_ring_trees_share_no_more_channels_than_under_ftree(report):
    for name in RING_TREES:
        r = report["ring_ebb"][name]
        assert r["shared_channels"]["pftree"] <= r["shared_channels"]["ftree"], name
        assert r["random_ring"]["pftree"] >= r["random_ring"]["ftree"], name


def test_plain_output_keeps_every_column_title():
    p = subprocess.run([sys.executable, "-m", "netsteer", "reproduce", "pftree", "--quick", "--seeds", "1"],
                       capture_output=True, text=True, timeout=300)  # stdout is a pipe, not a terminal
    assert p.returncode == 0, p.stderr
    for title in ("pftree vs ftree", "shared ch. ftree/pftree", "scatter", "victims", "limited-resource"):
        assert title in p.stdout
    assert "…" not in p.stdout


def test_json_report():
    p = subprocess.run([sys.executable, "-m", "netsteer", "reproduce", "pftree", "--quick", "--seeds", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    rep = json.loads(p.stdout)
    assert set(rep["victims"]) == set("ABCD")


def test_gain_columns_say_what_they_compare_at_both_fidelities():
    from rich.console import Console

    from netsteer.reproduce import pftree as flow_rep
    from netsteer.reproduce import pftree_packet as packet_rep

    v = {"alone": 1.0, "ftree": 0.5, "pftree": 0.6, "pftree+vl": 0.8}
    info = {"hosts": 16, "subscription": "1:1", "victims": 4, "shared_channels": {"ftree": 5.0, "pftree": 4.0}}
    packet = {"message_bytes": 262144, "mtu": 2048, "seeds": 1, "wall_s": 0.1,
              "topologies": {"A": info}, "victims": {"A": {"bisect": v}}}
    flow = {"seeds": 1, "wall_s": 0.1, "topologies": {"A": info}, "victims": {"A": {"bisect": v}},
            "ring_ebb": {"A": {"shared_channels": info["shared_channels"], "random_ring": v,
                               "effective_bisection_bandwidth": v}}}
    for mod, rep in ((packet_rep, packet), (flow_rep, flow)):
        con = Console(record=True, width=400)
        mod.print_report(rep, con)
        text = con.export_text()
        # pftree against ftree: +20%; pftree with its VL split against ftree: +60%
        header = next(line for line in text.splitlines() if "pftree vs ftree" in line)
        row = next(line for line in text.splitlines() if "bisect" in line)
        cols = [c.strip() for c in header.split("┃" if "┃" in header else "|")]
        vals = [c.strip() for c in row.split("│" if "│" in row else "|")]
        assert vals[cols.index("pftree vs ftree")] == "+20%", (mod.__name__, text)
        assert vals[cols.index("pftree+VL vs ftree")] == "+60%", (mod.__name__, text)
