"""Rank placement: linear, seeded random, explicit, and its errors."""

import pytest

from netsteer.errors import NetsteerError
from netsteer.traffic.placement import place


def test_linear_puts_rank_r_on_host_r():
    assert place(5, "linear", n_hosts=8) == [0, 1, 2, 3, 4]


def test_random_is_distinct_reproducible_and_seed_dependent():
    a = place(16, "random", n_hosts=64, seed=7)
    assert len(set(a)) == 16 and all(0 <= h < 64 for h in a)
    assert a == place(16, "random", n_hosts=64, seed=7)
    assert a != place(16, "random", n_hosts=64, seed=8)


def test_explicit_allows_shared_hosts():
    assert place(3, [4, 4, 0], n_hosts=5) == [4, 4, 0]


@pytest.mark.parametrize("ranks,placement,match", [
    (9, "linear", "9 ranks do not fit on 8 hosts"),
    (9, "random", "9 ranks do not fit on 8 hosts"),
    (2, [0, 8], "rank 1 is placed on host 8"),
    (2, [0], "lists 1 hosts for 2 ranks"),
    (2, [0, "a"], "not a host index"),
    (2, "round_robin", "unknown placement 'round_robin'"),
    (0, "linear", "positive integer"),
])
def test_bad_placements_are_refused(ranks, placement, match):
    with pytest.raises(NetsteerError, match=match):
        place(ranks, placement, n_hosts=8)
