"""``netsteer reproduce qos-staging``: the QoS-aware data-staging source's evaluation.

Inputs are the source's documented set-up (QDR ConnectX-2 HCAs, its ``opensm.conf``
QoS lines: ``qos_ca_high_limit 255``, ``qos_ca_vlarb_high 0:40``, ``qos_ca_vlarb_low
0:0,1:2,2:4,...,7:128``, ``qos_ca_sl2vl 0,1,...,7,15,...``; MPI on the high SL, I/O
on a low one; dd noise with direct I/O to staging nodes with PCIe SSDs; OSU-like
latency and bandwidth; 64 MPI processes for the applications). What the slides do not
give is an assumption, listed in :data:`ASSUMPTIONS` and in docs/qos.md. Every result
comes out of the model: nothing measured in the source is an input. The set-up and the
assumptions are the fields of :class:`Setup`, each an option of ``netsteer reproduce
qos-staging``.

The fabric is one QDR switch: host 0 runs an MPI rank and the dd noise, host 1 the
peer, then the other compute nodes, the staging nodes and the file system node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..control.core import Controller
from ..errors import NetsteerError
from ._params import check_ints
from ..qos.scenario import apply_qos
from ..qos.staging import Staging, StagingDriver
from ..routing import build_routing
from ..sim.run import CLOCK_RANGE_NS
from ..sim.simulate import run_driver
from ..topology import pgft
from ..traffic.dag import FlowDag

#: The source's opensm.conf QoS lines (slide "Configuring OpenSM"), CA ports.
SOURCE_QOS = {
    "max_vls": 8,
    "high_limit": 255,
    "vlarb_high": "0:40,1:0,2:0,3:0,4:0,5:0,6:0,7:0,8:0,9:0,10:0,11:0,12:0,13:0,14:0",
    "vlarb_low": "0:0,1:2,2:4,3:8,4:16,5:32,6:64,7:128",
    "sl2vl": "0,1,2,3,4,5,6,7,15,15,15,15,15,15,15,15",
}
MPI_SL, IO_SL = 0, 1  # MPI on the high-priority SL, I/O on a low one


#: The applications' processes (the source's 64), spread evenly over the compute nodes.
APP_RANKS = 64
#: The QoS tables of :data:`SOURCE_QOS` a :class:`Setup` may change.
TABLES = ("high_limit", "vlarb_high", "vlarb_low")


@dataclass(frozen=True)
class Setup:
    """The fabric, devices and QoS tables. QDR: 40 Gbit/s signalling, 8b/10b, so 32
    Gbit/s of data. Every field is an option of ``netsteer reproduce qos-staging``
    (``noise_streams`` is ``--noise-streams``; ``link_bps`` is ``--link-bandwidth``,
    ``link_latency_ns`` ``--link-latency``, rates in B/s).

    Examples
    --------
    >>> Setup(vlarb_low="0:0,1:0").check()
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: vlarb_high, vlarb_low: SL 1 is used and maps to VL 1, which has no weight in vlarb_high or vlarb_low on ca ports: its packets would never leave
    """

    link_bps: float = 32e9
    link_latency_ns: int = 700       # assumption: HCA + cable + switch per link
    ssd_rate: float = 1.0e9          # assumption: the OCZ VeloDrive's sequential write, B/s
    pfs_rate: float = 0.5e9          # assumption: the parallel file system node
    noise_streams: int = 2           # assumption: dd processes on the MPI node
    window: int = 64                 # OSU bandwidth test window (osu_bw default)
    compute_nodes: int = 8           # 64 processes = 8 nodes x 8 cores (the source's nodes)
    staging_nodes: int = 2
    alltoall_ranks: int = 8
    high_limit: int = SOURCE_QOS["high_limit"]
    vlarb_high: str = SOURCE_QOS["vlarb_high"]
    vlarb_low: str = SOURCE_QOS["vlarb_low"]

    def qos(self) -> dict:
        """The CA ports' QoS lines: :data:`SOURCE_QOS` with this set-up's tables."""
        return {**SOURCE_QOS, **{k: getattr(self, k) for k in TABLES}}

    def check(self) -> None:
        """Refuse set-ups the runs cannot have, before anything is built; the error's
        field is the parameter."""
        from ..limits import FLOW_BYTES, NODE_BYTES, check
        from ..qos.config import check_sl_served, parse_qos
        from ..units import MAX_BYTES

        check_ints(self, {"noise_streams": 1, "window": 1, "compute_nodes": 2, "staging_nodes": 1,
                          "alltoall_ranks": 2, "link_latency_ns": 0})
        for key in ("link_bps", "ssd_rate", "pfs_rate"):
            v = getattr(self, key)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise NetsteerError(f"must be a rate above 0, got {v!r}", field=key)
        if APP_RANKS % self.compute_nodes:
            raise NetsteerError(f"must divide the applications' {APP_RANKS} processes evenly, got "
                                f"{self.compute_nodes}", field="compute_nodes")
        if self.alltoall_ranks > self.compute_nodes:
            raise NetsteerError(f"must be at most the compute nodes ({self.compute_nodes}), one rank a node, got "
                                f"{self.alltoall_ranks}", field="alltoall_ranks")
        if max(SIZES) * self.window > MAX_BYTES:
            raise NetsteerError(f"a window of {self.window} {max(SIZES)}-byte messages is more than the "
                                f"{MAX_BYTES} bytes a flow may carry", field="window")
        # the bandwidth test's two windows of the largest message alone must end within
        # the simulator's clock (slower, and the run stalls; noise makes it slower still:
        # _Case.run reports that)
        secs = 2 * self.window * max(SIZES) * 8 / self.link_bps
        if secs * 1e9 >= CLOCK_RANGE_NS:
            raise NetsteerError(f"{self.link_bps:g} bit/s is too slow: the bandwidth test's {2 * self.window} "
                                f"{max(SIZES)}-byte messages alone would take {secs / 86400 / 365.25:,.0f} years, "
                                f"past the simulator's clock ({CLOCK_RANGE_NS / 1e9 / 86400 / 365.25:.0f} years)",
                                field="link_bps")
        hosts = self.compute_nodes + self.staging_nodes + 1
        flows = self.noise_streams * self.compute_nodes + APP_RANKS * 200
        check(FLOW_BYTES * flows + NODE_BYTES * hosts, "a run of the reproduction",
              detail=f"{flows:,} flows on {hosts:,} hosts", field="noise_streams, staging_nodes")
        try:
            q = parse_qos(self.qos(), field="")
        except NetsteerError as exc:
            raise NetsteerError(exc.reason, field=exc.field.strip(".")) from None
        for sl in (MPI_SL, IO_SL):
            try:
                check_sl_served(q, sl)
            except NetsteerError as exc:
                raise NetsteerError(exc.reason, field="vlarb_high, vlarb_low") from None


ASSUMPTIONS = {
    "link_latency_ns": "per link, so a 2-link path costs ~1.4 us (QDR small-message latency)",
    "ssd_rate": "1 GB/s sequential write for the OCZ VeloDrive (not in the slides)",
    "pfs_rate": "0.5 GB/s for the file system node (not in the slides)",
    "noise_streams": "2 dd processes writing from the MPI node (the slides say dd, not how many)",
    "apps": "CG-like and stencil-like bulk-synchronous programs with assumed sizes and compute",
    "alltoall_ranks": "8 ranks, one per node, noise from every node (not in the slides)",
}

SIZES = [2 ** k for k in range(0, 23)]  # 1 B .. 4 MiB
def packet_available() -> bool:
    """Whether the packet fidelity (issue 10) is built into this netsteer."""
    try:
        from ..sim import packet  # noqa: F401
    except ImportError:
        return False
    return True


A2A_SIZES = [4 ** k for k in range(0, 10)] + [2 ** 20]


def _qos(setup: Setup, kind: str, mpi_sl: int = MPI_SL, io_sl: int = IO_SL) -> dict | None:
    if kind != "noise_qos":
        return None
    return {**setup.qos(), "classes": [{"name": "mpi", "sl": mpi_sl, "kind": "mpi"},
                                      {"name": "io", "sl": io_sl, "kind": "bulk"},
                                      {"name": "staging", "sl": io_sl, "kind": "staging"},
                                      {"name": "storage", "sl": io_sl, "kind": "storage"}]}


@dataclass
class _Case:
    setup: Setup
    dag: FlowDag = field(default_factory=FlowDag)
    paths: dict = field(default_factory=dict)
    jobs: list = field(default_factory=list)  # job index per flow

    @property
    def n_hosts(self) -> int:
        s = self.setup
        return s.compute_nodes + s.staging_nodes + 1

    def staging_hosts(self):
        s = self.setup
        return list(range(s.compute_nodes, s.compute_nodes + s.staging_nodes))

    def pfs(self) -> int:
        return self.n_hosts - 1

    def add(self, job: int, src: int, dst: int, nbytes: int, *, deps=(), start=None, label="mpi:p2p", delay=0) -> int:
        f = self.dag.add(src, dst, nbytes, deps=list(deps), start_ns=start, delay_ns=delay, label=label)
        self.jobs.append(job)
        return f

    def noise(self, hosts, at_ns: int = 0) -> list[int]:
        st = self.staging_hosts()
        out = []
        for k, h in enumerate(hosts):
            for _ in range(self.setup.noise_streams):
                out += Staging.noise(self.dag, self.paths, "noise", [h], staging=st[k % len(st)], at_ns=at_ns)
                self.jobs.append(1)
        return out

    def run(self, qos: dict | None, background=(), fidelity: str = "flow") -> np.ndarray:
        s = self.setup
        topo = pgft(1, [self.n_hosts], [1], link_bandwidth=s.link_bps, link_latency_ns=s.link_latency_ns)
        extra = {}
        if qos is not None:
            plan = apply_qos(qos, self.dag, np.asarray(self.jobs), ["mpi", "noise"], paths=self.paths)
        if fidelity == "packet":
            from ..qos.config import packet_keys, parse_qos
            from ..sim.packet import PacketParams

            q = plan.config if qos is not None else parse_qos({"max_vls": 1})
            params = PacketParams.model_validate(packet_keys(q))
            extra = {"packet": params.engine_dict(), "sls": self.dag.columns().traffic_class.copy()}
        bg = np.zeros(len(self.dag), dtype=bool)
        bg[list(background)] = True
        drv = StagingDriver(topo, build_routing(topo, "dmodk"), self.dag, staging=Staging(s.ssd_rate, s.pfs_rate),
                            staging_hosts=self.staging_hosts(), pfs_hosts=[self.pfs()], background=bg, **extra)
        res = run_driver(drv, Controller())
        if res.status != "done":
            # every flow of these runs ends unless a rate is so low that it would end
            # past the simulator's clock: the set-up's rates are the cause (the devices'
            # too when a flow that must end reads or writes them)
            years = CLOCK_RANGE_NS / 1e9 / 86400 / 365.25
            fg = ~bg
            devices = set(self.staging_hosts()) | {self.pfs()}
            staged = bool(np.isin(np.asarray(self.dag.src)[fg], list(devices)).any()
                          or np.isin(np.asarray(self.dag.dst)[fg], list(devices)).any())
            raise NetsteerError(f"a run of the reproduction ended {res.status}: its flows would still be sending "
                                f"after {years:.0f} years of simulated time; the rate is too slow",
                                field="link_bps, ssd_rate, pfs_rate" if staged else "link_bps")
        return res.completion_ns


WARMUP_NS = 100_000  # noise runs alone first, so MPI meets it in steady state


def osu_latency(setup: Setup, nbytes: int, kind: str, iters: int = 4, fidelity: str = "flow", **qos_kw) -> float:
    """One-way latency (us) of a ping-pong of ``nbytes`` between hosts 0 and 1."""
    c = _Case(setup)
    start = WARMUP_NS if kind != "no_noise" else 0
    prev = None
    first = None
    for _ in range(iters):
        a = c.add(0, 0, 1, nbytes, deps=[prev] if prev is not None else (), start=None if prev is not None else start)
        first = a if first is None else first
        prev = c.add(0, 1, 0, nbytes, deps=[a])
    bg = c.noise([0]) if kind != "no_noise" else []
    done = c.run(_qos(setup, kind, **qos_kw), bg, fidelity)
    return float(done[prev] - start) / (2 * iters) / 1e3


def osu_bw(setup: Setup, nbytes: int, kind: str, iters: int = 2, fidelity: str = "flow", **qos_kw) -> float:
    """Bandwidth (MB/s) of ``window`` back-to-back messages on one QP, then a 4-byte ack."""
    c = _Case(setup)
    start = WARMUP_NS if kind != "no_noise" else 0
    prev = None
    for _ in range(iters):
        # one QP sends its window's messages one after the other: one flow of their bytes
        burst = c.add(0, 0, 1, nbytes * setup.window, deps=[prev] if prev is not None else (),
                      start=None if prev is not None else start)
        prev = c.add(0, 1, 0, 4, deps=[burst])
    bg = c.noise([0]) if kind != "no_noise" else []
    done = c.run(_qos(setup, kind, **qos_kw), bg, fidelity)
    return nbytes * setup.window * iters / (float(done[prev] - start) / 1e9) / 1e6


def alltoall(setup: Setup, nbytes: int, kind: str, iters: int = 2, fidelity: str = "flow") -> float:
    """Alltoall latency (us): pairwise exchange, each round after the rank's last."""
    c = _Case(setup)
    p = setup.alltoall_ranks
    start = WARMUP_NS if kind != "no_noise" else 0
    last = {r: None for r in range(p)}
    for _ in range(iters):
        for k in range(1, p):
            new = {}
            for r in range(p):
                to, frm = (r + k) % p, (r - k) % p
                deps = [d for d in (last[r], last[to]) if d is not None]
                new[to] = c.add(0, r, to, nbytes, deps=deps, start=None if deps else start, label="mpi:alltoall")
            last = new
    bg = c.noise(range(p)) if kind != "no_noise" else []
    done = c.run(_qos(setup, kind), bg, fidelity)
    return float(max(done[f] for f in last.values()) - start) / iters / 1e3


