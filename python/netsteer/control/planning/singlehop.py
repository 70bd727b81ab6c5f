"""Single-hop circuit planning: greedy edge choice with colouring by construction, then 2-opt.

The state is one partner array per circuit switch (``partner[o, r]``: the rack joined to
rack ``r`` through switch ``o``, or -1), so every switch's circuits are a matching by
construction and no separate edge-colouring step is needed.

1. **Greedy.** Rack pairs are taken in decreasing order of the demand their next circuit
   would serve (the *marginal gain*: a pair with ``m`` circuits serves
   ``min(d_ab, m c) + min(d_ba, m c)``, concave in ``m``, so gains only fall). A pair
   gets a circuit on a switch where both racks have a free port. When both racks have
   free ports but on different switches, a Kempe chain swap (switches ``α``/``β``
   alternate along a path) frees a common switch; it fails only if the chain closes an
   odd cycle, and then the next pair of switches is tried.
2. **2-opt.** On each switch in turn, every two circuits ``(a, b), (c, d)`` (a free port
   counts as a circuit to a dummy rack) are evaluated, vectorised, for the re-pairings
   ``(a, c), (b, d)`` and ``(a, d), (b, c)``; improving swaps that touch disjoint racks are
   applied together. The pass repeats until no switch improves.

Pinned circuits are placed first and never moved (not by Kempe swaps, not by 2-opt).
"""

from __future__ import annotations

import heapq

import numpy as np


def ladder(m, c: float, fair: bool = False):
    """What ``m`` circuits of a pair carry each way, as the planner counts it: ``m c``, or
    with ``fair`` ``c sqrt(m)``, so each further circuit counts less than the one before
    (:func:`netsteer.control.demand.spread` applied to the capacity: with demand spread
    the same way, a pair's value is the spread of what it is served).

    >>> ladder(np.arange(5), 10.0).tolist(), ladder(np.arange(5), 10.0, fair=True).round(2).tolist()
    ([0.0, 10.0, 20.0, 30.0, 40.0], [0.0, 10.0, 14.14, 17.32, 20.0])
    """
    m = np.asarray(m, dtype=float)
    return c * np.sqrt(m) if fair else m * c


def pair_gain(d: np.ndarray, c: float, a, b, m, fair: bool = False):
    """Demand served by the ``m``-th circuit (``m >= 1``) between racks ``a`` and ``b`` (both
    ways), counted by :func:`ladder`.

    >>> d = np.array([[0., 25.], [4., 0.]])
    >>> [float(pair_gain(d, 10.0, 0, 1, m)) for m in (1, 2, 3, 4)]
    [14.0, 10.0, 5.0, 0.0]
    >>> [round(float(pair_gain(d, 10.0, 0, 1, m, fair=True)), 2) for m in (1, 2, 3, 4)]
    [14.0, 4.14, 3.18, 2.68]
    """
    lo, width = _step(m, c, fair)
    return np.clip(d[a, b] - lo, 0.0, width) + np.clip(d[b, a] - lo, 0.0, width)


def _step(m, c: float, fair: bool):
    """Where the ``m``-th circuit's count starts, and how much it adds (``c`` exactly
    when counted linearly: no rounding of ``m c - (m - 1) c``)."""
    lo = ladder(np.asarray(m) - 1, c, fair)
    return lo, (ladder(m, c, fair) - lo) if fair else c


