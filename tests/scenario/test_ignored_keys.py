"""Keys that were taken and silently ignored (explore-mpi): ``seed`` beside a placement
that draws nothing, ``elem_bytes`` on a barrier, and an explicit flow with
``src == dst`` and data (documented: it moves nothing)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from netsteer.errors import NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

TOPO = """\
name: s
topology: {kind: pgft, levels: 2, down: [4, 4], up: [1, 2], parallel: [1, 1],
           link_bandwidth: 10Gbps, link_latency: 1us}
routing: {engine: dmodk}
"""


def mpi(placement: str, extra: str = "", step: str = "{op: allreduce, bytes: 1KiB}", stream: bool = False) -> str:
    return TOPO + textwrap.dedent(f"""\
        jobs:
          - name: app
            ranks: 4
            placement: {placement}
            stream: {str(stream).lower()}
            program: [{step}]
        """) + extra


def notes(text: str) -> list[str]:
    return build_scenario(parse_scenario(text, file="s.yaml")).notes


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("placement,what", [("linear", "placement linear"),
                                            ("[3, 1, 0, 2]", "an explicit placement")])
def test_a_seed_that_draws_nothing_is_noted(placement, what, stream):
    got = notes(mpi(placement, "    seed: 3\n", stream=stream))
    assert [n for n in got if "seed" in n] == [
        f"jobs.0.seed (3) is not used: {what} places the ranks without a draw; seed applies to placement: random"]


def test_a_seed_that_draws_is_not_noted():
    assert not [n for n in notes(mpi("random", "    seed: 3\n")) if "seed" in n]
    assert not [n for n in notes(mpi("linear")) if "seed" in n]  # none given


@pytest.mark.parametrize("stream", [False, True])
def test_a_barrier_with_elem_bytes_is_refused_naming_the_field(tmp_path, stream):
    text = mpi("linear", step="{op: barrier, elem_bytes: 4}", stream=stream)
    with pytest.raises(NetsteerError) as e:
        build_scenario(parse_scenario(text, file="s.yaml"))
    assert e.value.field == "jobs.0.program.0.elem_bytes"
    assert "a barrier moves no data" in e.value.reason
    f = tmp_path / "s.yaml"
    f.write_text(text)
    r = subprocess.run([sys.executable, "-m", "netsteer", "run", str(f)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert f"{f}: jobs.0.program.0.elem_bytes: a barrier moves no data" in r.stderr


def test_a_barrier_step_of_the_api_refuses_elem_bytes_too():
    from netsteer.traffic.program import parse_steps

    with pytest.raises(NetsteerError, match="a barrier moves no data, so it has no elements; barrier takes algorithm"):
        parse_steps([{"op": "barrier", "elem_bytes": 4}])


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("step", ["{op: alltoall, bytes: 12, elem_bytes: 4}", "{op: allgather, bytes: 8, elem_bytes: 8}",
                                  "{op: bcast, bytes: 1KiB, elem_bytes: 4}", "{op: gather, bytes: 8, elem_bytes: 1}",
                                  "{op: scatter, bytes: 8, root: 1, elem_bytes: 2}"])
def test_elem_bytes_off_a_reduction_is_refused_naming_the_field(tmp_path, step, stream):
    """explore-scale: an alltoall of 10 bytes with elem_bytes 4 ran (exit 0), and
    elem_bytes 1, 4 or 8 gave the same times: only a reduction combines elements."""
    from netsteer.traffic.program import parse_steps

    op = step.split(",")[0].split()[-1]
    text = mpi("linear", step=step, stream=stream)
    with pytest.raises(NetsteerError) as e:
        build_scenario(parse_scenario(text, file="s.yaml"))
    assert e.value.field == "jobs.0.program.0.elem_bytes"
    assert e.value.reason.startswith(f"{op} moves blocks of bytes without combining them, so an element size "
                                     "changes nothing (elem_bytes applies to reductions: reduce, allreduce)")
    with pytest.raises(NetsteerError) as api:  # the streamed API's spec says the same
        parse_steps([__import__("yaml").safe_load(step)])
    assert (api.value.field, api.value.reason) == ("program.0.elem_bytes", e.value.reason)


@pytest.mark.parametrize("step", ["{op: allreduce, bytes: 12, elem_bytes: 4}", "{op: reduce, bytes: 8, elem_bytes: 8}"])
def test_elem_bytes_on_a_reduction_is_taken(step):
    build_scenario(parse_scenario(mpi("linear", step=step), file="s.yaml"))


def test_a_flow_from_a_host_to_itself_moves_nothing_whatever_its_bytes():
    """docs/scenarios.md: a flow with src == dst ends after its delay, bytes or not
    (no host-local copy is modelled)."""
    from netsteer.sim import run_scenario

    text = TOPO + textwrap.dedent("""\
        jobs:
          - name: a
            flows:
              - {id: local, src: 3, dst: 3, bytes: 1MB, delay: 5us}
              - {id: next, src: 3, dst: 4, bytes: 0, after: [local]}
        """)
    r = run_scenario(build_scenario(parse_scenario(text, file="s.yaml")))
    assert r.completion_ns.tolist()[0] == 5_000  # the delay alone; 1 MB at 10 Gbit/s would be 800 us


@pytest.mark.parametrize("stream", [False, True])
def test_jobs_whose_placements_share_hosts_are_noted(stream):
    """explore-scale overlap.yaml: two placement: linear jobs both ran on hosts 0..31,
    silently."""
    two = TOPO + textwrap.dedent(f"""\
        jobs:
          - {{name: a, ranks: 6, stream: {str(stream).lower()}, program: [{{op: barrier}}]}}
          - {{name: b, ranks: 4, stream: {str(stream).lower()}, program: [{{op: barrier}}]}}
          - {{name: c, ranks: 2, placement: [14, 15], program: [{{op: barrier}}]}}
          - {{name: d, flows: [{{src: 0, dst: 1, bytes: 1KiB}}]}}
        """)
    assert [n for n in notes(two) if "same host" in n] == [
        "jobs.0 ('a') and jobs.1 ('b') place ranks on 4 of the same hosts (placement linear puts every job on "
        "hosts 0, 1, ...): their ranks share those hosts' links; give each job its own hosts with a list of "
        "host indices"]
    apart = two.replace("ranks: 4,", "ranks: 4, placement: [8, 9, 10, 11],")
    assert not [n for n in notes(apart) if "same host" in n]
