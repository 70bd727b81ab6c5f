"""Bad scenario input: a clear message naming file, field and reason, exit code 2."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from netsteer.errors import NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

GOOD = textwrap.dedent(
    """
    name: t
    topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1],
               link_bandwidth: 10Gbps, link_latency: 1us}
    routing: {engine: dmodk}
    jobs:
      - name: j
        flows:
          - {src: 0, dst: 5, bytes: 1MiB}
    """
)


def build(text: str):
    return build_scenario(parse_scenario(text, file="s.yaml"))


def error_of(text: str) -> NetsteerError:
    with pytest.raises(NetsteerError) as info:
        build(text)
    return info.value


def test_good_scenario_builds():
    b = build(GOOD)
    assert len(b.dag) == 1 and b.topology.n_hosts == 16


@pytest.mark.parametrize(
    "old,new,field,words",
    [
        ("name: t", "name: t\ncolour: red", None, "unknown key 'colour'"),
        ("{src: 0, dst: 5, bytes: 1MiB}", "{src: 0, dst: 5, bytes: 1MiB, colour: 1}", "jobs.0.flows.0", "unknown key"),
        ("bytes: 1MiB", "bytes: 1Mibs", "jobs.0.flows.0.bytes", "unit"),
        ("bytes: 1MiB", "bytes: -5", "jobs.0.flows.0.bytes", "negative"),
        ("link_bandwidth: 10Gbps", "link_bandwidth: 10GiB", "topology", "bandwidth"),
        ("link_latency: 1us", "link_latency: 1", "topology", "duration"),
        ("down: [4, 4]", "down: [4, 4, 4]", "topology", "levels"),
        ("dst: 5", "dst: 16", "jobs.0.flows.0.dst", "does not exist"),
        ("dst: 5", "dst: nohost", "jobs.0.flows.0.dst", "no host named"),
        ("engine: dmodk", "engine: magic", "routing", "magic"),
        # YAML reads {bytes: 1,000} as bytes 1 and a key 000: say so, at the flow
        ("bytes: 1MiB", "bytes: 1,000", "jobs.0.flows.0", "a number written with a thousands separator"),
    ],
)
def test_bad_input_names_field_and_reason(old, new, field, words):
    assert old in GOOD
    err = error_of(GOOD.replace(old, new, 1))
    assert err.file == "s.yaml"
    if field is not None:
        assert err.field is not None and err.field.startswith(field), err.message()
    assert words.lower() in err.message().lower(), err.message()


def test_dependency_cycle_is_named():
    text = GOOD.replace(
        "- {src: 0, dst: 5, bytes: 1MiB}",
        "- {id: a, src: 0, dst: 5, bytes: 1MiB, after: [b]}\n      - {id: b, src: 5, dst: 0, bytes: 1MiB, after: [a]}",
    )
    err = error_of(text)
    assert "cycle" in err.reason and err.field.startswith("jobs.0.flows.")


def test_unknown_dependency_is_named():
    text = GOOD.replace("bytes: 1MiB}", "bytes: 1MiB, after: [zz]}")
    err = error_of(text)
    assert err.field == "jobs.0.flows.0.after.0" and "zz" in err.reason


def test_yaml_syntax_error_gives_line():
    err = error_of("name: t\njobs: [\n")
    assert err.field is not None and err.field.startswith("line")


def test_cli_exit_code_two_and_no_traceback(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("dst: 5", "dst: 99"))
    proc = subprocess.run(
        [sys.executable, "-m", "netsteer", "run", str(bad), "--json"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr and "jobs.0.flows.0.dst" in proc.stderr
    assert proc.stdout == ""


def test_cli_missing_file_exit_two(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "netsteer", "run", str(tmp_path / "nope.yaml")], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


HYBRID = textwrap.dedent(
    """
    name: h
    topology: {kind: hybrid, racks: 4, servers_per_rack: 2, server_bandwidth: 10Gbps,
               tor_uplinks: 1, core_bandwidth: 10Gbps, circuit_ports: 4, circuit_uplinks: 1,
               circuit_bandwidth: 10Gbps, switching_time: 25ms, link_latency: 1us}
    routing: {engine: minhop}
    jobs:
      - name: j
        flows:
          - {src: 0, dst: 2, bytes: 1MiB}
    events:
      - {at: 1ms, circuit: {switch: ocs0, pairs: [[1, 2]]}}
    """
)


def test_circuit_events_are_checked():
    assert len(build(HYBRID).events) == 1
    for pairs, words in (("[[1, 9]]", "no cabled port 9"), ("[[1, 2], [2, 3]]", "paired twice")):
        err = error_of(HYBRID.replace("[[1, 2]]", pairs))
        assert words in err.reason and err.field.startswith("events.0.circuit.pairs")
    err = error_of(HYBRID.replace("switch: ocs0", "switch: tor0"))
    assert "not a circuit switch" in err.reason and err.field == "events.0.circuit.switch"


def cli_error(tmp_path: Path, text: str, name: str = "bad.yaml") -> str:
    """``netsteer run`` on ``text``: asserts a one-line bad-input error (exit 2, no
    traceback, no internal error) naming the file, and returns that line."""
    f = tmp_path / name
    f.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f), "--no-progress"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"netsteer: error: {f}: "), lines[0]
    return lines[0]


def assert_refused(tmp_path: Path, text: str, field: str | None, reason: str) -> None:
    """``text`` is refused with exactly ``field`` and ``reason``, in Python and by
    ``netsteer run`` (one line, ending with them)."""
    err = error_of(text)
    assert (err.field, err.reason) == (field, reason), err.message()
    assert cli_error(tmp_path, text).endswith(f"{field + ': ' if field else ''}{reason}")


def hybrid_with(section: str) -> str:
    """HYBRID (4 racks, circuit switch ocs0) with ``section`` instead of its events."""
    events = "events:\n  - {at: 1ms, circuit: {switch: ocs0, pairs: [[1, 2]]}}\n"
    assert events in HYBRID
    return HYBRID.replace(events, section + "\n")


def test_a_ragged_demand_matrix_names_the_row(tmp_path: Path):
    # rows of unequal length were an internal error (numpy's "inhomogeneous" array), exit 1
    text = hybrid_with("controller: {hybrid: {requests: [{at: 0s, demand: "
                       "[[0, 8, 0, 0], [8, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]}]}}")
    err = error_of(text)
    assert err.field == "controller.hybrid.requests.0.demand.1", err.message()
    assert err.reason == "demand row 1 has 3 entries, the network has 4 racks (demand is racks x racks)"
    assert "controller.hybrid.requests.0.demand.1: demand row 1" in cli_error(tmp_path, text)


def test_tcp_gamma_with_maxmin_names_tcp_gamma(tmp_path: Path):
    # it said "sharing: Input should be 'maxmin' or 'cm02'" although the model was maxmin
    text = GOOD.replace("routing: {engine: dmodk}", "routing: {engine: dmodk}\nsharing: {model: maxmin, tcp_gamma: 1MiB}")
    err = error_of(text)
    assert err.field == "sharing.tcp_gamma", err.message()
    assert err.reason == "tcp_gamma applies to the cm02 model only; maxmin has no TCP window"
    assert "sharing.tcp_gamma: tcp_gamma applies to the cm02 model only" in cli_error(tmp_path, text)
    # the same key is fine with cm02, and a bad model is still named as such
    build(text.replace("model: maxmin", "model: cm02"))
    err = error_of(text.replace("model: maxmin", "model: fair"))
    assert err.field == "sharing.model" and "'maxmin' or 'cm02'" in err.reason


@pytest.mark.parametrize(
    "old,new,field,reason",
    [
        # a misspelt required key: it said "jobs.0.flows.0.bytes: required key is missing"
        ("bytes: 1MiB", "byts: 1MiB", "jobs.0.flows.0", "unknown key 'byts'; did you mean 'bytes'?"),
        ("routing: {engine: dmodk}", "routng: {engine: dmodk}", None, "unknown key 'routng'; did you mean 'routing'?"),
        # nothing close: both keys named
        ("bytes: 1MiB", "colour: 1MiB", "jobs.0.flows.0", "unknown key 'colour'; required key 'bytes' is missing"),
        # only missing: as before; only unknown: the closest key it takes there, if any
        ("dst: 5, bytes: 1MiB", "dst: 5", "jobs.0.flows.0.bytes", "required key is missing"),
        ("bytes: 1MiB}", "bytes: 1MiB, byts: 1}", "jobs.0.flows.0", "unknown key 'byts'; did you mean 'bytes'?"),
        ("bytes: 1MiB}", "bytes: 1MiB, colour: 1}", "jobs.0.flows.0", "unknown key 'colour'"),
    ],
)
def test_a_misspelt_required_key_is_named(tmp_path: Path, old, new, field, reason):
    assert old in GOOD
    assert_refused(tmp_path, GOOD.replace(old, new, 1), field, reason)


def test_a_short_list_entry_is_not_a_missing_key(tmp_path: Path):
    # [1] for a [port, port] pair said "events.0.circuit.pairs.0.1: required key is missing"
    text = HYBRID.replace("pairs: [[1, 2]]", "pairs: [[1]]")
    assert_refused(tmp_path, text, "events.0.circuit.pairs.0", "[1] has too few entries")


@pytest.mark.parametrize(
    "old,new,field,reason",
    [
        # it said "Input should be a valid dictionary or instance of RoutingModel"
        ("routing: {engine: dmodk}", "routing: dmodk", "routing",
         "routing must be a mapping such as {engine: dmodk}, got 'dmodk'"),
        ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nevents: [{at: 1ms, link_down: [s1_0]}]",
         "events.0.link_down.0", "each entry of link_down must be a mapping such as {node: s1_0, port: 5}, got 's1_0'"),
        (GOOD[GOOD.index("topology:"):GOOD.index("routing:")], "topology: pgft\n", "topology",
         "topology must be a mapping such as {kind: pgft, levels: 1, down: [4], up: [1], link_bandwidth: 10Gbps}, "
         "got 'pgft'"),
    ],
)
def test_a_value_that_is_not_a_mapping_says_so_plainly(tmp_path: Path, old, new, field, reason):
    assert old in GOOD
    assert_refused(tmp_path, GOOD.replace(old, new, 1), field, reason)


@pytest.mark.parametrize(
    "section,field,reason",
    [
        # it said "port 1 is paired twice"
        ("events:\n  - {at: 1ms, circuit: {switch: ocs0, pairs: [[1, 1]]}}", "events.0.circuit.pairs.0",
         "port 1 cannot be paired with itself"),
        ("events:\n  - {at: 1ms, circuit: {switch: ocs0, pairs: [[2, 3], [1, 1]]}}", "events.0.circuit.pairs.1",
         "port 1 cannot be paired with itself"),
        # it said "circuit [0, 1, 1] is not plane, rack, other rack of this network"
        ("controller: {hybrid: {initial: [[0, 1, 1]]}}", "controller.hybrid.initial",
         "circuit [0, 1, 1] joins rack 1 to itself; a circuit joins two racks"),
        ("controller: {hybrid: {schedule: [{at: 1s, circuits: [[0, 2, 2]]}]}}", "controller.hybrid.schedule.0.circuits",
         "circuit [0, 2, 2] joins rack 2 to itself; a circuit joins two racks"),
        # control rows: a port used by two pairs, a rack that does not exist
        ("events:\n  - {at: 1ms, circuit: {switch: ocs0, pairs: [[1, 2], [2, 3]]}}", "events.0.circuit.pairs.1",
         "port 2 is paired twice"),
        ("controller: {hybrid: {initial: [[0, 9, 9]]}}", "controller.hybrid.initial",
         "circuit [0, 9, 9] is not plane, rack, other rack of this network"),
    ],
)
def test_a_port_paired_with_itself_says_so(tmp_path: Path, section, field, reason):
    assert_refused(tmp_path, hybrid_with(section), field, reason)


@pytest.mark.parametrize("key", ["priority: 1", "class: 2", "start: 1ms"])
def test_a_program_key_on_a_job_of_flows_is_refused_at_its_field(key):
    """A job's own priority, class and start go to its MPI program; on a job of flows
    and bulk flows they reached no flow (the flows kept priority 0, class 0): refused,
    naming the key, where each flow takes its own."""
    text = GOOD.replace("  - name: j\n", f"  - name: j\n    {key}\n")
    err = error_of(text)
    name = key.split(":")[0]
    assert err.field == f"jobs.0.{name}", err.message()
    assert err.reason == f"{name} applies to an MPI job's program; give flows and bulk flows their own {name}"
    mpi = GOOD.replace("    flows:\n      - {src: 0, dst: 5, bytes: 1MiB}\n",
                       f"    {key}\n    ranks: 4\n    program: [{{op: allreduce, bytes: 1MiB}}]\n")
    built = build(mpi)  # an MPI job's messages take them
    cols = built.dag.columns()
    if name == "priority":
        assert set(cols.priority.tolist()) == {1}
    if name == "class":
        assert set(cols.traffic_class.tolist()) == {2}


@pytest.mark.parametrize("old,new,field,reason", [
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nsharng: cm02", None, "'sharng'; did you mean 'sharing'?"),
    ("name: t", "name: t\ndescripton: x", None, "'descripton'; did you mean 'description'?"),
    ("bytes: 1MiB}", "bytes: 1MiB, wieght: 2}", "jobs.0.flows.0", "'wieght'; did you mean 'weight'?"),
    ("bytes: 1MiB}", "bytes: 1MiB, strat: 1ms}", "jobs.0.flows.0", "'strat'; did you mean 'start'?"),
    ("    flows:", "    bulkk: []\n    flows:", "jobs.0", "'bulkk'; did you mean 'bulk'?"),
    ("{engine: dmodk}", "{engine: dmodk, hsah: dst}", "routing", "'hsah'; did you mean 'hash'?"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nsharing: {model: cm02, tcp_gama: 1MiB}", "sharing",
     "'tcp_gama'; did you mean 'tcp_gamma'?"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nevents: [{at: 1ms, link_dwn: [{node: s1_0, port: 5}]}]",
     "events.0", "'link_dwn'; did you mean 'link_down'?"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\ndriver: {dealy: {}}", "driver",
     "'dealy'; did you mean 'delay'?"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nqos: {max_vl: 4}", "qos.max_vl",
     "'max_vl'; did you mean 'max_vls'?"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nfidelity: packet\npacket: {mtuu: 2KiB}", "packet",
     "'mtuu'; did you mean 'mtu'?"),
    ("link_latency: 1us}", "link_latency: 1us, paralel: [1, 1]}", "topology.paralel",
     "'paralel' for kind pgft; did you mean 'parallel'?"),
])
def test_a_misspelt_optional_key_gets_a_did_you_mean(tmp_path: Path, old, new, field, reason):
    """Misspelt required keys were named with the key they are close to; a misspelt
    optional key (all required keys given) only said "unknown key 'wieght'"."""
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    err = error_of(text)
    assert err.field == field and err.reason.endswith(reason), err.message()
    assert cli_error(tmp_path, text).endswith(f"{field + ': ' if field else ''}{err.reason}")


@pytest.mark.parametrize("old,new,field,reason", [
    ("bytes: 1MiB}", "bytes: 1MiB, priority: -1}", "jobs.0.flows.0.priority", "must be >= 0, got -1"),
    ("bytes: 1MiB}", "bytes: 1MiB, priority: 256}", "jobs.0.flows.0.priority", "must be <= 255, got 256"),
    ("bytes: 1MiB}", "bytes: 1MiB, priority: x}", "jobs.0.flows.0.priority", "must be an integer, got 'x'"),
    ("bytes: 1MiB}", "bytes: 1MiB, weight: 0}", "jobs.0.flows.0.weight", "must be > 0, got 0"),
    ("bytes: 1MiB}", "bytes: 1MiB, weight: .inf}", "jobs.0.flows.0.weight", "must be a finite number, got inf"),
    ("bytes: 1MiB}", "bytes: 1MiB, after: 3}", "jobs.0.flows.0.after", "must be a list, got 3"),
    ("{engine: dmodk}", "{engine: dmodk, hash: foo}", "routing.hash", "must be 'dst', 'src-dst' or 'flow', got 'foo'"),
    ("jobs:\n  - name: j\n    flows:\n      - {src: 0, dst: 5, bytes: 1MiB}", "jobs: []", "jobs", "must not be empty"),
    ("name: t", "name: t\nreroute_on_change: 3", "reroute_on_change", "must be true or false, got 3"),
    ("name: t", "name: t\nfidelity: packets", "fidelity", "must be 'flow' or 'packet', got 'packets'"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nfidelity: packet\npacket: {vls: 16}", "packet.vls",
     "must be <= 15, got 16"),
    ("routing: {engine: dmodk}", "routing: {engine: dmodk}\nqos: {max_vls: 44}", "qos.max_vls",
     "must be <= 15, got 44"),
])
def test_pydantic_wording_is_turned_into_plain_words(old, new, field, reason):
    """It said "Input should be greater than or equal to 0", "List should have at
    least 1 item after validation, not 0", "Input should be a valid integer, unable
    to parse string as an integer"."""
    assert old in GOOD
    err = error_of(GOOD.replace(old, new, 1))
    assert (err.field, err.reason) == (field, reason), err.message()


