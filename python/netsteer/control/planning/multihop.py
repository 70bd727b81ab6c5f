"""Two-hop service over planned circuits: spare ports are filled, then demand is routed
direct first, then split over paths ``s -> v -> t`` through intermediate racks.

Routing is a water-filling on the residual capacities (each direction of each circuit
separately): for every rack ``s`` and its ``q``-th neighbour ``v_s``, all pairs ``(s, t)`` that
``v_s`` can forward ask for their residual demand; each directed circuit scales the asks
that cross it to its residual capacity (``gamma = min(1, cap / asked)``) and every path gets
the smaller factor of its two hops, so no circuit is over-filled. Sweeps repeat until
little is left. It is not the optimal multicommodity flow; the ratio to the exact optimum
is measured in the tests and the benchmark.
"""

from __future__ import annotations

import numpy as np

from .singlehop import State, pair_gain


def fill_spare_ports(st: State, residual: np.ndarray) -> None:
    """Join racks with free ports, best relay value first, one circuit at a time.

    The value of a new circuit ``u - v`` is the residual demand it lets ride one extra hop
    (``u`` to ``v``'s neighbours, ``v``'s neighbours to ``u``, both ways) plus its direct gain.
    Demand a circuit makes relayable is counted once: it is struck from the working residual
    before the next circuit is chosen. Ports left over are joined too, in index order
    (routing may still relay over them); :func:`~netsteer.control.planning.plan_circuits`
    drops the circuits routing did not use.
    """
    n = st.n
    W = residual.astype(np.float64, copy=True)
    np.fill_diagonal(W, 0.0)
    while True:
        R = np.array([r for r in range(n) if st.free[r]], dtype=np.int64)
        if len(R) < 2:
            return
        adj = (st.mult[:n, :n] > 0).astype(np.float64)
        a_rel = W[R] @ adj[:, R]  # [u, v] = sum_t W[u, t] adj[t, v]: u -> v -> t
        b_rel = adj[R] @ W[:, R]  # [u, v] = sum_s adj[u, s] W[s, v]: s -> u -> v
        # .T of each: the reverse directions, v -> u -> s and t -> v -> u
        score = a_rel + a_rel.T + b_rel + b_rel.T
        score += pair_gain(st.d, st.c, R[:, None], R[None, :], st.mult[R[:, None], R[None, :]] + 1)
        np.fill_diagonal(score, -1.0)
        iu, ju = np.triu_indices(len(R), 1)
        sv = score[iu, ju]
        order = np.argsort(-sv, kind="stable")
        added = None
        for t in order.tolist():
            x, y = int(R[iu[t]]), int(R[ju[t]])
            if st.try_add(x, y):
                added = (x, y, sv[t])
                break
        if added is None:
            return
        u, v, _ = added
        # strike what the new circuit makes relayable: s -> u -> v, u -> v -> t, and reverse
        nu = np.nonzero(adj[u] > 0)[0]
        nv = np.nonzero(adj[v] > 0)[0]
        W[nu, v] = 0.0
        W[v, nu] = 0.0
        W[u, nv] = 0.0
        W[nv, u] = 0.0


