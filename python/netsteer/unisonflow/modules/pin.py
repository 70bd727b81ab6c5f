"""``pin``: send a primitive's traffic through given switches (``via``), as the
source's experiment routes bcast over spine1 and reduce over spine2.

At each hop the min-hop ports from which a ``via`` switch can still be reached on
a min-hop path are preferred; among them (parallel cables, several spines) the
tag's hash picks one. A pair on one leaf takes its only path. A pair none of whose
min-hop paths crosses a ``via`` switch (a leaf named in ``via`` that is neither of
the pair's; a top spine for two hosts of one pod) cannot be pinned: the module
fails for its tag, so the controller routes it by its default module and counts and
reports the failure (``on_failure: fail`` stops the run instead), rather than
letting it take any path while counting it as pinned.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.unisonflow.controller import InterconnectController
>>> from netsteer.unisonflow.fabric import Fabric
>>> from netsteer.unisonflow.modules import JobView
>>> from netsteer.unisonflow.tags import Tag
>>> f = Fabric(pgft(2, [2, 3], [1, 2], link_bandwidth=1e9, link_latency_ns=0))
>>> c = InterconnectController(f, {0: (JobView(0, {0: list(range(6))}),
...                                    [{"module": "pin", "primitive": "bcast", "via": "s1_0"}])})
>>> c.handle(Tag("bcast", 0, 0, 0, 2).value()).failed is None  # from a host of s1_0: through it
True
>>> d = c.handle(Tag("bcast", 0, 0, 2, 4).value())  # s1_1 to s1_2: no min-hop path crosses s1_0
>>> d.module, d.failed.split(": ", 1)[1]
('ecmp', 'no min-hop path from host 2 to host 4 crosses via s1_0')
"""

from __future__ import annotations

from ...errors import NetsteerError
from ..rules import path_rules
from ..tags import host_mac
from . import PrimitiveModule, register
from .ecmp import _mix


@register
class Pin(PrimitiveModule):
    name = "pin"

    def setup(self, via=None, **params):
        if params:
            raise NetsteerError(f"module pin takes no option {sorted(params)[0]!r}", field=sorted(params)[0])
        names = [via] if isinstance(via, str) else list(via or [])
        if not names:
            raise NetsteerError("module pin needs via: a switch name or a list of them", field="via")
        topo = self.fabric.topo
        self.via = set()
        for n in names:
            try:
                node = topo.node(str(n))
            except KeyError:
                raise NetsteerError(f"switch {n!r} does not exist in {topo.name}", field="via") from None
            if node not in self.fabric.switch_set:
                raise NetsteerError(f"{n!r} is not a switch", field="via")
            self.via.add(node)
        self._reach: dict[tuple[int, int], bool] = {}

    def _reaches(self, node: int, dst_host: int) -> bool:
        """Whether a min-hop path from ``node`` to ``dst_host`` crosses a via switch
        (memoized: a fat tree's min-hop paths form a small DAG per destination)."""
        key = (node, dst_host)
        hit = self._reach.get(key)
        if hit is None:
            f = self.fabric
            if node in self.via:
                hit = True
            elif node not in f.switch_set:
                hit = False  # a host: the path ended without a via switch
            else:
                hit = any(self._reaches(f.peer[node][p][0], dst_host) for p in f.next_ports(node, dst_host))
            self._reach[key] = hit
        return hit

    def rules(self, tag, state):
        h = _mix(tag.value() & 0xFFFFFFFF)
        s, d = self.hosts(tag)
        peer, reaches = self.fabric.peer, self._reaches

        def choose(node, ports):
            best = [p for p in ports if reaches(peer[node][p][0], d)] or ports
            return best[h % len(best)]

        hops = self.fabric.walk(s, d, choose)
        if len(hops) > 1 and not any(n in self.via for n, _ in hops):
            names = ", ".join(sorted(self.fabric.name(v) for v in self.via))
            raise NetsteerError(f"no min-hop path from host {s} to host {d} crosses via {names}")
        return path_rules(tag.value(), hops, host_mac(d))
