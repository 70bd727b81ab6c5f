"""Counters of a large fabric: written a row group at a time, names
dictionary-encoded, and read back by the block path the same as by a groupby."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import netsteer as ns
from netsteer.api.frames import _sample_blocks, counters_frame
from netsteer.report import counters as C
from netsteer.topology.pgft import pgft


def _counters(seed=3, k=7):
    topo = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)
    rng = np.random.default_rng(seed)
    inc = rng.integers(0, 4, (k, topo.n_channels)) * 1024.0
    inc[:, rng.random(topo.n_channels) < 0.3] = 0.0  # idle channels: no rows
    inc[0] = 0.0
    return topo, np.arange(k) * 1_000_000, np.cumsum(inc, axis=0)


def test_row_groups_read_back_as_the_whole_table(tmp_path, monkeypatch):
    topo, t, cum = _counters()
    used = int((cum[-1] > 0).sum())
    monkeypatch.setattr(C, "ROWS_PER_GROUP", 2 * used + 1)  # two samples a group: 4 groups for 7
    path = C.write_counters(tmp_path / "c.parquet", topo, t, cum)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 4 and meta.num_rows == len(t) * used
    back = pq.read_table(path)
    assert back.schema.field("from_node").type == pa.dictionary(pa.int32(), pa.string())
    whole = C.counters_table(topo, t, cum)
    assert back.to_pydict() == whole.to_pydict()
    pd.testing.assert_frame_equal(ns.read_counters(path), counters_frame(whole))


def test_block_path_gives_the_groupby_rates():
    topo, t, cum = _counters(seed=5)
    table = C.counters_table(topo, t, cum)
    fast = counters_frame(table)
    # channel after channel (each in time order) is not sample blocks: the groupby path
    perm = np.lexsort((table["time_s"].to_numpy(), table["channel"].to_numpy()))
    shuffled = table.take(pa.array(perm))
    slow = counters_frame(shuffled)
    ch = lambda tb: (tb["channel"].to_numpy(), tb["time_s"].to_numpy())  # noqa: E731
    assert _sample_blocks(*ch(table)) == (len(t), int((cum[-1] > 0).sum())) and _sample_blocks(*ch(shuffled)) is None
    key = ["time_s", "channel"]
    a = fast.sort_values(key).reset_index(drop=True)
    b = slow.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert a.gbps.notna().sum() == (len(t) - 1) * int((cum[-1] > 0).sum())
    # a rate is the bytes of its interval over its length
    c = int(np.flatnonzero(cum[-1] > 0)[0])
    g = a[a.channel == c].gbps.to_numpy()[1:]
    np.testing.assert_allclose(g, np.diff(cum[:, c]) * 8 / 1e-3 / 1e9)


def test_names_are_the_nodes_present_sorted():
    topo, t, cum = _counters()
    f = counters_frame(C.counters_table(topo, t, cum))
    for col in ("from_node", "to_node"):
        cats = list(f[col].cat.categories)
        assert cats == sorted(set(f[col].astype(str)))
    assert list(f.direction.cat.categories) == ["a->b", "b->a"]
    assert ((f.channel % 2 == 0) == (f.direction == "a->b")).all()


def test_writing_a_run_directory_loads_neither_pandas_nor_pyplot(tmp_path):
    """``netsteer run --out`` has no use for pandas (0.17 s to import, through
    ``pa.array``'s check for pandas objects) nor for pyplot (0.16 s)."""
    import subprocess
    import sys
    from pathlib import Path

    scenario = Path(__file__).parents[2] / "benchmarks" / "scenarios" / "stream-256-mixed.yaml"
    code = ("import sys\nfrom netsteer.cli import run_cli\n"
            f"assert run_cli(['run', {str(scenario)!r}, '--out', {str(tmp_path / 'out')!r}, '--json']) == 0\n"
            "print(sorted(m for m in ('pandas', 'matplotlib.pyplot') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"
    back = ns.read_counters(tmp_path / "out" / "counters.parquet")  # and what it wrote reads back
    assert len(back) > 0 and back.gbps.notna().any()
