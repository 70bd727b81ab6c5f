"""Bad input through the API is one exception type, netsteer.NetsteerError, with the
field and the reason: the same checks and messages as the command line."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import netsteer as ns
from netsteer.api.topology import from_spec

ROOT = Path(__file__).resolve().parents[2]


def _topo():
    return ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps")


BAD_CALLS = [
    (lambda: ns.pgft(2, [4], [1, 2], link_bandwidth="10Gbps"), "topology.down", "levels is 2"),
    (lambda: ns.pgft(1, [4], [1], link_bandwidth=10e9), "topology.link_bandwidth", "with a unit"),
    (lambda: ns.pgft(1, [4], [1], link_bandwidth="10Gbps", link_latency="-1us"), "topology.link_latency",
     "duration"),
    (lambda: ns.hyperx([4, 4], 0, link_bandwidth="10Gbps"), "topology.T", "T"),
    (lambda: ns.read_topology("pgft:levels=2,down=4"), "topology.up", "missing"),
    (lambda: ns.hyperx([8, 8], 4, K=2, link_bandwidth="10Gbps", radix=24), "topology.radix", "need 32 ports"),
    (lambda: ns.hyperx([4], 1, link_bandwidth="10Gbps", radix=0), "topology.radix", "positive integer"),
    (lambda: ns.hyperx([2, 4], 1, link_bandwidth="10Gbps", circuits=[{"dim": 0}]), "topology.circuits",
     "circuits[0]: missing key 'switching_time'"),
    (lambda: ns.hyperx([2, 4], 1, link_bandwidth="10Gbps", circuits=[{"dim": 0, "switching_time": "10 parsecs"}]),
     "topology.circuits", "circuits[0]:"),
    (lambda: ns.read_topology(ROOT / "pyproject.toml", default_bandwidth="1Gbps"), "topology.default_bandwidth",
     "unknown key 'default_bandwidth' for kind ibsim"),
    (lambda: ns.route(_topo(), engine="updn"), "routing", "unknown routing engine"),
    (lambda: ns.route(_topo(), engine="ecmp", hash="crc"), "routing.hash", "dst"),
    (lambda: ns.route("notatopo", engine="dmodk"), "topo", "expected a Topology"),
    (lambda: ns.event.link_down("1ms", 3), "links", "a list of link ends"),
    (lambda: ns.event.link_down("1ms", [("s1_0", 1), 5]), "links.1", "a link end"),
    (lambda: ns.simulate(_topo(), "dmodk", ns.job([ns.flow(0, 1, "1MiB")])), "jobs", "a list of jobs"),
    (lambda: ns.op.allreduce("12 parsecs"), "bytes", "size"),
    (lambda: ns.op.bcast("1MiB", root=-1), "root", "must be >= 0, got -1"),
    (lambda: ns.op.compute("5"), "duration", "unit"),
    (lambda: ns.op.send(1, 1, "1KiB"), "send", "itself"),
    (lambda: ns.flow(0, 1, "1GiB", priority=300), "priority", "255"),
    (lambda: ns.mpi_job(0, [ns.op.barrier()]), "ranks", "must be > 0, got 0"),
    (lambda: ns.mpi_job(4, []), "program", "at least one step"),
    (lambda: ns.mpi_job(4, [{"op": "allreduce"}]), "program.0.bytes", ""),
    # the leaked union tag: placement.literal['linear','random']: Input should be 'linear' or 'random'
    (lambda: ns.mpi_job(16, [ns.op.barrier()], placement="roundrobin"), "placement",
     "placement must be linear, random or a list of host indices, got 'roundrobin'"),
    (lambda: ns.mpi_job(4, [{"op": "alltoall", "bytes": "1KiB", "root": 0}]), "program.0",
     "unknown key 'root' for op alltoall"),
    (lambda: ns.mpi_job(4, [{"bytes": "1KiB"}]), "program.0", "a step needs an op: bcast,"),
    (lambda: ns.Scenario(_topo(), 42, [ns.job([ns.flow(0, 1, 1)])]), "routing",
     "routing must be a mapping such as {engine: dmodk}, got 42"),
    (lambda: ns.job(), "flows", "a job needs flows"),
    (lambda: ns.event.link_down("-1ms", [("s1_0", 1)]), "at", "negative"),
    (lambda: ns.Scenario(42, "dmodk", [ns.job([ns.flow(0, 1, 1)])]), "topology", "Topology"),
    (lambda: ns.Scenario(_topo(), "dmodk", []), "jobs", ""),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])], sharing="fair"), "sharing", ""),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])],
                         sharing={"model": "cm02", "ticks_per_ns": 0}), "sharing.ticks_per_ns", "must be >= 1"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])], sharing="maxmin", tcp_gamma="1MiB"),
     "sharing.tcp_gamma", "tcp_gamma applies to the cm02 model only"),
    (lambda: ns.Scenario(_topo(), "dmodk", ["job"]), "jobs.0", "expected a job"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 99, 1)])]).build(), "jobs.0.flows.0.dst",
     "host 99 does not exist"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.mpi_job(64, [ns.op.barrier()])]).build(), "jobs.0.ranks",
     "16"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])],
                         events=[ns.event.link_down("1ms", [("s9_9", 1)])]).build(), "events.0.link_down.0",
     "no node named"),
    (lambda: ns.simulate(_topo(), "dmodk", [ns.job([ns.flow("h0", "s1_0", 1)])]), "jobs.0.flows.0.dst",
     "switch"),
    (lambda: ns.Scenario.from_yaml(ROOT / "no-such.yaml"), None, "no such file"),
    (lambda: ns.read_counters(ROOT / "pyproject.toml"), None, "not a Parquet file"),
    # one entry where a list goes: a NetsteerError, not dict()'s ValueError on a mapping
    (lambda: ns.job(ns.flow(0, 1, "1MiB")), "flows", "expected a list of flows"),
    (lambda: ns.job([ns.flow(0, 1, "1MiB")], bulk=ns.bulk(0, 2)), "bulk", "expected a list of bulk flows"),
    (lambda: ns.job([ns.flow(0, 1, "1MiB"), 3]), "flows.1", "expected a mapping"),
    (lambda: ns.mpi_job(4, ns.op.allreduce("1MiB")), "program", "expected a list of steps"),
    # the rank count is known to mpi_job: refused there, as simulate would
    (lambda: ns.mpi_job(6, [ns.op.alltoall("1KiB", algorithm="pairwise")]), "program.0.algorithm",
     "power-of-two rank count, got 6"),
    (lambda: ns.mpi_job(4, [ns.op.barrier(), ns.op.bcast("1KiB", root=7)]), "program.1.root",
     "root 7 is not a rank of this 4-rank job"),
    (lambda: ns.mpi_job(4, [ns.op.send(1, 5, "1KiB")]), "program.0.dst", "5 is not a rank"),
    # controller=: a scenario's mapping or a Controller object, nothing else, never an AttributeError
    (lambda: ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])], controller="hybrid"), "controller",
     "a netsteer.Controller, got str"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])], controller=ns.ControllerStack([])),
     "controller", "Scenario.run(controller=...)"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 1, 1)])]).run(controller={"hybrid": {}}),
     "controller", "expected a netsteer.Controller"),
    # an empty name is no name; sample takes a bool, as reroute_on_change does
    (lambda: ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])], name=""), "name", "must not be empty"),
    (lambda: ns.job([ns.flow(0, 5, "1MiB")], name=""), "name", "must not be empty"),
    (lambda: ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])], sample="yes"), "sample",
     "expected True or False"),
    # a keyword that contradicts the spec's own value is refused, naming both (not silently winning)
    (lambda: ns.read_topology("pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps,link_latency=1us",
                              link_latency="5us"), "link_latency",
     "link_latency='5us' conflicts with the inline spec's link_latency=1us"),
    # progress=: True/False/None or a function of (done, total, time_ns), refused before the run
    (lambda: ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])], progress="yes"), "progress",
     "expected True, False, None or a function of (done, total, time_ns), got 'yes'"),
    (lambda: ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])], progress=lambda done: None),
     "progress", "cannot be called as progress(done, total, time_ns)"),
    (lambda: ns.Scenario(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])]).run(
        progress=lambda a, b, c, d: None), "progress", "cannot be called as progress(done, total, time_ns)"),
]


@pytest.mark.parametrize("call,field,reason", BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_bad_input_is_a_netsteer_error_with_field_and_reason(call, field, reason):
    with pytest.raises(ns.NetsteerError) as info:
        call()
    err = info.value
    assert err.field == field or (field is not None and (err.field or "").startswith(field)), err.message()
    assert reason in err.reason
    assert "\n" not in err.message()


def test_topology_builders_take_the_keys_their_spec_kind_takes():
    # the API builds the spec: a key the spec accepts but the builder lacks cannot be given
    from netsteer.topology.spec import _SCHEMA

    def params(f):
        return set(inspect.signature(f).parameters)

    for kind in ("pgft", "hyperx", "hybrid"):
        assert params(getattr(ns, kind)) == set(_SCHEMA[kind]), kind
    files = set().union(*(_SCHEMA[k] for k in ("ibnetdiscover", "ibsim", "json"))) - {"path"}
    assert params(ns.read_topology) == files | {"source"}


def test_simulate_takes_every_keyword_of_scenario_and_run():
    def params(f):
        return set(inspect.signature(f).parameters)

    assert params(ns.simulate) == params(ns.Scenario) | params(ns.Scenario.run) - {"self"}


def test_simulate_takes_a_controller_mapping_as_scenario_does():
    h = ns.hybrid(4, 2, server_bandwidth="10Gbps", tor_uplinks=1, core_bandwidth="10Gbps", circuit_ports=4,
                  circuit_uplinks=1, circuit_bandwidth="40Gbps", switching_time="10ms")
    jobs = [ns.job([ns.flow(0, 2, "1GiB"), ns.flow(1, 3, "1GiB")], name="x")]
    ctl = {"hybrid": {"initial": [[0, 0, 1]]}}
    by_scenario = ns.Scenario(h, "minhop", jobs, controller=ctl).run(sample=False)
    by_simulate = ns.simulate(h, "minhop", jobs, controller=ctl, sample=False)
    assert by_simulate.makespan_s == by_scenario.makespan_s
    assert by_simulate.makespan_s < ns.simulate(h, "minhop", jobs, sample=False).makespan_s  # the circuit helps
    assert by_simulate.scenario.to_dict()["controller"] == ctl


def test_hyperx_radix_and_circuits_as_in_a_spec(tmp_path):
    circuits = [{"links": [("x0_0", "x1_0"), ("x0_1", "x1_1")], "switching_time": "10us", "name": "ocs"}]
    t = ns.hyperx([2, 4], 2, link_bandwidth="10Gbps", radix=6, circuits=circuits)
    spec = {"kind": "hyperx", "S": [2, 4], "T": 2, "link_bandwidth": "10Gbps", "radix": 6,
            "circuits": [{"links": [["x0_0", "x1_0"], ["x0_1", "x1_1"]], "switching_time": "10us", "name": "ocs"}]}
    assert t.meta["spec"] == spec  # what a scenario file writes back
    f = from_spec(spec)
    plain = ns.hyperx([2, 4], 2, link_bandwidth="10Gbps")
    assert t.node_names == f.node_names and t.n_links == f.n_links == plain.n_links + 2  # 2 cables cut in two
    assert t.switching_time_ns == {t.node("ocs"): 10_000}
    assert [t.node_names[p] for _, p, _ in t.neighbors(t.node("ocs"))] == ["x0_0", "x1_0", "x0_1", "x1_1"]


def test_read_topology_reads_an_export(tmp_path):
    t = ns.hyperx([3, 3], 1, link_bandwidth="10Gbps")
    out = tmp_path / "x.json"
    subprocess.run([sys.executable, "-m", "netsteer", "topo", "hyperx:S=3;3,T=1,link_bandwidth=10Gbps",
                    "--export", str(out)], capture_output=True, check=True)
    back = ns.read_topology(out, name="mine")
    assert (back.name, back.node_names, back.n_links) == ("mine", t.node_names, t.n_links)
    with pytest.raises(ns.NetsteerError) as info:
        ns.read_topology(out, link_latency="1us")  # an export has its own latencies
    assert info.value.field == "topology.link_latency" and "for kind json" in info.value.reason


def test_the_routing_and_limit_errors_are_netsteer_errors():
    assert issubclass(ns.RoutingError, ns.NetsteerError) and issubclass(ns.LimitError, ns.NetsteerError)


BAD_FILES = {
    "unknown-key.yaml": """name: x
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 1Gbps}
routing: {engine: dmodk}
jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1MB, colour: red}]}]
""",
    "bad-host.yaml": """name: x
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 1Gbps}
routing: {engine: dmodk}
jobs: [{name: a, flows: [{src: 0, dst: h7, bytes: 1MB}]}]
""",
    "bad-unit.yaml": """name: x
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 1Gbps}
routing: {engine: dmodk}
jobs: [{name: a, ranks: 4, program: [{op: allreduce, bytes: 4 furlongs}]}]
""",
    "bad-event.yaml": """name: x
