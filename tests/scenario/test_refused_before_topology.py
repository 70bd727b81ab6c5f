"""What is certain to be refused is refused from the topology's parameters, before it is
built, and the topology and its tables are checked against the memory the machine has:
a 1,048,576-rank barrier was refused for its streamed jobs only after 43 s and 4 GiB of
building the topology, and under --max-memory 200GiB an 8,388,608-host PGFT (77 GiB
estimated, 22 GiB available) was built until the process was killed."""

from __future__ import annotations

import textwrap

import pytest

from netsteer import limits
from netsteer.errors import LimitError, NetsteerError
from netsteer.scenario import build_scenario, parse_scenario

# 16,384 hosts, 2,048 switches: about 32 MiB estimated
SCENARIO = textwrap.dedent("""
    name: big
    topology: {kind: pgft, levels: 3, down: [16, 32, 32], up: [1, 16, 32], link_bandwidth: 10Gbps,
               link_latency: 1us}
    routing: {engine: ENGINE}
    jobs:
      - JOB
    """)


def scenario(job: str, engine: str = "dmodk"):
    return parse_scenario(SCENARIO.replace("JOB", job).replace("ENGINE", engine), file="big.yaml")


@pytest.fixture
def unbuilt(monkeypatch):
    """Fail the test if the topology is built."""
    import netsteer.topology.spec as spec

    def refuse(*a, **k):
        raise AssertionError("the topology was built before the scenario was refused")

    monkeypatch.setitem(spec._BUILD, "pgft", refuse)


@pytest.fixture
def limit():
    yield limits.set_max_memory
    limits.reset()


@pytest.fixture
def available(monkeypatch):
    """Set the memory the machine has (nothing held by this process counted)."""
    monkeypatch.setattr(limits, "_own_bytes", lambda: 0)

    def set_(n):
        monkeypatch.setattr(limits, "available_bytes", lambda: n)
    return set_


def test_ranks_beyond_the_hosts_are_refused_before_the_topology_is_built(unbuilt):
    with pytest.raises(NetsteerError) as info:
        build_scenario(scenario("{name: a, ranks: 16385, stream: true, program: [{op: barrier}]}"))
    assert info.value.field == "jobs.0.ranks"
    assert info.value.reason == "16385 ranks do not fit on 16384 hosts with linear placement"
    with pytest.raises(NetsteerError) as info:
        build_scenario(scenario("{name: a, ranks: 2, placement: [0, 16384], program: [{op: barrier}]}"))
    assert info.value.field == "jobs.0.placement" and "hosts 0..16383" in info.value.reason


def test_streamed_jobs_past_the_limit_are_refused_before_the_topology_is_built(unbuilt, limit):
    limit(256 * 2**20)  # 156 MiB for inputs: the topology's 32 fit, 200,000 steps run (114 MiB) do not beside it
    with pytest.raises(LimitError) as info:
        build_scenario(scenario("{name: a, ranks: 16384, stream: true, repeat: 200000, program: [{op: barrier}]}"))
    assert info.value.field == "jobs" and info.value.reason.startswith("the streamed MPI jobs would need about")


def test_dag_jobs_past_the_limit_are_refused_before_the_topology_is_built(unbuilt, limit):
    limit(600 * 2**20)  # the topology and its tables (416 MiB while built) fit, the flows (500 MiB) do not
    with pytest.raises(LimitError) as info:
        build_scenario(scenario("{name: a, ranks: 1024, stream: false, program: [{op: alltoall, bytes: 1KiB}]}"))
    assert info.value.field == "jobs.0.program.0" and "1,047,552 flows" in info.value.reason


def test_the_topology_is_refused_past_the_memory_available(unbuilt, limit, available):
    limit(2**40)  # a limit past the machine's memory
    available(16 * 2**20)
    with pytest.raises(LimitError) as info:
        build_scenario(scenario("{name: a, ranks: 8, program: [{op: barrier}]}"))
    err = info.value
    assert err.field == "topology" and "more than the memory available (MemAvailable: 16 MiB)" in err.reason
    assert "16,384 hosts, 2,048 switches" in err.reason
    # netsteer topo, route: the same check where the topology is built
    from netsteer.topology.spec import parse_topo_arg

    with pytest.raises(LimitError, match="MemAvailable"):
        parse_topo_arg("pgft:levels=3,down=16;32;32,up=1;16;32,link_bandwidth=10Gbps")


def test_the_tables_are_refused_past_the_memory_available(limit, available):
    limit(2**40)
    # the topology (32 MiB) fits, 2,048 x 16,384 table entries (12 B each while built: 384 MiB) do not
    available(100 * 2**20)
    with pytest.raises(LimitError) as info:
        build_scenario(scenario("{name: a, ranks: 8, program: [{op: barrier}]}", engine="minhop"))
    assert info.value.field == "topology" and "routing tables" in info.value.reason
    assert "MemAvailable: 100 MiB" in info.value.reason


def test_what_fits_is_built(available):
    available(2**34)
    b = build_scenario(parse_scenario(SCENARIO.replace("JOB", "{name: a, ranks: 8, program: [{op: barrier}]}")
                                      .replace("down: [16, 32, 32], up: [1, 16, 32]", "down: [4, 4], up: [1, 2]")
                                      .replace("levels: 3", "levels: 2").replace("ENGINE", "minhop")))
    assert b.topology.n_hosts == 16
