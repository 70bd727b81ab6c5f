"""Min-hop balancing: the vectorised rows and the sequential (Rust) rows both follow
the documented rule, checked against a plain loop written here."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

minhop = importlib.import_module("netsteer.routing.minhop")


def by_hand(entry, groups, n_slots):
    """Each row: destinations in order; a group takes its least-counted member, the
    first on ties; every port taken is counted."""
    out = entry.copy()
    for row in out:
        count = [0] * n_slots
        for d, e in enumerate(row):
            if e <= -2:
                members = list(groups[-2 - e])
                e = min(members, key=lambda p: (count[p], members.index(p)))
                row[d] = e
            if e >= 0:
                count[e] += 1
    return out


@pytest.mark.parametrize("seed", range(40))
def test_least_used_is_the_rule(seed):
    rng = np.random.default_rng(seed)
    n_slots = int(rng.integers(2, 12))
    groups = [np.sort(rng.choice(n_slots, size=int(rng.integers(2, min(5, n_slots) + 1)), replace=False))
              .astype(np.int32) for _ in range(int(rng.integers(1, 6)))]
    entry = rng.integers(-1 - len(groups), n_slots, size=(int(rng.integers(1, 8)), int(rng.integers(1, 60))))
    entry = entry.astype(np.int32)
    want = by_hand(entry, groups, n_slots)
    assert np.array_equal(minhop.least_used(entry, groups, n_slots), want)
    seq = entry.copy()
    minhop._sequential(seq, np.arange(len(entry)), groups, n_slots)
    assert np.array_equal(seq, want)


def test_an_entry_out_of_range_is_refused_and_nothing_changes():
    t = np.array([[-2, 0, -3]], dtype=np.int32)  # group 1 does not exist
    with pytest.raises(ValueError, match="does not exist"):
        minhop._sequential(t, np.array([0]), [np.array([0, 1], dtype=np.int32)], 2)
    assert t.tolist() == [[-2, 0, -3]]