@pytest.mark.parametrize("where,weight", [
    ("flows", "1.0e+16"), ("flows", "1.0e-300"), ("flows", "1.0e+308"), ("flows", "1001"), ("flows", "0.0009"),
    ("bulk", "1.0e+16"), ("bulk", "1.0e-300"),
])
def test_a_weight_outside_the_solvers_precision_is_refused(tmp_path: Path, where, weight):
    """Weights of 1e16 and 1 sent 2 GB through a 10 Gbps link in 0.8 s (the light
    flow's share was lost in the f64 sum of weights), two of 1e-300 moved 2 GB in no
    time (capacity over their sum overflowed), two of 1e308 stalled: any finite
    positive weight was accepted. Refused outside 1e-3..1e3, exit 2, one line."""
    item = (f"{{src: 0, dst: 5, bytes: 1MiB, weight: {weight}}}" if where == "flows"
            else f"{{src: 0, dst: 5, duration: 1ms, weight: {weight}}}")
    text = GOOD.replace("    flows:\n      - {src: 0, dst: 5, bytes: 1MiB}", f"    {where}:\n      - {item}")
    err = error_of(text)
    assert err.field == f"jobs.0.{where}.0.weight", err.message()
    assert err.reason.startswith(f"must be between 0.001 and 1000, got {float(weight)!r}"), err.reason
    assert cli_error(tmp_path, text).endswith(f"jobs.0.{where}.0.weight: {err.reason}")


