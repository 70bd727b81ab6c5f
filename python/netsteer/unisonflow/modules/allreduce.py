"""``allreduce-disjoint``: paths for an all-reduce's concurrent flows that share no
link, where the fabric has enough of them (the SDN-enhanced MPI_Allreduce).

The module knows the algorithm's rounds (``algorithm``: ``recursive_doubling``,
``rabenseifner`` or ``ring``): the pairs that send at the same time. For each round
it walks every pair's path choosing, at each hop, the port whose link is least
busy: flows of the round already placed on it, plus the tags installed on it and
its utilization measured from the port counters (background traffic), so the
round's flows spread over the fabric's free links before any two share one. The plan is made once per
communicator and every packet-in is a lookup.
"""

from __future__ import annotations

from ...errors import NetsteerError
from ..rules import path_rules
from ..tags import host_mac
from . import PrimitiveModule, register


def rounds(algorithm: str, p: int) -> list[list[tuple[int, int]]]:
    """The rank pairs (src, dst) that send concurrently, round by round.

    >>> rounds("recursive_doubling", 4)
    [[(0, 1), (1, 0), (2, 3), (3, 2)], [(0, 2), (1, 3), (2, 0), (3, 1)]]
    >>> rounds("ring", 3)
    [[(0, 1), (1, 2), (2, 0)]]
    """
    if algorithm == "ring":
        return [[(r, (r + 1) % p) for r in range(p)]]
    pof2 = 1 << (p.bit_length() - 1)
    rem = p - pof2
    out = []
    if rem:  # MPICH folds the extra ranks onto their even neighbours first
        out.append([(r, r - 1) for r in range(1, 2 * rem, 2)])
    real = [r * 2 if r < rem else r + rem for r in range(pof2)]
    mask = 1
    while mask < pof2:
        out.append([(real[v], real[v ^ mask]) for v in range(pof2)])
        mask <<= 1
    if algorithm == "rabenseifner":
        out += out[1 if rem else 0:][::-1]  # the allgather mirrors the halving
    return out


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

    def plan(self, comm: int, state) -> dict[tuple[int, int], list]:
        hosts = self.job.comms[comm]
        f = self.fabric
        plan: dict[tuple[int, int], list] = {}
        for pairs in rounds(self.algorithm, len(hosts)):
            used: dict[int, int] = {}
            for s, d in pairs:
                if (s, d) in plan or hosts[s] == hosts[d]:
                    continue

                def choose(node, ports):
                    # a link the round already uses, or one measured busy, counts alike
                    return min(ports, key=lambda p: (used.get(f.peer[node][p][2], 0)
                                                     + state.busy(f.peer[node][p][2]), p))

                hops = f.walk(hosts[s], hosts[d], choose)
                for ch in f.channels(hosts[s], hops):
                    used[ch] = used.get(ch, 0) + 1
                plan[(s, d)] = hops
        return plan

    def rules(self, tag, state):
        plan = self.plans.get(tag.comm)
        if plan is None:
            plan = self.plans[tag.comm] = self.plan(tag.comm, state)
        hops = plan.get((tag.src, tag.dst))
        if hops is None:  # a message outside the algorithm's pattern: least loaded path
            f = self.fabric
            return self.unicast(tag, tag.value(),
                                lambda node, ports: min(ports, key=lambda p: (state.busy(f.peer[node][p][2]), p)))
        return path_rules(tag.value(), hops, host_mac(self.job.comms[tag.comm][tag.dst]))
