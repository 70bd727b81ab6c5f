"""A flow DAG: what every workload (point-to-point, bulk, MPI collective) becomes.

Endpoints are *host indices* (``0..n_hosts-1``); a collective expands on ranks and is
mapped to hosts by the job's placement before it lands here. A node with
``src == dst`` or ``bytes == 0`` moves nothing: it is a pure delay (compute, barrier
hop) that still orders the DAG.

Storage is columnar: blocks of numpy arrays, with dependencies in CSR form, so a
collective of millions of flows is appended with :meth:`FlowDag.add_block` and
handed to the engine without a Python loop. :meth:`FlowDag.add` appends one flow
at a time for small workloads. The column attributes (``src``, ``deps`` ...) read
as Python lists for convenience; :meth:`FlowDag.columns` gives the arrays.

Examples
--------
>>> d = FlowDag()
>>> a = d.add(0, 1, 1000)
>>> b = d.add(1, 0, 1000, deps=[a], delay_ns=500)
>>> len(d), d.deps[b], d.src
(2, [0], [0, 1])
>>> c = d.add_block([2, 3], [3, 2], 64, dep_offsets=[0, 1, 2], deps=[b, b])
>>> c, d.dst, d.deps[3]
(2, [1, 0, 3, 2], [1])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

# column name -> dtype; start_ns -1 means "when the dependencies are done"
_COLS = {
    "src": np.int64,
    "dst": np.int64,
    "bytes": np.int64,
    "start_ns": np.int64,
    "delay_ns": np.int64,
    "weight": np.float64,
    "traffic_class": np.int64,
    "priority": np.int64,
    "label": np.int64,
}


@dataclass(frozen=True)
class Columns:
    """The DAG as arrays; flow ``i`` depends on ``deps[dep_offsets[i]:dep_offsets[i+1]]``."""

    src: np.ndarray
    dst: np.ndarray
    bytes: np.ndarray
    start_ns: np.ndarray
    delay_ns: np.ndarray
    weight: np.ndarray
    traffic_class: np.ndarray
    priority: np.ndarray
    label: np.ndarray
    dep_offsets: np.ndarray
    deps: np.ndarray


class DepsView(Sequence):
    """``deps[i]`` as a list, read from the CSR arrays."""

    def __init__(self, offsets: np.ndarray, deps: np.ndarray):
        self._o, self._d = offsets, deps

    def __len__(self) -> int:
        return len(self._o) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self._d[self._o[i]:self._o[i + 1]].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __repr__(self) -> str:
        return repr(list(self))


class FlowDag:
    """Columns of flows; index ``i`` is flow ``i``.

    Columns (see :meth:`columns`): ``src``, ``dst`` (host indices), ``bytes``,
    ``start_ns`` (earliest release, ``None``/-1: when the dependencies are done),
    ``delay_ns`` (paid after release, before the transfer: compute, overheads),
    ``deps`` (flows that must finish first), ``weight``, ``traffic_class`` (class or
    tag: routing may override per class, QoS maps it to priority), ``priority``
    (strict-priority class in the engine, 0 first), ``label`` (index into
    ``labels``: what produced the flow, such as ``"app:allreduce"``).
    """

    #: Most flows this DAG may hold (None: no limit); adding more raises LimitError.
    max_flows: int | None = None

    def __init__(self) -> None:
        self.labels: list[str] = []
        self._blocks: list[dict[str, np.ndarray]] = []
        self._rows: dict[str, list] = {c: [] for c in _COLS}
        self._row_deps: list[list[int]] = []
        self._n = 0
        self._cols: Columns | None = None

    def __len__(self) -> int:
        return self._n

    def label_id(self, name: str) -> int:
        """Index of ``name`` in ``labels``, added if new."""
        try:
            return self.labels.index(name)
        except ValueError:
            self.labels.append(name)
            return len(self.labels) - 1

    # -- appending -----------------------------------------------------------
    def add(
        self,
        src: int,
        dst: int,
        nbytes: int,
        *,
        deps: Sequence[int] | None = None,
        start_ns: int | None = None,
        delay_ns: int = 0,
        weight: float = 1.0,
        traffic_class: int = 0,
        priority: int = 0,
        label: str = "",
    ) -> int:
        """Append one flow and return its index."""
        if self.max_flows is not None and self._n >= self.max_flows:
            self._over(1)
        r = self._rows
        r["src"].append(int(src))
        r["dst"].append(int(dst))
        r["bytes"].append(int(nbytes))
        r["start_ns"].append(-1 if start_ns is None else int(start_ns))
        r["delay_ns"].append(int(delay_ns))
        r["weight"].append(float(weight))
        r["traffic_class"].append(int(traffic_class))
        r["priority"].append(int(priority))
        r["label"].append(self.label_id(label))
        self._row_deps.append([int(d) for d in deps] if deps else [])
        self._n += 1
        self._cols = None
        return self._n - 1

    def delay(self, host: int, delay_ns: int, *, deps: Sequence[int] | None = None, label: str = "") -> int:
        """A pure delay on ``host`` (a compute phase): moves no bytes."""
        return self.add(host, host, 0, deps=deps, delay_ns=delay_ns, label=label)

    def add_block(
        self,
        src,
        dst,
        nbytes,
        *,
        dep_offsets=None,
        deps=None,
        start_ns=None,
        delay_ns=0,
        weight=1.0,
        traffic_class=0,
        priority=0,
        label: str | None = "",
        label_ids=None,
    ) -> int:
        """Append many flows at once; scalars broadcast. Returns the first index.

        ``dep_offsets`` (length n + 1, from 0) and ``deps`` (absolute flow indices)
        give the dependencies in CSR form. ``label_ids`` (indices into ``labels``)
        overrides ``label``.
        """
        self._flush_rows()
        src = np.asarray(src, dtype=np.int64).reshape(-1)
        n = len(src)
        if self.max_flows is not None and self._n + n > self.max_flows:
            self._over(n)
        block = {"src": src}
        for name, value in (("dst", dst), ("bytes", nbytes), ("delay_ns", delay_ns),
                            ("weight", weight), ("traffic_class", traffic_class), ("priority", priority)):
            block[name] = _column(value, n, _COLS[name], name)
        block["start_ns"] = _column(-1 if start_ns is None else start_ns, n, np.int64, "start_ns")
        if label_ids is not None:
            block["label"] = _column(label_ids, n, np.int64, "label_ids")
        else:
            block["label"] = np.full(n, self.label_id(label or ""), dtype=np.int64)
        if deps is None:
            block["dep_offsets"] = np.zeros(n + 1, dtype=np.int64)
            block["deps"] = np.zeros(0, dtype=np.int64)
        else:
            off = np.asarray(dep_offsets, dtype=np.int64).reshape(-1)
            dd = np.asarray(deps, dtype=np.int64).reshape(-1)
            if len(off) != n + 1 or off[0] != 0 or off[-1] != len(dd) or (np.diff(off) < 0).any():
                raise ValueError("dep_offsets must start at 0, rise, and end at len(deps)")
            if len(dd) and (dd.min() < 0 or dd.max() >= self._n + n):
                raise ValueError("deps name flows that do not exist")
            block["dep_offsets"], block["deps"] = off, dd
        first = self._n
        self._blocks.append(block)
        self._n += n
        self._cols = None
        return first

    def extend(self, other: "FlowDag") -> int:
        """Append ``other``; its dependencies are shifted. Returns the offset."""
        off = self._n
        c = other.columns()
        remap = np.array([self.label_id(name) for name in other.labels] or [0], dtype=np.int64)
        self.add_block(
            c.src, c.dst, c.bytes, dep_offsets=c.dep_offsets, deps=c.deps + off,
            start_ns=c.start_ns, delay_ns=c.delay_ns, weight=c.weight,
            traffic_class=c.traffic_class, priority=c.priority,
            label_ids=remap[c.label] if len(c.label) else c.label,
        )
        return off

    def _over(self, n: int) -> None:
        from ..errors import LimitError

        raise LimitError(f"more than {self.max_flows:,} flows (adding {n:,} to {self._n:,}), the most that fit "
                         "in the memory limit; raise it with --max-memory or NETSTEER_MAX_MEMORY")

    # -- reading -------------------------------------------------------------
    def _flush_rows(self) -> None:
        if not self._row_deps:
            return
        block = {name: np.asarray(vals, dtype=_COLS[name]) for name, vals in self._rows.items()}
        counts = np.fromiter(map(len, self._row_deps), dtype=np.int64, count=len(self._row_deps))
        block["dep_offsets"] = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        block["deps"] = np.fromiter(
            (d for ds in self._row_deps for d in ds), dtype=np.int64, count=int(counts.sum())
        )
        self._blocks.append(block)
        self._rows = {c: [] for c in _COLS}
        self._row_deps = []

    def columns(self) -> Columns:
        """Every column as one array (cached until the next append)."""
        if self._cols is not None:
            return self._cols
        self._flush_rows()
        if len(self._blocks) > 1:
            merged = {name: np.concatenate([b[name] for b in self._blocks]) for name in _COLS}
            merged["deps"] = np.concatenate([b["deps"] for b in self._blocks])
            ends = np.cumsum([len(b["deps"]) for b in self._blocks])
            parts = [np.zeros(1, dtype=np.int64)]
            for b, base in zip(self._blocks, np.concatenate([[0], ends[:-1]])):
                parts.append(b["dep_offsets"][1:] + base)
            merged["dep_offsets"] = np.concatenate(parts)
            self._blocks = [merged]
        elif not self._blocks:
            self._blocks = [{**{n: np.zeros(0, dtype=t) for n, t in _COLS.items()},
                             "dep_offsets": np.zeros(1, dtype=np.int64), "deps": np.zeros(0, dtype=np.int64)}]
        b = self._blocks[0]
        self._cols = Columns(**{k: b[k] for k in (*_COLS, "dep_offsets", "deps")})
        return self._cols

    @property
    def deps(self) -> DepsView:
        c = self.columns()
        return DepsView(c.dep_offsets, c.deps)

    @property
    def start_ns(self) -> list[int | None]:
        return [None if s < 0 else s for s in self.columns().start_ns.tolist()]


def _column(value, n: int, dtype, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=dtype)
    if arr.ndim == 0:
        return np.full(n, arr, dtype=dtype)
    arr = arr.reshape(-1)
    if len(arr) != n:
        raise ValueError(f"{name} has {len(arr)} entries for {n} flows")
    return arr


def _list_column(name: str):
    def get(self: FlowDag) -> list:
        return getattr(self.columns(), name).tolist()

    get.__doc__ = f"The ``{name}`` column as a list (see :meth:`FlowDag.columns` for the array)."
    return property(get)


for _name in ("src", "dst", "bytes", "delay_ns", "weight", "traffic_class", "priority", "label"):
    setattr(FlowDag, _name, _list_column(_name))
