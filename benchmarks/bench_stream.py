"""Benchmark: MPI programs streamed through the engine (netsteer.sim.stream), against
SimGrid's SMPI, whole process against whole process.

Mixed programs (Rabenseifner allreduce, Bruck alltoall, scatter+allgather bcast ...)
at 256 to 2048 ranks, random and linear placement, oversubscribed trees and parallel
cables. Each netsteer run is a fresh Python process (import, topology, routing, run),
as an smpirun is; its wall time and peak RSS come from ``wait4``. The simulation alone
is timed inside it. The prediction is checked against SimGrid's and against the flow
DAG of ``netsteer.traffic.mpi`` (today's path) run in another process.

``--scale`` runs the large jobs instead (no SimGrid: it would take hours): 16,384
ranks (pairwise alltoall 4 KiB then ring allreduce 16 MiB) and 65,536 ranks (binomial
bcast then recursive-doubling allreduce), with peak memory and memory per rank and per
message in flight.

``--case JSON`` runs one case of your own against SimGrid instead (with ``--scale``:
without SimGrid, with memory per rank, for cases too large for it), e.g.
``--case '{"ranks": 512, "placement": "random", "tree": {"levels": 2, "down": [16, 32],
"up": [1, 4]}, "program": [["allreduce", "ring", 1048576, 0]]}'`` (program steps are
``[op, algorithm, bytes, root]``).

``--scenario FILE`` runs a scenario file through ``netsteer run --json`` in a fresh
process (e.g. ``benchmarks/scenarios/stream-16k.yaml``: the 16,384-rank job as a
scenario, streamed by default), with its wall time and peak RSS from ``wait4``.
"""

from __future__ import annotations

# the child (a netsteer run timed whole) imports only what a user's script would:
# argparse, subprocess, pathlib and platform load in the functions of the parent
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MIXED = [("allreduce", "rabenseifner", 4 << 20, 0), ("alltoall", "bruck", 4 << 10, 0),
         ("bcast", "scatter_allgather", 4 << 20, 0)]
CASES = [
    dict(name="p256 random, 2 levels, 2:1", ranks=256, placement="random",
         tree=dict(levels=2, down=[16, 32], up=[1, 8]), program=MIXED),
    dict(name="p512 random, 3 levels, 4:1 leaves", ranks=512, placement="random",
         tree=dict(levels=3, down=[8, 8, 16], up=[1, 2, 4]),
         program=[("reduce", "rabenseifner", 2 << 20, 7), ("allgather", "ring", 2 << 10, 0),
                  ("allreduce", "recursive_doubling", 1 << 20, 0)]),
    dict(name="p1024 linear, 3 levels, full bisection", ranks=1024, placement="linear",
         tree=dict(levels=3, down=[8, 8, 16], up=[1, 8, 8]), program=MIXED),
    dict(name="p2048 random, 3 levels, 2:1", ranks=2048, placement="random",
         tree=dict(levels=3, down=[16, 16, 16], up=[1, 8, 8]),
         program=[("allreduce", "rabenseifner", 8 << 20, 0), ("alltoall", "bruck", 1 << 10, 0),
                  ("bcast", "binomial", 16 << 20, 0), ("gather", "binomial", 4 << 10, 3)]),
]
SCALE = [
    dict(name="p16384 pairwise alltoall 4KiB + ring allreduce 16MiB", ranks=16384,
         placement="linear", tree=dict(levels=3, down=[16, 32, 32], up=[1, 16, 32]),
         program=[("alltoall", "pairwise", 4 << 10, 0), ("allreduce", "ring", 16 << 20, 0)]),
    dict(name="p65536 binomial bcast 1MiB + recursive-doubling allreduce 1MiB", ranks=65536,
         placement="linear", tree=dict(levels=3, down=[32, 32, 64], up=[1, 32, 32]),
         program=[("bcast", "binomial", 1 << 20, 0), ("allreduce", "recursive_doubling", 1 << 20, 0)]),
]
BW, LAT = 10e9, 1000


def _job(case, spec=True):
    """The case's job: the streamed path's plain spec (no pydantic), or the scenario
    model ``MpiJob`` for the DAG path (same fields, same checks)."""
    if spec:
        from netsteer.traffic.program import MpiJobSpec as Job
    else:
        from netsteer.traffic.mpi import MpiJob as Job

    prog = [{"op": op, "algorithm": a, **({"bytes": n} if op != "barrier" else {}),
             **({"root": r} if op in ("bcast", "reduce", "gather", "scatter") else {})}
            for op, a, n, r in case["program"]]
    return Job(name="job", ranks=case["ranks"], placement=case["placement"], seed=1, program=prog)


