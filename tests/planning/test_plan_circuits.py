"""Circuit planning: feasibility of every plan, quality against the exact optimum, bounds, pinned
circuits, VLANs and bad input."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import netsteer.control.planning as planning
from netsteer.control.planning import (Circuit, PlanningError, VlanError, plan_circuits, read_demand_csv,
                                       upper_bound)
from netsteer.control.planning.exact import exact_plan
from netsteer.errors import NetsteerError


def random_demand(rng, n, kind):
    """Demand matrices of several shapes, Gbit/s (circuits of 10 Gbit/s in the tests)."""
    if kind == "dense":
        d = rng.exponential(1.0, (n, n)) * 8
    elif kind == "sparse":
        d = rng.uniform(0, 25, (n, n)) * (rng.random((n, n)) < 0.3)
    elif kind == "skewed":
        d = rng.pareto(1.2, (n, n)) * 4
    elif kind == "uniform":
        d = rng.uniform(0, 30, (n, n))
    elif kind == "hotspot":
        d = rng.uniform(0, 2, (n, n))
        hot = rng.choice(n, 2, replace=False)
        d[hot, :] *= 15
    else:
        raise ValueError(kind)
    np.fill_diagonal(d, 0)
    return d


KINDS = ["dense", "sparse", "skewed", "uniform", "hotspot"]


def check_plan(plan, d, k, c):
    """Every rule a plan must obey; returns nothing, asserts everything."""
    n = d.shape[0]
    tol = 1e-6 * max(1.0, c)
    ports = set()
    per_rack = defaultdict(int)
    mult = defaultdict(int)
    for ci in plan.circuits:
        assert 0 <= ci.ocs < k and 0 <= ci.a < ci.b < n
        for r in (ci.a, ci.b):
            assert (ci.ocs, r) not in ports, f"switch {ci.ocs} pairs rack {r} twice"
            ports.add((ci.ocs, r))
            per_rack[r] += 1
        mult[(ci.a, ci.b)] += 1
    assert max(per_rack.values(), default=0) <= k
    used = defaultdict(float)  # (ocs, from, to) -> Gbit/s
    served = defaultdict(float)
    by_vlan = defaultdict(set)
    circuits = set(plan.circuits)
    for p in plan.paths:
        assert p.racks[0] == p.src and p.racks[-1] == p.dst and len(set(p.racks)) == len(p.racks) >= 2
        assert len(p.racks) <= plan.hops + 1
        assert len(p.circuits) == len(p.racks) - 1
        assert 1 <= p.vlan <= 4094 and p.gbps > 0
        for ci, (x, y) in zip(p.circuits, zip(p.racks[:-1], p.racks[1:])):
            assert ci in circuits and {ci.a, ci.b} == {x, y}
            used[(ci.ocs, x, y)] += p.gbps
        served[(p.src, p.dst)] += p.gbps
        by_vlan[p.vlan].add(frozenset(p.circuits))
    for key, g in used.items():
        assert g <= c + tol, f"circuit {key} carries {g} > {c}"
    for (s, t), g in served.items():
        assert g <= d[s, t] + tol
    # one VLAN = one circuit path (both directions): its overlay is a simple path, acyclic
    assert all(len(v) == 1 for v in by_vlan.values())
    assert len({next(iter(v)) for v in by_vlan.values()}) == len(by_vlan) == plan.vlans
    assert plan.served_gbps == pytest.approx(sum(p.gbps for p in plan.paths))
    assert plan.served_gbps <= plan.bound_gbps + tol
    if plan.hops == 1:  # served over direct circuits, as the model says
        direct = sum(min(d[a, b], m * c) + min(d[b, a], m * c) for (a, b), m in mult.items())
        assert plan.served_gbps == pytest.approx(direct)


@pytest.mark.parametrize("hops", [1, 2])
@pytest.mark.parametrize("kind", KINDS)
def test_plans_obey_the_model(kind, hops):
    rng = np.random.default_rng(hash((kind, hops)) % 2**32)
    for _ in range(4):
        n, k = int(rng.integers(3, 30)), int(rng.integers(1, 6))
        d = random_demand(rng, n, kind)
        check_plan(plan_circuits(d, k, 10.0, hops=hops), d, k, 10.0)


def test_single_hop_against_the_exact_optimum():
    """The heuristic against HiGHS on 40 random small instances of every shape."""
    rng = np.random.default_rng(20261122)
    ratios = []
    for i in range(40):
        n, k = int(rng.integers(4, 11)), int(rng.integers(1, 4))
        d = random_demand(rng, n, KINDS[i % len(KINDS)])
        plan = plan_circuits(d, k, 10.0)
        opt = exact_plan(d, k, 10.0)
        assert opt.optimal
        assert plan.served_gbps <= opt.served_gbps + 1e-6  # never above the optimum
        assert opt.served_gbps <= plan.bound_gbps + 1e-6  # the bound bounds the optimum
        ratios.append(plan.served_gbps / opt.served_gbps if opt.served_gbps else 1.0)
    assert min(ratios) >= 0.97, sorted(ratios)[:5]
    assert np.mean(ratios) >= 0.995


def test_two_hops_against_the_exact_optimum():
    rng = np.random.default_rng(7)
    ratios = []
    for i in range(12):
        n, k = int(rng.integers(4, 7)), int(rng.integers(1, 3))
        d = random_demand(rng, n, KINDS[i % len(KINDS)])
        plan = plan_circuits(d, k, 10.0, hops=2)
        opt = exact_plan(d, k, 10.0, hops=2)
        assert opt.optimal
        assert plan.served_gbps <= opt.served_gbps + 1e-6
        assert opt.served_gbps <= plan.bound_gbps + 1e-6
        # relaying never serves less than direct circuits alone
        assert plan.served_gbps >= plan_circuits(d, k, 10.0).served_gbps - 1e-6
        ratios.append(plan.served_gbps / opt.served_gbps if opt.served_gbps else 1.0)
    assert min(ratios) >= 0.9, sorted(ratios)[:5]
    assert np.mean(ratios) >= 0.97


def test_two_hops_relay_when_direct_circuits_cannot_reach():
    """A star of demand: rack 0 talks to 4 racks, but has 2 uplinks; relays carry the rest."""
    d = np.zeros((5, 5))
    d[0, 1:] = 4.0
    direct = plan_circuits(d, 2, 10.0)
    relayed = plan_circuits(d, 2, 10.0, hops=2)
    assert direct.served_gbps == pytest.approx(8.0)
    assert relayed.served_gbps == pytest.approx(16.0)
    assert any(len(p.racks) == 3 for p in relayed.paths)


def test_large_dense_plan_is_close_to_the_bound():
    """320 racks, K=8 (the source's Fig. 1 size): served within a few percent of the upper bound."""
    rng = np.random.default_rng(3)
    d = rng.exponential(1.0, (320, 320)) * 5
    plan = plan_circuits(d, 8, 10.0)
    check_plan(plan, np.where(np.eye(320, dtype=bool), 0, d), 8, 10.0)
    assert len(plan.circuits) == 1280  # every port used: demand everywhere
    assert plan.served_gbps / plan.bound_gbps >= 0.97


def test_bound_is_exact_when_racks_do_not_compete():
    # two disjoint heavy pairs: every rack's best choice agrees
    d = np.zeros((4, 4))
    d[0, 1] = d[1, 0] = 25.0
    d[2, 3] = 7.0
    plan = plan_circuits(d, 2, 10.0)
    assert plan.served_gbps == plan.bound_gbps == pytest.approx(47.0)


def test_parallel_circuits_when_k_exceeds_partners():
    plan = plan_circuits([[0, 25], [5, 0]], 3, 10.0)
    assert [(c.ocs, c.a, c.b) for c in plan.circuits] == [(0, 0, 1), (1, 0, 1), (2, 0, 1)]
    assert plan.served_gbps == pytest.approx(30.0)
    assert plan.vlans == 3  # one VLAN per circuit: two parallel circuits in one VLAN would loop


def test_pinned_circuits_are_kept_on_their_switch():
    rng = np.random.default_rng(11)
    d = random_demand(rng, 12, "dense")
    d[3, 9] = d[9, 3] = 0.0  # nobody would choose 3-9 for its demand
    pins = [Circuit(1, 3, 9), Circuit(0, 2, 5)]
    plan = plan_circuits(d, 3, 10.0, pinned=pins)
    assert set(pins) <= set(plan.circuits)
    check_plan(plan, d, 3, 10.0)
    # planning around pins never beats planning freely
    assert plan.served_gbps <= plan_circuits(d, 3, 10.0).served_gbps + 1e-6
    # tuples and a > b are accepted
    assert Circuit(1, 3, 9) in plan_circuits(d, 3, 10.0, pinned=[(1, 9, 3)]).circuits


@pytest.mark.parametrize("pins, words", [
    ([Circuit(0, 1, 2), Circuit(0, 2, 3)], ["switch 0", "rack 2 twice"]),
    ([Circuit(3, 1, 2)], ["circuit switch 3 does not exist"]),
    ([Circuit(0, 1, 9)], ["rack 9 does not exist"]),
    ([Circuit(0, 1, 1)], ["two different racks"]),
    (["x"], ["(ocs, a, b)"]),
    ([(0, 1.7, 2)], ["(ocs, a, b) of integers", "1.7"]),  # was rack 1
    ([(True, 1, 2)], ["of integers"]),
])
def test_bad_pinned_circuits(pins, words):
    with pytest.raises(PlanningError) as exc:
        plan_circuits(np.ones((4, 4)), 2, 10.0, pinned=pins)
    for w in words:
        assert w in str(exc.value)


@pytest.mark.parametrize("demand, kwargs, words", [
    (np.ones((3, 4)), {}, ["square"]),
    (np.ones((1, 1)), {}, ["at least 2 racks"]),
    ([[0, 1, 2], [1, 0, float("nan")], [0, 0, 0]], {}, ["row 1, column 2", "finite"]),
    ([[0, 1, 2], [1, 0, -3], [0, 0, 0]], {}, ["row 1, column 2", ">= 0"]),
    (np.ones((4, 4)), {"k": 0}, ["from 1 to 256"]),
    (np.ones((4, 4)), {"k": 1000}, ["from 1 to 256"]),
    (np.ones((4, 4)), {"capacity_gbps": 0}, ["capacity must be > 0"]),
    (np.ones((4, 4)), {"hops": 3}, ["hops must be 1 or 2"]),
    (np.ones((4, 4)), {"ports_per_ocs": 3}, ["3 ports but there are 4 racks"]),
    (np.ones((4, 4)), {"ports_per_ocs": "3"}, ["must be an integer, got '3'"]),  # was a raw TypeError
    (np.ones((4, 4)), {"ports_per_ocs": 4.5}, ["must be an integer, got 4.5"]),  # was accepted
    (np.ones((4, 4)), {"effort": -1}, ["effort", ">= 0"]),
])
def test_bad_input(demand, kwargs, words):
    args = {"k": 2, "capacity_gbps": 10.0, **kwargs}
    with pytest.raises(NetsteerError) as exc:
        plan_circuits(demand, args.pop("k"), args.pop("capacity_gbps"), **args)
    for w in words:
        assert w in str(exc.value)


def test_too_many_vlans(monkeypatch):
    d = np.full((8, 8), 5.0)
    assert plan_circuits(d, 2, 10.0).vlans == 8
    monkeypatch.setattr(planning, "MAX_VLANS", 7)
    with pytest.raises(VlanError, match="8 VLANs .* more than the 7 VLAN IDs"):
        plan_circuits(d, 2, 10.0)


def test_relayed_paths_stop_at_the_vlan_limit(monkeypatch):
    rng = np.random.default_rng(2)
    d = random_demand(rng, 16, "dense")
    free = plan_circuits(d, 2, 10.0, hops=2)
    direct = len({p.vlan for p in free.paths if len(p.racks) == 2})
    assert free.vlans >= direct + 2  # some relayed paths
    monkeypatch.setattr(planning, "MAX_VLANS", direct + 1)
    capped = plan_circuits(d, 2, 10.0, hops=2)
    assert capped.circuits == free.circuits
    assert capped.vlans == direct + 1
    assert capped.notes and "for want of VLAN IDs" in capped.notes[0]
    check_plan(capped, d, 2, 10.0)
    assert capped.served_gbps < free.served_gbps


def test_more_than_4094_vlans_is_an_error():
    """1,100 racks with 8 circuit switches: 4,400 direct circuit paths do not fit in 4,094 VLAN IDs."""
    d = np.random.default_rng(0).uniform(1, 2, (1100, 1100))
    with pytest.raises(VlanError, match="4400 VLANs"):
        plan_circuits(d, 8, 10.0)


def test_deterministic():
    rng = np.random.default_rng(4)
    d = random_demand(rng, 40, "skewed")
    assert plan_circuits(d, 4, 10.0, hops=2).paths == plan_circuits(d, 4, 10.0, hops=2).paths


def test_upper_bound_bounds_single_and_two_hops():
    d = np.full((6, 6), 3.0)
    # each rack: one circuit serving 3 + 3 Gbit/s, counted at both ends: 6 * 6 / 2
    assert upper_bound(d, 1, 10.0) == pytest.approx(18.0) == plan_circuits(d, 1, 10.0).served_gbps
    # two hops: total 90, rows 6 * min(15, 10) = 60, (n k c + B1) / 2 = (60 + 18) / 2 = 39
    assert upper_bound(d, 1, 10.0, hops=2) == pytest.approx(39.0)


def test_read_demand_csv(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("# demand\n0, 1.5, 2\n3 ,0,4,\n\n5,6,0\n")
    assert read_demand_csv(p).tolist() == [[0, 1.5, 2], [3, 0, 4], [5, 6, 0]]
    p.write_text("0 1\n2 0\n")
    assert read_demand_csv(p).tolist() == [[0, 1], [2, 0]]
    p.write_text("0,1\n2,,\n")
    with pytest.raises(PlanningError, match=r"line 2, row 1, column 1: '' is not a number"):
        read_demand_csv(p)


def test_read_demand_csv_mixed_separators_and_any_number_on_the_diagonal(tmp_path):
    # explorer's fault 10: "comma and/or blank separated" refused "0 10, 0 5"; the
    # "ignored" diagonal refused nan while it took -5
    p = tmp_path / "m.csv"
    p.write_text("0 10, 0 5\n10 0 3 0\n0 3 0 8\n5 0 8 0\n")
    assert read_demand_csv(p).tolist() == [[0, 10, 0, 5], [10, 0, 3, 0], [0, 3, 0, 8], [5, 0, 8, 0]]
    for diag in ("nan", "-5", "inf"):
        p.write_text(f"{diag},1\n1 , {diag}\n")
        assert read_demand_csv(p).tolist() == [[0, 1], [1, 0]], diag
    p.write_text("0,nan\n1,0\n")  # off the diagonal: refused
    with pytest.raises(PlanningError, match=r"line 1, row 0, column 1: demand must be a number, got NaN"):
        read_demand_csv(p)
    p.write_text("x,1\n1,0\n")  # no number is refused on the diagonal too
    with pytest.raises(PlanningError, match=r"row 0, column 0: 'x' is not a number"):
        read_demand_csv(p)


def test_bound_counts_the_circuits_a_switch_can_hold():
    # three racks: each switch holds one circuit, K in all; the degree bound allowed 1.5 K
    rng = np.random.default_rng(3)
    for _ in range(5):
        d = rng.pareto(0.8, (3, 3)) * 100
        np.fill_diagonal(d, 0)
        k, c = 40, 10.0
        best = 0.0
        for x in range(k + 1):  # x, y, k - x - y circuits on pairs 0-1, 0-2, 1-2
            for y in range(k + 1 - x):
                m = np.zeros((3, 3))
                m[0, 1] = m[1, 0] = x
                m[0, 2] = m[2, 0] = y
                m[1, 2] = m[2, 1] = k - x - y
                best = max(best, float(np.minimum(d, m * c).sum()))
        assert upper_bound(d, k, c) == pytest.approx(best)
        assert plan_circuits(d, k, c).served_gbps == pytest.approx(best)


def test_many_switches_over_few_racks_plan_fast():
    # K > n - 1: many switches are paired alike; the search used to walk each one
    # (18 s at n=3, K=256, never stopping at the loose bound)
    d = np.array([[0, 500, 0], [0, 0, 3000], [1, 0, 0]], dtype=float)
    p = plan_circuits(d, 256, 10.0)
    assert p.served_gbps == pytest.approx(2560.0) == pytest.approx(p.bound_gbps)
    assert p.wall_s < 1.0
    rng = np.random.default_rng(0)
    d4 = rng.pareto(0.8, (4, 4)) * 100
    np.fill_diagonal(d4, 0)
    assert plan_circuits(d4, 256, 10.0).wall_s < 1.0  # no bound to stop at: 1.4 s before


@pytest.mark.parametrize("hops", [1, 2])
def test_every_circuit_carries_a_path(hops):
    # two hops joined every spare port "for relaying": 150 of 160 circuits carried nothing
    rng = np.random.default_rng(2)
    d = np.zeros((40, 40))
    for _ in range(10):
        d[rng.integers(40), rng.integers(40)] = 5.0
    np.fill_diagonal(d, 0)
    p = plan_circuits(d, 8, 10.0, hops=hops)
    assert set(p.circuits) == {c for path in p.paths for c in path.circuits}
    assert p.served_gbps == pytest.approx(d.sum())
    zero = plan_circuits(np.zeros((3, 3)), 2, 10.0, hops=hops)
    assert zero.circuits == () and zero.paths == ()
    pinned = plan_circuits(np.zeros((3, 3)), 2, 10.0, hops=hops, pinned=[(1, 0, 2)])
    assert pinned.circuits == (Circuit(1, 0, 2),)  # asked for: kept though idle


def test_fair_plans_give_another_pair_its_first_circuit_before_a_pair_its_second():
    # rack 2 sends 40 Gbit/s to rack 1, racks 0 and 1 exchange 40 each way; K = 2, 10 Gbit/s
    # circuits. By Gbit/s alone, two circuits 0-1 serve 40 and the fair split only 30
    d = np.zeros((3, 3))
    d[2, 1] = d[0, 1] = d[1, 0] = 40.0
    linear = plan_circuits(d, 2, 10.0)
    fair = plan_circuits(d, 2, 10.0, fair=True)
    assert sorted((c.a, c.b) for c in linear.circuits) == [(0, 1), (0, 1)]
    assert sorted((c.a, c.b) for c in fair.circuits) == [(0, 1), (1, 2)]
    # paths and served stay in Gbit/s of the demand given; the bound is still a bound
    assert fair.served_gbps == pytest.approx(30.0) and fair.bound_gbps >= linear.served_gbps
    assert sum(p.gbps for p in fair.paths) == pytest.approx(fair.served_gbps)


def test_fair_plans_stack_circuits_when_no_other_pair_wants_one():
    # one pair wanting four circuits' worth gets all four: a further circuit still counts
    d = np.zeros((3, 3))
    d[0, 1] = d[1, 0] = 40.0
    p = plan_circuits(d, 4, 10.0, fair=True)
    assert len(p.circuits) == 4 and p.served_gbps == pytest.approx(80.0)


def test_fair_counting_is_single_hop_only():
    with pytest.raises(PlanningError, match="single-hop") as e:
        plan_circuits(np.ones((3, 3)), 2, 10.0, hops=2, fair=True)
    assert e.value.field == "fair"


def test_served_never_exceeds_the_bound_by_rounding():
    # explorer's fault 11: served_gbps 269.55383000000006 over bound_gbps 269.55383
    d = np.array([[0, 26.9164, 23.2706, 6.75622, 9.00499], [26.2066, 0, 24.6369, 23.9121, 14.038],
                  [9.09097, 8.35277, 0, 13.3523, 15.1364], [16.6049, 29.865, 23.7799, 0, 29.6688],
                  [6.45926, 4.80636, 18.3762, 1.31826, 0]])
    p = plan_circuits(d, 8, 10.0, hops=1)
    assert p.served_gbps <= p.bound_gbps and p.served_gbps == pytest.approx(269.55383)
    rng = np.random.default_rng(7)
    for _ in range(20):
        m = rng.pareto(0.8, (5, 5)) * 10
        for hops in (1, 2):
            q = plan_circuits(m, int(rng.integers(1, 9)), 10.0, hops=hops)
            assert q.served_gbps <= q.bound_gbps
