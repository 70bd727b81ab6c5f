"""Completeness and loop-freedom of a table set, vectorised over (switch, host) pairs,
ECMP group entries included (no Python loop per pair or group).

Used by :meth:`netsteer.routing.table.Routing.check`; see there for examples.
"""

from __future__ import annotations

import numpy as np

from ..errors import RoutingError
from ..topology.model import HOST
from ._graph import dead_end_reason
from ._hops import class_distances

#: (switch, destination) pairs, plus the ports of their ECMP groups, resolved in one
#: pass of the propagation: bounds the pending pairs, group members and their targets
#: (16 bytes each) whatever the table's size.
PAIRS_PER_PASS = 1 << 21

#: Verdicts on a way out of a (switch, destination) pair (see :meth:`Checker.exit_verdicts`).
FAIL, CLOSER, TO_HOST = 0, 1, 2


class Checker:
    """Marks (switch, destination) pairs good from the destination outwards.

    A pair is good when every exit from it (one port, or every member of its group)
    reaches a good pair or the destination host itself. What is still not good when
    nothing changes any more is a miss, a dead end, a stray or a loop; one scalar walk
    from the first such pair names the cause.

    First, :meth:`settle` marks good at once the destinations whose every exit leads
    strictly closer to them (all of a min-hop table's); only the others are
    propagated. ``potential``: the :attr:`potential` of ``topo``, ``nbr`` and
    ``rows`` if already found (then kept in ``hops``).
    """

    def __init__(self, routing: Routing, topo, pairing, nbr, rows, cls, potential=None, cut=None):
        self.r, self.topo, self.pairing, self.nbr = routing, topo, pairing, nbr
        self.cut = cut  # Reachability once links are down: the pairs that need no route
        self.hops = potential  # (host_class, pot) once found: shared by a table's classes
        self._port_ends = None
        self.rows, self.cls = rows, cls
        self.H = topo.n_hosts
        self.rowof = np.full(topo.n_nodes + 1, -1, dtype=np.int64)  # [-1] -> -1
        self.rowof[rows] = np.arange(len(rows))
        self.good = np.zeros((len(rows), self.H), dtype=bool)
        self.host_index = np.append(topo.host_index, -1).astype(np.int64)
        gptr, gsize, gports = routing._group_csr()
        self.gptr, self.gsize, self.gports = gptr, gsize, gports
        self.sets = NextNodeSets(self)

    def table_rows(self, nodes: np.ndarray) -> np.ndarray:
        return self.r.node_rows(nodes, self.cls)

    def step(self, nodes, d, ports):
        """Status of leaving ``nodes`` on ``ports`` for ``d``: good now, or dead for ever."""
        n_slots = self.nbr.shape[1]
        ok = (ports >= 0) & (ports < n_slots)
        v = np.where(ok, self.nbr[nodes, np.where(ok, ports, 0)], -1)
        hi = self.host_index[v]
        arrived = hi == d
        row = self.rowof[v]
        isrow = row >= 0
        good = arrived.copy()
        good[isrow] = self.good[row[isrow], d[isrow]]
        dead = ~isrow & ~arrived  # unconnected, unpaired circuit, stray host, unchecked node
        return good, dead

    def run(self) -> None:
        R, H = self.good.shape
        if R:
            self.propagate()
        ok = self.good if self.cut is None else self.good | self.cut.exempt
        bad_rows = np.flatnonzero(~ok.all(axis=1)) if R else np.zeros(0, int)
        if bad_rows.size:
            r = int(bad_rows[0])
            d = int(np.flatnonzero(~ok[r])[0])
            self.diagnose(int(self.rows[r]), d)
        self.check_hosts()

    def propagate(self) -> None:
        """Mark good pairs until nothing changes. A pair (u, d) depends only on pairs
        of the same destination, so destinations are taken a block at a time: the
        pending pairs and their targets are a block's, not the whole table's (at
        16,384 hosts the check held 7 times the tables' size that way)."""
        e = self.whole_table()
        self.check_group_indices(e)
        for dst in self.destination_blocks(e, self.settle(e)):
            self.propagate_block(columns(e, dst), dst)

    @property
    def potential(self) -> tuple[np.ndarray, np.ndarray]:
        """``(host_class, pot)``: the hops from each switch checked to each class of
        hosts, over ``nbr`` between the switches of ``rows`` only, as the check walks
        (:func:`~netsteer.routing._hops.class_distances`); found once."""
        if self.hops is None:
            host_class, _, pot = class_distances(self.topo, self.nbr, self.rows)
            self.hops = host_class, pot
        return self.hops

    def settle(self, e: np.ndarray) -> np.ndarray:
        """Mark good the destinations whose every pair leaves closer to them; return
        the others, for the propagation.

        Every way out of every pair of such a destination (every member of a group)
        reaches the destination host or a switch strictly closer to it: then, by
        induction on the distance, every one of its pairs is good. A min-hop
        table's destinations all are. Which pairs are good does not change, so neither does the first bad one.
        """
        R, H = e.shape
        if not R * H:
            return np.arange(H)
        host_class = self.potential[0]
        order = np.argsort(host_class, kind="stable")  # few classes per block
        closer = np.zeros(H, dtype=bool)
        cols = max(1, PAIRS_PER_PASS // R)
        for a in range(0, H, cols):
            dst = order[a : a + cols]
            closer[dst] = self.leave_closer(columns(e, dst), dst)
        if closer.all():
            self.good[:] = True
        else:
            self.good[:, closer] = True
        return np.flatnonzero(~closer)

    def leave_closer(self, eb: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Per destination of ``dst`` (the columns of ``eb``, in class order):
        whether every way out of each of its pairs leads closer to it.

        Pairs are judged by *fan*: a row's run of equal entries for destinations of
        one class, which lead alike (a fat-tree's leaf goes up by one group for
        each of the 32 hosts of another leaf), judged once.
        """
        if not (eb <= -2).any():
            return self.ports_closer(eb, dst)
        R, w = eb.shape
        cls = self.potential[0][dst]
        new = np.ones((R, w), dtype=bool)  # a fan starts here
        np.not_equal(eb[:, 1:], eb[:, :-1], out=new[:, 1:])
        new[:, 1:] |= cls[1:] != cls[:-1]
        fan_of_pair = np.cumsum(new.reshape(-1)) - 1
        r, j = np.nonzero(new)
        verdict, host = self.fan_verdicts(r, eb[r, j].astype(np.int64), cls[j])
        v = verdict[fan_of_pair].reshape(R, w)
        ok = v == CLOSER
        r, j = np.nonzero(v == TO_HOST)
        ok[r, j] = host[fan_of_pair[r * w + j]] == dst[j]
        return ok.all(axis=0)

    def ports_closer(self, eb: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """:meth:`leave_closer` for a block without groups, a pair at a time (D-mod-K
        spreads a class's destinations over all the up ports: its fans are its
        pairs, judged here in 60% of the time)."""
        R, w = eb.shape
        slots = self.nbr.shape[1]
        host_class, pot = self.potential
        nxt_row, nxt_host = self.port_ends()
        idx = np.clip(eb, -1, slots).astype(np.int64)
        idx += (np.arange(R, dtype=np.int64) * (slots + 2) + 1)[:, None]
        cls = host_class[dst]
        ok = pot[nxt_row.reshape(-1)[idx], cls] < pot[:R, cls]  # no row: pot[R], never closer
        ok |= nxt_host.reshape(-1)[idx] == dst
        return ok.all(axis=0)

    def port_ends(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row, for entries -1 .. n_slots (a miss, ports, past the ports): the row
        reached (``len(rows)`` for none) and the host reached (-1 for none)."""
        if self._port_ends is None:
            R = len(self.rows)
            nb = np.full((R, self.nbr.shape[1] + 2), -1, dtype=np.int64)
            nb[:, 1:-1] = self.nbr[self.rows]
            row = self.rowof[nb]
            row[row < 0] = R
            self._port_ends = row, self.host_index[nb]
        return self._port_ends

    def fan_verdicts(self, row: np.ndarray, code: np.ndarray, cls: np.ndarray):
        """How leaving row ``row`` by entry ``code`` fares for destinations of class
        ``cls`` (arrays alike).

        Returns
        -------
        verdict : ndarray of int8
            :data:`CLOSER`: every way out reaches a switch closer to the class;
            :data:`TO_HOST`: so does every way out but one, to host ``host`` (closer
            only for that host); :data:`FAIL`: otherwise (a miss, a dead end, two
            hosts, a switch no closer).
        host : ndarray of int64
            The host reached, -1 for none, -2 for several.
        """
        n = len(row)
        far = np.full(n, -1, dtype=np.int32)
        host = np.full(n, -1, dtype=np.int64)
        dead = np.ones(n, dtype=bool)  # misses, and ports past the last
        i = np.flatnonzero((code >= 0) & (code < self.nbr.shape[1]))
        far[i], host[i], dead[i] = self.reach(self.nbr[self.rows[row[i]], code[i]], cls[i])
        i = np.flatnonzero(code <= -2)
        if i.size:
            far[i], host[i], dead[i] = self.group_reach(row[i], -2 - code[i], cls[i])
        closer = (far < self.potential[1][row, cls]) & ~dead & (host >= -1)
        return np.where(closer, np.where(host >= 0, TO_HOST, CLOSER), FAIL).astype(np.int8), host

    def reach(self, v: np.ndarray, cls: np.ndarray):
        """For next nodes ``v``: the potential of the switch for class ``cls`` (-1 for
        a host), the host index (-1 for none) and whether ``v`` leads nowhere."""
        row, hi = self.rowof[v], self.host_index[v]
        far = np.where(row >= 0, self.potential[1][row, cls], -1)
        return far, hi, (row < 0) & (hi < 0)

    def group_reach(self, row: np.ndarray, g: np.ndarray, cls: np.ndarray):
        """:meth:`reach` of groups ``g`` at rows ``row`` over all their next nodes:
        the farthest switch, the host (-2 for several) and whether any leads
        nowhere. Found once per (set of next nodes, class)."""
        sets = self.sets
        used, set_of_fan = sets.of(row, g)
        C = self.potential[1].shape[1]
        sc, sc_of_fan = numbered(set_of_fan * C + cls, len(used) * C)
        s = used[sc // C]
        size = sets.size[s]
        start = np.cumsum(size) - size
        v = sets.nodes[np.repeat(sets.ptr[s], size) + ranks_within(size)]
        far, hi, dead = self.reach(v, np.repeat(sc % C, size))
        n_hosts = np.add.reduceat(hi >= 0, start)
        host = np.where(n_hosts > 1, -2, np.maximum.reduceat(hi, start))
        far = np.maximum.reduceat(far, start)
        dead = np.logical_or.reduceat(dead, start)
        return far[sc_of_fan], host[sc_of_fan], dead[sc_of_fan]

    def whole_table(self) -> np.ndarray:
        """Entries of every row checked: the table itself when its rows are the rows
        checked and no override applies (a 65,536-host fat-tree's is 1.3 GB: no copy).
        Read only."""
        r = self.r
        if (self.cls is None or self.cls not in r.overrides) and np.array_equal(r.rows, self.rows):
            return r.table
        return self.table_rows(self.rows)

    def check_group_indices(self, e: np.ndarray) -> None:
        """Raise for the first row naming a group that does not exist (its lowest such
        group), before any propagation, so the message does not depend on blocks."""
        n = len(self.gsize)
        if not e.size:
            return
        bad = np.flatnonzero(e.min(axis=1) < -1 - n)
        if bad.size:
            row = int(bad[0])
            codes = e[row]
            g = -2 - int(codes[codes < -1 - n].max())
            node = self.topo.node_names[self.rows[row]]
            raise RoutingError(f"switch {node} names ECMP group {g}, which does not exist")

    def destination_blocks(self, e: np.ndarray, todo: np.ndarray):
        """Blocks of the destinations ``todo`` (in order), each one destination or as
        many as keep its pairs plus their groups' members within
        :data:`PAIRS_PER_PASS` (a group entry expands to one member per port: 32 and
        more on a fat-tree's way up)."""
        cost = self.destination_costs(e, todo)
        ends = np.cumsum(cost)
        i0 = 0
        while i0 < len(todo):
            budget = ends[i0] - cost[i0] + PAIRS_PER_PASS
            i1 = max(i0 + 1, int(np.searchsorted(ends, budget, side="right")))
            yield todo[i0:i1]
            i0 = i1

    def destination_costs(self, e: np.ndarray, todo: np.ndarray) -> np.ndarray:
        """Per destination of ``todo``: its pairs plus the ports of its group entries."""
        R = e.shape[0]
        n = len(self.gsize)
        extra = np.append(self.gsize, 0)  # code n: not a group
        cost = np.empty(len(todo), dtype=np.int64)
        cols = max(1, PAIRS_PER_PASS // max(R, 1))
        for a in range(0, len(todo), cols):
            eb = columns(e, todo[a : a + cols]).astype(np.int64)
            cost[a : a + cols] = R + extra[np.where(eb <= -2, -2 - eb, n)].sum(axis=0)
        return cost

    def propagate_block(self, eb: np.ndarray, dst: np.ndarray) -> None:
        """:meth:`propagate` for destinations ``dst`` (the columns of ``eb``): one
        round marks whatever now reaches good pairs, until a round marks nothing."""
        good = self.good.reshape(-1)
        singles = self.single_port_waits(eb, dst, good)
        groups = self.group_waits(eb, dst, good)
        while singles.advance(good) | groups.advance(good):  # both, every round
            pass

    def single_port_waits(self, eb: np.ndarray, dst: np.ndarray, good: np.ndarray) -> SingleWaits:
        """Pairs of ``eb`` with a port: good ones marked now, dead ones dropped, the
        rest waiting on their one next pair."""
        H = self.H
        ri, dj = np.nonzero(eb >= 0)
        nodes, d = self.rows[ri], dst[dj]
        ports = eb[ri, dj].astype(np.int64)
        ok, dead = self.step(nodes, d, ports)
        good[ri[ok] * H + d[ok]] = True
        wait = ~ok & ~dead
        tgt = self.rowof[self.nbr[nodes[wait], ports[wait]]] * H + d[wait]
        return SingleWaits(ri[wait] * H + d[wait], tgt)

    def group_waits(self, eb: np.ndarray, dst: np.ndarray, good: np.ndarray) -> GroupWaits:
        """Pairs of ``eb`` with a group: good ones marked now, dead ones dropped, the
        rest waiting on every member's next pair.

        Pairs whose groups lead to the same next nodes and which have the same
        destination wait on the same pairs (a fat-tree's leaves in one pod share
        their parents), so they share a *fan* (set of next nodes, destination),
        expanded into its members once.
        """
        gr, gj = np.nonzero(eb <= -2)
        if not gr.size:
            return GroupWaits.none()
        sets = self.sets
        used, set_of_pair = sets.of(gr, -2 - eb[gr, gj].astype(np.int64))
        width = eb.shape[1]
        fans, fan_of_pair = numbered(set_of_pair * width + gj, len(used) * width)
        fan_set, fan_d = used[fans // width], dst[fans % width]
        member_fan, member_tgt, left, fan_dead = self.fan_members(fan_set, fan_d, sets.ptr, sets.size, sets.nodes)
        pairs = gr * self.H + dst[gj]
        dead = fan_dead[fan_of_pair]
        met = (left[fan_of_pair] == 0) & ~dead  # every member goes to the destination host
        good[pairs[met]] = True
        live = ~met & ~dead
        return GroupWaits(pairs[live], fan_of_pair[live], left, member_fan, member_tgt)

    def fan_members(self, fan_set, fan_d, set_ptr, set_len, set_nodes):
        """The members of fans (next nodes ``set_nodes[set_ptr[s]:][:set_len[s]]``
        for ``s`` in ``fan_set``, destinations ``fan_d``) that wait on a pair.

        A member is met at once (its next node is the destination host), waits on
        its next node's pair, or is dead (no node, a host other than the destination,
        a node without a row); one dead member makes its fan dead.

        Returns
        -------
        member_fan, member_tgt : ndarray of int64
            The waiting members: their fan, and the pair (flat index) they wait on.
        left : ndarray of int64
            Per fan, its waiting members.
        dead : ndarray of bool
            Per fan, whether it is dead (then it has no waiting member).
        """
        size = set_len[fan_set]
        fan = np.repeat(np.arange(len(fan_set)), size)
        v = set_nodes[np.repeat(set_ptr[fan_set], size) + ranks_within(size)]
        d = fan_d[fan]
        row = self.rowof[v]
        dead = np.zeros(len(fan_set), dtype=bool)
        dead[fan[(row < 0) & (self.host_index[v] != d)]] = True
        wait = (row >= 0) & ~dead[fan]
        left = np.bincount(fan[wait], minlength=len(fan_set))
        return fan[wait], row[wait] * self.H + d[wait], left, dead

    def next_node_sets(self, crow: np.ndarray, cg: np.ndarray):
        """The distinct sets of next nodes that groups ``cg`` lead to from rows ``crow``
        (distinct (row, group) combinations).

        Returns
        -------
        set_of_combo : ndarray of int64
            Per (row, group) given, its set.
        set_ptr, set_len, set_nodes : ndarray of int64
            The sets as CSR: sorted distinct nodes, -1 for "leads nowhere" (no
            node, or a switch without a row: dead either way).
        """
        size = self.gsize[cg]
        combo = np.repeat(np.arange(len(cg)), size)
        ports = self.gports[np.repeat(self.gptr[cg], size) + ranks_within(size)].astype(np.int64)
        v = self.next_node(self.rows[crow][combo], ports)
        v = np.where((self.rowof[v] >= 0) | (self.host_index[v] >= 0), v, -1)
        # parallel cables lead to one node: distinct nodes, sorted, per (row, group)
        span = self.topo.n_nodes + 1
        key = combo * span + (v + 1)
        key = key[np.append(True, key[1:] != key[:-1])]  # parallel cables: neighbouring ports
        if (key[1:] < key[:-1]).any():  # ports in order mostly meet nodes in order
            key.sort()
            key = key[np.append(True, key[1:] != key[:-1])]
        combo, v = key // span, key % span - 1
        n_next = np.bincount(combo, minlength=len(cg))
        set_of_combo, first = same_lists(n_next, v)
        set_len = n_next[first]
        set_ptr = np.cumsum(set_len) - set_len
        starts = np.cumsum(n_next) - n_next
        set_nodes = v[np.repeat(starts[first], set_len) + ranks_within(set_len)]
        return set_of_combo, set_ptr, set_len, set_nodes

    def next_node(self, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
        """Node reached leaving ``nodes`` on ``ports``, -1 for none (out of range too)."""
        n_slots = self.nbr.shape[1]
        ok = (ports >= 0) & (ports < n_slots)
        return np.where(ok, self.nbr[nodes, np.where(ok, ports, 0)], -1)

    def diagnose(self, node: int, d: int) -> None:
        topo, r = self.topo, self.r
        names = topo.node_names
        dname = r._host_name(d)
        sfx = r._cls_suffix(self.cls)
        seen = [node]
        cur = node
        while True:
            e = int(self.table_rows(np.array([cur]))[0, d])
            kind = r._kind(cur)
            if e == -1 and topo.node_kind[cur] == HOST:
                e = int(r._host_port()[cur])
            if e == -1:
                raise RoutingError(f"{kind} {names[cur]} has no route to {dname}{sfx}")
            ports = self.r.groups[-2 - e] if e <= -2 else [e]
            nxt = None
            for p in ports:
                good, dead = self.step(np.array([cur]), np.array([d]), np.array([int(p)]))
                if good[0]:
                    continue
                v = int(self.nbr[cur, p]) if 0 <= p < self.nbr.shape[1] else -1
                if v < 0:
                    why = dead_end_reason(topo, self.pairing, cur, int(p))
                    raise RoutingError(f"{kind} {names[cur]} sends traffic for {dname} out of {why}{sfx}")
                if topo.node_kind[v] == HOST:
                    raise RoutingError(
                        f"{kind} {names[cur]} sends traffic for {dname} to host {names[v]}{sfx}"
                    )
                nxt = v
                break
            if nxt is None:
                return  # all ways out are good (cannot happen for a bad pair)
            if nxt in seen:
                cycle = seen[seen.index(nxt) :] + [nxt]
                raise RoutingError(
                    "routing loop: " + " -> ".join(names[v] for v in cycle) + f" towards {dname}{sfx}"
                )
            seen.append(nxt)
            cur = nxt

    def check_hosts(self) -> None:
        """Hosts reach every other host: single-homed hosts through their switch."""
        topo = self.topo
        hosts = topo.hosts
        H = self.H
        n_ports = (topo.out_channel[hosts] >= 0).sum(axis=1)
        host_port = self.r._host_port()[hosts]
        # hosts whose row says nothing but "my only port": good iff that port leads
        # to a checked switch (whose pairs are all good by now) or is the only host
        simple = n_ports <= 1
        chunk = max(1, (1 << 22) // max(H, 1))
        rowed = self.r.row_of[hosts] >= 0  # hosts without a row say nothing else
        for a in range(0, len(hosts), chunk):
            sel = np.arange(a, min(a + chunk, len(hosts)))
            s = simple[sel].copy()
            has = np.flatnonzero(rowed[sel])
            if has.size:
                e = self.table_rows(hosts[sel[has]])
                s[has] &= ((e == -1) | (e == host_port[sel[has], None])).all(axis=1)
            ns = sel[s]
            v = np.where(host_port[ns] >= 0, self.nbr[hosts[ns], np.maximum(host_port[ns], 0)], -1)
            fine = self.rowof[v] >= 0
            todo = np.concatenate([sel[~s], ns[~fine]])
            for h in todo:
                self.check_host_row(int(h))

    def check_host_row(self, h: int) -> None:
        H = self.H
        node = int(self.topo.hosts[h])
        d = np.delete(np.arange(H), h)
        if d.size == 0:
            return
        e = self.table_rows(np.array([node]))[0, d].astype(np.int64)
        e[e == -1] = self.r._host_port()[node]
        ok = np.zeros(d.size, dtype=bool)
        single = e >= 0
        nodes = np.full(d.size, node)
        ok[single] = self.step(nodes[single], d[single], e[single])[0]
        grp = np.flatnonzero(e <= -2)
        if grp.size and (-2 - e[grp]).max() >= len(self.r.groups):
            g = int((-2 - e[grp]).max())
            raise RoutingError(f"host {self.topo.node_names[node]} names ECMP group {g}, which does not exist")
        if grp.size:
            all_ok = np.ones(grp.size, dtype=bool)
            for i, gidx in enumerate(-2 - e[grp]):
                ports = self.r.groups[gidx]
                all_ok[i] = self.step(np.full(len(ports), node), np.full(len(ports), d[grp[i]]),
                                      ports.astype(np.int64))[0].all()
            ok[grp] = all_ok
        if self.cut is not None:
            ok |= self.cut.host_cut_off(node, d)
        if not ok.all():
            self.diagnose(node, int(d[np.flatnonzero(~ok)[0]]))


def require_connected(topo, nbr, rows, host_class, pot) -> None:
    """Raise unless the cabling (circuits along ``nbr``) joins every host to every
    switch of ``rows``, so to every other host: a routing cannot be complete
    otherwise, and naming the missing cable says more than a missing entry would.

    >>> from netsteer.topology.model import TopologyBuilder
    >>> from netsteer.routing._graph import circuit_table, effective_neighbors, routers
    >>> b = TopologyBuilder("t")
    >>> s = b.add_switch("s0")
    >>> h = [b.add_host(f"h{i}") for i in range(3)]
    >>> _ = [b.add_link(x, s, bandwidth=1e9, latency_ns=0) for x in h[:2]]
    >>> t = b.build()
    >>> nbr = effective_neighbors(t, circuit_table(t, None))
    >>> hc, _, pot = class_distances(t, nbr, routers(t))
    >>> require_connected(t, nbr, routers(t), hc, pot)
    Traceback (most recent call last):
    ...
    netsteer.errors.RoutingError: host h2 has no cable: every host needs one to be routed to
    """
    R = len(rows)
    if R == 0 or topo.n_hosts < 2:
        return
    inf = np.iinfo(pot.dtype).max // 2
    far = pot[:R] >= inf
    if not far.any():
        return
    lost = np.flatnonzero(far.any(axis=0))  # classes some switch cannot reach
    h = int(np.flatnonzero(np.isin(host_class, lost))[0])
    node = int(topo.hosts[h])
    name = topo.node_names[node]
    if not (topo.out_channel[node] >= 0).any():
        raise RoutingError(f"host {name} has no cable: every host needs one to be routed to")
    r = int(np.flatnonzero(far[:, host_class[h]])[0])
    raise RoutingError(
        f"the fabric is not connected: no cable path joins switch {topo.node_names[rows[r]]} to host {name}"
    )


class Reachability:
    """What the tables need not reach: (switch, host) pairs with no path once
    ``down_links`` are cut from ``nbr`` (hosts never forward), as OpenSM leaves a
    destination it cannot reach out of the tables.

    Attributes
    ----------
    exempt : ndarray of bool, shape (len(rows), n_hosts)
        Host ``d`` cannot be reached from switch ``rows[i]``.
    """

    def __init__(self, topo, nbr, rows, down_links):
        up = nbr.copy()
        links = np.asarray(sorted(down_links), dtype=np.int64)
        links = links[(links >= 0) & (links < topo.n_links)]
        up[topo.link_a[links], topo.link_a_port[links]] = -1
        up[topo.link_b[links], topo.link_b_port[links]] = -1
        self.up = up
        self.rowof = np.full(topo.n_nodes + 1, -1, dtype=np.int64)
        self.rowof[rows] = np.arange(len(rows))
        self.host_class, _, pot = class_distances(topo, up, rows)
        self.far = pot >= np.iinfo(pot.dtype).max // 2  # last row: "no switch", all far
        self.exempt = self.far[:-1][:, self.host_class]

    def host_cut_off(self, node: int, d: np.ndarray) -> np.ndarray:
        """Per destination of ``d``: whether host ``node`` has no path to it (none of
        its live cables leads to a switch that reaches it)."""
        att = self.rowof[self.up[node]]
        att = att[att >= 0]
        if not att.size:
            return np.ones(len(d), dtype=bool)
        return self.far[att][:, self.host_class[d]].all(axis=0)


def columns(e: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Columns ``dst`` of ``e``: a view when they are a run (blocks of a table whose
    hosts are in class order), else a copy."""
    if len(dst) and int(dst[-1]) - int(dst[0]) == len(dst) - 1 and (np.diff(dst) == 1).all():
        return e[:, int(dst[0]) : int(dst[-1]) + 1]
    return e[:, dst]


class NextNodeSets:
    """Per-check memo of the set of next nodes each (row, group) leads to.

    Those sets do not depend on the destination, so each is found once, the first
    time a block of destinations needs it (found for the whole table at once, the
    sets cost 3x the check on a HyperX, whose blocks need few of them; found per
    block, a fat-tree's 4,370 blocks each found the same up-groups again).

    Attributes
    ----------
    ptr, size, nodes : ndarray of int64
        The sets found so far, as CSR (see :meth:`Checker.next_node_sets`): the
        first ``n_sets`` entries of ``ptr`` and ``size``, ``n_nodes`` of ``nodes``.
    """

    #: (row, group) combinations up to which the memo is one array indexed by them
    #: (8 bytes each); past that, sorted keys searched.
    DENSE = 1 << 22

    def __init__(self, checker: Checker):
        self.checker = checker
        self.n_groups = len(checker.gsize)
        self.span = len(checker.rows) * self.n_groups
        empty = np.zeros(0, dtype=np.int64)
        self.ptr, self.size, self.nodes = empty, empty, empty  # (capacity past n_sets, n_nodes)
        self.n_sets = self.n_nodes = 0
        self.dense = self.span <= self.DENSE
        self.set_of = np.full(self.span if self.dense else 0, -1, dtype=np.int64)
        self.keys, self.ids = empty, empty  # when not dense: combinations met, sorted

    def of(self, rows: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sets that (row, group) pairs ``rows``, ``g`` lead to; the ones not met
        yet are found now.

        Returns
        -------
        used : ndarray of int64
            The distinct sets (ids into ``ptr``, ``size``).
        set_of_pair : ndarray of int64
            Per pair, its set's index in ``used``.
        """
        combos, combo_of_pair = numbered(rows.astype(np.int64) * self.n_groups + g, self.span)
        sid = self.lookup(combos)
        new = sid < 0
        if new.any():
            sid[new] = self.add(combos[new])
        used, set_of_combo = numbered(sid, self.n_sets)
        return used, set_of_combo[combo_of_pair]

    def lookup(self, combos: np.ndarray) -> np.ndarray:
        """Set of each of ``combos`` (distinct, sorted), -1 for not met yet."""
        if self.dense:
            return self.set_of[combos]
        if not len(self.keys):
            return np.full(len(combos), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.keys, combos), len(self.keys) - 1)
        return np.where(self.keys[pos] == combos, self.ids[pos], -1)

    def add(self, combos: np.ndarray) -> np.ndarray:
        """Find the sets of ``combos`` (not met yet), keep them; their ids."""
        set_of_combo, ptr, size, nodes = self.checker.next_node_sets(combos // self.n_groups, combos % self.n_groups)
        ids = set_of_combo + self.n_sets
        self.ptr = appended(self.ptr, self.n_sets, ptr + self.n_nodes)
        self.size = appended(self.size, self.n_sets, size)
        self.nodes = appended(self.nodes, self.n_nodes, nodes)
        self.n_sets += len(size)
        self.n_nodes += len(nodes)
        if self.dense:
            self.set_of[combos] = ids
        else:
            keys, ids_all = np.concatenate([self.keys, combos]), np.concatenate([self.ids, ids])
            order = np.argsort(keys, kind="stable")
            self.keys, self.ids = keys[order], ids_all[order]
        return ids


def appended(buf: np.ndarray, n: int, values: np.ndarray) -> np.ndarray:
    """``buf`` with ``values`` written after its first ``n`` entries: ``buf`` itself,
    or a copy twice as large when it is full (blocks add a few sets each: copying the
    memo every time would cost as much as the sets)."""
    end = n + len(values)
    if end > len(buf):
        grown = np.empty(max(end, 2 * len(buf)), dtype=buf.dtype)
        grown[:n] = buf[:n]
        buf = grown
    buf[n:end] = values
    return buf


def numbered(keys: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` (in ``0 .. span - 1``), sorted, and the index of each key
    among them: as ``np.unique(keys, return_inverse=True)``, but through a bitmap
    when ``span`` is small next to ``keys`` (no sort of the pairs of a fat-tree)."""
    if span > 8 * keys.size:
        distinct, index = np.unique(keys, return_inverse=True)
        return distinct, index.ravel()
    seen = np.zeros(span, dtype=bool)
    seen[keys] = True
    return np.flatnonzero(seen), (np.cumsum(seen) - 1)[keys]


def ranks_within(sizes: np.ndarray) -> np.ndarray:
    """``0 .. size - 1`` for each of ``sizes``, one after the other."""
    starts = np.cumsum(sizes) - sizes
    return np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(starts, sizes)


def same_lists(lengths: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number equal lists alike: lists of ``lengths``, one after the other in ``values``.

    Lists are sorted by a fingerprint and each is compared with the one before,
    element by element, so only equal lists share a number. (Equal lists split by
    a colliding fingerprint would get two numbers: harmless, just less sharing.)

    Returns
    -------
    number : ndarray of int64
        Per list, ``0 ..`` in order of fingerprint.
    first : ndarray of int64
        Per number, a list that has it.
    """
    ends = np.cumsum(lengths)
    starts = ends - lengths
    spread = mix64(values.astype(np.uint64) + mix64(ranks_within(lengths)))  # (1, 2) is not (2, 1)
    total = np.concatenate([np.zeros(1, np.uint64), np.cumsum(spread, dtype=np.uint64)])
    prints = total[ends] - total[starts] + mix64(lengths)  # wraps: fine for a fingerprint
    order = np.argsort(prints, kind="stable")
    prev, cur = order[:-1], order[1:]
    same = (prints[prev] == prints[cur]) & (lengths[prev] == lengths[cur])
    maybe = np.flatnonzero(same)  # check these element by element
    size = lengths[cur[maybe]]
    within = ranks_within(size)
    differs = values[np.repeat(starts[prev[maybe]], size) + within] != values[
        np.repeat(starts[cur[maybe]], size) + within
    ]
    unequal = np.bincount(np.repeat(np.arange(maybe.size), size)[differs], minlength=maybe.size) > 0
    same[maybe[unequal]] = False
    new = np.append(True, ~same)
    number = np.empty(len(lengths), dtype=np.int64)
    number[order] = np.cumsum(new) - 1
    return number, order[new]


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: well-spread 64-bit hashes of integers."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class SingleWaits:
    """Pairs (flat indices into ``good``) each waiting on one pair, ``tgt``."""

    def __init__(self, pairs: np.ndarray, tgt: np.ndarray):
        self.pairs, self.tgt = pairs, tgt

    def advance(self, good: np.ndarray) -> bool:
        """Mark the pairs whose target is good; whether any was."""
        if not self.pairs.size:
            return False
        now = good[self.tgt]
        if not now.any():
            return False
        good[self.pairs[now]] = True
        self.pairs, self.tgt = self.pairs[~now], self.tgt[~now]
        return True


class GroupWaits:
    """Pairs waiting on every member of their fan (see :meth:`Checker.group_waits`).

    Attributes
    ----------
    pairs, fan : ndarray of int64
        Pending pairs (flat indices into ``good``) and the fan of each.
    left : ndarray of int64
        Per fan, members not met yet: its pairs are good at 0.
    member_fan, member_tgt : ndarray of int64
        Members not met yet: their fan, and the pair they wait on.
    """

    def __init__(self, pairs, fan, left, member_fan, member_tgt):
        self.pairs, self.fan, self.left = pairs, fan, left
        self.member_fan, self.member_tgt = member_fan, member_tgt

    @classmethod
    def none(cls) -> GroupWaits:
        empty = np.zeros(0, dtype=np.int64)
        return cls(empty, empty, empty, empty, empty)

    def advance(self, good: np.ndarray) -> bool:
        """Meet the members whose pair is good, then mark the pairs of fans with no
        member left; whether any pair was marked."""
        if not self.pairs.size:
            return False
        now = good[self.member_tgt]
        if not now.any():
            return False
        self.left -= np.bincount(self.member_fan[now], minlength=len(self.left))
        self.member_fan, self.member_tgt = self.member_fan[~now], self.member_tgt[~now]
        done = self.left[self.fan] == 0
        if not done.any():
            return False
        good[self.pairs[done]] = True
        self.pairs, self.fan = self.pairs[~done], self.fan[~done]
        return True
