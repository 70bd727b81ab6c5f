"""A stall is reported in the scenario's terms: flows by their job and ``id:`` (or
place in the job), links by their two ends as ``node:port``, the same in the text,
``--json`` and ``result.json``. It used to give DAG indices (``first_flows: [0, 1]``,
``links=[16, 17]``) that nothing in the output maps back."""

from __future__ import annotations

import json

STALL = """name: st
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: minhop}
jobs:
  - name: a
    flows:
      - {id: x, src: 0, dst: 4, bytes: 1MiB}
      - {id: y, src: 5, dst: 6, bytes: 1MiB, after: [x]}
      - {src: 1, dst: 5, bytes: 1MiB}
  - name: bg
    bulk: [{src: 2, dst: 3}]
events:
  - {at: 0, link_down: [{node: s1_0, port: 5}, {node: s1_0, port: 6}]}
"""

DOWN = ["s1_0:5 <-> s2_0:1", "s1_0:6 <-> s2_1:1"]


def test_a_stall_names_flows_and_links_as_the_scenario_does(cli, tmp_path):
    f = tmp_path / "st.yaml"
    f.write_text(STALL)
    js = cli("run", f, "--no-progress", "--json", "--out", tmp_path / "o")
    assert js.code == 0
    got = json.loads(js.out)
    st = got["stalled"]
    assert st["first_flows"] == ["a:x", "a:y", "a:flows.2"] and st["first_flow_indices"] == [0, 1, 2]
    assert st["links_down"] == DOWN
    # x and flows.2 wait on the dead uplinks; y waits for x (no route yet)
    assert st["blocked_by"] == {"a:x": [DOWN[0]], "a:flows.2": [DOWN[1]]}
    assert got["events"][0]["links"] == DOWN and got["events"][0]["link_indices"] == [16, 17]
    saved = json.loads((tmp_path / "o" / "result.json").read_text())
    assert saved["stalled"] == st and saved["events"] == got["events"]
    text = cli("run", f, "--no-progress")
    assert "links (links=[s1_0:5 <-> s2_0:1, s1_0:6 <-> s2_1:1], up=False)" in text.out
    err = " ".join(text.err.split())
    assert ("flows a:x (route crosses s1_0:5 <-> s2_0:1), a:y, a:flows.2 (route crosses s1_0:6 <-> s2_1:1); "
            "links left down: s1_0:5 <-> s2_0:1, s1_0:6 <-> s2_1:1") in err
