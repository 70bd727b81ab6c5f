"""The routing object: forwarding tables kept apart from the topology.

A :class:`Routing` is what an engine returns and what drivers consume: an InfiniBand
style linear forwarding table (LFT) per node, indexed by destination *host index*,
optional per-class override tables, and ECMP groups resolved by a stated hash.

Tables are compact: only the nodes in ``rows`` (sorted node ids: the switches, and
hosts with more than one cabled port, see :func:`forwarding_nodes`) have a row in
``table[row, dst]``; ``row_of[node]`` is a node's row, -1 for none. A node without a
row has entry -1 for every destination. Read and write entries through
:meth:`Routing.entry`, :meth:`Routing.node_rows`, :meth:`Routing.set_entry` and
:meth:`Routing.set_rows`.

Entries:

* ``p >= 0`` -- leave on port ``p``;
* ``-1`` -- no entry. For a host this means "my lowest connected port" (single-homed
  hosts need no row); for a switch it is a miss;
* ``v <= -2`` -- ECMP group ``g = -2 - v``: port ``groups[g][h % len(groups[g])]``
  with ``h`` from :func:`flow_hash`.

Circuit switches hold no entries: a path entering one on port ``p`` leaves on
``circuits[node][p]``, network state passed in at resolution time.

Examples
--------
>>> from netsteer.topology.pgft import pgft
>>> from netsteer.routing import dmodk
>>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
>>> r = dmodk(t)
>>> r.describe(0, 3)
'h0 -> s1_0 -> s2_1 -> s1_1 -> h3'
>>> off, ch = r.paths([0, 1, 2], [3, 1, 0])
>>> off.tolist(), len(ch)
([0, 4, 4, 8], 8)
>>> r.check()
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import RoutingError
from ..topology.model import CIRCUIT, HOST, SWITCH, Topology
from ._check import Checker, Reachability, require_connected as _require_connected
from ._hops import class_distances
from ._graph import (
    circuit_table,
    dead_end_reason,
    effective_neighbors,
    forwarding_nodes,
    reachable_from_hosts,
    routers,
)

HASHES = ("dst", "src-dst", "flow")
_M32 = np.uint64(0xFFFFFFFF)


def _fmix32(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finaliser on uint64 arrays holding 32-bit values."""
    x = x & _M32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & _M32
    x ^= x >> np.uint64(13)
    x = (x * np.uint64(0xC2B2AE35)) & _M32
    x ^= x >> np.uint64(16)
    return x


def flow_hash(node, src, dst, flow, mode: str = "src-dst") -> np.ndarray:
    """The ECMP hash: a 32-bit value per (switch, flow), vectorised.

    ``h = F(F(F(F(node) ^ s) ^ d) ^ f)`` where ``F`` is MurmurHash3's fmix32, ``node``
    the switch's node id, ``d`` the destination host index, ``s`` the source host index
    (0 when ``mode == "dst"``) and ``f`` the flow id (0 unless ``mode == "flow"``). The
    port taken is ``group[h % len(group)]``. Hashing the switch id, like a per-switch
    seed, keeps consecutive levels from making correlated choices (hash polarisation).

    Examples
    --------
    >>> flow_hash([5], [1], [2], [0], "dst").tolist() == flow_hash([5], [9], [2], [7], "dst").tolist()
    True
    >>> int(flow_hash([0], [0], [0], [0], "flow")[0])
    0
    """
    if mode not in HASHES:
        raise RoutingError(f"unknown ECMP hash {mode!r}; use one of {', '.join(HASHES)}")

    def u(a):
        return np.asarray(a, dtype=np.int64).astype(np.uint64) & _M32

    node, dst = u(node), u(dst)
    src = u(src) if mode != "dst" else np.zeros_like(dst)
    flow = u(flow) if mode == "flow" else np.zeros_like(dst)
    return _fmix32(_fmix32(_fmix32(_fmix32(node) ^ src) ^ dst) ^ flow)


