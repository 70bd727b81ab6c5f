"""A ``Routing`` given to ``ns.Scenario``/``ns.simulate`` runs as it is: its tables,
hand edits included, never new ones from its engine's name; one made for another
topology is refused."""

from __future__ import annotations

import pytest

import netsteer as ns

SPEC = {"kind": "pgft", "levels": 2, "down": [4, 4], "up": [1, 2], "link_bandwidth": "10Gbps",
        "link_latency": "1us"}


def topo():
    return ns.pgft(levels=2, down=[4, 4], up=[1, 2], link_bandwidth="10Gbps", link_latency="1us")


def edited(t):
    """dmodk, with h5's traffic from s1_0 sent up to s2_0 instead of s2_1."""
    rd = ns.route(t, engine="dmodk")
    assert t.channel_name(rd.path(0, 5)[1]) == "s1_0[6]->s2_1"
    rd.table[rd.row_of[t.node("s1_0")], 5] = 5
    return rd


def names(t, path):
    return [t.channel_name(c) for c in path]


@pytest.mark.parametrize("where", ["object", "spec"])
def test_the_given_tables_are_the_ones_that_run(where):
    t = topo()
    rd = edited(t)
    jobs = [ns.job([ns.flow(0, 5, "1MiB")])]
    sc = ns.Scenario(t if where == "object" else SPEC, rd, jobs)
    b = sc.build()
    assert b.routing is rd
    assert names(t, b.routing.path(0, 5))[1] == "s1_0[5]->s2_0"
    assert sc.run(sample=False).status == "done"


def test_edited_tables_share_a_link_the_engines_do_not():
    # h0->h5 and h1->h4: dmodk sends them up to different spines; the edit puts both on s2_0
    t = topo()
    jobs = [ns.job([ns.flow(0, 5, "1GB"), ns.flow(1, 4, "1GB")])]
    assert ns.route(t).path(1, 4)[1] == t.out_channel[t.node("s1_0"), 5]
    engine = ns.simulate(t, "dmodk", jobs, sample=False).makespan_s
    given = ns.simulate(t, edited(t), jobs, sample=False).makespan_s
    assert given == pytest.approx(2 * engine, rel=1e-3)


@pytest.mark.parametrize("where", ["object", "spec"])
def test_a_routing_for_another_topology_is_refused(where):
    big = ns.pgft(levels=2, down=[16, 16], up=[1, 8], link_bandwidth="10Gbps", link_latency="1us")
    with pytest.raises(ns.NetsteerError) as e:
        ns.simulate(topo() if where == "object" else SPEC, ns.route(big, engine="minhop"),
                    [ns.job([ns.flow(0, 5, "1MiB")])])
    assert e.value.field == "routing" and "256 hosts" in e.value.reason and "16 hosts" in e.value.reason


def test_broken_edits_are_refused_before_the_run():
    t = topo()
    rd = edited(t)  # s1_0 sends h5's traffic up to s2_0 ...
    rd.table[rd.row_of[t.node("s2_0")], 5] = 1  # ... which sends it back down to s1_0: a loop
    with pytest.raises(ns.RoutingError) as e:
        ns.simulate(t, rd, [ns.job([ns.flow(0, 5, "1MiB")])])
    assert e.value.field == "routing"


def test_to_yaml_writes_the_engine_and_refuses_edited_tables():
    t = topo()
    jobs = [ns.job([ns.flow(0, 5, "1MiB")])]
    assert "engine: dmodk" in ns.Scenario(t, ns.route(t), jobs).to_yaml()
    with pytest.raises(ns.NetsteerError, match="edited") as e:
        ns.Scenario(t, edited(t), jobs).to_yaml()
    assert e.value.field == "routing"


def test_a_reroute_says_the_engines_tables_replace_the_given_ones():
    t = topo()
    jobs = [ns.job([ns.flow(0, 5, "4MiB")])]  # 3.4 ms: the event is played (1 MiB ended first, noted so)
    ev = [ns.event.link_down("1ms", [("s1_3", 5)])]
    given = ns.route(t, engine="minhop")  # an engine that routes around down links: it re-routes
    given.table[given.row_of[t.node("s1_0")], 5] = 5
    r = ns.Scenario(t, given, jobs, events=ev).run(sample=False)
    notes = r.notes  # as api.md says: "the result's `notes` say so" (it had only to_dict()["notes"])
    assert notes == r.to_dict()["notes"]
    assert any("until events.0 re-routes" in n and "'minhop'" in n for n in notes), notes
    plain = ns.Scenario(t, "minhop", jobs, events=ev).run(sample=False)
    assert plain.notes == [] and "notes" not in plain.to_dict()
    # a static engine (dmodk) keeps its tables when links change: the given ones run on
    kept = ns.Scenario(t, edited(t), jobs, events=ev).run(sample=False)
    assert not [n for n in kept.notes if "re-routes" in n], kept.notes


def test_streamed_jobs_walk_the_given_tables_not_dmodk_per_hop():
    t = topo()
    job = ns.mpi_job(16, [ns.op.alltoall("4KiB")], stream=True)
    assert ns.Scenario(t, "dmodk", [job]).build().stream_router == "dmodk"
    rd = edited(t)
    b = ns.Scenario(t, rd, [job]).build()
    assert b.stream_router is rd and b.routing is rd
