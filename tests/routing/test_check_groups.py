"""The check of ECMP group entries against the per-(switch, group) loop it replaced.

``ReferenceChecker`` is :class:`netsteer.routing._check.Checker` as it was before the
group propagation was vectorised (a Python loop over every (row, group) per round).
Random tables -- ECMP on fat-trees (multi-homed hosts, parallel cables), HyperX and
a HyperX with a circuit switch, with links down, then corrupted: loops, dead ends,
strays, misses, groups with a member to a host that is not the destination, groups
that do not exist, class overrides -- must get the same verdict (the same
``RoutingError`` message, or none) and the same ``good`` matrix from both.
"""

from __future__ import annotations

import numpy as np
import pytest

from netsteer.errors import RoutingError
from netsteer.routing import Routing, ecmp
from netsteer.routing import _check
from netsteer.routing._check import Checker
from netsteer.routing._graph import circuit_table, effective_neighbors, reachable_from_hosts, routers
from netsteer.topology.hyperx import CircuitSpec, hyperx
from netsteer.topology.model import HOST, SWITCH
from netsteer.topology.pgft import pgft


class ReferenceChecker(Checker):
    """The checker with its group propagation as before vectorisation (verbatim)."""

    def step(self, nodes, d, ports):
        n_slots = self.nbr.shape[1]
        ok = (ports >= 0) & (ports < n_slots)
        v = np.where(ok, self.nbr[nodes, np.where(ok, ports, 0)], -1)
        hi = self.host_index[v]
        arrived = hi == d
        row = self.rowof[v]
        isrow = row >= 0
        good = arrived.copy()
        good[isrow] = self.good[row[isrow], d[isrow]]
        dead = ~isrow & ~arrived
        return good, dead

    def propagate(self) -> None:
        R, H = self.good.shape
        e = self.table_rows(self.rows)
        cols = max(1, _check.PAIRS_PER_PASS // max(R, 1))
        for d0 in range(0, H, cols):
            self.propagate_block(e[:, d0 : d0 + cols], d0)

    def propagate_block(self, eb: np.ndarray, d0: int) -> None:
        H = self.H
        good = self.good.reshape(-1)
        ri, dj = np.nonzero(eb >= 0)
        nodes, d = self.rows[ri], dj + d0
        ports = eb[ri, dj].astype(np.int64)
        ok, dead = self.step(nodes, d, ports)
        good[ri[ok] * H + d[ok]] = True
        wait = ~ok & ~dead
        pend1 = ri[wait] * H + d[wait]
        tgt = self.rowof[self.nbr[nodes[wait], ports[wait]]] * H + d[wait]
        del ri, dj, nodes, d, ports, ok, dead, wait
        combos = []
        gr, gd = np.nonzero(eb <= -2)
        if gr.size:
            key = gr.astype(np.int64) * (1 << 32) + (-2 - eb[gr, gd].astype(np.int64))
            uk, inv = np.unique(key, return_inverse=True)
            order = np.argsort(inv, kind="stable")
            bounds = np.searchsorted(inv[order], np.arange(len(uk) + 1))
            for k, kk in enumerate(uk):
                row, g = int(kk >> 32), int(kk & 0xFFFFFFFF)
                if g >= len(self.gsize):
                    node = self.topo.node_names[self.rows[row]]
                    raise RoutingError(f"switch {node} names ECMP group {g}, which does not exist")
                combos.append((row, self.r.groups[g], gd[order[bounds[k] : bounds[k + 1]]] + d0))
        width = eb.shape[1]
        changed = True
        while changed:
            changed = False
            if pend1.size:
                now = good[tgt]
                if now.any():
                    good[pend1[now]] = True
                    pend1, tgt = pend1[~now], tgt[~now]
                    changed = True
            memo: dict[tuple, np.ndarray] = {}
            still = []
            for row, ports, dsel in combos:
                node = int(self.rows[row])
                nxt = tuple(int(v) for v in self.next_nodes(node, ports))
                if nxt not in memo:
                    memo[nxt] = self.all_good(nxt, d0, width)
                ok = memo[nxt][dsel - d0]
                if ok.any():
                    self.good[row, dsel[ok]] = True
                    changed = True
                if not ok.all():
                    still.append((row, ports, dsel[~ok]))
            combos = still

    def next_nodes(self, node: int, ports: np.ndarray) -> np.ndarray:
        n_slots = self.nbr.shape[1]
        ports = np.asarray(ports, dtype=np.int64)
        ok = (ports >= 0) & (ports < n_slots)
        return np.where(ok, self.nbr[node, np.where(ok, ports, 0)], -1)

    def all_good(self, nxt, d0: int, width: int) -> np.ndarray:
        out = np.ones(width, dtype=bool)
        for v in nxt:
            row = self.rowof[v]
            if row >= 0:
                out &= self.good[row, d0 : d0 + width]
            else:
                hi = self.host_index[v]
                only = np.zeros(width, dtype=bool)
                if d0 <= hi < d0 + width:
                    only[hi - d0] = True
                out &= only
        return out


def checkers(r: Routing, circuits, kind):
    """A checker of ``kind`` per table (default, then each override), set up as
    :meth:`Routing.check` sets them up."""
    topo = r.topo
    pairing = circuit_table(topo, circuits)
    nbr = effective_neighbors(topo, pairing)
    rows = routers(topo)
    rows = rows[reachable_from_hosts(topo, nbr)[rows]]
    return [kind(r, topo, pairing, nbr, rows, cls) for cls in [None, *sorted(r.overrides)]]


def outcome(call):
    try:
        call()
    except RoutingError as exc:
        return str(exc)
    return None


def verdicts(r: Routing, circuits, kind):
    """Per table: the message (or None) of propagation alone and the ``good`` matrix
    it leaves; then the message (or None) of the whole check."""
    out = []
    for c in checkers(r, circuits, kind):
        out.append((outcome(c.propagate), c.good.copy()))
    whole = None
    for c in checkers(r, circuits, kind):
        whole = outcome(c.run)
        if whole is not None:
            break
    return out, whole


def tyco():
    """A 3x4 HyperX whose dimension-0 cables run through one circuit switch."""
    spec = CircuitSpec(dim=0, switching_time_ns=0)
    return hyperx([3, 4], 1, 2, link_bandwidth=1e9, link_latency_ns=0, circuits=[spec])


FABRICS = [
    pgft(2, [4, 4], [2, 2], [2, 1], link_bandwidth=1e9, link_latency_ns=0),  # dual-homed, parallel
    pgft(3, [2, 3, 4], [1, 2, 3], [1, 1, 2], link_bandwidth=1e9, link_latency_ns=0),
    pgft(2, [3, 5], [1, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0),
    hyperx([3, 4], [1, 2], 3, link_bandwidth=1e9, link_latency_ns=0),
    hyperx([2, 3, 2], 2, 1, link_bandwidth=1e9, link_latency_ns=0),
    tyco(),
]


def ports_of(topo, node: int, to_host: bool | None = None) -> np.ndarray:
    """Connected ports of ``node``; only those to hosts (True) or not (False)."""
    ports = np.flatnonzero(topo.out_channel[node] >= 0)
    if to_host is None:
        return ports
    peer = topo.channel_dst()[topo.out_channel[node, ports]]
    return ports[(topo.node_kind[peer] == HOST) == to_host]


def random_group(topo, node: int, rng) -> list[int]:
    """Ports of ``node`` for a new group: connected ones, and sometimes one to a host
    (a stray unless it is the destination's), an unconnected slot or a port out of
    range (dead ends)."""
    ports = ports_of(topo, node)
    size = int(rng.integers(1, min(4, len(ports)) + 1))
    group = rng.choice(ports, size=size, replace=False).tolist()
    n_slots = topo.out_channel.shape[1]
    extra = rng.integers(6)
    hosts = ports_of(topo, node, to_host=True)
    if extra == 0 and hosts.size:
        group.append(int(rng.choice(hosts)))
    elif extra == 1 and hosts.size:
        group = [int(rng.choice(hosts))]  # one member, to a host
    elif extra == 2:
        free = np.flatnonzero(topo.out_channel[node] < 0)
        group.append(int(rng.choice(free)) if free.size else n_slots + 1)
    elif extra == 3:
        group.append(n_slots + int(rng.integers(3)))
    return group


def corrupt(topo, rows, table, groups, rng, n: int) -> None:
    """``n`` random edits of the switches' entries of ``table`` (whose rows are the
    nodes ``rows``), in place; ``groups`` grows."""
    switches = np.flatnonzero(topo.node_kind == SWITCH)
    rows_of = {int(v): i for i, v in enumerate(rows)}
    H = table.shape[1]
    for _ in range(n):
        node = int(rng.choice(switches))
        row = rows_of[node]
        d = slice(int(rng.integers(H)), None) if rng.random() < 0.2 else int(rng.integers(H))
        what = rng.integers(8)
        if what == 0 and groups:  # another switch's or destination's group
            table[row, d] = -2 - int(rng.integers(len(groups)))
        elif what == 1:  # miss
            table[row, d] = -1
        elif what == 2:  # some connected port, maybe one to a host
            table[row, d] = int(rng.choice(ports_of(topo, node)))
        elif what == 3:  # a port that leads nowhere
            table[row, d] = int(rng.integers(topo.out_channel.shape[1] + 2))
        elif what in (4, 5, 6):  # a new group
            groups.append(random_group(topo, node, rng))
            table[row, d] = -2 - (len(groups) - 1)
        elif rng.random() < 0.3:  # a group that does not exist
            table[row, d] = -2 - (len(groups) + int(rng.integers(3)))


def random_routing(topo, rng) -> tuple[Routing, dict | None]:
    """ECMP (maybe around down links), then corrupted; maybe with a class override;
    for the circuit fabric maybe checked under a pairing with unpaired ports."""
    cut = int(rng.integers(3)) if rng.random() < 0.4 else 0
    down = rng.choice(topo.n_links, size=cut, replace=False).tolist()
    base = ecmp(topo, down_links=down)
    table = base.table.copy()
    groups = [g.tolist() for g in base.groups]
    corrupt(topo, base.rows, table, groups, rng, int(rng.integers(0, 4)))
    overrides = {}
    if rng.random() < 0.25:
        ov = np.full_like(table, -1)
        corrupt(topo, base.rows, ov, groups, rng, int(rng.integers(1, 4)))
        overrides[int(rng.integers(1, 4))] = ov
    r = Routing(topo, table, rows=base.rows, groups=groups, overrides=overrides, engine="ecmp")
    circuits = None
    pairing = topo.meta.get("initial_circuits")
    if pairing and rng.random() < 0.5:
        circuits = {k: np.array(v) for k, v in pairing.items()}
        for arr in circuits.values():  # unpair a few ports, both ends
            for p in rng.choice(np.flatnonzero(arr >= 0), size=2, replace=False):
                q = arr[p]
                if q >= 0:
                    arr[p] = arr[q] = -1
    return r, circuits


def same(a, b) -> bool:
    """Same messages, and the same ``good`` where propagation ran to the end."""
    (ma, whole_a), (mb, whole_b) = a, b
    return whole_a == whole_b and all(
        x[0] == y[0] and (x[0] is not None or np.array_equal(x[1], y[1]))
        for x, y in zip(ma, mb, strict=True)
    )


KINDS = {  # words of each kind of message
    "loop": "routing loop",
    "miss": "has no route",
    "unconnected": "which is not connected",
    "unpaired": "is unpaired",
    "stray": "to host",
    "no such group": "which does not exist",
}


def kind_of(message: str | None) -> str | None:
    if message is None:
        return None
    return next(k for k, words in KINDS.items() if words in message)


def no_fast_path(monkeypatch):
    """Every destination propagated: the memo of next-node sets alone."""
    monkeypatch.setattr(Checker, "settle", lambda self, e: np.arange(self.H))


def potential_from(change):
    """Patch for ``class_distances`` in the check: the real one with the distances
    changed by ``change``."""
    real = _check.class_distances

    def patched(topo, nbr, rows):
        host_class, class_host, pot = real(topo, nbr, rows)
        return host_class, class_host, change(pot).astype(np.int32)

    return patched


#: Ways the check can be made to take other paths; each must give the same verdicts.
#: Any potential keeps the check exact (a loop cannot go strictly downhill), so a
#: flat one settles nothing and sends every destination to the propagation, and a
#: coarse one (hops halved: neighbours tie) settles some and not others.
MODES = {
    "one destination per pass": lambda mp: mp.setattr(_check, "PAIRS_PER_PASS", 1),
    "37 pairs per pass": lambda mp: mp.setattr(_check, "PAIRS_PER_PASS", 37),
    "no fast path": no_fast_path,
    "flat potential": lambda mp: mp.setattr(_check, "class_distances", potential_from(np.zeros_like)),
    "coarse potential": lambda mp: mp.setattr(_check, "class_distances", potential_from(lambda p: p // 2)),
    "memo by sorted keys": lambda mp: mp.setattr(_check.NextNodeSets, "DENSE", 0),
}


def matches_reference_in_every_mode(r, circuits, monkeypatch, name):
    """Assert the check's verdicts on ``r`` are the reference's, by default and in every
    mode of :data:`MODES`; return the reference's."""
    want = verdicts(r, circuits, ReferenceChecker)
    assert same(verdicts(r, circuits, Checker), want), (name, want[1])
    for mode, setup in MODES.items():
        setup(monkeypatch)
        assert same(verdicts(r, circuits, Checker), want), (name, mode, want[1])
        monkeypatch.undo()
    return want


def test_group_check_matches_the_reference(monkeypatch):
    """Same verdicts and ``good`` as the reference on random tables, whatever the
    block of destinations resolved per pass (down to one destination) and whichever
    destinations the fast path settles; the tables give every kind of verdict."""
    rng = np.random.default_rng(7)
    seen = set()
    for topo in FABRICS:
        for _ in range(60):
            r, circuits = random_routing(topo, rng)
            want = matches_reference_in_every_mode(r, circuits, monkeypatch, topo.name)
            assert outcome(lambda: r.check(circuits=circuits)) == want[1]
            seen.add(kind_of(want[1]))
    assert seen == {None, *KINDS}, seen


def test_port_only_check_matches_the_reference(monkeypatch):
    """Tables without groups (min-hop, corrupted with misses, dead ends, strays and
    loops) take the fast path's pair-at-a-time judgement: same verdicts again."""
    from netsteer.routing import minhop

    rng = np.random.default_rng(11)
    seen = set()
    for topo in FABRICS:
        base = minhop(topo)
        switches = np.flatnonzero(topo.node_kind[base.rows] == SWITCH)
        for _ in range(25):
            table = base.table.copy()
            for _ in range(int(rng.integers(0, 4))):
                row = int(rng.choice(switches))
                d = slice(int(rng.integers(topo.n_hosts)), None) if rng.random() < 0.2 else int(rng.integers(topo.n_hosts))
                what = rng.integers(3)
                if what == 0:
                    table[row, d] = -1
                elif what == 1:
                    table[row, d] = int(rng.choice(ports_of(topo, int(base.rows[row]))))
                else:
                    table[row, d] = int(rng.integers(topo.out_channel.shape[1] + 2))
            r = Routing(topo, table, rows=base.rows, engine="minhop")
            want = matches_reference_in_every_mode(r, None, monkeypatch, topo.name)
            seen.add(kind_of(want[1]))
    assert {None, "loop", "miss", "unconnected", "stray"} <= seen, seen


def settled(r: Routing, circuits=None) -> list[np.ndarray]:
    """Per table of ``r``: the destinations the fast path leaves to the propagation."""
    out = []
    for c in checkers(r, circuits, Checker):
        e = c.whole_table()
        c.check_group_indices(e)
        out.append(c.settle(e))
    return out


@pytest.mark.parametrize("topo", FABRICS, ids=lambda t: t.name)
def test_minimal_tables_need_no_propagation(topo):
    """Every destination of a min-hop table leaves closer at every switch: the fast
    path settles them all, and they are all good."""
    from netsteer.routing import build_routing

    engines = ["ecmp", "minhop", "dor"] if "hyperx" in topo.meta.get("kind", "") else ["ecmp", "minhop", "dmodk"]
    for engine in engines:
        r = build_routing(topo, engine)
        for c, todo in zip(checkers(r, None, Checker), settled(r)):
            assert todo.size == 0, engine
        r.check()


def test_fast_path_leaves_exactly_the_destinations_it_cannot_prove():
    """A loop towards one destination leaves that destination (and only it) to the
    propagation, which finds the loop; the others are settled good."""
    from netsteer.routing import dmodk

    t = pgft(2, [4, 4], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
    r = dmodk(t)
    s10, s20 = t.node("s1_0"), t.node("s2_0")
    r.set_entry(s20, 4, 1)  # s2_0 sends h4's traffic back down to s1_0, which goes up
    (todo,) = settled(r)
    assert todo.tolist() == [4]
    (c,) = checkers(r, None, Checker)
    with pytest.raises(RoutingError, match=r"^routing loop: s1_0 -> s2_0 -> s1_0 towards h4$"):
        c.run()
    assert c.good[:, np.arange(t.n_hosts) != 4].all()


def hops_by_scipy(topo, nbr, rows):
    """Hops from each switch of ``rows`` to each host, over ``nbr`` between those
    switches: scipy's breadth-first search from every switch a host is cabled to."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    R = len(rows)
    rowof = np.full(topo.n_nodes + 1, -1, dtype=np.int64)
    rowof[rows] = np.arange(R)
    nb = rowof[nbr[rows]]
    u, p = np.nonzero(nb >= 0)
    back = csr_matrix((np.ones(len(u)), (nb[u, p], u)), shape=(R, R))
    d = shortest_path(back, unweighted=True).T  # d[a, b]: hops from a to b
    out = np.full((R, topo.n_hosts), np.inf)
    for h, node in enumerate(topo.hosts.tolist()):
        for leaf in rowof[nbr[node]]:
            if leaf >= 0:
                out[:, h] = np.minimum(out[:, h], d[:, leaf] + 1)
    return out


@pytest.mark.parametrize("topo", FABRICS, ids=lambda t: t.name)
def test_class_distances_are_the_hops_to_every_host(topo):
    """The distances the check settles by (and min-hop routes by) are scipy's hop
    counts to every host of each class, over the switches the check walks (fat-trees,
    HyperX, a HyperX through a circuit switch); far apart words of the search too.
    Classes hold the hosts cabled to the same switches, and only those."""
    from netsteer.routing import _hops

    (c,) = checkers(ecmp(topo), None, Checker)
    want = hops_by_scipy(topo, c.nbr, c.rows)
    for words in (_hops.SPREAD_WORDS, 1):
        old = _hops.SPREAD_WORDS
        _hops.SPREAD_WORDS = words
        try:
            host_class, class_host, dist = _hops.class_distances(topo, c.nbr, c.rows)
        finally:
            _hops.SPREAD_WORDS = old
        big = np.iinfo(np.int32).max // 2
        got = dist[:-1, host_class].astype(np.float64)
        got[got >= big] = np.inf
        assert np.array_equal(got, want)
        assert (dist[-1] >= big).all()
        assert (host_class[class_host] == np.arange(len(class_host))).all()
        cabled = [tuple(sorted(x for x in c.rowof[c.nbr[n]].tolist() if x >= 0)) for n in topo.hosts.tolist()]
        same = np.array([[a == b for b in cabled] for a in cabled])
        assert np.array_equal(same, host_class[:, None] == host_class[None, :])


def test_spread_is_a_breadth_first_search():
    """Levels of the bit-parallel search match scipy's distances on a random directed
    graph with more sources than a machine word holds, gathered a few tails at a time."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    from netsteer.routing import _hops

    rng = np.random.default_rng(5)
    n, k = 60, 130
    u, v = rng.integers(n, size=150), rng.integers(n, size=150)
    order = np.argsort(u, kind="stable")
    u, v = u[order], v[order]
    src = rng.integers(n, size=k)
    start = np.zeros((n, k), dtype=bool)
    start[src, np.arange(k)] = True
    # hops from each node to each source along the edges u -> v
    d = shortest_path(csr_matrix((np.ones(len(u)), (v, u)), shape=(n, n)), unweighted=True, indices=src).T
    for words in (_hops.SPREAD_WORDS, 3):
        old = _hops.SPREAD_WORDS
        _hops.SPREAD_WORDS = words
        try:
            levels = list(_hops.spread(start, u, v))
        finally:
            _hops.SPREAD_WORDS = old
        got = np.full((n, k), np.inf)
        for hops, reached in enumerate(levels):
            assert np.isinf(got[reached]).all()  # each pair reached once
            got[reached] = hops
        assert np.array_equal(got, d)


def test_same_lists_numbers_only_equal_lists_alike(monkeypatch):
    """Groups leading to the same next nodes share their ways: equal lists get one
    number, and even when every fingerprint collides unequal lists never do."""
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 4, size=300)
    values = rng.integers(-1, 3, size=int(lengths.sum()))
    starts = np.cumsum(lengths) - lengths
    lists = [tuple(values[s : s + n].tolist()) for s, n in zip(starts, lengths)]

    def numbers():
        number, first = _check.same_lists(lengths, values)
        assert [lists[first[k]] for k in number] == lists  # a number's list is the list
        return number

    number = numbers()
    assert len(set(number.tolist())) == len(set(lists))  # equal lists share
    monkeypatch.setattr(_check, "mix64", lambda x: np.zeros(len(x), dtype=np.uint64))
    numbers()


def test_a_host_row_naming_a_missing_group_is_a_routing_error():
    """A multi-homed host has a row of its own: a group index past the groups there is
    named like a switch's (it was an IndexError)."""
    from netsteer.routing import build_routing

    t = pgft(2, [4, 4], [2, 2], [2, 1], link_bandwidth=1e9, link_latency_ns=0)  # dual-homed hosts
    r = build_routing(t, "ecmp")
    h0 = int(t.hosts[0])
    assert r.row_of[h0] >= 0
    r.set_entry(h0, 5, -2 - len(r.groups) - 3)
    with pytest.raises(RoutingError, match=f"host {t.node_names[h0]} names ECMP group {len(r.groups) + 3}, which does not exist"):
        r.check()
