"""The columnar flow DAG: rows and blocks appended in any order read back the same."""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.traffic.dag import FlowDag


def test_rows_and_blocks_interleave_in_order():
    d = FlowDag()
    a = d.add(0, 1, 10, label="x")
    first = d.add_block([1, 2], [2, 3], [20, 30], dep_offsets=[0, 1, 2], deps=[a, a], label="y")
    c = d.add(3, 0, 40, deps=[first, first + 1], start_ns=5, label="x")
    assert (a, first, c) == (0, 1, 3)
    assert d.src == [0, 1, 2, 3] and d.dst == [1, 2, 3, 0] and d.bytes == [10, 20, 30, 40]
    assert list(d.deps) == [[], [0], [0], [1, 2]]
    assert d.start_ns == [None, None, None, 5]
    assert d.labels == ["x", "y"] and d.label == [0, 1, 1, 0]
    cols = d.columns()
    assert cols.dep_offsets.tolist() == [0, 0, 1, 2, 4]
    assert cols.deps.tolist() == [0, 0, 1, 2]


def test_extend_shifts_dependencies_and_remaps_labels():
    a, b = FlowDag(), FlowDag()
    a.add(0, 1, 1, label="first")
    x = b.add(5, 6, 7, label="second")
    b.add(6, 5, 7, deps=[x], label="first")
    off = a.extend(b)
    assert off == 1 and len(a) == 3
    assert list(a.deps) == [[], [], [1]]
    assert [a.labels[i] for i in a.label] == ["first", "second", "first"]


def test_scalars_broadcast_and_lengths_are_checked():
    d = FlowDag()
    d.add_block(np.arange(4), np.arange(4)[::-1], 8, priority=2, weight=0.5)
    c = d.columns()
    assert c.priority.tolist() == [2] * 4 and c.weight.tolist() == [0.5] * 4 and c.bytes.tolist() == [8] * 4
    with pytest.raises(ValueError, match="dst has 2 entries for 3 flows"):
        d.add_block([0, 1, 2], [1, 2], 8)
    with pytest.raises(ValueError, match="do not exist"):
        d.add_block([0], [1], 8, dep_offsets=[0, 1], deps=[99])
    with pytest.raises(ValueError, match="dep_offsets"):
        d.add_block([0], [1], 8, dep_offsets=[0, 2], deps=[0])
    assert len(d) == 4  # failed appends left nothing behind


def test_columns_are_cached_until_the_next_append():
    d = FlowDag()
    d.add(0, 1, 1)
    c1 = d.columns()
    assert d.columns() is c1
    d.add(1, 0, 1)
    assert d.columns() is not c1 and len(d.columns().src) == 2