topology: {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 1Gbps}
routing: {engine: minhop}
jobs: [{name: a, flows: [{src: 0, dst: 1, bytes: 1MB}]}]
events: [{at: 1ms, link_up: [{node: s1_0, port: 9}]}]
""",
    "not-yaml.yaml": "name: [x\n",
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_the_api_says_what_netsteer_run_says(name, tmp_path):
    path = tmp_path / name
    path.write_text(BAD_FILES[name])
    p = subprocess.run([sys.executable, "-m", "netsteer", "run", str(path), "--no-progress"],
                       capture_output=True, text=True)
    assert p.returncode == 2
    with pytest.raises(ns.NetsteerError) as info:
        ns.Scenario.from_yaml(path).run()
    assert p.stderr.strip() == f"netsteer: error: {info.value.message()}"


def test_a_limit_error_says_how_to_raise_the_limit_in_python_and_on_the_command_line():
    """The API's LimitError said 'raise it with --max-memory', an option there is no command line
    for; the command line's placed it nowhere (after the subcommand it is 'No such option')."""
    import subprocess
    import sys

    from netsteer import limits

    with pytest.raises(ns.LimitError) as exc:
        limits.check_workers(1000, limits=limits.Limits(max_memory=4 * 2**30))
    assert "raise it with NETSTEER_MAX_MEMORY=SIZE, netsteer --max-memory SIZE COMMAND (before the command) " \
           "or, in Python, netsteer.limits.set_max_memory(bytes)" in str(exc.value)
    p = subprocess.run([sys.executable, "-m", "netsteer", "--max-memory", "1GiB", "sweep", "nothing.yaml",
                        "--workers", "1000"], capture_output=True, text=True)
    assert p.returncode == 2 and "netsteer --max-memory SIZE COMMAND (before the command)" in p.stderr, p.stderr


