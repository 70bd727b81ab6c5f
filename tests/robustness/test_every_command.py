"""Every command the CLI has, found by walking it (so a command added later is covered
without editing this file): usage errors, and unreadable or hostile files in every
required argument, are one line and exit 2. Then the commands' own bad inputs that the
walk cannot invent: sweeps, plans, the simulator's clock, piped tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import typer

from .conftest import GOOD

DEEP = b"a: " + b"[" * 300 + b"]" * 300 + b"\n"


def _leaves():
    from netsteer.cli import app

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                yield from walk(sub, [*path, name])
        else:
            yield path, cmd

    return list(walk(typer.main.get_command(app), []))


LEAVES = _leaves()
IDS = [" ".join(p) for p, _ in LEAVES]


def test_the_walk_finds_the_known_commands():
    names = set(IDS)
    for known in ("run", "topo", "route", "route-eval", "reproduce pftree", "sweep run", "sweep report",
                  "plan circuits"):
        assert known in names, sorted(names)


@pytest.mark.parametrize("path,command", LEAVES, ids=IDS)
def test_usage_errors_of_every_command(cli, path, command):
    cli(*path, "--no-such-option").refused("--no-such-option", " ".join(path))
    if any(p.required for p in command.params):
        cli(*path).refused("Missing")


def _hostile_files(tmp_path):
    (tmp_path / "binary").write_bytes(b"\xff\xfe\x00garbage\x80\n")
    (tmp_path / "deep.yaml").write_bytes(DEEP)
    (tmp_path / "adir").mkdir()
    return {"non-UTF-8": tmp_path / "binary", "nested": tmp_path / "deep.yaml", "a directory": tmp_path / "adir",
            "missing": tmp_path / "missing.yaml"}


@pytest.mark.parametrize("path,command", [(p, c) for p, c in LEAVES if any(q.required for q in c.params)],
                         ids=[i for i, (p, c) in zip(IDS, LEAVES) if any(q.required for q in c.params)])
def test_hostile_files_in_every_required_argument(cli, tmp_path, path, command):
    for what, bad in _hostile_files(tmp_path).items():
        args: list = list(path)
        for p in command.params:
            if not p.required:
                continue
            kind = p.bare_type()
            if kind in (int, float):
                value = "1"
            elif p.name == "out" and p.param_type_name == "option":
                value = tmp_path / "written"  # an output, not an input
            else:
                value = bad
            args += [value] if p.param_type_name == "argument" else [p.opts[0], value]
        res = cli(*args)
        assert res.code == 2, f"{what}: exit {res.code}: {res.err[:300]}"
        res.refused()
        assert not (tmp_path / "written").exists()


# -- sweeps ---------------------------------------------------------------------------

SWEEPS = [
    ("grid: {routing.engine: [dmodk, minhop]}\ngrid: {jobs.0.name: [x]}\n", ["line 2", "given twice"]),
    ("grid: {routing.engine: dmodk}\n", ["grid.routing.engine", "list"]),
    ("grid: {routing.engin: [dmodk]}\n", ["grid.routing.engin", "engin"]),
    ("grid: {}\n", ["grid", "empty"]),
    ("grid: {jobs.9.name: [x]}\n", ["grid.jobs.9.name"]),
    ("points: [{jobs.1.ranks: 2}, {jobs.1.ranks: 2}]\n", ["points.1", "already"]),
    ("grid: {routing.engine: [dmodk]}\nrepeat_seeds: [1, true]\n", ["repeat_seeds.1"]),
    ("grid: {routing.engine: [dmodk]}\ncolour: red\n", ["colour"]),
    ("grid: " + "{a: " * 100 + "1" + "}" * 100 + "\n", ["nested deeper"]),
    ("grid: {jobs.1.ranks: [" + ",".join(str(i) for i in range(1, 1001)) + "], routing.engine: [a, b, c, d, e, f, "
     "g, h, i, j]}\nrepeat_seeds: [" + ",".join(str(i) for i in range(200)) + "]\n", ["grid", "points"]),
]


@pytest.mark.parametrize("body,fragments", SWEEPS, ids=[f"sw{i}" for i in range(len(SWEEPS))])
def test_bad_sweep_files(cli, tmp_path, body, fragments):
    (tmp_path / "base.yaml").write_text(GOOD)
    f = tmp_path / "sweep.yaml"
    f.write_text("base: base.yaml\n" + body)
    out = tmp_path / "out"
    cli("sweep", f, "--out", out, "--no-progress").refused(str(f), *fragments)
    assert not out.exists()  # refused before a cluster or a folder


def test_bad_sweep_options_and_results(cli, tmp_path):
    (tmp_path / "base.yaml").write_text(GOOD)
    f = tmp_path / "sweep.yaml"
    f.write_text("base: base.yaml\ngrid: {routing.engine: [dmodk, minhop]}\n")
    # a number of workers past the memory limit: refused with the estimate, no process started
    cli("sweep", f, "--workers", 10**20, "--out", tmp_path / "o").refused("--workers", "memory limit")
    cli("--max-memory", "1GiB", "sweep", f, "--workers", 9, "--check").refused("9 worker processes", "1 GiB")
    assert cli("--max-memory", "2GiB", "sweep", f, "--workers", 9, "--check").code == 0
    cli("sweep", f, "--workers", 2, "--scheduler", "tcp://127.0.0.1:1").refused("--workers")
    cli("sweep", f, "--scheduler", "no-port-here", "--out", tmp_path / "o").refused("--scheduler")
    (tmp_path / "afile").write_text("x")
    cli("sweep", f, "--out", tmp_path / "afile").refused("afile", "--out")
    cli("sweep", "report", tmp_path).refused("no sweep results")
    junk = tmp_path / "junk" / "results.parquet"
    junk.parent.mkdir()
    junk.write_bytes(b"PAR1 not really")
    cli("sweep", "report", junk.parent).refused(str(junk), "cannot read")
    # a small file of many repeated rows: its size is read from the footer and refused before the rows
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 400_000
    bomb = tmp_path / "bomb" / "results.parquet"
    bomb.parent.mkdir()
    pq.write_table(pa.table({"point": ["p"] * n, "status": ["done"] * n, "makespan_s": [1.0] * n, "x": [1] * n}), bomb)
    assert bomb.stat().st_size < 100_000
    cli("--max-memory", "256MiB", "sweep", "report", bomb.parent).refused(str(bomb), "400,000 rows", "memory limit")
    assert not (tmp_path / "o").exists()


# -- plan -----------------------------------------------------------------------------

@pytest.mark.parametrize("data,fragments", [
    (b"\xff\xfe0,1\n", ["not UTF-8", "line 1"]),
    (b"0,1\n1,\x000\n", ["NUL", "line 2"]),
    (b"0,1e400\n1,0\n", ["finite"]),
    (b"0,1\n1\n", ["line 2"]),
])
def test_bad_demand_matrices(cli, tmp_path, data, fragments):
    m = tmp_path / "m.csv"
    m.write_bytes(data)
    cli("plan", "circuits", "--matrix", m, "--ocs", 1, "--capacity", "10Gbps").refused(str(m), *fragments)


# -- the simulator's clock -------------------------------------------------------------

def test_a_run_past_the_clock_is_refused_not_reported_stalled(cli, tmp_path):
    head = GOOD.split("jobs:")[0]
    f = tmp_path / "s.yaml"
    # 1 TiB at 1 bps takes 279,000 years; a 1 GiB flow starting after 200 years ends past the clock too
    slow = head.replace("link_bandwidth: 10Gbps", "link_bandwidth: 1bps")
    f.write_text(slow + "jobs:\n  - name: a\n    flows: [{src: 0, dst: 5, bytes: 1TiB}]\n")
    cli("run", f, "--json", "--no-progress").refused(str(f), "jobs.0", "clock", "'a'")
    # the same with --out: its sampling interval, sized to the run, must not overflow first
    cli("run", f, "--out", tmp_path / "o", "--no-progress").refused(str(f), "jobs.0", "clock", "'a'")
    assert not (tmp_path / "o").exists()
    f.write_text(head + "jobs:\n  - name: ok\n    flows: [{src: 0, dst: 5, bytes: 1MiB}]\n"
                 "  - name: late\n    flows: [{src: 1, dst: 6, bytes: 1GiB, start: 6311390400s}]\n")
    cli("run", f, "--json", "--no-progress").refused("jobs.1", "'late'", "years")
    # the same flow 100 years in: a sane, finished result
    f.write_text(head + "jobs:\n  - name: late\n    flows: [{src: 1, dst: 6, bytes: 1GiB, start: 3155695200s}]\n")
    res = cli("run", f, "--json", "--no-progress")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert out["status"] == "done" and 3155695200 < out["makespan_s"] < 3155695201
    # a run stalled by a link that never comes back stays "stalled"
    f.write_text(head + "jobs:\n  - name: a\n    flows: [{src: 0, dst: 5, bytes: 1GiB}]\n"
                 "  - name: bg\n    bulk: [{src: 2, dst: 7}]\n"
                 "events: [{at: 1ms, link_down: [{node: h0, port: 1}]}]\n")
    res = cli("run", f, "--json", "--no-progress")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    # the bulk flow waits for a flow that never ends: it never ends either (it used to "finish"
    # after 25 years, its nominal size, and that was the makespan); nothing finished at all
    assert out["status"] == "stalled" and [j["completion_s"] for j in out["jobs"]] == [None, None]
    assert out["makespan_s"] is None  # not 0: there is no last completion
    # when it stuck, and what the flows left had sent by then: 1 ms at 10 Gbit/s is 1.25 MB,
    # of which the bulk flow's share of their common link took half
    assert out["stalled"]["at_s"] == pytest.approx(1e-3)
    assert 0.45 * 1.25e6 < out["stalled"]["bytes_sent"] <= 0.5 * 1.25e6
    text = cli("run", f, "--no-progress")
    assert "makespan none: nothing finished (stalled at 1 ms)" in text.out, text.out
    # with a foreground flow that does finish, the makespan is its end, not the bulk flow's
    f.write_text(head + "jobs:\n  - name: a\n    flows: [{src: 0, dst: 5, bytes: 1GiB}, {src: 3, dst: 4, bytes: 1MiB}]\n"
                 "  - name: bg\n    bulk: [{src: 2, dst: 7}]\n"
                 "events: [{at: 1ms, link_down: [{node: h0, port: 1}]}]\n")
    res = cli("run", f, "--json", "--no-progress")
    out = json.loads(res.out)
    assert out["status"] == "stalled" and 0 < out["makespan_s"] < 0.01, out["makespan_s"]


@pytest.mark.parametrize("fidelity,job,fragments", [
    ("flow", "{name: a, flows: [{src: 0, dst: 1, bytes: 1MiB}]}", ["jobs.0:", "clock", "job 'a'", "latencies"]),
    ("flow", "{name: a, ranks: 2, stream: true, program: [{op: send, src: 0, dst: 1, bytes: 1MiB}]}",
     ["jobs.0:", "clock", "job 'a'"]),
    ("packet", "{name: a, flows: [{src: 0, dst: 1, bytes: 1MiB}]}", ["topology:", "picoseconds", "flow level"]),
])
def test_a_path_of_the_longest_links_does_not_wrap_its_latency(cli, tmp_path, fidelity, job, fragments):
    # two hops of 2^63-1 ns (a link's largest latency) summed to -2 ns: the flow "finished"
    # in 0.84 ms; now the path's latency saturates, past the clock (at packet level, whose
    # clock is int64 ps, such links are refused up front)
    f = tmp_path / "s.yaml"
    f.write_text("name: lat\n"
                 "topology: {kind: pgft, levels: 1, down: [2], up: [1], link_bandwidth: 10Gbps, "
                 "link_latency: 9223372036854775807ns}\n"
                 f"routing: {{engine: dmodk}}\nfidelity: {fidelity}\njobs:\n  - {job}\n")
    cli("run", f, "--json", "--no-progress").refused(str(f), *fragments)


# -- tables in pipes ---------------------------------------------------------------------

LONG = "a-name-long-enough-that-an-eighty-column-table-would-have-to-cut-it-" * 2


@pytest.mark.parametrize("stream", ["true", "false"])
@pytest.mark.parametrize("bw,job", [
    # 1 EiB at 1 Gbit/s: 292 years
    ("1Gbps", "{name: a, ranks: 2, stream: %s, program: [{op: send, src: 0, dst: 1, bytes: 1152921504606846976}]}"),
    # a start 285 years in (under the 292 a duration may say): its messages end past the clock
    ("1Gbps", "{name: a, ranks: 4, stream: %s, start: 9000000000s, program: [{op: allreduce, bytes: 1MiB}]}"),
    ("1Gbps", "{name: a, ranks: 16, stream: %s, program: [{op: alltoall, algorithm: pairwise, "
              "bytes: 1152921504606846976}]}"),
    # three of its 15 exchanges end (58 years each, two messages sharing a link), the fourth would not
    ("10Gbps", "{name: a, ranks: 16, stream: %s, program: [{op: alltoall, algorithm: pairwise, "
               "bytes: 1152921504606846976}]}"),
])
def test_a_streamed_run_past_the_clock_is_refused_as_the_dag_is(cli, tmp_path, stream, bw, job):
    # streamed, it was "makespan none: nothing finished (stalled at 2 us)", a warning that
    # 0 flows never finished, and exit 0: its messages are no flows of the DAG
    f = tmp_path / "s.yaml"
    f.write_text("name: clock\n"
                 f"topology: {{kind: pgft, levels: 2, down: [4, 4], up: [1, 2], link_bandwidth: {bw}, "
                 "link_latency: 1us}\n"
                 "routing: {engine: dmodk}\n"
                 "jobs:\n  - name: ok\n    flows: [{src: 5, dst: 6, bytes: 1MiB}]\n"
                 "  - " + job % stream + "\n")
    cli("run", f, "--json", "--no-progress").refused(str(f), "jobs.1:", "clock", "job 'a'", "146 years")


def test_simulate_mpi_past_the_clock_is_refused():
    from netsteer.errors import NetsteerError
    from netsteer.sim.stream import MpiJobSpec, simulate_mpi
    from netsteer.topology.pgft import pgft

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=1000)
    jobs = [MpiJobSpec(name="ok", ranks=2, program=[{"op": "barrier"}]),
            MpiJobSpec(name="a", ranks=2, program=[{"op": "send", "src": 0, "dst": 1, "bytes": 2**60}])]
    with pytest.raises(NetsteerError) as info:
        simulate_mpi(t, "dmodk", jobs)
    assert info.value.field == "jobs.1" and "'a'" in info.value.reason and "clock" in info.value.reason


def test_a_reader_that_goes_away_ends_the_run_with_the_pipes_code(tmp_path):
    """``netsteer run ... | head -n1``: the tables' writer meets a closed pipe. That is
    141 (SIGPIPE), as for any writer, with nothing on stderr; rich's own exit was 1,
    the internal-error code."""
    import subprocess
    import sys

    f = tmp_path / "s.yaml"
    # 3,000 jobs: their table (over 200 KB) cannot sit whole in the pipe's buffer, so the
    # writer is still writing when the reader goes away
    head = GOOD.split("jobs:")[0]
    f.write_text(head + "jobs:\n" + "".join(f"  - {{name: j{k}, flows: [{{src: 0, dst: 5, bytes: 1KiB}}]}}\n"
                                            for k in range(3000)))
    p = subprocess.Popen([sys.executable, "-m", "netsteer", "run", str(f), "--no-progress"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()  # before the rest of the tables is written
    err = p.stderr.read()
    assert p.wait(timeout=120) == 141 and err == b"", err


def test_tables_are_whole_when_piped(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(GOOD.replace("name: t\n", f"name: {LONG}\n", 1).replace("- name: j\n", f"- name: {LONG}j\n", 1))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    for args in (["run", f, "--no-progress"], ["topo", "pgft:levels=2,down=4;4,up=1;2,link_bandwidth=10Gbps"]):
        # stdin, stdout and stderr all off a terminal: what CI, cron and `| less` see
        p = subprocess.run([sys.executable, "-m", "netsteer", *map(str, args)], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        assert "…" not in p.stdout, p.stdout
        if args[0] == "run":
            assert f"{LONG}j:flow" in p.stdout  # the longest cell, whole on one line


def test_help_is_readable_when_piped():
    """Off a terminal the tables are made wide; help panels fill the whole width, so
    they get a width of their own instead of lines padded to 1000 columns."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERMINAL_WIDTH")}
    for args in (["--help"], ["run", "--help"]):
        p = subprocess.run([sys.executable, "-m", "netsteer", *args], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=120, env=env)
        assert p.returncode == 0, p.stderr
        widths = [len(line) for line in p.stdout.splitlines()]
        assert max(widths) <= 100 and "Usage: netsteer " in p.stdout, p.stdout
    assert "--max-memory" in p.stdout or "--fidelity" in p.stdout


# -- outputs that are pipes or devices ---------------------------------------------------

def test_an_output_that_is_a_pipe_is_written_into_not_replaced(cli, tmp_path):
    import stat
    import threading

    fifo = tmp_path / "lfts.pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()  # opening a FIFO for writing waits for its reader: this one
    res = cli("route", "-t", "pgft:levels=1,down=4,up=1,link_bandwidth=1Gbps", "-e", "minhop", "--out", fifo)
    reader.join(timeout=60)
    assert res.code == 0, res.err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the pipe, not a regular file renamed over it
    assert got and got[0].startswith(b"Unicast lids") and b"'h3'" in got[0]
    assert [p.name for p in tmp_path.iterdir()] == ["lfts.pipe"]  # no temporary file beside it
