"""The Routing object: path resolution, overrides, ECMP hashing and the checker."""

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import Routing, dmodk, flow_hash
from netsteer.topology.pgft import pgft


@pytest.fixture
def tree():
    return pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)


def test_paths_csr_matches_single_paths(tree):
    r = dmodk(tree)
    n = tree.n_hosts
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    off, ch = r.paths(src, dst)
    assert off.dtype == np.int64 and ch.dtype == np.int32
    assert len(off) == n * n + 1
    for i in range(0, n * n, 7):
        assert ch[off[i] : off[i + 1]].tolist() == r.path(int(src[i]), int(dst[i]))
    lengths = np.diff(off)
    assert lengths[src == dst].tolist() == [0] * n
    same_leaf = src // 4 == dst // 4
    assert set(lengths[same_leaf & (src != dst)].tolist()) == {2}
    assert set(lengths[~same_leaf].tolist()) == {4}


def test_injected_loop_is_named(tree):
    r = dmodk(tree)
    s10, s20 = tree.node("s1_0"), tree.node("s2_0")
    assert r.entry(s10, 4) == 5  # up to s2_0
    r.set_entry(s20, 4, 1)  # back down to s1_0
    with pytest.raises(RoutingError, match=r"^routing loop: s1_0 -> s2_0 -> s1_0 towards h4$"):
        r.check()
    with pytest.raises(RoutingError, match=r"routing loop: .*s1_0 -> s2_0 -> s1_0 towards h4"):
        r.paths([0, 1], [5, 4])


def test_injected_missing_entry_is_named(tree):
    r = dmodk(tree)
    r.set_entry(tree.node("s2_1"), 7, -1)
    with pytest.raises(RoutingError, match=r"^switch s2_1 has no route to h7$"):
        r.check()
    with pytest.raises(RoutingError, match=r"^switch s2_1 has no route to h7$"):
        r.path(0, 7)
    assert len(r.path(0, 6)) == 4  # other destinations still resolve


def test_unconnected_port_and_stray_host(tree):
    r = dmodk(tree)
    r.set_entry(tree.node("s2_1"), 7, 9)
    with pytest.raises(RoutingError, match="s2_1 sends traffic for h7 out of port 9, which is not connected"):
        r.check()
    r = dmodk(tree)
    r.set_entry(tree.node("s1_1"), 7, 1)  # delivers to h4
    with pytest.raises(RoutingError, match="switch s1_1 sends traffic for h7 to host h4"):
        r.check()
    with pytest.raises(RoutingError, match="switch s1_1 sends traffic for h7 to host h4"):
        r.path(0, 7)


def test_class_override(tree):
    base = dmodk(tree)
    s10 = tree.node("s1_0")
    ov = np.full_like(base.table, -1)
    ov[base.row_of[s10], 5] = 5  # class 3 takes s2_0 where the default takes s2_1
    r = Routing(tree, base.table, rows=base.rows, overrides={3: ov})
    assert r.describe(0, 5) == "h0 -> s1_0 -> s2_1 -> s1_1 -> h5"
    assert r.describe(0, 5, cls=3) == "h0 -> s1_0 -> s2_0 -> s1_1 -> h5"
    off, ch = r.paths([0, 0, 1], [5, 5, 5], classes=[0, 3, 3])
    assert ch[off[1] : off[2]].tolist() == r.path(0, 5, cls=3)
    assert ch[off[2] : off[3]].tolist() == r.path(1, 5, cls=3)
    r.check()
    r.set_entry(tree.node("s2_0"), 5, 1, cls=3)  # loop, for class 3 only
    with pytest.raises(RoutingError, match=r"routing loop: s1_0 -> s2_0 -> s1_0 towards h5 \(class 3\)"):
        r.check()
    r.path(0, 5)  # default class unaffected


def _fmix32(x):
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