def app(setup: Setup, which: str, qos: bool, iters: int = 20) -> float:
    """Run time (ms) of a 64-process bulk-synchronous application that checkpoints
    through the staging nodes every 5 iterations (I/O overlapping compute)."""
    c = _Case(setup)
    nodes = setup.compute_nodes
    per, ranks = APP_RANKS // nodes, APP_RANKS
    host = [r // per for r in range(ranks)]
    if which == "stencil":  # 3-D halo exchange on a 4x4x4 grid, 1 MiB faces, 2 ms compute
        side = 4
        def nbrs(r):
            x, y, z = r % side, (r // side) % side, r // (side * side)
            out = []
            for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
                out.append(((x + dx) % side) + ((y + dy) % side) * side + ((z + dz) % side) * side * side)
            return out
        msgs, compute_ns, small = 1 << 20, 2_000_000, False
    else:  # CG-like: transpose partner exchange of 4 MiB, two 8-byte allreduces, 3 ms compute
        def nbrs(r):
            return [(r * 8) % 63 if r != 63 else 63] if r not in (0, 63) else [r ^ 1]
        msgs, compute_ns, small = 4 << 20, 3_000_000, True
    last = [c.add(0, host[r], host[r], 0, delay=0, start=0, label="mpi:start") for r in range(ranks)]
    for it in range(iters):
        comp = [c.add(0, host[r], host[r], 0, deps=[last[r]], delay=compute_ns, label="mpi:compute")
                for r in range(ranks)]
        recv = {r: [] for r in range(ranks)}
        for r in range(ranks):
            for q in nbrs(r):
                if q != r:
                    recv[q].append(c.add(0, host[r], host[q], msgs, deps=[comp[r], comp[q]], label="mpi:halo"))
        last = [c.add(0, host[r], host[r], 0, deps=recv[r] + [comp[r]], label="mpi:wait") for r in range(ranks)]
        if small:  # recursive-doubling allreduce of 8 bytes, twice
            for _ in range(2):
                for k in range(6):
                    nxt = []
                    for r in range(ranks):
                        q = r ^ (1 << k)
                        nxt.append(c.add(0, host[r], host[q], 8, deps=[last[r], last[q]], label="mpi:allreduce"))
                    last = nxt
        if it % 5 == 4:  # checkpoint: each node writes 256 MiB to a staging node, drained to the PFS
            st = c.staging_hosts()
            for n in range(nodes):
                Staging(setup.ssd_rate, setup.pfs_rate).checkpoint(
                    c.dag, c.paths, "ckpt", [n], staging=st[n % len(st)], pfs=c.pfs(), nbytes=256 << 20,
                    deps=[last[n * per]], path=f"/ckpt/{it}")
                c.jobs += [1, 1]
    done = c.run(_qos(setup, "noise_qos") if qos else None)
    return float(max(done[f] for f in last)) / 1e6


KINDS = ("no_noise", "noise", "noise_qos")
#: Progress steps of :func:`run`: three curves of each fidelity, the apps, the weights.
STEPS = 2 * 3 * len(KINDS) + 2 + 1


def curves(setup: Setup, fidelity: str, *, sizes=SIZES, a2a_sizes=A2A_SIZES, progress=lambda n=1: None) -> dict:
    """Latency, bandwidth and alltoall against message size, no noise / noise / noise
    and QoS, every point of every curve at one ``fidelity`` (``"flow"`` or
    ``"packet"``): the two models differ in kind (flows do not queue behind the
    noise's packets), so a curve that changed model at some size would jump there."""
    out: dict = {"latency": {}, "bandwidth": {}, "alltoall": {}}
    for k in KINDS:
        out["latency"][k] = [{"bytes": s, "us": osu_latency(setup, s, k, fidelity=fidelity), "fidelity": fidelity}
                             for s in sizes]
        progress()
        out["bandwidth"][k] = [{"bytes": s, "mbps": osu_bw(setup, s, k, fidelity=fidelity), "fidelity": fidelity}
                               for s in sizes]
        progress()
        out["alltoall"][k] = [{"bytes": s, "us": alltoall(setup, s, k, fidelity=fidelity), "fidelity": fidelity}
                              for s in a2a_sizes]
        progress()
    return out


def run(setup: Setup = Setup(), *, sizes=SIZES, a2a_sizes=A2A_SIZES, progress=lambda n=1: None) -> dict:
    """The whole reproduction (see the module text); JSON-able.

    ``latency``, ``bandwidth`` and ``alltoall`` are at flow level for every size (the
    same in every build); ``packet`` holds the same curves at packet level, every size
    too, where the packet fidelity is built (else ``None``).
    """
    rep: dict = curves(setup, "flow", sizes=sizes, a2a_sizes=a2a_sizes, progress=progress)
    pk = packet_available()
    if pk:
        rep["packet"] = curves(setup, "packet", sizes=sizes, a2a_sizes=a2a_sizes, progress=progress)
    else:
        rep["packet"] = None
        for _ in range(3 * len(KINDS)):
            progress()
    rep["apps"] = {}
    for name in ("cg", "stencil"):
        rep["apps"][name] = {"no_qos_ms": app(setup, name, False), "qos_ms": app(setup, name, True)}
        progress()
    rep["sl_weights"] = sl_weights(setup)
    rep["sl_weights_io"] = sl_weights_io(setup)
    if not rep["sl_weights"]:
        rep["sl_weights_none"] = sl_weights_why_none(setup)
    progress()
    big = max(sizes)
    lat = {k: rep["latency"][k][-1]["us"] for k in KINDS}
    bw = {k: rep["bandwidth"][k][-1]["mbps"] for k in KINDS}
    # the effect of QoS on MPI, signed (noise + QoS minus noise): a gain only where the
    # tables favour MPI, and only then given as one (the source's figures are gains)
    rep["qos_favours"] = qos_favours(setup)
    rep["at_largest"] = {"bytes": big, "latency_effect_us": lat["noise_qos"] - lat["noise"],
                         "bandwidth_effect_mbps": bw["noise_qos"] - bw["noise"]}
    if rep["qos_favours"]["favours"] == "mpi":
        rep["at_largest"] |= {"latency_gain_us": lat["noise"] - lat["noise_qos"],
                              "bandwidth_gain_mbps": bw["noise_qos"] - bw["noise"]}
    for r in rep["apps"].values():
        r["qos_effect"] = r["qos_ms"] / r["no_qos_ms"] - 1  # run time with QoS over without, less 1
    rep["source"] = {"at_4MB": {"latency_gain_us": 320, "bandwidth_gain_mbps": 674},
                     "note": "for comparison only; nothing here is an input"}
    rep["fidelity"] = {"flow": "latency, bandwidth and alltoall at every size (no queueing: the noise takes its "
                               "max-min share of the link), the applications and the SL weights"}
    if pk:
        rep["fidelity"]["packet"] = ("the same three curves at every size, packet by packet (MPI queues "
                                     "behind the noise's packets on a shared VL)")
    else:
        rep["fidelity"]["packet"] = ("not built here: small-message queueing behind noise is not modelled "
                                     "(see docs/qos.md)")
    rep["setup"] = ({k: v for k, v in setup.__dict__.items() if k not in TABLES}
                    | {"assumptions": ASSUMPTIONS, "qos": setup.qos()})
    return rep


def qos_favours(setup: Setup, mpi_sl: int = MPI_SL, io_sl: int = IO_SL) -> dict:
    """Which class the set-up's tables favour when MPI and I/O both have packets at a
    port: ``{"favours": "mpi" | "io" | "neither", "why": ...}``. A VL in the high table
    is favoured over one in the low table unless ``high_limit`` 0 gives both one packet
    a turn; in one table, the VL whose entries send more packets a turn. The QoS runs
    compare MPI with these tables against MPI on the noise's own VL: where I/O is
    favoured, QoS slows MPI, so their difference is no gain.

    >>> qos_favours(Setup())["favours"], qos_favours(Setup(vlarb_high="1:40", vlarb_low="0:64,1:0"))["favours"]
    ('mpi', 'io')
    >>> qos_favours(Setup(high_limit=0))["why"]
    "high_limit 0: MPI's VL 0 (high table) and I/O's VL 1 (low table) send one packet a turn each"
    """
    from ..qos.config import parse_qos
    from ..qos.flowshare import entry_bytes, high_fraction

    port = parse_qos(setup.qos()).port("swe")
    vl = {"mpi": port.sl2vl[mpi_sl], "io": port.sl2vl[io_sl]}
    if vl["mpi"] == vl["io"]:
        return {"favours": "neither", "why": f"MPI and I/O share VL {vl['mpi']}: their packets take turns in one VL"}
    served = port.served()
    table = {k: served.get(v) for k, v in vl.items()}
    name = {"mpi": "MPI", "io": "I/O"}
    if table["mpi"] != table["io"]:
        hi = "mpi" if table["mpi"] == "high" else "io"
        lo = "io" if hi == "mpi" else "mpi"
        frac = high_fraction(port.high_limit)
        what = (f"{name[hi]}'s VL {vl[hi]} (high table) and {name[lo]}'s VL {vl[lo]} (low table)")
        if frac <= 0.5:
            return {"favours": "neither", "why": f"high_limit {port.high_limit}: {what} send one packet a turn each"}
        how = "strictly (high_limit 255)" if frac >= 1 else f"high_limit {port.high_limit}: {frac:.0%} of a port"
        return {"favours": hi, "why": f"{what}: the high table goes first, {how}"}
    entries = port.vlarb_high if table["mpi"] == "high" else port.vlarb_low
    sent = {k: sum(entry_bytes(w) for v, w in entries if v == vl[k]) for k in vl}
    what = (f"MPI's VL {vl['mpi']} and I/O's VL {vl['io']} both in the {table['mpi']} table, "
            f"{sent['mpi']} and {sent['io']} bytes a turn")
    if sent["mpi"] == sent["io"]:
        return {"favours": "neither", "why": what}
    return {"favours": "mpi" if sent["mpi"] > sent["io"] else "io", "why": what}


def qos_label(favours: str) -> str:
    """The QoS runs' label in the table, the text and the figures: which class QoS favours.

    >>> qos_label("io"), qos_label("mpi")
    ('QoS favouring I/O', 'QoS favouring MPI')
    """
    return {"mpi": "QoS favouring MPI", "io": "QoS favouring I/O"}.get(favours, "QoS favouring neither")


def sl_weights(setup: Setup, nbytes: int = 4 << 20) -> list[dict]:
    """MPI on low-table SLs 1..7 (weights 2..128 in the source's table), I/O on SL 1:
    4 MiB latency and bandwidth under noise for each MPI weight. The noise here writes
    to a device as fast as the link (``ssd_rate`` = link rate), so it can take whatever
    the arbiter gives it and the weights decide the split (one dd stream: the flow model
    gives each flow its VL's weight, see netsteer.qos.flowshare). An SL whose VL has
    weight 0 in ``setup.vlarb_low``, or a weight in ``setup.vlarb_high``, is left out:
    MPI on it would never be served, or be served first whatever its low weight. The
    row of MPI on I/O's own VL (SL 1 in the source's study) has ``shares_io_vl``: there
    the two share one VL's turns, not two weights. :func:`sl_weights_why_none` says why
    there are no rows."""
    from ..qos.config import parse_vlarb

    sl2vl = [int(v) for v in SOURCE_QOS["sl2vl"].split(",")]
    low = dict(parse_vlarb(setup.vlarb_low))
    high = {v: w for v, w in parse_vlarb(setup.vlarb_high) if w > 0}
    setup = Setup(**{**setup.__dict__, "ssd_rate": setup.link_bps / 8, "noise_streams": 1})
    out = []
    for sl in range(1, 8):
        vl = sl2vl[sl]
        if not low.get(vl) or vl in high:
            continue
        out.append({"mpi_sl": sl, "mpi_weight": low[vl], "io_weight": low.get(sl2vl[IO_SL], 0),
                    "shares_io_vl": vl == sl2vl[IO_SL],
                    "latency_us": osu_latency(setup, nbytes, "noise_qos", mpi_sl=sl),
                    "bandwidth_mbps": osu_bw(setup, nbytes, "noise_qos", mpi_sl=sl)})
    return out


def sl_weights_io(setup: Setup) -> dict:
    """I/O's SL, VL and the table and weight that serve it, for the SL study's labels.

    >>> sl_weights_io(Setup())
    {'sl': 1, 'vl': 1, 'table': 'low', 'weight': 2}
    """
    from ..qos.config import parse_vlarb

    vl = [int(v) for v in SOURCE_QOS["sl2vl"].split(",")][IO_SL]
    high = {v: w for v, w in parse_vlarb(setup.vlarb_high) if w > 0}
    if vl in high:
        return {"sl": IO_SL, "vl": vl, "table": "high", "weight": high[vl]}
    return {"sl": IO_SL, "vl": vl, "table": "low", "weight": dict(parse_vlarb(setup.vlarb_low)).get(vl, 0)}


def sl_weights_why_none(setup: Setup) -> str:
    """Why the SL study has no rows: no VL of SLs 1..7 has a low weight without a high one."""
    return (f"no VL of SLs 1..7 has a weight in vlarb_low ({setup.vlarb_low}) without one in vlarb_high "
            f"({setup.vlarb_high}): MPI on such an SL would never be served, or be served first")


def sl_weights_label(io: dict) -> str:
    """The SL study's x label, from I/O's actual table and weight.

    >>> sl_weights_label({"sl": 1, "vl": 1, "table": "low", "weight": 200})
    'MPI low-table weight (I/O on SL 1: low weight 200)'
    """
    return f"MPI low-table weight (I/O on SL {io['sl']}: {io['table']} weight {io['weight']})"


def plot(rep: dict, d) -> None:
    """The source's figures: latency, bandwidth and alltoall against message size,
    small and large, three curves each; the SL-weight study (latency and bandwidth);
    the applications."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..report.figures import legend_outside

    # the QoS runs as what they are: QoS favouring MPI (the source's), or I/O, or neither
    qos = qos_label((rep.get("qos_favours") or {}).get("favours", "mpi"))
    names = {"no_noise": "no I/O noise", "noise": "I/O noise", "noise_qos": f"I/O noise + {qos}"}
    colors = {"no_noise": "tab:blue", "noise": "tab:orange", "noise_qos": "tab:green"}
    figs = [("latency", "us", "Latency (us)"), ("bandwidth", "mbps", "Bandwidth (MB/s)"),
            ("alltoall", "us", "Latency (us)")]
    # each curve from one model: flow solid, packet (where built) dashed, never mixed
    models = [("flow", rep, "-", "o")] + ([("packet", rep["packet"], "--", "x")] if rep.get("packet") else [])
    for key, val, ylabel in figs:
        for part, keep in (("small", lambda b: b <= 8192), ("large", lambda b: b > 8192)):
            fig, ax = plt.subplots(figsize=(5, 3.5))
            for model, curves_, style, mark in models:
                for k, label in names.items():
                    pts = [p for p in curves_[key][k] if keep(p["bytes"])]
                    ax.plot([p["bytes"] for p in pts], [p[val] for p in pts], style, marker=mark, ms=3,
                            color=colors[k], label=f"{label} ({model})")
            ax.set_xscale("log", base=2)
            if val == "us":  # the packet model's queueing is orders of magnitude above the flow model's
                ax.set_yscale("log")
            ax.set_xlabel("Message size (bytes)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{key}, {part} messages (model: " + " / ".join(
                f"{m} {'solid' if st == '-' else 'dashed'}" for m, _, st, _ in models) + ")", fontsize=9)
            legend_outside(ax, fontsize=6)
            fig.tight_layout()
            fig.savefig(d / f"{key}_{part}.png", dpi=100)
            plt.close(fig)
    # the source's two panels: large-message latency and bandwidth against the MPI weight
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    # joined in weight order; MPI on I/O's own VL is a point apart (one VL's turns shared)
    w = sorted((r for r in rep["sl_weights"] if not r.get("shares_io_vl")), key=lambda r: r["mpi_weight"])
    shared = [r for r in rep["sl_weights"] if r.get("shares_io_vl")]
    xlabel = sl_weights_label(rep.get("sl_weights_io") or {"sl": IO_SL, "vl": IO_SL, "table": "low", "weight": "?"})
    for ax, key, ylabel in ((axes[0], "latency_us", "4 MiB latency (us)"),
                            (axes[1], "bandwidth_mbps", "4 MiB bandwidth (MB/s)")):
        ax.plot([r["mpi_weight"] for r in w], [r[key] for r in w], marker="o", label="MPI on a VL of its own")
        if shared:
            ax.plot([r["mpi_weight"] for r in shared], [r[key] for r in shared], "s", color="tab:red",
                    label="MPI on I/O's VL")
            ax.legend(fontsize=7)
        if not rep["sl_weights"]:
            ax.text(0.5, 0.5, "no rows: " + rep.get("sl_weights_none", ""), ha="center", va="center", wrap=True,
                    fontsize=7, transform=ax.transAxes)
        else:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel)
        if key == "bandwidth_mbps":
            ax.set_ylim(bottom=0)
    fig.suptitle("Impact of SL weights (large messages)", fontsize=9)
    fig.tight_layout()
    fig.savefig(d / "sl_weights.png", dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    apps = list(rep["apps"])
    x = np.arange(len(apps))
    ax.bar(x - 0.2, [rep["apps"][a]["no_qos_ms"] for a in apps], 0.4, label="no QoS")
    ax.bar(x + 0.2, [rep["apps"][a]["qos_ms"] for a in apps], 0.4, label=qos)
    ax.set_xticks(x, apps)
    ax.set_ylabel("Run time (ms)")
    legend_outside(ax, fontsize=8)
    fig.tight_layout()
    fig.savefig(d / "apps.png", dpi=100)
    plt.close(fig)


__all__ = ["ASSUMPTIONS", "KINDS", "STEPS", "curves", "packet_available", "plot", "SOURCE_QOS", "Setup", "alltoall",
           "app", "osu_bw", "osu_latency", "qos_favours", "qos_label", "run", "sl_weights", "sl_weights_io", "sl_weights_label",
           "sl_weights_why_none"]
