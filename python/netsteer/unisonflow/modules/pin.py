"""``pin``: send a primitive's traffic through given switches (``via``), as the
source's experiment routes bcast over spine1 and reduce over spine2.

At each hop the ports leading to a ``via`` switch are preferred; among parallel
cables (a link aggregate) the tag's hash picks one. A pair that never climbs to a
``via`` switch (both hosts on one leaf) takes its only path.
"""

from __future__ import annotations

from ...errors import NetsteerError
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
        # per switch, the ports that lead to a via switch (the hot path looks them up)
        self.via_ports = {n: frozenset(p for p, (peer, _, _) in ports.items() if peer in self.via)
                          for n, ports in self.fabric.peer.items() if n in self.fabric.switch_set}

    def rules(self, tag, state):
        h = _mix(tag.value() & 0xFFFFFFFF)
        via_ports = self.via_ports

        def choose(node, ports):
            vp = via_ports[node]
            best = [p for p in ports if p in vp] if vp else ports
            best = best or ports
            return best[h % len(best)]

        return self.unicast(tag, tag.value(), choose)
