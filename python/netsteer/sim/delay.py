"""How long real devices take to carry an intent out: the simulator driver's delay model.

The parameters are inputs (the hybrid source measured its components: VLAN tagging
of ToR ports, rules pushed one by one to the servers' Open vSwitch, MEMS switching).
What a whole reconfiguration takes comes out of the simulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class DelayModel:
    """Per-device costs of reconfiguring.

    Attributes
    ----------
    rule_time_ns : int
        Installing or removing one forwarding rule in one switch.
    vlan_tag_time_ns : int
        Re-tagging one ToR port with its VLANs (a ToR's ports one after another;
        untagging a port that leaves a circuit counts as re-tagging it).
    push : {"sequential", "parallel"}
        Whether switches get their rules one after another or all at once.
    tag : {"parallel", "sequential"}
        The same for ToRs being re-tagged (separate devices: parallel by default).
    circuit_command_ns : int
        Controller-to-circuit-switch command time, paid before the switch moves
        (its switching time is the topology's).

    Examples
    --------
    >>> d = DelayModel(rule_time_ns=1_000, push="sequential")
    >>> d.rules_time([3, 2])  # two switches, 3 and 2 rules, one after another
    5000
    >>> DelayModel(rule_time_ns=1_000, push="parallel").rules_time([3, 2])
    3000
    """

    rule_time_ns: int = 0
    vlan_tag_time_ns: int = 0
    push: Literal["sequential", "parallel"] = "sequential"
    circuit_command_ns: int = 0
    tag: Literal["sequential", "parallel"] = "parallel"

    @staticmethod
    def _combine(per_device: list[int], mode: str) -> int:
        if not per_device:
            return 0
        return int(sum(per_device)) if mode == "sequential" else int(max(per_device))

    def rules_time(self, rules_per_switch: list[int]) -> int:
        return self._combine([n * self.rule_time_ns for n in rules_per_switch], self.push)

    def tag_time(self, ports_per_tor: list[int]) -> int:
        return self._combine([n * self.vlan_tag_time_ns for n in ports_per_tor], self.tag)