def child(case: dict, dag: bool) -> dict:
    """One netsteer run, in this (fresh) process."""
    t0 = time.perf_counter()
    from netsteer.topology.pgft import pgft

    topo = pgft(**case["tree"], link_bandwidth=BW, link_latency_ns=LAT)
    job = _job(case, spec=not dag)
    if dag:
        from netsteer.routing import build_routing
        from netsteer.sim import simulate
        from netsteer.traffic.mpi import expand_mpi_job

        x = expand_mpi_job(job, topo.n_hosts)
        res = simulate(topo, build_routing(topo, "dmodk"), x.dag, sharing="cm02")
        return {"predicted_ns": res.makespan_ns, "sim_wall_s": res.wall_s, "flows": len(x.dag)}
    from netsteer.sim.stream import simulate_mpi

    res = simulate_mpi(topo, "dmodk", [job], sharing="cm02")
    return {"predicted_ns": res.makespan_ns, "sim_wall_s": res.wall_s, "status": res.status,
            "messages": res.progress["messages_done"], "peak_in_flight": res.progress["peak_in_flight"],
            "flow_slots": res.progress["flow_slots"], "stats": res.stats,
            "inside_wall_s": time.perf_counter() - t0}


def spawn(index: int | str, scale: bool, dag: bool = False) -> dict:
    """Run case ``index`` (or the case given as JSON) in a fresh process; add its wall
    time and peak RSS."""
    import subprocess

    cmd = [sys.executable, __file__, "--child", str(index)] + (["--scale"] if scale else []) + \
          (["--dag"] if dag else [])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise RuntimeError(f"netsteer child failed: {cmd}")
    row = json.loads(out.strip().splitlines()[-1])
    row.update(wall_s=wall, peak_rss_bytes=usage.ru_maxrss * 1024)
    return row


def run_file(path: str, out_dir: str | None = None) -> dict:
    """``netsteer run path --json`` in a fresh process (with ``--out out_dir``: also its
    result directory, counters and plots): its result, wall time and peak RSS."""
    import subprocess
    from pathlib import Path

    cmd = [str(Path(sys.executable).with_name("netsteer")), "run", path, "--json", "--no-progress"]
    cmd += ["--out", out_dir] if out_dir else []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise RuntimeError(f"netsteer run failed: {cmd}")
    return {"result": json.loads(out), "wall_s": wall, "peak_rss_bytes": usage.ru_maxrss * 1024,
            "cpu_s": usage.ru_utime + usage.ru_stime}


def _as_dag(path: str) -> str:
    """A copy of scenario ``path`` with every MPI job's ``stream: false``."""
    import tempfile
    from pathlib import Path

    import yaml

    data = yaml.safe_load(Path(path).read_text())
    for job in data["jobs"]:
        if "program" in job:
            job["stream"] = False
    out = Path(tempfile.mkdtemp()) / Path(path).name
    out.write_text(yaml.safe_dump(data))
    return str(out)


def _user_case(text: str) -> dict:
    """The ``--case`` JSON as a case, with a name; a clear error if it is not one."""
    from netsteer.errors import NetsteerError

    try:
        case = json.loads(text)
        case.setdefault("placement", "linear")
        case.setdefault("name", f"p{case['ranks']} {case['placement']}, {case['tree']['levels']} levels")
        for op, algo, n, root in case["program"]:
            if not (isinstance(op, str) and isinstance(algo, str) and int(n) >= 0 and int(root) >= 0):
                raise ValueError(f"bad step {[op, algo, n, root]}")
        _job(case)  # the job's own checks (algorithm names, roots, ranks)
        from netsteer.topology.pgft import pgft
        from netsteer.traffic.placement import place

        topo = pgft(**case["tree"], link_bandwidth=BW, link_latency_ns=LAT)
        place(case["ranks"], case["placement"], topo.n_hosts, 1)
    except KeyError as e:
        reason = f"missing field {e}"
    except (ValueError, TypeError, AttributeError, NetsteerError) as e:
        reason = str(e)
    else:
        return case
    print(f"bench_stream: --case: {reason}: expected JSON with ranks, placement, tree "
          "(levels, down, up) and program ([op, algorithm, bytes, root] steps)", file=sys.stderr)
    raise SystemExit(2)


def _case_arg(arg: str) -> dict:
    """The child's case: an index into the tables, or a case as JSON."""
    if arg.lstrip().startswith("{"):
        return json.loads(arg)  # program steps as lists: unpacked like the tables' tuples
    return (SCALE if "--scale" in sys.argv else CASES)[int(arg)]


def simgrid(case: dict) -> dict:
    from _peers import run_smpi_program
    from netsteer.traffic.placement import place
    from netsteer.validation.simgrid import SMPI_CONFIG, platform_xml

    t = case["tree"]
    hosts = place(case["ranks"], case["placement"], __import__("math").prod(t["down"]), 1)
    xml = platform_xml(t["levels"], t["down"], t["up"], t.get("parallel"), BW, LAT)
    return run_smpi_program(case["program"], hosts, xml, {**SMPI_CONFIG, "network/optim": "Full"})