def test_progress_functions_that_take_three_arguments_are_called_with_them():
    calls, star = [], []
    ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])],
                progress=lambda done, total, time_ns, extra=None: calls.append((done, total, time_ns)))
    ns.simulate(_topo(), "dmodk", [ns.job([ns.flow(0, 5, "1MiB")])], progress=lambda *a: star.append(a))
    assert calls and all(len(c) == 3 and all(isinstance(x, int) for x in c) for c in calls)
    assert star and all(len(a) == 3 for a in star)


def test_topology_builder_links_take_units_as_the_rest_of_the_api():
    def built(bandwidth, latency):
        b = ns.TopologyBuilder("t")
        h0, h1, s = b.add_host("h0"), b.add_host("h1"), b.add_switch("s0")
        b.add_link(h0, s, bandwidth=bandwidth, latency_ns=latency)
        b.add_link(h1, s, bandwidth=bandwidth, latency_ns=latency)
        return b.build()

    t = built("10Gbps", "1us")
    ref = built(10e9, 1000)
    assert list(t.link_bandwidth) == list(ref.link_bandwidth) == [10e9, 10e9]
    assert list(t.link_latency_ns) == list(ref.link_latency_ns) == [1000, 1000]
    for bandwidth, latency, field, reason in (("10 parsecs", 0, "bandwidth", "unknown bandwidth unit"),
                                              ("0Gbps", 0, "bandwidth", "positive"),
                                              ("10Gbps", "-1us", "latency_ns", "must not be negative"),
                                              ("10Gbps", "500ps", "latency_ns", "whole number of nanoseconds")):
        with pytest.raises(ns.NetsteerError) as info:
            built(bandwidth, latency)
        assert info.value.field == field and reason in info.value.reason, info.value.message()


def test_read_topology_keywords_that_agree_with_the_spec_are_fine(tmp_path):
    inline = "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps,link_latency=1us"
    for latency in ("1us", "1000ns"):
        assert set(ns.read_topology(inline, link_latency=latency).link_latency_ns) == {1000}
    spec = tmp_path / "t.yaml"
    spec.write_text("kind: pgft\nlevels: 2\ndown: [4, 4]\nup: [1, 2]\nlink_bandwidth: 10Gbps\nlink_latency: 1us\n")
    assert set(ns.read_topology(spec, link_latency="1us").link_latency_ns) == {1000}
    with pytest.raises(ns.NetsteerError) as info:
        ns.read_topology(spec, link_latency="2us")
    assert info.value.field == "link_latency" and "conflicts with" in info.value.reason and "1us" in info.value.reason
