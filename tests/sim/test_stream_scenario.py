"""MPI jobs of a scenario streamed through the engine (jobs[i].stream), against the
same scenario run as a flow DAG: same report, far fewer flows held at once."""

import json

import numpy as np
import pytest

from netsteer.cli import run_cli
from netsteer.errors import NetsteerError
from netsteer.report.result import result_dict
from netsteer.scenario import STREAM_MIN_RANKS, build_scenario, parse_scenario
from netsteer.sim import run_scenario

SCENARIO = """
name: streamed
topology: {kind: pgft, levels: 2, down: [8, 4], up: [1, 2], parallel: [1, 1],
           link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: %(routing)s}
sharing: cm02
jobs:
  - name: app
    ranks: 24
    placement: random
    seed: 5
    program:
      - {op: alltoall, bytes: 4KiB, algorithm: bruck}
      - {op: compute, duration: 20us}
      - {op: allreduce, bytes: 96KiB, algorithm: ring}
    repeat: 2
    %(stream)s
  - name: side
    flows:
      - {id: a, src: 1, dst: 30, bytes: 2MiB}
      - {src: 30, dst: 2, bytes: 1MiB, after: [a]}
    bulk:
      - {src: 3, dst: 17}
%(extra)s
"""


def text(stream="", routing="dmodk", extra=""):
    return SCENARIO % dict(stream=stream, routing=routing, extra=extra)


def run(stream, routing="dmodk"):
    b = build_scenario(parse_scenario(text(f"stream: {stream}", routing), file="s.yaml"))
    res = run_scenario(b)
    return b, res, result_dict(b, res)


@pytest.mark.parametrize("routing", ["dmodk", "minhop"])
def test_a_streamed_job_reports_as_its_dag(routing):
    b_dag, res_dag, dag = run("false", routing)
    b_st, res, st = run("true", routing)
    assert not b_dag.streamed and [j for j, _ in b_st.streamed] == [0]
    assert st["makespan_s"] == dag["makespan_s"]
    assert st["flows"] == dag["flows"]  # messages and compute steps, as the DAG holds them
    for got, want in zip(st["jobs"], dag["jobs"]):
        got.pop("streamed", None)
        assert got == want
    assert st["jobs"][1]["completion_s"] is not None  # the DAG's flows ran beside it
    # the job's messages were flows one at a time per rank, not all at once
    s = st["streamed"]
    assert s["ranks_done"] == 24 and s["peak_in_flight"] <= 24
    assert s["messages_done"] >= 20 * s["flow_slots"]
    assert len(res.completion_ns) == len(b_st.dag)  # per-flow arrays: the DAG's flows only
    # port counters: sampled at the interval (not at every drain of the job), same bytes
    assert len(res.sample_times_ns) <= res.makespan_ns // b_st.sample_interval_ns + 2
    assert res.channel_bytes[-1] == pytest.approx(res_dag.channel_bytes[-1], rel=1e-9)
    assert res.channel_bytes.shape[1] == b_st.topology.n_channels


def test_large_jobs_stream_by_default_unless_something_needs_their_flows():
    big = text().replace("ranks: 24", f"ranks: {STREAM_MIN_RANKS}").replace(
        "down: [8, 4]", "down: [32, 32]").replace("placement: random", "placement: linear")
    assert [j for j, _ in build_scenario(parse_scenario(big)).streamed] == [0]
    assert build_scenario(parse_scenario(text())).streamed == []  # small: the DAG
    # a link event re-routes flows in flight (reroute_on_change, an engine that routes
    # around down links): the DAG path; a static engine keeps its tables: streamed
    ev = "events: [{at: 10us, link_down: [{node: s1_0, port: 1}]}]"
    rerouting = big.replace("engine: dmodk", "engine: minhop")
    assert "engine: minhop" in rerouting
    assert build_scenario(parse_scenario(rerouting + ev)).streamed == []
    assert build_scenario(parse_scenario(rerouting + ev + "\nreroute_on_change: false")).streamed != []
    assert build_scenario(parse_scenario(big + ev)).streamed != []