def main() -> None:
    import argparse
    import platform

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", action="store_true",
                    help="the large jobs, without SimGrid (with --case: that case, without SimGrid)")
    ap.add_argument("--only", type=int, help="run one case (index)")
    ap.add_argument("--no-dag", action="store_true", help="skip the DAG check")
    ap.add_argument("--case", help="one case of your own, as JSON (module text)")
    ap.add_argument("--scenario", help="a scenario file, through netsteer run")
    ap.add_argument("--compare-dag", action="store_true",
                    help="with --scenario: run it again with every MPI job as a flow DAG (the peer)")
    ap.add_argument("--with-out", action="store_true",
                    help="with --scenario: run it again writing --out (result.json, counters.parquet, plots)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--dag", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.scenario:
        runs = {"as given": run_file(a.scenario)}
        if a.compare_dag:
            runs["DAG"] = run_file(_as_dag(a.scenario))
        if a.with_out:
            import shutil
            import tempfile

            d = tempfile.mkdtemp()
            runs["with --out"] = run_file(a.scenario, os.path.join(d, "out"))
            runs["with --out"]["counters_bytes"] = os.path.getsize(os.path.join(d, "out", "counters.parquet"))
            shutil.rmtree(d)
        for how, r in runs.items():
            res, st = r["result"], r["result"].get("streamed") or {}
            if not a.json:
                print(f"{res['scenario']} ({how}): {res['flows']:,} flows ({st.get('messages_done', 0):,} "
                      f"messages streamed, at most {st.get('peak_in_flight', 0):,} in flight), makespan "
                      f"{res['makespan_s'] * 1e3:.3f} ms; wall {r['wall_s']:.2f} s (CPU {r['cpu_s']:.2f} s, "
                      f"simulation {res['wall_s']:.2f} s), peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB")
        if "DAG" in runs and not a.json:
            s_, d_ = runs["as given"], runs["DAG"]
            print(f"streamed vs DAG: same makespan {s_['result']['makespan_s'] == d_['result']['makespan_s']}; "
                  f"CPU {d_['cpu_s'] / s_['cpu_s']:.1f}x less, peak RSS "
                  f"{d_['peak_rss_bytes'] / s_['peak_rss_bytes']:.1f}x less")
        if a.json:
            print(json.dumps({"date": time.strftime("%Y-%m-%d"), **runs}))
        return
    cases = SCALE if a.scale else CASES
    if a.case:
        cases = [_user_case(a.case)]
    rows = []
    for i, case in enumerate(cases):
        if a.only is not None and i != a.only:
            continue
        index = json.dumps(case) if a.case else i
        ns = spawn(index, a.scale)
        row = {"case": case["name"], "ranks": case["ranks"], "netsteer": ns}
        if a.scale:
            from netsteer.sim.stream import FLOW_BYTES, RANK_BYTES

            row["bytes_per_rank"] = (ns["peak_rss_bytes"]) / case["ranks"]
            if not a.json:
                print(f"{case['name']:<62} {ns['messages']:>12,} messages, predicted "
                      f"{ns['predicted_ns'] * 1e-6:10.3f} ms; wall {ns['wall_s']:7.1f} s "
                      f"(simulation {ns['sim_wall_s']:7.1f} s), peak RSS "
                      f"{ns['peak_rss_bytes'] / 2**20:7.0f} MiB = {row['bytes_per_rank']:.0f} B/rank; "
                      f"peak {ns['peak_in_flight']:,} messages in flight "
                      f"(estimate {RANK_BYTES} B/rank + {FLOW_BYTES} B/message)", flush=True)
            rows.append(row)
            continue
        sg = simgrid(case)
        dag = None if a.no_dag else spawn(index, False, dag=True)
        row.update(simgrid=sg, dag=dag,
                   rel_diff_simgrid=(ns["predicted_ns"] * 1e-9 - sg["seconds"]) / sg["seconds"],
                   rel_diff_dag=None if dag is None else (ns["predicted_ns"] - dag["predicted_ns"]) /
                   dag["predicted_ns"],
                   speedup_end_to_end=sg["wall_s"] / ns["wall_s"],
                   speedup_simulation=sg["wall_s"] / ns["sim_wall_s"])
        rows.append(row)
        if not a.json:
            dd = "n/a" if dag is None else f"{100 * row['rel_diff_dag']:+.4f}%"
            print(f"{case['name']:<46} {ns['messages']:>10,} msgs  predicted {ns['predicted_ns'] * 1e-6:9.3f} ms "
                  f"(SimGrid {sg['seconds'] * 1e3:9.3f} ms, {100 * row['rel_diff_simgrid']:+.3f}%; DAG {dd})  "
                  f"wall netsteer {ns['wall_s']:5.2f} s (sim {ns['sim_wall_s']:6.3f} s, "
                  f"{ns['peak_rss_bytes'] / 2**20:.0f} MiB)  SimGrid {sg['wall_s']:6.2f} s "
                  f"({sg['peak_rss_bytes'] / 2**20:.0f} MiB)  -> {row['speedup_end_to_end']:.1f}x "
                  f"({row['speedup_simulation']:.1f}x)", flush=True)
    if a.json:
        print(json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()} "
                          f"cores={os.cpu_count()}", "rows": rows}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:  # no argparse in the process timed
        print(json.dumps(child(_case_arg(sys.argv[2]), "--dag" in sys.argv)))
    else:
        main()
