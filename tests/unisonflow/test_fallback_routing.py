"""Tags without a module, and tags whose module failed, go by the run's own routing
(the scenario's ``routing``; ECMP in ``simulate``), exactly as without a controller.
They used to take the ``ecmp`` module's own hash, whatever the configured engine."""

import json

import numpy as np

from netsteer.cli import run_cli
from netsteer.topology.pgft import pgft
from netsteer.unisonflow.dataplane import TableModel
from netsteer.unisonflow.run import simulate
from netsteer.unisonflow.workload import TaggedWorkload

SCENARIO = """
name: uf-fallback
topology: {kind: pgft, levels: 3, down: [4, 4, 4], up: [1, 2, 2], link_bandwidth: 1Gbps, link_latency: 1us}
routing: {engine: ENGINE}
jobs:
  - name: app
    ranks: 64
    program:
      - {op: bcast, bytes: 1000, root: 0, algorithm: binomial}
      - {op: reduce, bytes: 1000, root: 0, algorithm: binomial}
      - {op: allreduce, bytes: 100000, algorithm: recursive_doubling}
    repeat: 2
"""
NOOP = """controller:
  unisonflow:
    jobs: JOBS
    controller_rtt: 100ns
    rule_time: 0s
"""


def run(tmp_path, capsys, text):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    assert run_cli(["run", str(p), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_no_module_takes_the_paths_of_the_run_without_controller():
    t = pgft(3, [4, 4, 4], [1, 2, 2], link_bandwidth=1e9, link_latency_ns=1000)
    w = TaggedWorkload()
    w.collective("alltoall", "pairwise", hosts=range(64), nbytes=1000, repeat=1)
    e = simulate(t, w, None)
    r = simulate(t, w, {0: []}, tables=TableModel(controller_rtt_ns=1))
    assert r.controller["by_module"] == {"ecmp": r.controller["packet_ins"]} and r.controller["packet_ins"] > 0
    differ = [f for f, (a, b) in enumerate(zip(e.paths, r.paths)) if not np.array_equal(a, b)]
    assert differ == []


def test_a_scenario_without_modules_runs_as_its_routing_engine(tmp_path, capsys):
    # dmodk: 56.86 ms without a controller; an empty controller (1 ns round trip, free
    # rules) ran 90.34 ms while the result said dmodk (the explorer's 5 repeats)
    for engine in ("dmodk", "ecmp"):
        base = run(tmp_path, capsys, SCENARIO.replace("ENGINE", engine))
        noop = run(tmp_path, capsys, SCENARIO.replace("ENGINE", engine) + NOOP.replace("JOBS", "{}"))
        assert noop["controller"]["unisonflow"]["packet_ins"] > 0
        # the paths are the same; what a packet-in adds (100 ns of round trip) is at
        # most its count times 100 ns
        bound = noop["controller"]["unisonflow"]["packet_ins"] * 100e-9
        assert 0 <= noop["makespan_s"] - base["makespan_s"] <= bound, (engine, base["makespan_s"], noop["makespan_s"])


BROKEN = """
from netsteer.unisonflow.modules import PrimitiveModule, register


@register
class AlwaysFails(PrimitiveModule):
    name = "always-fails-for-test"

    def rules(self, tag, state):
        raise RuntimeError("a bug in the module")
"""


def test_a_failed_module_falls_back_to_the_routing_engine(tmp_path, capsys):
    # every bcast tag fails in its module and is routed by the default: dmodk's paths,
    # so the run is the run without a controller
    (tmp_path / "broken.py").write_text(BROKEN)
    base = run(tmp_path, capsys, SCENARIO.replace("ENGINE", "dmodk"))
    ctl = NOOP.replace("JOBS", "{app: [{module: always-fails-for-test, primitive: bcast}]}")
    ctl += "    module_files: [broken.py]\n"
    failed = run(tmp_path, capsys, SCENARIO.replace("ENGINE", "dmodk") + ctl)
    uf = failed["controller"]["unisonflow"]
    assert uf["failures"] > 0 and "a bug in the module" in uf["failed"][0]["reason"]
    assert 0 <= failed["makespan_s"] - base["makespan_s"] <= uf["packet_ins"] * 100e-9, (base["makespan_s"], failed["makespan_s"])
