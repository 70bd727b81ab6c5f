"""Completeness and loop-freedom of a table set, vectorised over (switch, host) pairs.

Used by :meth:`netsteer.routing.table.Routing.check`; see there for examples.
"""

from __future__ import annotations

import numpy as np

from ..errors import RoutingError
from ..topology.model import HOST
from ._graph import dead_end_reason

#: (switch, destination) pairs resolved in one pass of the propagation: bounds the
#: pending pairs and their targets (16 bytes each) whatever the table's size.
PAIRS_PER_PASS = 1 << 21


class Checker:
    """Marks (switch, destination) pairs good from the destination outwards.

    A pair is good when every way out of it (one port, or every member of its group)
    reaches a good pair or the destination host itself. What is still not good when
    nothing changes any more is a miss, a dead end, a stray or a loop; one scalar walk
    from the first such pair names the cause.
    """

    def __init__(self, routing: Routing, topo, pairing, nbr, rows, cls):
        self.r, self.topo, self.pairing, self.nbr = routing, topo, pairing, nbr
        self.rows, self.cls = rows, cls
        self.H = topo.n_hosts
        self.rowof = np.full(topo.n_nodes + 1, -1, dtype=np.int64)  # [-1] -> -1
        self.rowof[rows] = np.arange(len(rows))
        self.good = np.zeros((len(rows), self.H), dtype=bool)
        self.host_index = np.append(topo.host_index, -1).astype(np.int64)
        gptr, gsize, gports = routing._group_csr()
        self.gptr, self.gsize, self.gports = gptr, gsize, gports

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
        bad_rows = np.flatnonzero(~self.good.all(axis=1)) if R else np.zeros(0, int)
        if bad_rows.size:
            r = int(bad_rows[0])
            d = int(np.flatnonzero(~self.good[r])[0])
            self.diagnose(int(self.rows[r]), d)
        self.check_hosts()

    def propagate(self) -> None:
        """Mark good pairs until nothing changes. A pair (u, d) depends only on pairs
        of the same destination, so destinations are taken a block at a time: the
        pending pairs and their targets are a block's, not the whole table's (at
        16,384 hosts the check held 7 times the tables' size that way)."""
        R, H = self.good.shape
        e = self.table_rows(self.rows)
        cols = max(1, PAIRS_PER_PASS // max(R, 1))
        for d0 in range(0, H, cols):
            self.propagate_block(e[:, d0 : d0 + cols], d0)

    def propagate_block(self, eb: np.ndarray, d0: int) -> None:
        """:meth:`propagate` for destinations ``d0 ..`` (the columns of ``eb``)."""
        H = self.H
        good = self.good.reshape(-1)
        # single ports: resolve the next pair once, then each round is one gather
        ri, dj = np.nonzero(eb >= 0)
        nodes, d = self.rows[ri], dj + d0
        ports = eb[ri, dj].astype(np.int64)
        ok, dead = self.step(nodes, d, ports)
        good[ri[ok] * H + d[ok]] = True
        wait = ~ok & ~dead
        pend1 = ri[wait] * H + d[wait]
        tgt = self.rowof[self.nbr[nodes[wait], ports[wait]]] * H + d[wait]
        del ri, dj, nodes, d, ports, ok, dead, wait
        # groups: a pair (u, d) with group g is good when every member's next node is
        # good for d. The next nodes depend on (u, g) only, so each round ANDs whole
        # rows of `good` once per distinct set of next nodes.
        combos = []  # (row, ports of the group, destinations using it there)
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
        """Of destinations ``d0 .. d0 + width`` (a block within the hosts), those for
        which every node of ``nxt`` is good (or is the destination)."""
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
        if grp.size:
            all_ok = np.ones(grp.size, dtype=bool)
            for i, gidx in enumerate(-2 - e[grp]):
                ports = self.r.groups[gidx]
                all_ok[i] = self.step(np.full(len(ports), node), np.full(len(ports), d[grp[i]]),
                                      ports.astype(np.int64))[0].all()
            ok[grp] = all_ok
        if not ok.all():
            self.diagnose(node, int(d[np.flatnonzero(~ok)[0]]))
