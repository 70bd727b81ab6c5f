"""Which inputs of a reproduction come from the source and which are assumed, in the
text and in ``--json`` (as qos-staging's ``setup.assumptions`` and hyperx's ``source``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SMALL_SHIFT = ["--racks", "8", "--servers-per-rack", "2", "--jobs", "2", "--phases", "2", "--circuit-switches", "2",
               "--bytes", "64MiB"]
CASES = {
    # command, its parameter block in --json, parameters that must be marked assumed,
    # one the options below moved off the source's value
    "unisonflow": (["unisonflow", "--iterations", "10", "--osu-scale", "0.01"], "parameters",
                   {"overhead_ns", "controller_rtt_ns", "rule_time_ns", "link_latency_ns"}, "iterations"),
    "hybrid-reconfig": (["hybrid-reconfig", "--rules", "100", "--duration", "20s", "--fft-phases", "4"], "parameters",
                        {"rule_time", "fft_bytes", "fft_phases", "switching_time"}, "rules"),
    "hybrid-shifting": (["hybrid-shifting", *SMALL_SHIFT], "parameters",
                        {"circuit_switches", "core_bandwidth", "jobs", "bytes"}, "racks"),
}


def _run(args):
    p = subprocess.run([sys.executable, "-m", "netsteer", "reproduce", *args], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("name", CASES)
def test_every_input_says_whether_the_source_gives_it(name):
    # unisonflow's parameters did not mark its 25 us overhead, 1 ms round trip, 1 ms
    # rule time or 1 us cables as assumptions; hybrid-reconfig and hybrid-shifting had
    # no parameter block at all
    args, key, assumed, moved = CASES[name]
    block = json.loads(_run([*args, "--json"]))[key]
    values = {k for k in block if k not in ("source", "assumptions", "changed")}
    marked = [set(block["source"]), set(block["assumptions"]), set(block["changed"])]
    assert set().union(*marked) == values  # every input is marked ...
    assert sum(len(m) for m in marked) == len(values)  # ... once
    assert assumed <= set(block["assumptions"])
    assert block["source"]  # the source gives some of them
    assert block["changed"][moved]["value"] == block[moved] != block["changed"][moved]["source"]
    text = _run(args)
    assert "from the source: " in text and "assumed (not in the source): " in text
    assert "changed by an option from the source's value: " in text
