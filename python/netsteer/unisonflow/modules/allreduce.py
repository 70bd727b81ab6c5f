"""``allreduce-disjoint``: paths for an all-reduce's concurrent flows that share no
link, where the fabric has enough of them (the SDN-enhanced MPI_Allreduce).

The module knows the algorithm's rounds (``algorithm``: ``recursive_doubling``,
``rabenseifner`` or ``ring``): the pairs that send at the same time. For each round
it gives each pair, one after another, the least loaded whole min-hop path (the
smallest load on its busiest link, then on all its links, then the lowest ports):
a link's load is the round's flows already placed on it, plus the tags installed
on it and its utilization measured from the port counters (background traffic),
so the round's flows spread over the fabric's free links before any two share one. The plan is made once per
communicator and every packet-in is a lookup.
"""

from __future__ import annotations

from functools import lru_cache

from ...errors import NetsteerError
from ..rules import path_rules
from ..tags import host_mac
from . import PrimitiveModule, register


@lru_cache(maxsize=64)
def rounds(algorithm: str, p: int) -> list[list[tuple[int, int]]]:
    """The rank pairs (src, dst) that send concurrently, round by round.

    Derived from the programs :mod:`netsteer.traffic.collectives` generates for the
    algorithm (the ones the workload sends), not re-implemented: a message's round
    is its depth in the flow DAG (the longest chain of messages before it), so on a
    rank count that is not a power of two the fold (even rank to odd), the exchanges
    of the odd survivors and the unfold (odd back to even) are what MPICH sends.

    >>> rounds("recursive_doubling", 4)
    [[(0, 1), (1, 0), (2, 3), (3, 2)], [(0, 2), (1, 3), (2, 0), (3, 1)]]
    >>> rounds("recursive_doubling", 3)  # 0 folds into 1; 1 and 2 exchange; 1 unfolds to 0
    [[(0, 1)], [(1, 2), (2, 1)], [(1, 0)]]
    >>> rounds("ring", 3)
    [[(0, 1), (1, 2), (2, 0)]]
    """
    from ...traffic.collectives import allreduce as ar
    from ...traffic.collectives.programs import run_programs
    from ...traffic.collectives.steps import Steps
    from ...traffic.dag import FlowDag

    if p < 2:
        return []
    if algorithm == "ring":  # every step sends to the right neighbour: one round's pairs
        progs = ar.allreduce_ring(p, p)
    elif algorithm == "recursive_doubling":
        progs = ar.allreduce_recursive_doubling(p, p)
    elif algorithm == "rabenseifner":
        progs = ar.allreduce_rabenseifner(p, p)
    else:
        raise NetsteerError(f"algorithm {algorithm!r}: use recursive_doubling, rabenseifner or ring", field="algorithm")
    if isinstance(progs, Steps):
        dst = progs.dst.tolist()
        steps = [[(r, d) for r, d in enumerate(row)] for row in dst]
        return steps[:1] if algorithm == "ring" else steps
    dag = FlowDag()
    run_programs(dag, progs, list(range(p)))
    c = dag.columns()
    off, deps = c.dep_offsets.tolist(), c.deps.tolist()
    depth: list[int] = []
    out: list[list[tuple[int, int]]] = []
    for f, (s, d) in enumerate(zip(c.src.tolist(), c.dst.tolist())):
        k = max((depth[x] + 1 for x in deps[off[f]:off[f + 1]]), default=0)
        depth.append(k)
        if s != d:
            while len(out) <= k:
                out.append([])
            out[k].append((s, d))
    return [sorted(r) for r in out if r]


class _BusyList:
    """``state.busy`` read as ``load[channel]``, as the search reads its loads."""

    __slots__ = ("busy",)

    def __init__(self, state):
        self.busy = state.busy

    def __getitem__(self, ch: int) -> float:
        return self.busy(ch)


@register
class AllreduceDisjoint(PrimitiveModule):
    name = "allreduce-disjoint"
    primitive = "allreduce"

    def setup(self, algorithm: str = "recursive_doubling", **params):
        if params:
            raise NetsteerError(f"module allreduce-disjoint takes no option {sorted(params)[0]!r}", field=sorted(params)[0])
        if algorithm not in ("recursive_doubling", "rabenseifner", "ring"):
            raise NetsteerError(f"algorithm {algorithm!r}: use recursive_doubling, rabenseifner or ring", field="algorithm")
        self.algorithm = algorithm
        self.plans: dict[int, dict[tuple[int, int], list]] = {}

    def best_path(self, src_host: int, dst_host: int, load) -> list[tuple[int, int]]:
        """The least loaded whole min-hop path: the smallest load on its busiest link,
        then the smallest sum over its links, then the lowest ports (deterministic).
        ``load[channel]`` is the link's load (0 or more). A depth-first search over the
        min-hop next hops in port order that drops a branch as soon as it cannot beat the
        best path found (on a fat tree a path is its top switch and cables), so a hop is
        never chosen without looking at the links after it."""
        f = self.fabric
        dst_node = f.host_nodes[dst_host]
        peer, nxt = f.peer, f.next_table
        inf = float("inf")
        best_m, best_t, best = inf, inf, None
        hops: list[tuple[int, int]] = []

        def search(node, m, total):
            nonlocal best_m, best_t, best
            links = peer[node]
            for p in nxt[node][dst_host]:
                nn, _, ch = links[p]
                l = load[ch]
                km, kt = (m if m >= l else l), total + l
                # loads are never negative: a branch not below the best cannot win
                if km > best_m or (km == best_m and kt >= best_t):
                    continue
                hops.append((node, p))
                if nn == dst_node:
                    best_m, best_t, best = km, kt, hops.copy()
                else:
                    search(nn, km, kt)
                hops.pop()

        search(f.switch_of_host[src_host], 0.0, 0.0)
        return best

    def plan(self, comm: int, state) -> dict[tuple[int, int], list]:
        hosts = self.job.comms[comm]
        f = self.fabric
        plan: dict[tuple[int, int], list] = {}
        # a link the round already uses, or one measured busy, counts alike; the
        # measured part is read once per plan, as a list the search indexes
        base = [state.busy(ch) for ch in range(f.topo.n_channels)]
        for pairs in rounds(self.algorithm, len(hosts)):
            load, used = base.copy(), [0] * len(base)
            for s, d in pairs:
                if (s, d) in plan or hosts[s] == hosts[d]:
                    continue
                hops = self.best_path(hosts[s], hosts[d], load)
                for ch in f.channels(hosts[s], hops):
                    used[ch] += 1
                    load[ch] = used[ch] + base[ch]
                plan[(s, d)] = hops
        return plan

    def rules(self, tag, state):
        plan = self.plans.get(tag.comm)
        if plan is None:
            plan = self.plans[tag.comm] = self.plan(tag.comm, state)
        hops = plan.get((tag.src, tag.dst))
        hosts = self.job.comms[tag.comm]
        if hops is None:  # a message outside the algorithm's pattern: the least loaded path
            hops = self.best_path(hosts[tag.src], hosts[tag.dst], _BusyList(state))
        return path_rules(tag.value(), hops, host_mac(hosts[tag.dst]))
