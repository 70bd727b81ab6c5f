"""``ecmp``: the default routing for tags: a hash of the source and destination
host picks among equal next hops (per connection, as a switch's ECMP hash of a TCP
flow does). Failing modules fall back to it."""

from __future__ import annotations

from . import PrimitiveModule, register


def _mix(x: int) -> int:
    # murmur3's 32-bit finalizer: spreads nearby host numbers over the ports
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


@register
class Ecmp(PrimitiveModule):
    name = "ecmp"

    def rules(self, tag, state):
        s, d = self.hosts(tag)
        h = _mix(s * 65599 + d)
        return self.unicast(tag, tag.value(), lambda node, ports: ports[_mix(h ^ node) % len(ports)])
