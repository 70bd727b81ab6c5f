"""Rank placement: linear, seeded random, explicit, and its errors. Random placement
draws numpy's ``default_rng(seed).permutation(n)`` bit for bit, computed in Rust
(``_core.permutation``) so that a run need not import ``numpy.random``."""

import random
import subprocess
import sys

import numpy as np
import pytest

from netsteer import _core
from netsteer.errors import NetsteerError
from netsteer.traffic.placement import place

SIZES = [0, 1, 2, 3, 5, 7, 8, 13, 255, 256, 257, 1000, 4096, 65536]
SEEDS = [0, 1, 2, 12345, 2**32 - 1, 2**32, 2**63 + 5, 2**64 - 1, 2**64 + 7, 2**100 + 3, 2**130 + 7]


def _numpy(seed, n):
    return np.random.default_rng(seed).permutation(n).tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_permutation_is_numpys_bit_for_bit(seed):
    for n in SIZES:
        assert _core.permutation(seed, n) == _numpy(seed, n), (seed, n)


def test_permutation_is_numpys_for_random_seeds_of_every_width():
    draw = random.Random(20261125)
    for _ in range(50):
        seed = draw.getrandbits(draw.randint(1, 200))
        for n in SIZES + [draw.randint(0, 50), draw.randint(51, 5000)]:
            assert _core.permutation(seed, n) == _numpy(seed, n), (seed, n)


def test_random_placement_keeps_its_hosts():
    # the hosts numpy drew for these seeds before placement moved to Rust
    assert place(16, "random", 64, seed=7) == [16, 27, 54, 10, 35, 53, 49, 12, 0, 57, 6, 4, 45, 61, 32, 22]
    assert place(4, "random", 8, seed=0) == [2, 4, 3, 6]
    assert place(5, "random", 32, seed=2**64 + 7) == [10, 4, 27, 17, 28]
    assert place(3, "random", 1000, seed=np.int64(12345)) == [279, 568, 569]
    for ranks, n_hosts, seed in [(1, 1, 0), (256, 512, 1), (100, 4096, 99), (512, 512, 3)]:
        assert place(ranks, "random", n_hosts, seed) == _numpy(seed, n_hosts)[:ranks]


@pytest.mark.parametrize("seed", [-1, -(2**70), True, np.True_, 1.0, "1", None])
def test_a_seed_that_is_no_non_negative_integer_is_refused(seed):
    with pytest.raises(NetsteerError, match="seed must be a non-negative integer"):
        place(2, "random", n_hosts=8, seed=seed)


def test_the_compiled_permutation_refuses_what_numpy_refuses():
    with pytest.raises(ValueError, match="expected non-negative integer"):
        _core.permutation(-1, 3)
    with pytest.raises(TypeError):
        _core.permutation(1.5, 3)  # type: ignore[arg-type]


def test_random_placement_does_not_import_numpy_random():
    # importing numpy.random costs 11-20 ms, a tenth of a short streamed run
    code = ("import sys\n"
            "from netsteer.traffic.placement import place\n"
            "place(256, 'random', 512, 1)\n"
            "print('numpy.random' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_linear_puts_rank_r_on_host_r():
    assert place(5, "linear", n_hosts=8) == [0, 1, 2, 3, 4]


def test_random_is_distinct_reproducible_and_seed_dependent():
    a = place(16, "random", n_hosts=64, seed=7)
    assert len(set(a)) == 16 and all(0 <= h < 64 for h in a)
    assert a == place(16, "random", n_hosts=64, seed=7)
    assert a != place(16, "random", n_hosts=64, seed=8)


def test_explicit_allows_shared_hosts():
    assert place(3, [4, 4, 0], n_hosts=5) == [4, 4, 0]


def test_numpy_integers_are_host_indices_and_bools_are_not():
    assert place(np.int32(2), [np.int64(1), np.uint8(0)], n_hosts=2) == [1, 0]
    for bad in (True, np.True_):
        with pytest.raises(NetsteerError, match="not a host index"):
            place(1, [bad], n_hosts=2)
        with pytest.raises(NetsteerError, match="positive integer"):
            place(bad, "linear", n_hosts=2)


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