@pytest.mark.parametrize("weight,value", [("1e3", 1000.0), ("2e-1", 0.2), ("1000", 1000.0), ("0.001", 0.001),
                                          ("'2.5'", 2.5)])
def test_a_weight_yaml_reads_as_a_string_is_a_number(weight, value):
    """``weight: 1e3`` (YAML 1.1 reads it as a string) was refused with "must be a
    number, got '1e3'" while ``bytes: 1e9`` was taken: a number written as a
    string is a number, as for sizes and durations."""
    b = build(GOOD.replace("bytes: 1MiB}", f"bytes: 1MiB, weight: {weight}}}"))
    assert b.dag.columns().weight.tolist() == [value]


@pytest.mark.parametrize("weight,reason", [("abc", "must be a number, got 'abc'"),
                                           ("true", "must be a number, got True"),
                                           ("'1e4'", "must be between 0.001 and 1000, got 10000.0")])
def test_a_weight_that_is_no_number_is_still_refused(weight, reason):
    err = error_of(GOOD.replace("bytes: 1MiB}", f"bytes: 1MiB, weight: {weight}}}"))
    assert err.field == "jobs.0.flows.0.weight" and err.reason.startswith(reason), err.message()


def test_the_api_refuses_an_extreme_weight_too():
    import netsteer as ns

    with pytest.raises(NetsteerError, match=r"weight: must be between 0.001 and 1000, got 1e\+16"):
        ns.flow(0, 1, "1GB", weight=1e16)
    with pytest.raises(NetsteerError, match=r"weight: must be between 0.001 and 1000, got 1e-300"):
        ns.bulk(0, 1, weight=1e-300)
    assert ns.flow(0, 1, "1GB", weight="1e3")["weight"] == "1e3"


@pytest.mark.parametrize("key", ["repeat: 3", "seed: 5", "placement: random", "placement: [0, 1, 2, 3]"])
def test_placement_repeat_and_seed_on_a_job_of_flows_are_refused_at_their_field(key):
    """A job of flows has no ranks to place, repeat or seed: ``repeat: 3`` ran its flows
    once, silently; refused as ``start`` is, naming the key."""
    text = GOOD.replace("  - name: j\n", f"  - name: j\n    {key}\n")
    err = error_of(text)
    name = key.split(":")[0]
    assert err.field == f"jobs.0.{name}", err.message()
    assert err.reason.startswith(f"{name} applies to an MPI job's program (ranks and program)")
    mpi = GOOD.replace("    flows:\n      - {src: 0, dst: 5, bytes: 1MiB}\n",
                       f"    {key}\n    ranks: 4\n    program: [{{op: allreduce, bytes: 1MiB}}]\n")
    build(mpi)  # an MPI job takes them
