"""The Helios-style demand estimator: properties, and what it changes in the controller."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from netsteer.control.demand import estimate_demand


def test_unlimited_pairs_keep_their_measured_rate():
    m = np.array([[0, 4, 1], [2, 0, 0], [0, 7, 0]], dtype=float)
    got = estimate_demand(m, np.zeros((3, 3), bool), np.full(3, 1.0), np.full(3, 1.0))
    assert np.array_equal(got, m)


def test_a_limited_pair_alone_gets_what_its_racks_can_send():
    m = np.zeros((3, 3))
    m[0, 1] = 10.0
    lim = m > 0
    got = estimate_demand(m, lim, out_cap=np.array([80.0, 80, 80]), in_cap=np.array([80.0, 30, 80]))
    assert got[0, 1] == 30.0  # the receiving rack's servers take 30
    assert got.sum() == 30.0


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_estimate_is_max_min_fair_within_the_racks_capacity(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    m = rng.uniform(0, 10, (n, n)) * (rng.random((n, n)) < 0.6)
    np.fill_diagonal(m, 0)
    lim = (rng.random((n, n)) < 0.5) & (m > 0)
    out_cap = rng.uniform(5, 60, n)
    in_cap = rng.uniform(5, 60, n)
    got = estimate_demand(m, lim, out_cap, in_cap)
    assert np.array_equal(got[~lim], m[~lim])
    assert np.all(got[lim] >= m[lim] - 1e-12)
    # the fair shares (before the measured floor) fit what the unlimited pairs leave
    fixed_out = np.where(~lim, m, 0).sum(axis=1)
    fixed_in = np.where(~lim, m, 0).sum(axis=0)
    share = np.where(lim, got, 0)
    over = share > m + 1e-9  # pairs raised above their measured rate
    for a in range(n):
        if over[a].any():
            assert share[a].sum() <= max(out_cap[a] - fixed_out[a], 0) + m[a, lim[a]].sum() + 1e-6
    # every raised pair is bottlenecked: its sender or its receiver is used up, and it
    # has the largest share there (max-min)
    used_out = got.sum(axis=1)
    used_in = got.sum(axis=0)
    for a, b in zip(*np.nonzero(over)):
        s_full = used_out[a] >= max(out_cap[a], fixed_out[a]) - 1e-6
        r_full = used_in[b] >= max(in_cap[b], fixed_in[b]) - 1e-6
        assert s_full or r_full, (a, b)
        if s_full and not r_full:
            assert got[a, b] >= share[a][over[a]].max() - 1e-6