class State:
    """Partner arrays, multiplicities and free-port masks of a plan in progress.

    Parameters
    ----------
    d : ndarray
        Demand, ``n x n`` Gbit/s, zero diagonal.
    k : int
        Circuit switches (one uplink per rack on each).
    c : float
        Capacity of one circuit, each way, Gbit/s.
    fair : bool
        Count a pair's circuits by :func:`ladder` with ``fair``.
    """

    def __init__(self, d: np.ndarray, k: int, c: float, fair: bool = False):
        self.n = n = d.shape[0]
        self.k, self.c, self.fair = k, c, fair
        self.d = d
        # padded with a dummy rack n (zero demand) for free ports in 2-opt
        self.dp = np.zeros((n + 1, n + 1))
        self.dp[:n, :n] = d
        self.partner = np.full((k, n), -1, dtype=np.int64)
        self.pinned = np.zeros((k, n), dtype=bool)
        self.mult = np.zeros((n + 1, n + 1), dtype=np.int64)
        self.free = [(1 << k) - 1] * n  # bit o set: rack has a free port on switch o
        self.touched: set[int] = set()  # switches edited since last cleared

    # -- basic edits ---------------------------------------------------------------
    def add(self, o: int, a: int, b: int, pinned: bool = False) -> None:
        self.partner[o, a] = b
        self.partner[o, b] = a
        self.pinned[o, a] = self.pinned[o, b] = pinned
        self.mult[a, b] += 1
        self.mult[b, a] += 1
        self.free[a] &= ~(1 << o)
        self.free[b] &= ~(1 << o)
        self.touched.add(o)

    def remove(self, o: int, a: int) -> None:
        b = int(self.partner[o, a])
        self.partner[o, a] = self.partner[o, b] = -1
        self.mult[a, b] -= 1
        self.mult[b, a] -= 1
        self.free[a] |= 1 << o
        self.free[b] |= 1 << o
        self.touched.add(o)

    def circuits(self):
        """``(o, a, b)`` triples with ``a < b``, sorted."""
        o, a = np.nonzero(self.partner >= 0)
        b = self.partner[o, a]
        keep = a < b
        return o[keep], a[keep], b[keep]

    def served(self) -> float:
        """Demand served directly, Gbit/s (counted by :func:`ladder`)."""
        n = self.n
        m = self.mult[:n, :n]
        return float(np.minimum(self.d, ladder(m, self.c, self.fair)).sum())

    def gain(self, d: np.ndarray, a, b, m):
        """:func:`pair_gain` of this plan's count."""
        return pair_gain(d, self.c, a, b, m, self.fair)

    # -- greedy ----------------------------------------------------------------------
    def _kempe(self, a: int, b: int) -> int:
        """Free a common switch for ``a`` and ``b`` by one Kempe chain swap; -1 if none.

        Tries switch ``alpha`` (free at ``a``) and ``beta`` (free at ``b``) in increasing
        order and takes the first chain that works. A chain reads only the two switches'
        pairings, so switches paired alike (many when K > n - 1) walk alike: each pair of
        pairings is walked once, with the same outcome as walking every pair of switches."""
        P, pinned = self.partner, self.pinned

        def pairing(o: int) -> bytes:
            return P[o].tobytes() + pinned[o].tobytes()

        betas: dict[bytes, int] = {}  # a pairing -> the first switch free at b with it
        for beta in _bits(self.free[b]):
            betas.setdefault(pairing(beta), beta)
        firsts = sorted(betas.values())
        walked: set[bytes] = set()  # pairings of alpha whose chains all failed
        for alpha in _bits(self.free[a]):
            pa = pairing(alpha)
            if pa in walked:
                continue
            walked.add(pa)
            for beta in firsts:  # never alpha: a and b share no free switch
                # chain from b: b -alpha- x1 -beta- x2 -alpha- ... (b lacks beta, has alpha)
                path = []
                cur, col, ok = b, alpha, True
                while True:
                    nxt = int(P[col, cur])
                    if nxt < 0:
                        break
                    if pinned[col, cur]:
                        ok = False
                        break
                    path.append((col, cur, nxt))
                    cur = nxt
                    col = beta if col == alpha else alpha
                if not ok or cur == a:
                    continue
                for col, x, _y in path:
                    self.remove(col, x)
                for col, x, y in path:
                    self.add(beta if col == alpha else alpha, x, y)
                return alpha
        return -1

    def try_add(self, a: int, b: int) -> bool:
        fa, fb = self.free[a], self.free[b]
        if not fa or not fb:
            return False
        common = fa & fb
        if common:
            o = (common & -common).bit_length() - 1
        else:
            o = self._kempe(a, b)
            if o < 0:
                return False
        self.add(o, a, b)
        return True

    def greedy(self) -> None:
        """Add circuits in decreasing order of marginal gain while ports are free."""
        n, c, d = self.n, self.c, self.d
        iu, ju = np.triu_indices(n, 1)
        g = self.gain(d, iu, ju, self.mult[iu, ju] + 1)
        sel = np.nonzero(g > 0)[0]
        order = sel[np.argsort(-g[sel], kind="stable")]
        ca, cb, cg = iu[order].tolist(), ju[order].tolist(), g[order].tolist()
        free = self.free
        heap: list = []
        seq = 0

        def accepted(a, b):
            nonlocal seq
            gn = float(self.gain(d, a, b, int(self.mult[a, b]) + 1))
            if gn > 0:
                seq += 1
                heapq.heappush(heap, (-gn, seq, a, b))

        for a, b, gv in zip(ca, cb, cg):
            while heap and -heap[0][0] > gv:
                _, _, x, y = heapq.heappop(heap)
                if self.try_add(x, y):
                    accepted(x, y)
            if free[a] and free[b] and self.try_add(a, b):
                accepted(a, b)
        while heap:
            _, _, x, y = heapq.heappop(heap)
            if self.try_add(x, y):
                accepted(x, y)

    # -- 2-opt ---------------------------------------------------------------------------
    def two_opt(self, switches=None, *, max_passes: int = 100) -> int:
        """Improve by re-pairing two circuits of one switch; return the number of swaps.

        ``switches``: the switches to visit in turn (default all), until none improves.
        """
        n, c = self.n, self.c
        visit = list(range(self.k)) if switches is None else sorted(switches)
        k = len(visit)
        G = _full_gain(self.dp, c, self.mult + 1, self.fair)
        tol = 1e-9 * max(1.0, c)
        swaps = 0
        idle = 0  # switches in a row without improvement
        oi = 0
        passes = 0
        # a switch's moves depend only on its own pairing and on mult: two switches with the
        # same pairing (many when K > n - 1) have the same answer until a swap changes mult
        settled: set[bytes] = set()
        while idle < k and passes < max_passes * k:
            passes += 1
            o = visit[oi]
            P = self.partner[o]
            key = P.tobytes() + self.pinned[o].tobytes()
            if key in settled:
                idle += 1
                oi = (oi + 1) % k
                continue
            r = np.arange(n)
            movable = (P > r) & ~self.pinned[o]
            free = P < 0
            A = np.concatenate([r[movable], r[free]])
            B = np.concatenate([P[movable], np.full(int(free.sum()), n)])
            if len(A) < 2:
                settled.add(key)
                idle += 1
                oi = (oi + 1) % k
                continue
            loss = np.zeros(len(A))
            nm = int(movable.sum())
            loss[:nm] = self.gain(self.dp, A[:nm], B[:nm], self.mult[A[:nm], B[:nm]])
            base = loss[:, None] + loss[None, :]
            d1 = G[A[:, None], A[None, :]] + G[B[:, None], B[None, :]] - base
            d2 = G[A[:, None], B[None, :]] + G[B[:, None], A[None, :]] - base
            best = np.maximum(d1, d2)
            np.fill_diagonal(best, 0.0)
            iu = np.nonzero(np.triu(best, 1) > tol)
            if len(iu[0]) == 0:
                settled.add(key)
                idle += 1
                oi = (oi + 1) % k
                continue
            idle = 0
            settled.clear()
            vals = best[iu]
            order = np.argsort(-vals, kind="stable")
            used = np.zeros(len(A), dtype=bool)
            changed = []
            for t in order.tolist():
                i, j = int(iu[0][t]), int(iu[1][t])
                if used[i] or used[j]:
                    continue
                used[i] = used[j] = True
                ai, bi, aj, bj = int(A[i]), int(B[i]), int(A[j]), int(B[j])
                if d1[i, j] >= d2[i, j]:
                    new = ((ai, aj), (bi, bj))
                else:
                    new = ((ai, bj), (bi, aj))
                for x, y in ((ai, bi), (aj, bj)):
                    if y < n:
                        self.remove(o, x)
                        changed.append((x, y))
                for x, y in new:
                    if x < n and y < n:
                        self.add(o, x, y)
                        changed.append((x, y))
                swaps += 1
            if changed:
                cx, cy = np.array(changed).T
                G[cx, cy] = G[cy, cx] = self.gain(self.dp, cx, cy, self.mult[cx, cy] + 1)
            oi = (oi + 1) % k
        return swaps

    def drop_idle(self) -> None:
        """Remove circuits (not pinned) that serve nothing: more circuits than a pair needs."""
        n, c = self.n, self.c
        top = np.maximum(self.d, self.d.T) / c
        # the circuits after which a further one adds nothing: ladder(need) >= demand
        need = np.ceil(top * top if self.fair else top).astype(np.int64)
        surplus = self.mult[:n, :n] - need
        if not (surplus > 0).any():
            return
        o, a, b = self.circuits()
        for oo, aa, bb in zip(o.tolist(), a.tolist(), b.tolist()):
            if surplus[aa, bb] > 0 and not self.pinned[oo, aa]:
                self.remove(oo, aa)
                surplus[aa, bb] -= 1


    # -- iterated local search -----------------------------------------------------------
    def snapshot(self):
        return self.partner.copy(), self.pinned.copy(), self.mult.copy(), list(self.free)

    def restore(self, snap) -> None:
        self.partner, self.pinned, self.mult, self.free = snap[0].copy(), snap[1].copy(), snap[2].copy(), list(snap[3])

    def refill(self, tabu: set) -> None:
        """Greedy over racks with free ports, skipping the pairs in ``tabu``."""
        R = np.array([r for r in range(self.n) if self.free[r]], dtype=np.int64)
        if len(R) < 2:
            return
        g = self.gain(self.d, R[:, None], R[None, :], self.mult[R[:, None], R[None, :]] + 1)
        iu, ju = np.triu_indices(len(R), 1)
        gv = g[iu, ju]
        sel = np.nonzero(gv > 0)[0]
        order = sel[np.argsort(-gv[sel], kind="stable")]
        for x, y in zip(R[iu[order]].tolist(), R[ju[order]].tolist()):
            if (x, y) not in tabu and self.free[x] and self.free[y]:
                self.try_add(x, y)

    def kick(self, rng: np.random.Generator) -> None:
        """Remove two circuits of one switch (one chosen at random, one that holds a good
        alternative partner of its rack), then refill without re-making them."""
        n, k = self.n, self.k
        o = int(rng.integers(k))
        P = self.partner[o]
        racks = np.nonzero((P >= 0) & ~self.pinned[o])[0]
        if len(racks) == 0:
            return
        a = int(racks[rng.integers(len(racks))])
        b = int(P[a])
        g = self.gain(self.d, a, np.arange(n), self.mult[a, :n] + 1)
        g[[a, b]] = -1.0
        top = np.argsort(-g, kind="stable")[:3]
        y = int(top[rng.integers(len(top))])
        tabu = {(min(a, b), max(a, b))}
        self.remove(o, a)
        if P[y] >= 0 and not self.pinned[o, y]:
            z = int(P[y])
            tabu.add((min(y, z), max(y, z)))
            self.remove(o, y)
        self.refill(tabu)

    def improve(self, kicks: int, seed: int = 0, *, target: float = np.inf, patience: int = 150) -> int:
        """Iterated local search: up to ``kicks`` times kick, refill, 2-opt; keep if not worse.

        Stops early once ``target`` (an upper bound) is reached or after ``patience`` kicks
        in a row without a strict improvement.
        """
        rng = np.random.default_rng(seed)
        best = self.served()
        tol = 1e-9 * max(1.0, best)
        kept = 0
        stale = 0
        for _ in range(kicks):
            if best >= target - tol or stale >= patience:
                break
            stale += 1
            snap = self.snapshot()
            self.touched.clear()
            self.kick(rng)
            self.two_opt()
            s = self.served()
            if s < best - tol:
                self.restore(snap)
            else:
                if s > best + tol:
                    kept += 1
                    stale = 0
                best = max(best, s)
        return kept


def _bits(mask: int):
    """The set bits of ``mask``, lowest first.

    >>> list(_bits(0b10110))
    [1, 2, 4]
    """
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _full_gain(dp: np.ndarray, c: float, m: np.ndarray, fair: bool = False) -> np.ndarray:
    lo, width = _step(m, c, fair)
    return np.clip(dp - lo, 0.0, width) + np.clip(dp.T - lo, 0.0, width)


def default_kicks(n: int, k: int) -> int:
    """Kicks of the iterated local search: many on small instances, almost none at 320 racks."""
    return int(min(400, 4e5 // (n * n * k)))


def plan_single_hop(st: State, *, kicks: int | None = None, seed: int = 0, target: float = np.inf) -> State:
    """Greedy, then 2-opt until no switch improves, then iterated local search (until
    ``target``, an upper bound, is met), then drop circuits that serve nothing."""
    st.greedy()
    st.two_opt()
    st.improve(default_kicks(st.n, st.k) if kicks is None else kicks, seed=seed, target=target)
    st.drop_idle()
    return st