def test_streaming_what_needs_per_flow_context_is_refused_naming_the_key(tmp_path, capsys):
    p = tmp_path / "s.yaml"
    p.write_text(text("stream: true", extra="events: [{at: 10us, routing: {engine: minhop}}]"))
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert "jobs.0.stream" in err and "events.0 changes the routing" in err and err.count("\n") == 1
    with pytest.raises(NetsteerError, match="stream applies to an MPI job") as e:
        parse_scenario(text().replace("flows:\n", "stream: true\n    flows:\n", 1))
    assert e.value.field == "jobs.1"


def test_a_job_too_large_for_the_memory_is_refused_before_it_runs(tmp_path, capsys, monkeypatch):
    from netsteer.sim import stream

    p = tmp_path / "s.yaml"
    p.write_text(text("stream: true"))
    sc = parse_scenario(text("stream: false"))
    jobs = [j for j in sc.model.jobs if j.program is not None]  # (its ranks and steps run)
    need = stream.estimate_bytes(build_scenario(sc).topology, jobs, "dmodk")
    monkeypatch.setattr(stream, "available_bytes", lambda: need - 1)
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert f"s.yaml: jobs: the MPI jobs would need about {stream.fmt_bytes(need)}" in err
    assert err.count("\n") == 1
    monkeypatch.setattr(stream, "available_bytes", lambda: need)
    assert run_cli(["run", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["streamed"]["ranks_done"] == 24


@pytest.mark.parametrize("bulk", [False, True])
def test_a_streamed_job_cut_off_by_a_failed_link_is_reported_stalled(bulk):
    sc = text("stream: true", extra="reroute_on_change: false\n"
              "events: [{at: 30us, link_down: [{node: s1_0, port: 9}, {node: s1_0, port: 10}]}]")
    # (host 3 is under s1_0: its bulk flow would stall too; host 9's goes on)
    sc = sc.replace("    bulk:\n      - {src: 3, dst: 17}\n", "    bulk:\n      - {src: 9, dst: 17}\n" if bulk else "")
    # an endless bulk flow beside the stall ends with the work: it neither keeps the
    # sampling going up to the memory limit nor runs out its nominal size
    b = build_scenario(parse_scenario(sc))
    res = run_scenario(b)  # sampled: the stall ends the sampling, not the memory limit
    r = result_dict(b, res)
    assert r["status"] == "stalled"
    assert r["jobs"][0]["completion_s"] is None and 0 < r["stalled"]["ranks_left"]["app"] <= 24
    assert "app" in r["stalled"]["jobs"]
    # sampling ended with the last event (no flat tail up to the memory limit)
    t = res.sample_times_ns
    assert (np.diff(t) > 0).all() and t[-1] - t[-2] <= b.sample_interval_ns
    assert (res.channel_bytes[-1] == res.final_channel_bytes).all()
    assert res.makespan_ns < 1_000_000  # the stall came within a ms, not decades later
    if bulk:
        assert r["jobs"][1]["completion_s"] is None  # the side job (its bulk flow) never ended


STALL = """
name: stall
topology: {kind: pgft, levels: 2, down: [8, 8], up: [1, 2], parallel: [1, 2], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
reroute_on_change: false
jobs:
  - name: app
    ranks: 20
    stream: STREAM
    repeat: 2
    program:
      - {op: allreduce, bytes: 1MiB, algorithm: ring}
      - {op: bcast, bytes: 1KiB, root: 19}
  - name: other
    flows: [{src: 40, dst: 50, bytes: 1MiB}]
events:
  - {at: 100us, link_down: [{node: s1_0, port: 1}]}
"""


def test_a_stalled_streamed_job_says_what_blocks_it_as_its_dag_does():
    """explore-scale: the DAG run's stalled had blocked_by {'app:allreduce': [h0:1 <-> s1_0:1]},
    the streamed run none. Streamed messages have no flow ids: their links are by job."""
    got = {}
    for stream in ("true", "false"):
        b = build_scenario(parse_scenario(STALL.replace("STREAM", stream), file="s.yaml"))
        got[stream] = result_dict(b, run_scenario(b, sample=False))["stalled"]
    assert got["false"]["blocked_by"] == {"app:allreduce": ["h0:1 <-> s1_0:1"]}
    assert got["true"]["blocked_by"] == {"app": ["h0:1 <-> s1_0:1"]}
    assert got["true"]["links_down"] == got["false"]["links_down"]


def test_progress_counts_messages_and_simulated_time_without_a_total():
    b = build_scenario(parse_scenario(text("stream: true")))
    calls = []
    run_scenario(b, sample=False, progress=lambda done, total, now: calls.append((done, total, now)))
    streamed = [c for c in calls if c[1] is None]
    assert streamed, "no progress while the job streamed"
    done, now = [c[0] for c in streamed], [c[2] for c in streamed]
    assert done == sorted(done) and now == sorted(now) and now[-1] > 0
    # at the end: the DAG's flows (the bulk flow ended with the others), every message and
    # compute step: what the result's flows counts
    again = run_scenario(b, sample=False)
    p = again.mpi["progress"]
    assert done[-1] == len(b.dag) + p["messages_done"] + p["computes_done"]
    assert done[-1] == result_dict(b, again)["flows"]


def test_the_python_api_streams_a_job_when_asked():
    import netsteer as ns

    topo = ns.pgft(2, [8, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")
    prog = [{"op": "allreduce", "bytes": "64KiB", "algorithm": "ring"}]
    got = {s: ns.simulate(topo, "dmodk", [ns.mpi_job(16, prog, name="a", stream=s)], sharing="cm02")
           for s in (True, False)}
    assert "streamed" in got[True].to_dict() and "streamed" not in got[False].to_dict()
    assert got[True].makespan_s == got[False].makespan_s > 0


def test_messages_the_engine_routes_need_no_routing_tables(tmp_path, capsys, monkeypatch):
    """Streamed jobs under D-mod-K on a PGFT are routed per hop in the engine: the
    scenario builds no tables (at 65,536 hosts they would take about 10 GiB), and
    reads them whole only if something asks."""
    from netsteer import limits, scenario
    from netsteer.routing import build_routing

    only_mpi = text("stream: true").split("  - name: side")[0]
    b = build_scenario(parse_scenario(only_mpi))
    streamed = result_dict(b, run_scenario(b))
    assert not b.routing.built
    b_dag = build_scenario(parse_scenario(only_mpi.replace("stream: true", "stream: false")))
    dag = result_dict(b_dag, run_scenario(b_dag))
    assert streamed["makespan_s"] == dag["makespan_s"] and streamed["streamed"]["ranks_done"] == 24
    # asked for, the tables are the routing's, built then
    assert (b.routing.table == build_routing(b.topology, "dmodk").table).all() and b.routing.built
    # tables too large for the memory: the DAG is refused naming routing; streamed, it runs
    huge = lambda topo: 1 << 50  # noqa: E731
    monkeypatch.setattr(limits, "routing_bytes", huge)
    monkeypatch.setattr(scenario, "routing_bytes", huge)
    p = tmp_path / "s.yaml"
    p.write_text(only_mpi.replace("stream: true", "stream: false"))
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert "s.yaml: routing: the routing tables would need" in err and err.count("\n") == 1
    p.write_text(only_mpi)
    assert run_cli(["run", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_s"] == dag["makespan_s"]
    # anything else in the scenario that needs routes (a flow) builds them up front
    p.write_text(text("stream: true"))
    assert run_cli(["run", str(p), "--json"]) == 2
    assert "routing: the routing tables would need" in capsys.readouterr().err


@pytest.mark.parametrize("stream", ["true", "false"])
def test_a_job_start_delays_the_job_by_exactly_that_much(stream):
    """A job's ``start`` (a duration with a unit) reaches the run: alone on the network,
    the job ends exactly that much later, streamed or as a DAG."""
    one = """
name: start
topology: {kind: pgft, levels: 2, down: [8, 4], up: [1, 2], parallel: [1, 1],
           link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
sharing: {model: cm02, merge_window: 0ns, ticks_per_ns: 1}
jobs:
  - name: app
    ranks: 12
    placement: random
    program: [{op: allreduce, bytes: 48KiB, algorithm: ring}]
    stream: %s
%s"""

    def job(start):
        b = build_scenario(parse_scenario(one % (stream, start), file="s.yaml"))
        return result_dict(b, run_scenario(b))["jobs"][0]

    base, later = job(""), job("    start: 1500us")
    assert later["completion_s"] == pytest.approx(base["completion_s"] + 1.5e-3, abs=1e-12)
    assert job("    start: 0")["completion_s"] == base["completion_s"]
    # the DAG holds the start as a delay flow per rank; the stream counts them the same
    assert later["flows"] == base["flows"] + 12


NOTHING_EXCHANGED = """
name: quiet
topology: {kind: pgft, levels: 2, down: [8, 8], up: [1, 4], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
sample_interval: 100us
jobs:
  - {name: solo, ranks: 1, program: [{op: allreduce, bytes: 1MiB}, {op: allgather, bytes: 1KiB}], %(s)s}
  - {name: later, ranks: 1, start: 2ms, program: [{op: bcast, bytes: 1KiB}], %(s)s}
  - {name: empty, ranks: 4, placement: [8, 9, 10, 11], %(s)s,
     program: [{op: reduce, bytes: 0, algorithm: binomial}, {op: reduce, bytes: 0, algorithm: rabenseifner}]}
  - {name: other, ranks: 4, program: [{op: bcast, bytes: 1KiB}], %(s)s}
"""


@pytest.mark.parametrize("stream", ["true", "false"])
def test_a_job_that_exchanges_nothing_completes_at_its_start(stream):
    """One rank, or reduces of 0 bytes (SMPI sends nothing): the job is done when it
    starts, not "never finished"."""
    b = build_scenario(parse_scenario(NOTHING_EXCHANGED % {"s": f"stream: {stream}"}, file="q.yaml"))
    res = run_scenario(b)
    jobs = {j["name"]: j for j in result_dict(b, res)["jobs"]}
    assert res.status == "done"
    assert [jobs[n]["completion_s"] for n in ("solo", "later", "empty")] == [0.0, 0.002, 0.0]
    assert all(jobs[n]["operations"] == {} for n in ("solo", "later", "empty"))
    assert jobs["other"]["completion_s"] > 0 and "bcast" in jobs["other"]["operations"]


@pytest.mark.parametrize("stream", [True, False])
def test_job_bytes_count_messages_between_ranks_on_one_host(stream):
    """As docs/cli.md says: a job's bytes are what its ranks send (envelope included),
    also on one host, where no link carries them."""
    import netsteer as ns

    t = ns.pgft(2, [4, 4], [1, 2], link_bandwidth="10Gbps", link_latency="1us")
    r = ns.simulate(t, "dmodk", [ns.mpi_job(2, [{"op": "send", "src": 0, "dst": 1, "bytes": 1000}],
                                            placement=[3, 3], name="a", stream=stream)],
                    sample_interval="10us")
    [job] = r.jobs.to_dict("records")
    assert (job["bytes"], job["completion_s"]) == (1016, 0.0)  # counted, though it took no link


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("step,reason", [
    ("{op: alltoall, bytes: 4KiB, algorithm: pairwise}", "power-of-two rank count, got 24"),
    ("{op: allreduce, bytes: 1001, algorithm: rabenseifner, elem_bytes: 4}", "not a whole number of 4-byte"),
    ("{op: reduce, bytes: 20, algorithm: rabenseifner}",
     "needs at least one element per rank: 20 elements for 24 ranks (SMPI's scatter_gather aborts"),
])
def test_a_program_the_algorithm_refuses_names_the_file_streamed_or_not(tmp_path, capsys, stream,
                                                                        step, reason):
    """A rule of the algorithm (checked by the engine on the streamed path) is refused
    when the scenario is built: one line with the file and the step, exit 2."""
    p = tmp_path / "s.yaml"
    p.write_text(text(f"stream: {stream}").replace("{op: compute, duration: 20us}", step))
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"netsteer: error: {p}: jobs.0.program.1") and reason in err, err
    assert err.count("\n") == 1


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("step,field,reason", [
    # explore-scale: both named program.1.algorithm, a field the first does not give and
    # the second does not concern
    ("{op: alltoall, bytes: 4KiB}", "jobs.0.program.1",
     "alltoall's default algorithm pairwise pairs ranks by XOR and needs a power-of-two rank count, got 24; "
     "set algorithm: bruck"),
    ("{op: allreduce, bytes: 10, elem_bytes: 4}", "jobs.0.program.1.bytes",
     "buffer of 10 bytes is not a whole number of 4-byte elements (elem_bytes: 4)"),
    ("{op: allreduce, bytes: 10, elem_bytes: 4, algorithm: rabenseifner}", "jobs.0.program.1.bytes",
     "buffer of 10 bytes is not a whole number of 4-byte elements (elem_bytes: 4)"),
    ("{op: alltoall, bytes: 4KiB, algorithm: pairwise}", "jobs.0.program.1.algorithm",
     "alltoall pairwise pairs ranks by XOR and needs a power-of-two rank count, got 24; use algorithm bruck"),
])
def test_an_algorithm_rule_names_the_field_the_step_gives(stream, step, field, reason):
    with pytest.raises(NetsteerError) as e:
        build_scenario(parse_scenario(
            text(f"stream: {stream}").replace("{op: compute, duration: 20us}", step), file="s.yaml"))
    assert (e.value.file, e.value.field, e.value.reason) == ("s.yaml", field, reason)


@pytest.mark.parametrize("stream", ["true", "false"])
def test_a_size_takes_a_whole_float_and_an_integer_field_says_so(stream):
    """explore-scale: bytes: 1000000.0 ran while root: 1.0 and repeat: 2.0 were refused
    with no word of why. A size (bytes) takes any spelling of a whole number of bytes
    (YAML reads 1e6 as text, a size); every other integer field, of a step or of the
    job, takes integers, and its refusal says the rule (docs/collectives.md)."""
    from pathlib import Path

    def build(step, job=""):
        sc = text(f"stream: {stream}").replace("{op: compute, duration: 20us}", step)
        return build_scenario(parse_scenario(sc.replace("repeat: 2", job or "repeat: 2"), file="s.yaml"))

    for size in ("1000000.0", "1e6", "1.0e6", "1000000"):
        built = build(f"{{op: bcast, bytes: {size}, root: 1}}")
        assert built.streamed or any(s.nbytes == 1_000_000 for s in built.spans)
    hint = "only a size, such as bytes, may be written 1e6 or 1000000.0"
    for step, job, field, got in (("{op: bcast, bytes: 8, root: 1.0}", "", "program.1.root", "1.0"),
                                  ("{op: reduce, bytes: 8, elem_bytes: 4.0}", "", "program.1.elem_bytes", "4.0"),
                                  ("{op: send, src: 0.0, dst: 1, bytes: 8}", "", "program.1.src", "0.0"),
                                  ("{op: barrier}", "repeat: 2.0", "repeat", "2.0")):
        with pytest.raises(NetsteerError) as e:
            build(step, job)
        assert (e.value.field, e.value.reason) == (
            f"jobs.0.{field}", f"must be an integer, got {got} (write {got[:-2]}: {hint})")
    doc = " ".join((Path(__file__).resolve().parents[2] / "docs" / "collectives.md").read_text().split())
    assert "`bytes: 1e6` or `bytes: 1000000.0` is a size" in doc


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("step,field,got", [
    ("{op: bcast, bytes: 8, root: '1'}", "root", "'1'"),
    ("{op: bcast, bytes: 8, root: 1.0}", "root", "1.0"),
    ("{op: reduce, bytes: 8, root: true}", "root", "True"),
    ("{op: allreduce, bytes: 8, elem_bytes: '2'}", "elem_bytes", "'2'"),
    ("{op: send, src: '0', dst: 1, bytes: 8}", "src", "'0'"),
    ("{op: send, src: 0, dst: 1.0, bytes: 8}", "dst", "1.0"),
])
def test_a_step_integer_given_as_text_or_float_is_refused_as_a_job_field_is(tmp_path, capsys, stream,
                                                                             step, field, got):
    """Steps are as strict as the job's own fields (ranks: '8' is refused), in the same
    words, and as the streamed API's MpiJobSpec."""
    p = tmp_path / "s.yaml"
    p.write_text(text(f"stream: {stream}").replace("{op: compute, duration: 20us}", step))
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    hint = f" (write {got[:-2]}: only a size, such as bytes, may be written 1e6 or 1000000.0)" if got.endswith(".0") else ""
    assert err == f"netsteer: error: {p}: jobs.0.program.1.{field}: must be an integer, got {got}{hint}\n", err
    q = tmp_path / "r.yaml"
    q.write_text(text(f"stream: {stream}").replace("ranks: 24", "ranks: '24'"))
    assert run_cli(["run", str(q), "--json"]) == 2
    assert capsys.readouterr().err == f"netsteer: error: {q}: jobs.0.ranks: must be an integer, got '24'\n"


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("placement, field, reason", [
    ("random", "ranks", "99 ranks do not fit on 32 hosts with random placement"),
    ("linear", "ranks", "99 ranks do not fit on 32 hosts with linear placement"),
    ("[0, 1, 2]", "placement", "explicit placement lists 3 hosts for 99 ranks"),
])
def test_a_placement_that_does_not_fit_names_the_same_field_streamed_or_not(
        tmp_path, capsys, stream, placement, field, reason):
    """Too many ranks for the hosts is the rank count's fault, a short host list the
    placement's, whichever way the job runs."""
    p = tmp_path / "s.yaml"
    p.write_text(text(f"stream: {stream}").replace("ranks: 24", "ranks: 99")
                 .replace("placement: random", f"placement: {placement}"))
    assert run_cli(["run", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"netsteer: error: {p}: jobs.0.{field}: {reason}"), err


BIG = """
name: big
topology: {kind: pgft, levels: 2, down: [16, 16], up: [1, 16], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: %s}
jobs:
  - name: app
    ranks: 200
    %s
    program:
      - {op: alltoall, bytes: 1KiB, algorithm: bruck}
      - {op: allgather, bytes: 1KiB, algorithm: ring}
"""


def _no_tables(monkeypatch):
    import netsteer.routing

    def refuse(*a, **k):
        raise AssertionError("the tables were built before the jobs were refused")

    monkeypatch.setattr(netsteer.routing, "build_routing", refuse)


@pytest.fixture
def limit():
    """Set the memory limit (below the CLI's smallest) for one test."""
    from netsteer import limits

    yield limits.set_max_memory
    limits.reset()


@pytest.mark.parametrize("engine", ["minhop", "ecmp"])
def test_streamed_jobs_beside_the_tables_are_refused_before_the_tables_are_built(engine, limit, monkeypatch):
    """The engine walks its own copy of the tables: that copy, the tables and the
    ranks must fit, and a job that cannot is refused at once, not after the build."""
    from netsteer.errors import LimitError
    from netsteer.limits import routing_bytes, table_bytes, topology_bytes
    from netsteer.sim.stream import estimate_bytes
    from netsteer.topology.spec import build_topology

    sc = parse_scenario(BIG % (engine, "placement: linear"), file="big.yaml")
    topo = build_topology(sc.model.topology)
    base = topology_bytes(topo.n_nodes, topo.n_links, int(topo.out_channel.shape[1]) - 1)
    tables = table_bytes(topo)
    need = base + tables + estimate_bytes(topo, sc.model.jobs, table_bytes=tables)
    assert need > base + routing_bytes(topo)  # the tables alone would fit
    limit(4 * need - 8)  # small limits leave a quarter beside the interpreter
    with monkeypatch.context() as mp:
        _no_tables(mp)
        with pytest.raises(LimitError, match=r"the streamed MPI jobs would need about .* \(200 ranks\)") as e:
            build_scenario(sc)
    assert (e.value.file, e.value.field) == ("big.yaml", "jobs")
    limit(4 * need + 8)
    b = build_scenario(sc)
    assert [j for j, _ in b.streamed] == [0]


def test_a_dag_job_too_large_is_refused_before_the_tables_are_built(limit, monkeypatch):
    from netsteer.errors import LimitError

    sc = parse_scenario(BIG % ("minhop", "stream: false"), file="big.yaml")
    limit(4 << 20)
    _no_tables(monkeypatch)
    with pytest.raises(LimitError, match=r"the job would make about [\d,]+ flows") as e:
        build_scenario(sc)
    assert (e.value.file, e.value.field) == ("big.yaml", "jobs.0.program.1")  # the ring, the larger


FALLBACK = """
name: fallback
topology: {kind: pgft, levels: 2, down: [16, 16], up: [1, 8], link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: ENGINE}
jobs:
  - name: app
    ranks: RANKS
    program:
      - {op: alltoall, bytes: 1KiB, algorithm: pairwise}
events:
  - EVENT
"""


@pytest.mark.parametrize("engine,event,why", [
    ("minhop", "{at: 1ms, link_down: [{node: s1_0, port: 17}]}",
     "events.0 changes links and reroute_on_change re-routes flows in flight "
     "(routing engine 'minhop' routes around down links)"),
    ("dmodk", "{at: 1ms, routing: {engine: minhop}}", "events.0 changes the routing of flows in flight"),
])
def test_a_job_that_would_stream_says_why_it_runs_as_a_dag(engine, event, why, limit):
    # it was refused for its flows with no word of streaming, and ran with no note
    from netsteer.errors import LimitError

    sc = FALLBACK.replace("EVENT", event).replace("ENGINE", engine)
    built = build_scenario(parse_scenario(sc.replace("RANKS", str(STREAM_MIN_RANKS)), file="f.yaml"))
    assert not built.streamed
    assert any(n.startswith(f"jobs.0 ('app', {STREAM_MIN_RANKS} ranks) runs as a flow DAG") and n.endswith(why)
               for n in built.notes), built.notes
    # below the default's threshold, or with stream: false said, there is nothing to explain
    for text_ in (sc.replace("RANKS", "64"), sc.replace("RANKS", "128\n    stream: false")):
        assert not [n for n in build_scenario(parse_scenario(text_)).notes if "flow DAG" in n]
    limit(64 * 2**20)  # 16 MiB for flows: 32k of them; 256 ranks make 65,280
    with pytest.raises(LimitError) as info:
        build_scenario(parse_scenario(sc.replace("RANKS", "256"), file="f.yaml"))
    assert info.value.field == "jobs.0.program.0" and "65,280 flows" in info.value.reason
    assert info.value.reason.endswith(f"(the job runs as a flow DAG rather than streamed because {why})")
    with pytest.raises(LimitError) as info:
        build_scenario(parse_scenario(sc.replace("RANKS", "256\n    stream: false"), file="f.yaml"))
    assert "streamed" not in info.value.reason


@pytest.mark.parametrize("engine", ["dmodk", "ftree"])
def test_a_link_change_under_a_static_engine_streams(engine):
    """A static engine keeps its tables when links change (docs/scenarios.md), so
    nothing re-routes a message in flight: the job streams, by default and when it
    says so, and agrees with its DAG run (explore-scale: "events.0 changes links and
    reroute_on_change re-routes flows in flight" refused stream: true, and a
    4,096-rank job fell back to a DAG too large for the memory)."""
    sc = FALLBACK.replace("ENGINE", engine).replace(
        "EVENT", "{at: 20us, link_down: [{node: s1_0, port: 17}]}\n  - {at: 200us, link_up: [{node: s1_0, port: 17}]}")
    built = build_scenario(parse_scenario(sc.replace("RANKS", str(STREAM_MIN_RANKS)), file="f.yaml"))
    assert built.streamed and not [n for n in built.notes if "flow DAG" in n], built.notes
    small = sc.replace("RANKS", "32\n    stream: STREAM").replace("1KiB", "64KiB")
    streamed, dag = (run_scenario(build_scenario(parse_scenario(small.replace("STREAM", s), file="f.yaml")))
                     for s in ("true", "false"))
    assert streamed.makespan_ns == dag.makespan_ns > 200_000