def route_two_hop(d: np.ndarray, mult: np.ndarray, c: float, *, sweeps: int = 3):
    """Route ``d`` over circuits with multiplicities ``mult`` (``n x n``), direct then two hops.

    Returns
    -------
    direct : ndarray
        ``n x n`` Gbit/s served over the direct circuits.
    relayed : dict
        ``(s, v, t) -> Gbit/s`` served over ``s -> v -> t``.

    Examples
    --------
    >>> d = np.array([[0, 10, 4], [0, 0, 0], [0, 0, 0.]])
    >>> mult = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    >>> direct, relayed = route_two_hop(d, mult, 10.0)
    >>> float(direct[0, 1]), relayed       # 0 -> 1 fills the circuit; nothing left for 0 -> 1 -> 2
    (10.0, {})
    >>> d[0, 1] = 6
    >>> route_two_hop(d, mult, 10.0)[1]
    {(0, 1, 2): 4.0}
    """
    n = d.shape[0]
    capm = c * mult[:n, :n].astype(np.float64)
    direct = np.minimum(d, capm)
    cap = capm - direct
    R = d - direct
    np.fill_diagonal(R, 0.0)
    tol = 1e-9 * max(1.0, c)
    # distinct neighbours of each rack, padded with -1
    nbr_lists = [np.nonzero(mult[s, :n] > 0)[0] for s in range(n)]
    width = max((len(x) for x in nbr_lists), default=0)
    nbr = np.full((n, max(width, 1)), -1, dtype=np.int64)
    for s, x in enumerate(nbr_lists):
        nbr[s, : len(x)] = x
    relayed: dict[tuple[int, int, int], float] = {}
    rows = np.arange(n)
    for _ in range(sweeps):
        moved = 0.0
        for q in range(width):
            v = nbr[:, q]
            ok = (v >= 0) & (R.sum(axis=1) > tol)
            if not ok.any():
                continue
            s_idx = rows[ok]
            v_s = v[ok]
            # asks of s -> v_s -> t: residual demand where v_s -> t has capacity (t != v_s)
            ask = R[s_idx] * (cap[v_s] > tol) * (cap[s_idx, v_s] > tol)[:, None]
            ask[np.arange(len(s_idx)), v_s] = 0.0
            if not ask.any():
                continue
            # load asked of each directed circuit: first hops s -> v_s, second hops v_s -> t
            load = np.zeros((n, n))
            load[s_idx, v_s] += ask.sum(axis=1)
            sel = np.zeros((len(s_idx), n))
            sel[np.arange(len(s_idx)), v_s] = 1.0
            load += sel.T @ ask
            with np.errstate(divide="ignore", invalid="ignore"):
                gamma = np.where(load > tol, np.minimum(1.0, cap / np.where(load > 0, load, 1.0)), 1.0)
            f = ask * np.minimum(gamma[s_idx, v_s][:, None], gamma[v_s])
            f[f < tol] = 0.0
            if not f.any():
                continue
            R[s_idx] -= f
            cap[s_idx, v_s] -= f.sum(axis=1)
            cap -= sel.T @ f
            np.maximum(cap, 0.0, out=cap)
            np.maximum(R, 0.0, out=R)
            si, ti = np.nonzero(f)
            for a, t, g in zip(s_idx[si].tolist(), ti.tolist(), f[si, ti].tolist()):
                key = (a, int(nbr[a, q]), t)
                relayed[key] = relayed.get(key, 0.0) + g
            moved += float(f.sum())
        if moved <= tol:
            break
    return direct, relayed


def two_hop_value(st: State) -> float:
    """Gbit/s served with ``hops=2`` if spare ports were filled now (the state is left unchanged)."""
    n, d, c = st.n, st.d, st.c
    snap = st.snapshot()
    fill_spare_ports(st, d - np.minimum(d, c * st.mult[:n, :n]))
    direct, relayed = route_two_hop(d, st.mult, c)
    st.restore(snap)
    return float(direct.sum()) + float(sum(relayed.values()))


def default_two_hop_kicks(n: int, k: int) -> int:
    """Kicks of the two-hop local search: each one re-routes everything, so only small instances get them."""
    return int(min(200, 4e5 // (n * n * k)))


def improve_two_hop(st: State, kicks: int, seed: int = 0) -> float:
    """Local search on the two-hop objective: drop one or two circuits of a switch (their
    ports are re-joined by :func:`fill_spare_ports` for relaying) and keep the change if the
    two-hop service does not fall. Returns the value reached."""
    rng = np.random.default_rng(seed)
    best = two_hop_value(st)
    tol = 1e-9 * max(1.0, best)
    for _ in range(kicks):
        o = int(rng.integers(st.k))
        snap = st.snapshot()
        for _ in range(int(rng.integers(1, 3))):
            racks = np.nonzero((st.partner[o] >= 0) & ~st.pinned[o])[0]
            if len(racks) == 0:
                break
            st.remove(o, int(racks[rng.integers(len(racks))]))
        v = two_hop_value(st)
        if v >= best - tol:
            best = max(best, v)
        else:
            st.restore(snap)
    return best
