"""VLAN-based rack-to-rack forwarding over circuits, as the simulator's dataplane.

This is the fake dataplane of the hybrid source (faucet's ``fakeoftable`` plays the
same part): it answers "where does a packet of rack ``a`` to rack ``b`` go?" from the
rules the controller pushed (per rack pair, by priority), the VLANs tagged on ToR
ports and the circuit switches' pairing.

A pair whose highest-priority rule has circuit paths sends over them (flows split
by weight, per flow, as a hash would); a rule without paths, or no rule, sends over
the electrical network (the base routing). A circuit path that is not really there
(a circuit switch not paired that way, or a ToR port not tagged with the path's
VLAN) black-holes its traffic: its flows stall, which is what break-before-make
costs.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..control.intents import PairRule, VlanPath
from ..topology.model import Topology


class VlanOverlay:
    """Rules by priority, ToR port tags, and the paths they give.

    Parameters
    ----------
    topo : Topology
        A hybrid topology (``topo.meta["kind"] == "hybrid"``).
    blackhole : int
        A channel of capacity 0: paths that lead nowhere cross it.
    """

    def __init__(self, topo: Topology, blackhole: int):
        m = topo.meta
        self.topo = topo
        self.blackhole = blackhole
        self.racks = int(m["racks"])
        self.tors = np.asarray(m["tors"])
        self.tor_port_of = np.asarray(m["tor_port_of"])  # [rack, plane] -> ToR port
        self.circuit_port_of = np.asarray(m["circuit_port_of"])  # [rack, plane] -> (ocs, port)
        self.rack_of_host = np.repeat(np.arange(self.racks), int(m["servers_per_rack"]))
        self.rules: dict[int, dict[tuple[int, int], PairRule]] = {}
        self.tags: dict[tuple[int, int], frozenset[int]] = {}
        self._version = 0  # bumped by every change of rules or tags
        self._memo: tuple | None = None  # (state key, choices) of the last choices()

    @property
    def planes(self) -> int:
        return self.tor_port_of.shape[1]

    def push(self, priority: int, rules) -> None:
        table = self.rules.setdefault(priority, {})
        for r in rules:
            table[(r.src, r.dst)] = r
        self._version += 1

    def remove(self, priority: int, pairs) -> None:
        table = self.rules.get(priority, {})
        for p in pairs:
            table.pop(tuple(p), None)
        self._version += 1

    def tag(self, ports) -> None:
        for tor, port, vlans in ports:
            self.tags[(int(tor), int(port))] = frozenset(vlans)
        self._version += 1

    def active(self, src: int, dst: int) -> PairRule | None:
        """The rule in force for rack ``src`` to rack ``dst`` (highest priority)."""
        for prio in sorted(self.rules, reverse=True):
            r = self.rules[prio].get((src, dst))
            if r is not None:
                return r
        return None

    def hop_channels(self, path: VlanPath, circuits: dict[int, np.ndarray]) -> list[int] | None:
        """ToR-to-ToR channels of ``path``, or None where it is not really there."""
        out = []
        for a, b, k in zip(path.racks, path.racks[1:], path.planes):
            tor_a, tport = int(self.tors[a]), int(self.tor_port_of[a, k])
            ocs, pa = (int(x) for x in self.circuit_port_of[a, k])
            ocs_b, pb = (int(x) for x in self.circuit_port_of[b, k])
            pairing = circuits.get(ocs)
            if ocs != ocs_b or pairing is None or int(pairing[pa]) != pb:
                return None
            tor_b, tport_b = int(self.tors[b]), int(self.tor_port_of[b, k])
            if path.vlan not in self.tags.get((tor_a, tport), ()) or path.vlan not in self.tags.get((tor_b, tport_b), ()):
                return None
            out += [int(self.topo.out_channel[tor_a, tport]), int(self.topo.out_channel[ocs, pb])]
        return out

    def choices(self, circuits) -> dict[tuple[int, int], tuple]:
        """Every rack pair with a rule in force: its paths as ``((weight, hops), ...)``,
        hops the ToR-to-ToR channels (or the blackhole where a path is not there).

        Kept for the same rules, tags and circuit pairings: the driver compares it
        before and after a change, and re-paths flows with it, in one step.
        """
        key = (self._version, tuple(sorted((int(k), np.asarray(v).tobytes()) for k, v in circuits.items())))
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        keys = {k for rules in self.rules.values() for k in rules}
        out = {}
        for a, b in keys:
            rule = self.active(a, b)
            if rule is not None:
                out[(a, b)] = tuple((w, tuple(h)) for w, h in _choices(rule, self, circuits))
        self._memo = (key, out)
        return out

    def override(self, src_hosts, dst_hosts, flow_ids, base_offsets, base_channels, circuits):
        """Replace the base paths of flows whose rack pair has circuit paths.

        Returns new CSR ``(offsets, channels)``. A flow keeps its first channel (host
        to ToR) and last channel (ToR to host) from the base path.
        """
        src_r = self.rack_of_host[np.asarray(src_hosts)]
        dst_r = self.rack_of_host[np.asarray(dst_hosts)]
        if not any(self.rules.values()):
            return base_offsets, base_channels
        choices = self.choices(circuits)
        # per pair: cumulative weights and each path's hops, for a stable per-flow pick
        picks = {}
        for key, opts in choices.items():
            if not opts:
                continue  # a rule without paths (a detour): the electrical network
            cum, total = [], 0.0
            for w, _ in opts:
                total += max(w, 1e-12)
                cum.append(total)
            picks[key] = (cum, total, [np.asarray(h, dtype=base_channels.dtype) for _, h in opts])
        offsets = [0]
        chans: list[np.ndarray] = []
        for i in range(len(src_r)):
            base = base_channels[base_offsets[i] : base_offsets[i + 1]]
            a, b = int(src_r[i]), int(dst_r[i])
            path = base
            if a != b and len(base) >= 2:
                pick = picks.get((a, b))
                if pick is not None:
                    cum, total, hops = pick
                    # a stable per-flow pick in proportion to the weights
                    x = (int(flow_ids[i]) * 2654435761 % 2**32) / 2**32 * total
                    j = min(bisect_right(cum, x), len(cum) - 1)
                    path = np.concatenate((base[:1], hops[j], base[-1:]))
            chans.append(path)
            offsets.append(offsets[-1] + len(path))
        channels = np.concatenate(chans) if chans else base_channels[:0]
        return np.asarray(offsets, dtype=np.int64), channels


def _choices(rule: PairRule, overlay: VlanOverlay, circuits) -> list[tuple[float, list[int]]]:
    out = []
    for p in rule.paths:
        hops = overlay.hop_channels(p, circuits)
        out.append((max(p.weight, 1e-12), hops if hops is not None else [overlay.blackhole]))
    return out