class Routing:
    """Forwarding tables for one topology.

    Parameters
    ----------
    topo : Topology
        The topology the tables are for (paths are resolved on it).
    table : array_like of int, shape (len(rows), n_hosts), or (n_nodes, n_hosts)
        Out port per node per destination host index; see the module docstring.
        With ``rows``, row ``i`` is node ``rows[i]``'s, kept as is (not copied) when
        already int32. Without ``rows`` it is a dense table, row per node, and is
        compacted: rows are kept for :func:`forwarding_nodes` and for any other node
        whose row (or an override's) holds an entry.
    rows : array_like of int, optional
        Sorted, distinct node ids that have a row. Engines pass
        :func:`forwarding_nodes` (or the switches alone): for the 11,664-host 3-level
        tree a dense table would be 620 MB, 544 MB of it host rows that stay -1.
    groups : list of array_like of int, optional
        ECMP groups (non-empty port lists); entry ``-2 - g`` means group ``g``.
    overrides : dict of int to array_like, optional
        Per traffic class (or tag) tables in the same layout as ``table``; entries
        other than -1 replace the default entry for flows of that class.
    ecmp_hash : {"dst", "src-dst", "flow"}
        Which fields :func:`flow_hash` mixes.
    engine : str, optional
        Name of the engine that built the tables, for reports.
    down_links : iterable of int, optional
        Links that were down when the tables were built (engines that route around
        failures pass theirs). A destination these links cut off from a switch needs
        no entry there: :meth:`check` asks for routes only to what can be reached.

    Attributes
    ----------
    rows : ndarray of int64, node ids with a row, sorted
    row_of : ndarray of int64, [n_nodes]: row of each node, -1 for none
    table : ndarray of int32, [len(rows), n_hosts]
    overrides : dict of int to ndarray, same layout as ``table``

    Examples
    --------
    A hand-made table on a two-host, one-switch topology:

    >>> from netsteer.topology.model import TopologyBuilder
    >>> b = TopologyBuilder("pair")
    >>> h0, h1, s = b.add_host("h0"), b.add_host("h1"), b.add_switch("s0")
    >>> _ = b.add_link(h0, s, bandwidth=1e9, latency_ns=0)
    >>> _ = b.add_link(h1, s, bandwidth=1e9, latency_ns=0)
    >>> t = b.build()
    >>> r = Routing(t, [[1, 2]], rows=[s])
    >>> r.path(0, 1), t.channel_name(3)
    ([0, 3], 's0[2]->h1')
    >>> r.entry([s, h0], 1).tolist()  # h0 has no row: "my only port"
    [2, -1]
    >>> r.set_entry(s, 1, -1)
    >>> r.check()
    Traceback (most recent call last):
    ...
    netsteer.errors.RoutingError: switch s0 has no route to h1
    """

    def __init__(
        self,
        topo: Topology,
        table,
        *,
        rows=None,
        groups: Iterable | None = None,
        overrides: dict | None = None,
        ecmp_hash: str = "dst",
        engine: str | None = None,
        down_links: Iterable = (),
    ):
        self.topo = topo
        self.down_links = frozenset(int(x) for x in down_links)
        H = topo.n_hosts
        overrides = overrides or {}
        if rows is None:  # dense: keep the rows that can or do hold entries
            shape = (topo.n_nodes, H)
            dense = self._table(table, shape, "lft")
            dense_ov = {int(k): self._table(v, shape, f"overrides[{k}]") for k, v in overrides.items()}
            keep = np.zeros(topo.n_nodes, dtype=bool)
            keep[forwarding_nodes(topo)] = True
            for t in (dense, *dense_ov.values()):
                keep |= (t != -1).any(axis=1)
            rows = np.flatnonzero(keep)
            table = dense[rows]
            overrides = {k: v[rows] for k, v in dense_ov.items()}
        rows = np.asarray(rows, dtype=np.int64).ravel()
        if rows.size and (rows[0] < 0 or rows[-1] >= topo.n_nodes or (np.diff(rows) <= 0).any()):
            raise RoutingError(f"rows must be sorted, distinct node ids in 0..{topo.n_nodes - 1}")
        self.rows = rows
        self.row_of = np.full(topo.n_nodes, -1, dtype=np.int64)
        self.row_of[rows] = np.arange(len(rows))
        shape = (len(rows), H)
        self.table = self._table(table, shape, "table", "rows, hosts")
        self.groups = [np.sort(np.asarray(g, dtype=np.int32).ravel()) for g in groups or []]
        for i, g in enumerate(self.groups):
            if g.size == 0:
                raise RoutingError(f"ECMP group {i} is empty")
        self.overrides = {
            int(k): self._table(v, shape, f"overrides[{k}]", "rows, hosts") for k, v in overrides.items()
        }
        if ecmp_hash not in HASHES:
            raise RoutingError(f"unknown ECMP hash {ecmp_hash!r}; use one of {', '.join(HASHES)}")
        self.ecmp_hash = ecmp_hash
        self.engine = engine

    @classmethod
    def blank(cls, topo: Topology, rows=None, **kwargs) -> Routing:
        """Tables with every entry -1, rows for ``rows`` (default :func:`forwarding_nodes`),
        for an engine to fill with :meth:`set_rows` and :meth:`set_entry`."""
        rows = forwarding_nodes(topo) if rows is None else np.asarray(rows, dtype=np.int64)
        return cls(topo, np.full((len(rows), topo.n_hosts), -1, dtype=np.int32), rows=rows, **kwargs)

    @staticmethod
    def _table(a, shape, what, dims="nodes, hosts") -> np.ndarray:
        a = np.asarray(a)
        if a.shape != shape:
            raise RoutingError(f"{what} has shape {a.shape}, expected {shape} ({dims})")
        return a.astype(np.int32, copy=a.dtype != np.int32)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_nodes, n_hosts)`` of the topology the tables are for."""
        return (len(self.row_of), self.table.shape[1])

    def __repr__(self) -> str:
        return (
            f"Routing(engine={self.engine!r}, topo={self.topo.name!r}, "
            f"groups={len(self.groups)}, overrides={sorted(self.overrides)})"
        )

    # -- entries ---------------------------------------------------------------
    def _rows_for(self, nodes, what: str = "read") -> np.ndarray:
        r = self.row_of[np.asarray(nodes, dtype=np.int64)]
        if what == "write" and (r < 0).any():
            node = int(np.asarray(nodes).ravel()[np.flatnonzero(r.ravel() < 0)[0]])
            raise RoutingError(f"{self.topo.node_names[node]} has no table row (rows: {len(self.rows)} nodes)")
        return r

    @staticmethod
    def _gather(table: np.ndarray, r: np.ndarray, d=None) -> np.ndarray:
        """``table[r, d]`` (whole rows when ``d`` is None), -1 where ``r < 0``."""
        if d is None:
            if (r >= 0).all():
                return table[r]
            out = np.full(r.shape + table.shape[1:], -1, dtype=np.int32)
            m = r >= 0
            out[m] = table[r[m]]
            return out
        r, d = np.broadcast_arrays(r, np.asarray(d, dtype=np.int64))
        if (r >= 0).all():
            return np.asarray(table[r, d])
        out = np.full(r.shape, -1, dtype=np.int32)
        m = r >= 0
        out[m] = table[r[m], d[m]]
        return out

    def _target(self, cls) -> np.ndarray:
        if cls is None:
            return self.table
        if int(cls) not in self.overrides:
            self.overrides[int(cls)] = np.full_like(self.table, -1)
        return self.overrides[int(cls)]

    def entry(self, nodes, dsts, classes=None) -> np.ndarray:
        """Raw entries (port, -1 or group code) for ``nodes`` and ``dsts`` broadcast
        together, after the override of each one's class (scalar or array) if any."""
        r = self._rows_for(nodes)
        e = self._gather(self.table, r, dsts)
        if self.overrides and classes is not None:
            r, d = np.broadcast_arrays(r, np.asarray(dsts, dtype=np.int64))
            classes = np.broadcast_to(np.asarray(classes), e.shape)
            for c, table in self.overrides.items():
                m = classes == c
                if m.any():
                    o = self._gather(table, r[m], d[m])
                    e[m] = np.where(o != -1, o, e[m])
        return e

    def node_rows(self, nodes, cls: int | None = None) -> np.ndarray:
        """``[len(nodes), n_hosts]`` entries of whole rows (-1 rows for nodes without
        one), with class ``cls``'s override applied."""
        r = self._rows_for(nodes)
        e = self._gather(self.table, r)
        if cls is not None and cls in self.overrides:
            o = self._gather(self.overrides[cls], r)
            e = np.where(o != -1, o, e)
        return e

    def set_entry(self, nodes, dsts, values, cls: int | None = None) -> None:
        """Write entries (``nodes``, ``dsts``, ``values`` broadcast together) into the
        default table or class ``cls``'s override; every node needs a row."""
        self._target(cls)[self._rows_for(nodes, "write"), np.asarray(dsts, dtype=np.int64)] = values

    def set_rows(self, nodes, values, cls: int | None = None) -> None:
        """Write whole rows (``values`` broadcast to ``[len(nodes), n_hosts]``)."""
        self._target(cls)[self._rows_for(nodes, "write")] = values

    # -- lookups ---------------------------------------------------------------
    def _group_csr(self):
        sizes = np.array([len(g) for g in self.groups], dtype=np.int64)
        ptr = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=ptr[1:])
        ports = np.concatenate(self.groups) if self.groups else np.zeros(0, np.int32)
        return ptr, sizes, ports

    def _host_port(self) -> np.ndarray:
        """Lowest connected port per node (-1 if none): a host's default way out."""
        connected = self.topo.out_channel >= 0
        return np.where(connected.any(axis=1), connected.argmax(axis=1), -1)

    def next_hops(self, node: int, dst: int, cls: int = 0) -> list[int]:
        """Ports ``node`` may forward traffic for host ``dst`` on (several for a group).

        Examples
        --------
        >>> from netsteer.topology.pgft import pgft
        >>> from netsteer.routing import ecmp
        >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
        >>> ecmp(t).next_hops(t.node("s1_0"), 3)
        [3, 4]
        """
        e = int(self.entry(np.array([node]), np.array([dst]), np.array([cls]))[0])
        if e <= -2:
            return [int(p) for p in self.groups[-2 - e]]
        if e == -1 and self.topo.node_kind[node] == HOST:
            e = int(self._host_port()[node])
        return [e] if e >= 0 else []

    # -- path resolution -------------------------------------------------------
    def paths(self, src_hosts, dst_hosts, classes=None, flow_ids=None, circuits=None, missed=None):
        """Channels of every flow, as CSR, resolved one hop at a time for all flows.

        Parameters
        ----------
        src_hosts, dst_hosts : array_like of int
            Host indices, one per flow.
        classes : array_like of int, optional
            Traffic class (or tag) per flow, selecting override tables; default 0.
        flow_ids : array_like of int, optional
            Per-flow id for ``ecmp_hash == "flow"``; defaults to the flow's position.
        circuits : dict of int to array_like, optional
            Circuit switch node -> port pairing (``out = pairing[in]``, -1 unpaired).
        missed : list, optional
            When given, a flow that meets a switch with no entry for its destination
            (one the tables leave out as unreachable, see :meth:`check`) is no error:
            its position is appended here, and its path is empty.

        Returns
        -------
        offsets : ndarray of int64, shape (n + 1,)
        channels : ndarray of int32
            Flow ``i`` crosses ``channels[offsets[i]:offsets[i + 1]]``, in order.
            ``src == dst`` gives an empty path.

        Raises
        ------
        RoutingError
            On a missing entry, an unconnected port, an unpaired circuit port, a path
            reaching the wrong host, or a loop (hop limit); names node and destination.
        """
        topo = self.topo
        src = self._hosts_arg(src_hosts, "src_hosts")
        dst = self._hosts_arg(dst_hosts, "dst_hosts")
        n = len(src)
        if len(dst) != n:
            raise RoutingError(f"{n} sources but {len(dst)} destinations")
        cls = np.zeros(n, np.int64) if classes is None else np.asarray(classes, np.int64).ravel()
        fid = np.arange(n, dtype=np.int64) if flow_ids is None else np.asarray(flow_ids, np.int64).ravel()
        if len(cls) != n or len(fid) != n:
            raise RoutingError("classes and flow_ids need one entry per flow")

        if not self.overrides:
            fast = self._walk_fast(src, dst, fid)
            if fast is not None:
                return fast

        pairing = circuit_table(topo, circuits)
        kind = topo.node_kind
        is_circ, is_host = kind == CIRCUIT, kind == HOST
        out = topo.out_channel
        n_slots = out.shape[1]
        cdst, cdport = topo.channel_dst(), topo.channel_dst_port()
        host_port = self._host_port()
        gptr, gsize, gports = self._group_csr()
        # a switch's choice depends only on the flow, a circuit's on the in-port:
        # more hops than states means a loop
        limit = int((~is_circ).sum() + (pairing >= 0).sum()) + 1

        cur = topo.hosts[src].astype(np.int64)
        target = topo.hosts[dst].astype(np.int64)
        inport = np.zeros(n, dtype=np.int64)
        active = np.flatnonzero(src != dst)
        step_flows: list[np.ndarray] = []
        step_chans: list[np.ndarray] = []
        dropped: list[int] = []  # flows that met a switch without an entry (``missed``)
        while active.size:
            if len(step_flows) >= limit:
                self._raise_loop(active[0], src, dst, cls, step_flows, step_chans)
            node, d = cur[active], dst[active]
            port = self.entry(node, d, cls[active] if self.overrides else None).astype(np.int64)
            g = port <= -2
            if g.any():
                gi = -2 - port[g]
                if gi.max() >= len(gsize):
                    raise RoutingError(f"entry names ECMP group {int(gi.max())}, but there are {len(gsize)}")
                a = active[g]
                h = flow_hash(node[g], src[a], d[g], fid[a], self.ecmp_hash)
                port[g] = gports[gptr[gi] + (h % gsize[gi].astype(np.uint64)).astype(np.int64)]
            fallback = (port == -1) & is_host[node]
            port[fallback] = host_port[node[fallback]]
            c = is_circ[node]
            if c.any():
                port[c] = pairing[node[c], inport[active[c]]]
            ok = (port >= 0) & (port < n_slots)
            ch = np.where(ok, out[node, np.where(ok, port, 0)], -1)
            bad = np.flatnonzero(ch < 0)
            if bad.size and missed is not None:
                lost = bad[(port[bad] == -1) & (kind[node[bad]] == SWITCH)]
                if lost.size:
                    dropped.extend(int(f) for f in active[lost])
                    keep = np.ones(active.size, dtype=bool)
                    keep[lost] = False
                    active, node, d, port, ch = active[keep], node[keep], d[keep], port[keep], ch[keep]
                    bad = np.flatnonzero(ch < 0)
            if bad.size:
                i = bad[0]
                self._raise_miss(int(node[i]), int(d[i]), int(cls[active[i]]), int(port[i]),
                                 int(inport[active[i]]), pairing)
            step_flows.append(active)
            step_chans.append(ch)
            nxt = cdst[ch]
            cur[active] = nxt
            inport[active] = cdport[ch]
            arrived = nxt == target[active]
            stray = ~arrived & is_host[nxt]
            if stray.any():
                i = np.flatnonzero(stray)[0]
                f = active[i]
                raise RoutingError(
                    f"{self._kind(int(node[i]))} {topo.node_names[node[i]]} sends traffic for "
                    f"{self._host_name(dst[f])} to host {topo.node_names[nxt[i]]}"
                    f"{self._cls_suffix(int(cls[f]))}"
                )
            active = active[~arrived]

        if dropped:  # their steps so far lead nowhere: an empty path
            missed.extend(dropped)
            gone = np.zeros(n, dtype=bool)
            gone[dropped] = True
            kept = [~gone[f] for f in step_flows]
            step_flows = [f[k] for f, k in zip(step_flows, kept)]
            step_chans = [c[k] for c, k in zip(step_chans, kept)]
        lengths = np.zeros(n, dtype=np.int64)
        for f in step_flows:
            lengths[f] += 1
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        channels = np.empty(int(offsets[-1]), dtype=np.int32)
        for k, (f, ch) in enumerate(zip(step_flows, step_chans)):
            channels[offsets[f] + k] = ch
        return offsets, channels

    def _walk_fast(self, src: np.ndarray, dst: np.ndarray, fid: np.ndarray):
        """The tables and their ECMP groups walked in Rust; None when a flow needs the
        general walk (a circuit on the way, or an error to word)."""
        from .._core import walk_tables

        topo = self.topo
        is_host = topo.node_kind == HOST
        return walk_tables(
            np.ascontiguousarray(self.table, dtype=np.int32),
            self.row_of,
            self._host_port().astype(np.int64),
            np.ascontiguousarray(topo.out_channel, dtype=np.int64),
            topo.channel_dst().astype(np.int64),
            is_host,
            topo.node_kind == CIRCUIT,
            topo.hosts[src].astype(np.int64),
            dst.astype(np.int64),
            topo.hosts[dst].astype(np.int64),
            int((topo.node_kind != CIRCUIT).sum()) + 1,
            self.group_arrays(),
            src.astype(np.int64),
            fid.astype(np.int64),
        )

    def group_arrays(self) -> tuple[np.ndarray, np.ndarray, str]:
        """The ECMP groups as the engine takes them: CSR pointers (int64), ports
        (int32), and the hash's name."""
        ptr, _, ports = self._group_csr()
        return ptr, np.ascontiguousarray(ports, dtype=np.int32), self.ecmp_hash

    def path(self, src: int, dst: int, cls: int = 0, flow_id: int = 0, circuits=None) -> list[int]:
        """Channel ids from host ``src`` to host ``dst``."""
        _, ch = self.paths([src], [dst], [cls], [flow_id], circuits)
        return [int(c) for c in ch]

    def describe(self, src: int, dst: int, cls: int = 0, flow_id: int = 0, circuits=None) -> str:
        """The path as ``h0 -> s1_0 -> ... -> h3``."""
        names = self.topo.node_names
        ch = self.path(src, dst, cls, flow_id, circuits)
        nodes = [self.topo.host_node(src)] + [int(x) for x in self.topo.channel_dst()[ch]]
        return " -> ".join(names[v] for v in nodes)

    def channel_load(self, src_hosts, dst_hosts, classes=None, flow_ids=None, circuits=None):
        """Number of flows crossing each channel (int64, length ``n_channels``)."""
        _, ch = self.paths(src_hosts, dst_hosts, classes, flow_ids, circuits)
        return np.bincount(ch, minlength=self.topo.n_channels)

    def _hosts_arg(self, a, what) -> np.ndarray:
        a = np.asarray(a, dtype=np.int64).ravel()
        if a.size and (a.min() < 0 or a.max() >= self.topo.n_hosts):
            bad = a[(a < 0) | (a >= self.topo.n_hosts)][0]
            raise RoutingError(f"{what}: host index {bad} out of range 0..{self.topo.n_hosts - 1}")
        return a

    # -- messages --------------------------------------------------------------
    def _kind(self, node: int) -> str:
        return {HOST: "host", CIRCUIT: "circuit switch"}.get(int(self.topo.node_kind[node]), "switch")

    def _host_name(self, d: int) -> str:
        return self.topo.node_names[self.topo.host_node(int(d))]

    def _cls_suffix(self, cls: int | None) -> str:
        return f" (class {cls})" if cls is not None and cls in self.overrides else ""

    def _raise_miss(self, node, d, cls, port, inport, pairing):
        name, dname = self.topo.node_names[node], self._host_name(d)
        sfx = self._cls_suffix(cls)
        if self.topo.node_kind[node] == CIRCUIT:
            raise RoutingError(
                f"circuit switch {name} has port {inport} unpaired (path towards {dname}){sfx}"
            )
        if port < 0:
            raise RoutingError(f"{self._kind(node)} {name} has no route to {dname}{sfx}")
        why = dead_end_reason(self.topo, pairing, node, port)
        raise RoutingError(f"{self._kind(node)} {name} sends traffic for {dname} out of {why}{sfx}")

    def _raise_loop(self, f, src, dst, cls, step_flows, step_chans):
        topo = self.topo
        chans = [int(ch[np.searchsorted(fl, f)]) for fl, ch in zip(step_flows, step_chans)]
        nodes = [topo.host_node(int(src[f]))] + [int(x) for x in topo.channel_dst()[chans]]
        first: dict[int, int] = {}
        for j, v in enumerate(nodes):
            if topo.node_kind[v] == CIRCUIT:
                continue
            if v in first:
                cycle = nodes[first[v] : j + 1]
                break
            first[v] = j
        else:  # only circuit nodes repeat: show the tail
            cycle = nodes[-8:]
        raise RoutingError(
            "routing loop: "
            + " -> ".join(topo.node_names[v] for v in cycle)
            + f" towards {self._host_name(dst[f])}{self._cls_suffix(int(cls[f]))}"
        )

    # -- checking --------------------------------------------------------------
    def check(self, topo: Topology | None = None, circuits=None) -> None:
        """Check completeness and loop-freedom of the default table and every override.

        Every packet switch reachable from a host (circuits looked through along their
        pairing) must reach every host it can reach once :attr:`down_links` are cut,
        whichever member of an ECMP group is taken; and so must every host. As in
        OpenSM, a destination cut off from a switch by links that are down needs no
        entry there (a dead host cable leaves the rest of the fabric routable).
        The cabling itself must join every host to every other: a host without a
        cable, or a fabric in pieces, is refused. Vectorised over all (switch,
        destination) pairs.

        Raises
        ------
        RoutingError
            ``switch s2_3 has no route to h17``, ``routing loop: s1_0 -> s2_1 -> s1_0
            towards h5``, ... with `` (class c)`` appended for an override table;
            ``host h3 has no cable``, ``the fabric is not connected: ...``.

        Examples
        --------
        Min-hop tables built with h0's only cable down have no entry for h0, and
        need none:

        >>> from netsteer.topology.pgft import pgft
        >>> from netsteer.routing import minhop
        >>> t = pgft(2, [2, 2], [1, 2], link_bandwidth=1e9, link_latency_ns=0)
        >>> r = minhop(t, down_links=[0])
        >>> int(r.entry(t.node("s1_0"), 0)), r.check()
        (-1, None)
        >>> minhop(t).check()  # the same tables without the failure must be complete
        >>> r.down_links = frozenset()
        >>> r.check()
        Traceback (most recent call last):
        ...
        netsteer.errors.RoutingError: switch s1_0 has no route to h0
        """
        topo = self.topo if topo is None else topo
        if (topo.n_nodes, topo.n_hosts) != self.shape:
            raise RoutingError(f"tables are for {self.shape} (nodes, hosts), not {topo.name}")
        pairing = circuit_table(topo, circuits)
        nbr = effective_neighbors(topo, pairing)
        reach = reachable_from_hosts(topo, nbr)
        rows = routers(topo)
        rows = rows[reach[rows]]
        host_class, _, pot = class_distances(topo, nbr, rows)
        _require_connected(topo, nbr, rows, host_class, pot)
        hops = host_class, pot  # the hop potential serves every table
        cut = None
        if self.down_links:
            cut = Reachability(topo, nbr, rows, self.down_links)
        for cls in [None, *sorted(self.overrides)]:
            checker = Checker(self, topo, pairing, nbr, rows, cls, hops, cut)
            checker.run()
            hops = checker.hops
