"""``netsteer run`` text output: each controller's summary, as ``--json`` has it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from netsteer.units import format_seconds

UNISONFLOW = """
name: uf
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 2], link_bandwidth: 1Gbps, link_latency: 1us}
routing: {engine: ecmp}
jobs:
  - name: app
    ranks: 16
    program:
      - {op: allreduce, bytes: 64KiB, algorithm: recursive_doubling}
      - {op: bcast, bytes: 64KiB, root: 0, algorithm: binomial}
controller:
  unisonflow:
    jobs:
      app: [{module: allreduce-disjoint, algorithm: recursive_doubling}, {module: bcast-multicast}]
    controller_rtt: 1ms
    table_capacity: 5
"""

STEERING = """
name: hx
topology: {kind: hyperx, S: [2, 3], T: 2, link_bandwidth: 10Gbps, link_latency: 1us,
           circuits: [{dim: 0, switching_time: 10us, name: sip}]}
routing: {engine: dor}
jobs:
  - name: skew
    flows:
      - {src: 0, dst: 8, bytes: 100MB}
      - {src: 1, dst: 9, bytes: 100MB}
      - {src: 2, dst: 10, bytes: 100MB}
      - {src: 3, dst: 11, bytes: 100MB}
controller:
  steering: {at: [0s]}
"""


def run(tmp_path, text, *args):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f), "--no-progress", *args],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture
def both(tmp_path):
    def go(text):
        return run(tmp_path, text), json.loads(run(tmp_path, text, "--json"))["controller"]
    return go


def test_unisonflow_packet_ins_rules_and_tables_are_printed(both):
    # the text output had none of it; the hybrid controller's reconfigurations were there
    text, ctl = both(UNISONFLOW)
    uf, t = ctl["unisonflow"], ctl["unisonflow"]["tables"]
    mods = ", ".join(f"{m} {n}" for m, n in uf["by_module"].items())
    assert f"unisonflow: {uf['packet_ins']} packet-ins ({mods}), {uf['rules']} rules, 0 failures\n" in text
    assert t["refused"] > 0 and t["evicted"] > 0  # a small table: both show
    assert (f"unisonflow tables: {t['installed_tags']} tags installed, at most 5 rules per switch, "
            f"0 expired, {t['evicted']} evicted, {t['refused']} refused") in text
    assert f"first refusal at {format_seconds(uf['refusals'][0]['at_s'])}: table full at " in text


def test_each_steering_plan_is_printed(both):
    text, ctl = both(STEERING)
    (p,) = ctl["steering"]["plans"]
    assert p["moved_ports"] > 0
    assert (f"steering at 0 s ({p['method']}, {p['evaluated']} configurations): {p['moved_ports']} ports moved, "
            f"busiest channel under {p['routing']} for all steered bytes at once {format_seconds(p['before']['max_channel_busy_s'])} -> "
            f"{format_seconds(p['after']['max_channel_busy_s'])}\n") in text


def test_a_steering_time_after_the_run_is_reported(both):
    # at: [100s] on a job of milliseconds did nothing and said nothing
    text, ctl = both(STEERING.replace("at: [0s]", "at: [0s, 100s]"))
    assert ctl["steering"]["not_reached_s"] == [100.0]
    assert len(ctl["steering"]["plans"]) == 1
    assert "steering at 100 s: not done, the run ended before it\n" in text


SMALL = """
name: b
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
jobs:
  - name: a
    flows: [{src: 0, dst: 1, bytes: 1B}, {src: 2, dst: 1, bytes: 1B}, {src: 3, dst: 1, bytes: 1B}]
  - name: big
    flows: [{src: 0, dst: 2, bytes: 1GB, start: 1ms}]
"""


def test_times_keep_their_digits_at_any_scale(tmp_path):
    """The tables rounded times to 6 decimals: a microsecond-scale job (2.003e-06 s in
    --json) printed 0.000002 for its completion and operation time, and two runs 3 ns
    apart read the same. Now adaptive units, every digit down to the clock's."""
    text = run(tmp_path, SMALL)
    res = json.loads(run(tmp_path, SMALL, "--json"))
    a, big = res["jobs"]
    assert a["completion_s"] == pytest.approx(2.003e-06) and "2.003 us" in text
    assert "0.000002" not in text
    assert format_seconds(big["completion_s"]) == "801.002 ms" and "801.002 ms" in text
    assert f"makespan {format_seconds(res['makespan_s'])}   simulated in" in text
    # the operation table: a's flows, same span as its completion
    (span,) = {o.get("time_s", o.get("span_s")) for o in a["operations"].values()}
    assert text.count(format_seconds(span)) >= 2, text


LATE = """
name: late
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
reroute_on_change: false
jobs:
  - {name: a, flows: [{src: 0, dst: 3, bytes: 1MiB, start: 4000000000s}, {src: 1, dst: 2, bytes: 1KiB, start: 4000000000s}]}
events: [{at: 1us, link_down: [{node: h0, port: 1}]}]
"""


def test_a_late_stall_prints_its_times_exactly_not_float_noise(tmp_path):
    """Past 2**53 tenths of a ns a float carries noise: the makespan and the stall time
    printed as 4000000000.0000032768 s. They come from the engine's integer ns now."""
    text = run(tmp_path, LATE)
    # 1 KiB at 1.25 GB/s (819.2 ns, rounded up) after two 1 us hops: 2820 ns after the start
    assert "makespan 4000000000.00000282 s (stalled at 4000000000.00000282 s)" in text, text
    assert "32768" not in text