def test_flow_hash_is_the_documented_formula():
    rng = np.random.default_rng(7)
    node, src, dst, flow = (rng.integers(0, 1 << 20, 50) for _ in range(4))
    for mode in ("dst", "src-dst", "flow"):
        got = flow_hash(node, src, dst, flow, mode)
        for i in range(50):
            s = int(src[i]) if mode != "dst" else 0
            f = int(flow[i]) if mode == "flow" else 0
            want = _fmix32(_fmix32(_fmix32(_fmix32(int(node[i])) ^ s) ^ int(dst[i])) ^ f)
            assert int(got[i]) == want
    assert int(flow_hash([1], [0], [0], [0], "dst")[0]) == _fmix32(_fmix32(_fmix32(_fmix32(1))))


def test_group_entry_resolves_by_hash(tree):
    base = dmodk(tree)
    s10 = tree.node("s1_0")
    table = base.table.copy()
    table[base.row_of[s10], 4:] = -2  # group 0: both up ports
    r = Routing(tree, table, rows=base.rows, groups=[[6, 5]], ecmp_hash="flow")
    assert r.groups[0].tolist() == [5, 6]
    assert r.next_hops(s10, 4) == [5, 6]
    n = 64
    off, ch = r.paths([0] * n, [4] * n, flow_ids=np.arange(n))
    first_up = ch[off[:-1] + 1]
    h = flow_hash(np.full(n, s10), np.zeros(n), np.full(n, 4), np.arange(n), "flow")
    want = np.array([5, 6])[(h % 2).astype(int)]
    assert first_up.tolist() == [int(tree.out_channel[s10, p]) for p in want]
    r.check()


def test_argument_errors(tree):
    r = dmodk(tree)
    with pytest.raises(RoutingError, match="dst_hosts: host index 16 out of range 0..15"):
        r.paths([0], [16])
    with pytest.raises(RoutingError, match="lft has shape"):
        Routing(tree, np.zeros((3, 3)))
    with pytest.raises(RoutingError, match="unknown ECMP hash"):
        Routing(tree, r.table, rows=r.rows, ecmp_hash="5-tuple")
    with pytest.raises(RoutingError, match="ECMP group 0 is empty"):
        Routing(tree, r.table, rows=r.rows, groups=[[]])


def _verdicts(tree):
    """check()'s verdict (None or the error) on good and broken table sets."""

    def ecmp_loop():  # a group whose member loops for one destination
        base = dmodk(tree)
        table = base.table.copy()
        table[base.row_of[tree.node("s1_0")], 4:] = -2
        r = Routing(tree, table, rows=base.rows, groups=[[6, 5]], ecmp_hash="flow")
        r.set_entry(tree.node("s2_1"), 6, 1)
        return r

    def loop():
        r = dmodk(tree)
        r.set_entry(tree.node("s2_0"), 4, 1)
        return r

    def missing():
        r = dmodk(tree)
        r.set_entry(tree.node("s2_1"), 7, -1)
        return r

    def group_ok():
        base = dmodk(tree)
        table = base.table.copy()
        table[base.row_of[tree.node("s1_0")], 4:] = -2
        return Routing(tree, table, rows=base.rows, groups=[[6, 5]], ecmp_hash="flow")

    out = []
    for make in (lambda: dmodk(tree), loop, missing, group_ok, ecmp_loop):
        try:
            make().check()
            out.append(None)
        except RoutingError as exc:
            out.append(str(exc))
    return out


def test_check_by_destination_blocks_gives_the_same_verdicts(tree, monkeypatch):
    """check() resolves the destinations a block at a time (memory bounded by the
    block, not the table): any block size gives the same verdicts and messages."""
    from netsteer.routing import _check

    whole = _verdicts(tree)
    assert whole[0] is None and whole[3] is None
    assert "routing loop" in whole[1] and "has no route to h7" in whole[2] and whole[4] is not None
    for per_pass in (1, 3, 8, 20):  # down to one destination per block (rows < 20)
        monkeypatch.setattr(_check, "PAIRS_PER_PASS", per_pass)
        assert _verdicts(tree) == whole, per_pass
