"""A flow DAG: what every workload (point-to-point, bulk, MPI collective) becomes.

Endpoints are *host indices* (``0..n_hosts-1``); a collective expands on ranks and is
mapped to hosts by the job's placement before it lands here. A node with
``src == dst`` or ``bytes == 0`` moves nothing: it is a pure delay (compute, barrier
hop) that still orders the DAG.

Examples
--------
>>> d = FlowDag()
>>> a = d.add(0, 1, 1000)
>>> b = d.add(1, 0, 1000, deps=[a], delay_ns=500)
>>> len(d), d.deps[b]
(2, [0])
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FlowDag:
    """Columns of flows; index ``i`` is flow ``i``.

    Attributes
    ----------
    src, dst : list of int
        Host indices.
    bytes : list of int
    start_ns : list of int or None
        Earliest release; ``None`` means "when the dependencies are done".
    delay_ns : list of int
        Paid after release, before the transfer (compute phases, overheads).
    deps : list of list of int
        Flows (indices in this DAG) that must finish first.
    weight : list of float
    traffic_class : list of int
        Traffic class or tag; routing may override per class, QoS maps it to priority.
    priority : list of int
        Strict-priority class in the engine (0 is served first).
    label : list of int
        Index into ``labels``: what produced the flow (``"allreduce#3"``, ``"bulk"``).
    """

    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    start_ns: list[int | None] = field(default_factory=list)
    delay_ns: list[int] = field(default_factory=list)
    deps: list[list[int]] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)
    traffic_class: list[int] = field(default_factory=list)
    priority: list[int] = field(default_factory=list)
    label: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.src)

    def label_id(self, name: str) -> int:
        """Index of ``name`` in ``labels``, added if new."""
        try:
            return self.labels.index(name)
        except ValueError:
            self.labels.append(name)
            return len(self.labels) - 1

    def add(
        self,
        src: int,
        dst: int,
        nbytes: int,
        *,
        deps: list[int] | None = None,
        start_ns: int | None = None,
        delay_ns: int = 0,
        weight: float = 1.0,
        traffic_class: int = 0,
        priority: int = 0,
        label: str = "",
    ) -> int:
        """Append one flow and return its index."""
        self.src.append(int(src))
        self.dst.append(int(dst))
        self.bytes.append(int(nbytes))
        self.start_ns.append(start_ns)
        self.delay_ns.append(int(delay_ns))
        self.deps.append(list(deps or []))
        self.weight.append(float(weight))
        self.traffic_class.append(int(traffic_class))
        self.priority.append(int(priority))
        self.label.append(self.label_id(label))
        return len(self.src) - 1

    def delay(self, host: int, delay_ns: int, *, deps: list[int] | None = None, label: str = "") -> int:
        """A pure delay on ``host`` (a compute phase): moves no bytes."""
        return self.add(host, host, 0, deps=deps, delay_ns=delay_ns, label=label)

    def extend(self, other: "FlowDag") -> int:
        """Append ``other``; its dependencies are shifted. Returns the offset."""
        off = len(self)
        self.src += other.src
        self.dst += other.dst
        self.bytes += other.bytes
        self.start_ns += other.start_ns
        self.delay_ns += other.delay_ns
        self.deps += [[d + off for d in ds] for ds in other.deps]
        self.weight += other.weight
        self.traffic_class += other.traffic_class
        self.priority += other.priority
        self.label += [self.label_id(other.labels[i]) for i in other.label]
        return off
