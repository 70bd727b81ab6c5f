"""``ecmp``: the default routing for tags, and what failing modules fall back to.

In a run (a scenario, :func:`netsteer.unisonflow.run.simulate`) it installs rules
along the path the run's base routing gives the tag's flows: the scenario's
``routing``, whatever its engine (ECMP with its ``src-dst`` hash in
``simulate``), so a tag without a module, or whose module failed, takes exactly
the path it would take with no controller; only its packet-in and rules cost time.
Where the base routing sends the tag's flows over different paths (``hash: flow``)
or the tag is a multicast one, it installs no rules and the base routing forwards
every flow itself. The controller alone (no data plane that knows a routing: the
benchmark, unit tests) picks among equal next hops with its own hash of source and
destination host, per connection as a switch's ECMP hash of a TCP flow does.
"""

from __future__ import annotations

from ..rules import path_rules
from ..tags import host_mac
from . import PrimitiveModule, register


def _mix(x: int) -> int:
    # (pin's hash among its preferred ports) murmur3's 32-bit finalizer: spreads nearby host numbers over the ports
    x ^= x >> 16
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    x = (x * 0xC2B2AE35) & 0xFFFFFFFF
    return x ^ (x >> 16)


@register
class Ecmp(PrimitiveModule):
    name = "ecmp"
    base_routing = True  # may return no rules: the base routing forwards the tag then

    def rules(self, tag, state):
        base = self.fabric.base_path
        if base is not None:
            chans = base(tag.value())
            if chans is None:
                return []  # the base routing forwards each flow itself
            hop = self.fabric.hop_of_channel
            hops = [hop[c] for c in chans if c in hop]
            if len(hops) == len(chans) - 1:  # every channel past the host's uplink is a switch port
                s, d = self.hosts(tag)
                return path_rules(tag.value(), hops, host_mac(d))
            return []
        s, d = self.hosts(tag)
        h = _mix(s * 65599 + d)
        return self.unicast(tag, tag.value(), lambda node, ports: ports[_mix(h ^ node) % len(ports)])
