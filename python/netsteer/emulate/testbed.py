"""A topology as a real emulated network: namespaces, Open vSwitch, ``tc`` rates.

Hosts are network namespaces; every switch (a ToR, a core switch, a circuit
switch) is an Open vSwitch bridge with the userspace datapath
(``datapath_type=netdev``), its OpenFlow port numbers the topology's port
numbers; every link is two veth pairs joined in the middle by ``tc mirred``,
each direction shaped by ``tc`` to the link's bandwidth times ``scale`` (the
userspace datapath sends past its own ports' qdiscs, see
:meth:`Testbed._shaped_link`). A circuit switch is a bridge that holds
port-to-port flows only (the driver's crossbar). Direct ``ip``/``ovs-vsctl`` calls,
not Mininet: the testbed must carry the topology's own port numbers (intents
name ports) and nothing Mininet adds (controllers, its own naming) is needed.

Everything is created with the run's own prefix and removed by :meth:`Testbed.close`
(also on failure, through the context manager), processes included: only those
this testbed started, by their pid.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time


from ..errors import NetsteerError
from ..drivers.openflow.flows import host_ip

# what two shared cores carry through the userspace datapath (measured: ~590 Mbit/s
# across two bridges); the fastest link is scaled to this
MAX_RATE_BPS = 100e6
MIN_RATE_BPS = 0.5e6  # below this tc shaping and iperf3 pacing are too coarse
MAX_HOSTS = 32
OVS_CTL = "/usr/share/openvswitch/scripts/ovs-ctl"

_started_ovs = False


def _run(*cmd: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {' '.join((p.stderr or p.stdout).split())[:300]}")
    return p


def ovs_running() -> bool:
    return shutil.which("ovs-vsctl") is not None and _run("ovs-vsctl", "--timeout=3", "show", check=False).returncode == 0


def ensure_ovs() -> None:
    """Start Open vSwitch if it is installed and not running (stopped at exit)."""
    global _started_ovs
    if ovs_running():
        return
    if not os.path.exists(OVS_CTL):
        raise NetsteerError("Open vSwitch is not installed (Debian openvswitch-switch; scripts/setup.sh installs it)",
                            field="emulate")
    _run(OVS_CTL, "start", "--system-id=random", check=False)
    if not ovs_running():
        raise NetsteerError("Open vSwitch did not start (ovs-ctl start)", field="emulate")
    _started_ovs = True
    import atexit
    atexit.register(_stop_ovs)


def _stop_ovs() -> None:
    """Stop the Open vSwitch this process started, unless another run (another
    process: a test suite beside this one) still has bridges on it."""
    if _run("ovs-vsctl", "--timeout=3", "list-br", check=False).stdout.split():
        return
    _run(OVS_CTL, "stop", check=False)


def check_rate(max_rate_bps: float, field: str = "rate") -> None:
    """Refuse a fastest-link rate that the testbed cannot hold (``field`` names it:
    ``--max-rate`` on the command line)."""
    if not MIN_RATE_BPS <= max_rate_bps <= MAX_RATE_BPS:
        raise NetsteerError(f"the fastest emulated link's rate, {max_rate_bps / 1e6:g} Mbit/s, is outside "
                            f"{MIN_RATE_BPS / 1e6:g} to {MAX_RATE_BPS / 1e6:g} Mbit/s", field=field)


def check_machine(topo, max_hosts: int = MAX_HOSTS, max_rate_bps: float = MAX_RATE_BPS) -> float:
    """Refuse, before anything starts, what this machine cannot emulate; returns
    the rate scale (every link's bandwidth is multiplied by it): the fastest link
    gets ``max_rate_bps`` (lower it when many links carry traffic at once, so the
    two cores forward all of it)."""
    if os.geteuid() != 0:
        raise NetsteerError("emulation creates namespaces and bridges: run it as root", field="emulate")
    for tool in ("ip", "tc", "ethtool", "iperf3", "ovs-vsctl", "ovs-ofctl"):
        if shutil.which(tool) is None:
            raise NetsteerError(f"{tool} is not installed (scripts/setup.sh installs it)", field="emulate")
    if topo.n_hosts > max_hosts:
        raise NetsteerError(f"{topo.name} has {topo.n_hosts} hosts; this machine emulates at most {max_hosts} "
                            "namespaces", field="topology")
    bw = topo.link_bandwidth
    check_rate(max_rate_bps)
    scale = min(1.0, max_rate_bps / float(bw.max()))
    if float(bw.min()) * scale < MIN_RATE_BPS:
        raise NetsteerError(f"link rates from {bw.min() / 1e9:g} to {bw.max() / 1e9:g} Gbit/s cannot all be emulated: "
                            f"scaled to at most {max_rate_bps / 1e6:g} Mbit/s the slowest gets "
                            f"{bw.min() * scale / 1e6:.3g} Mbit/s, below {MIN_RATE_BPS / 1e6:g}", field="topology")
    return scale


def dpid_of(node: int) -> int:
    """The datapath id of the bridge of topology node ``node`` (never 0).

    >>> hex(dpid_of(5))
    '0x4e5300000005'
    """
    return 0x4E5300000000 + node


def host_mac(h: int) -> str:
    """Host ``h``'s true MAC: the one the UnisonFlow controller restores at the last
    switch (:func:`netsteer.unisonflow.tags.host_mac`), so tags and hosts share one scheme.

    >>> host_mac(258)
    '02:00:00:00:01:02'
    """
    from ..unisonflow.tags import format_mac, host_mac as true_mac

    return format_mac(true_mac(h))


class Testbed:
    """Build ``topo`` for real (module text); use as a context manager.

    Attributes
    ----------
    scale : float
        Emulated rate / topology rate.
    bridges : dict
        Switch node -> bridge name.
    host_bridges : dict
        With ``host_bridges=True``: host -> its own bridge (a host OVS, as the hybrid
        source's servers run), port 1 to the host, port 2 to its link; it forwards
        between the two until rules go above (the fallback tag writer,
        :mod:`.hosttag.host_ovs`).
    namespaces : list of str
        Host index -> namespace.
    """

    __test__ = False  # not a pytest class

    def __init__(self, topo, *, progress=lambda msg: None, max_rate_bps: float = MAX_RATE_BPS,
                 host_bridges: bool = False):
        self.topo = topo
        self.want_host_bridges = host_bridges
        self.host_bridges: dict[int, str] = {}
        self.scale = check_machine(topo, max_rate_bps=max_rate_bps)
        ensure_ovs()
        self.prefix = "ns" + secrets.token_hex(2)
        self.progress = progress
        self.bridges: dict[int, str] = {}
        self.namespaces: list[str] = []
        self.veths: list[str] = []
        self.procs: list[subprocess.Popen] = []
        spr = int(topo.meta.get("servers_per_rack", topo.n_hosts))
        self.ips = [host_ip(h // spr, h % spr) for h in range(topo.n_hosts)]
        self.host_dev: dict[int, str] = {}

    def __enter__(self) -> "Testbed":
        try:
            self.build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def build(self) -> None:
        t = self.topo
        n = t.n_hosts
        # every name is recorded before it is created: an interrupt (Ctrl-C reaches the
        # ``ip`` child too) may leave it half made, and close() removes what it finds
        for h in range(n):
            ns = f"{self.prefix}-h{h}"
            self.namespaces.append(ns)
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        for node in t.switches.tolist():  # a topology's hosts need not be its first nodes
            br = f"{self.prefix}s{node}"
            self.bridges[node] = br
            _add_bridge(br, dpid_of(node))
        if self.want_host_bridges:
            for h in range(n):
                self.host_bridges[h] = f"{self.prefix}b{h}"
                _add_bridge(self.host_bridges[h], 0x4E4800000000 + h)
        self.progress(f"{n} namespaces, {len(self.bridges)} bridges")
        vsctl = []
        for link in range(t.n_links):
            a, pa, b, pb = (int(x) for x in (t.link_a[link], t.link_a_port[link], t.link_b[link], t.link_b_port[link]))
            rate = float(t.link_bandwidth[link]) * self.scale
            ends = (f"{self.prefix}l{link}a", f"{self.prefix}l{link}b")
            mids = (f"{self.prefix}l{link}x", f"{self.prefix}l{link}y")
            self._shaped_link(ends, mids, rate)
            for end, node, port in ((ends[0], a, pa), (ends[1], b, pb)):
                h = int(t.host_index[node])  # -1: a switch
                if h >= 0 and not self.host_bridges:
                    self._host_end(h, end)
                elif h >= 0:
                    # the host's own bridge: port 2 its link, port 1 a veth into the host
                    inner, outer = f"{self.prefix}b{h}i", f"{self.prefix}b{h}o"
                    self.veths += [inner, outer]
                    _run("ip", "link", "add", inner, "type", "veth", "peer", "name", outer)
                    self._host_end(h, inner)
                    for dev, p in ((outer, 1), (end, 2)):
                        vsctl += self._switch_port(self.host_bridges[h], dev, p)
                else:
                    vsctl += self._switch_port(self.bridges[node], end, port)
        if vsctl:
            with _receive_buffers():
                _run("ovs-vsctl", *vsctl)
        for br in self.host_bridges.values():
            _run("ovs-ofctl", "-O", "OpenFlow14", "add-flows", br, "-",
                 input="priority=1,in_port=1 actions=output:2\npriority=1,in_port=2 actions=output:1\n")
        self._neighbours()
        self.progress(f"{t.n_links} links at {self.scale:g} x their rate")

    @staticmethod
    def _switch_port(br: str, dev: str, port: int) -> list[str]:
        """``dev`` ready for a bridge; the ``ovs-vsctl`` arguments that add it as ``port``."""
        _run("ethtool", "-K", dev, "tx", "off", "gro", "off", "gso", "off", "tso", "off", check=False)
        _run("ip", "link", "set", dev, "up", "mtu", "1500")
        return ["--", "add-port", br, dev, "--", "set", "interface", dev, f"ofport_request={port}"]

    def _shaped_link(self, ends, mids, rate: float) -> None:
        """One link: ``ends[0] ~ mids[0] -> mids[1] ~ ends[1]`` and back. Open vSwitch's
        userspace datapath sends on its ports past their qdiscs, so the rate cannot be
        set on a switch's own port: each direction crosses the middle pair, whose
        ingress is redirected (tc mirred) to the other middle end's egress, shaped.

        Every end starts in the root namespace; a host's end is moved into its own.
        """
        for end, mid in zip(ends, mids):
            # recorded first (see build); what is still in the root namespace is deleted at teardown
            self.veths += [end, mid]
            _run("ip", "link", "add", end, "type", "veth", "peer", "name", mid)
        for mid, other in ((mids[0], mids[1]), (mids[1], mids[0])):
            _run("ethtool", "-K", mid, "tx", "off", "gro", "off", "gso", "off", "tso", "off", check=False)
            _run("ip", "link", "set", mid, "up", "mtu", "1500")
            _shape(other, rate)
            _run("tc", "qdisc", "add", "dev", mid, "handle", "ffff:", "ingress")
            _run("tc", "filter", "add", "dev", mid, "parent", "ffff:", "protocol", "all", "u32", "match", "u32", "0", "0",
                 "action", "mirred", "egress", "redirect", "dev", other)

    def _host_end(self, h: int, dev: str) -> None:
        ns = self.namespaces[h]
        _run("ip", "link", "set", dev, "netns", ns)
        _run("ip", "-n", ns, "link", "set", dev, "address", host_mac(h), "up")
        _run("ip", "-n", ns, "addr", "add", f"{self.ips[h]}/10", "dev", dev)
        _run("ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", check=False)
        self.host_dev[h] = dev

    def _neighbours(self) -> None:
        """Static ARP: the switches forward IP only."""
        for h, ns in enumerate(self.namespaces):
            cmds = [f"neigh replace {ip} lladdr {host_mac(o)} dev {self.host_dev[h]} nud permanent"
                    for o, ip in enumerate(self.ips) if o != h]
            if cmds:
                _run("ip", "-n", ns, "-batch", "-", input="\n".join(cmds) + "\n")

    def connect(self, port: int, nodes=None) -> None:
        """Point the bridges of ``nodes`` (default: all) at a controller on loopback
        ``port``; a lost connection is retried within a second (``max_backoff``)."""
        for node in sorted(self.bridges) if nodes is None else nodes:
            br = self.bridges[node]
            # packet-ins at most 200/s (bursts of 50) a bridge: frames of a new tag are
            # forwarded by the default rules and also tell the controller, and thousands
            # of copies a second would starve the application's bundles (only the copies
            # beyond the limit are dropped, never the frames)
            _run("ovs-vsctl", "set-controller", br, f"tcp:127.0.0.1:{port}", "--",
                 "set", "controller", br, "max_backoff=1000", "connection_mode=out-of-band",
                 "controller_rate_limit=200", "controller_burst_limit=50")

    def disconnect(self, node: int) -> None:
        """Drop the bridge's OpenFlow connection: it is pointed at a loopback port
        nobody listens on, and keeps trying it (fail_mode secure keeps its flows;
        removing the controller altogether would make Open vSwitch flush them)."""
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]
        self.connect(dead, [node])

    def set_link(self, link: int, up: bool, node: int | None = None) -> str:
        """Bring the veth of ``link``'s end at switch ``node`` (default: its first
        switch end) down or up, as a cable pulled or plugged at that switch: the
        bridge's port loses its carrier (OpenFlow ``LINK_DOWN``). Returns the device."""
        t = self.topo
        ends = [(int(t.link_a[link]), f"{self.prefix}l{link}a"), (int(t.link_b[link]), f"{self.prefix}l{link}b")]
        mine = [dev for n, dev in ends if n in self.bridges and (node is None or n == node)]
        if not mine:
            raise ValueError(f"link {link} has no end at a switch" + ("" if node is None else f" {node}"))
        _run("ip", "link", "set", mine[0], "up" if up else "down")
        return mine[0]

    @staticmethod
    def settle() -> None:
        """Put committed OpenFlow changes in force in the data plane now.

        The userspace datapath forwards by cached flows that its revalidator threads
        bring up to date after a flow-mod, apart from the OpenFlow channel: a bundle's
        reply says the tables changed, not that packets follow them. Purging the cache
        sends the next packet of every flow through the new tables.
        """
        r = _run("ovs-appctl", "--timeout=5", "revalidator/purge", check=False)
        if r.returncode != 0:
            raise NetsteerError(f"ovs-appctl revalidator/purge failed: {r.stderr.strip() or r.returncode}",
                                field="emulate")

    def exec(self, h: int, *cmd: str) -> list[str]:
        """A command line that runs ``cmd`` in host ``h``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[h], *cmd]

    def start(self, h: int, *cmd: str) -> subprocess.Popen:
        """Start ``cmd`` in host ``h``'s namespace; it is killed at teardown."""
        p = subprocess.Popen(self.exec(h, *cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # its own session: ip netns exec and iperf3
                except ProcessLookupError:
                    pass
                p.wait()
        self.procs = []
        for br in [*self.bridges.values(), *self.host_bridges.values()]:
            _run("ovs-vsctl", "--if-exists", "del-br", br, check=False)
        self.bridges, self.host_bridges = {}, {}
        for v in self.veths:
            _run("ip", "link", "del", v, check=False)
        self.veths = []
        for ns in self.namespaces:
            _run("ip", "netns", "del", ns, check=False)
        self.namespaces = []


def _add_bridge(br: str, dpid: int) -> None:
    _run("ovs-vsctl", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev", "fail_mode=secure",
         "protocols=OpenFlow13,OpenFlow14", "other-config:disable-in-band=true",
         f"other-config:datapath-id={dpid:016x}")


class _receive_buffers:
    """While ports are added, sockets get large receive buffers: the userspace
    datapath reads its ports from the thread that also commits bundles, and a
    5000-flow bundle must not overflow a port's default buffer (about 90 frames)."""

    PATH = "/proc/sys/net/core/rmem_default"
    BYTES = 8 << 20

    def __enter__(self):
        with open(self.PATH) as fh:
            self.old = fh.read().strip()
        with open(self.PATH, "w") as fh:
            fh.write(str(max(self.BYTES, int(self.old))))

    def __exit__(self, *exc):
        with open(self.PATH, "w") as fh:
            fh.write(self.old)


def _shape(dev: str, rate_bps: float, ns: str | None = None) -> None:
    """Egress rate of ``dev``: a token bucket (see the queue below)."""
    rate = max(int(rate_bps), 8000)
    burst = max(rate // 8 // 250, 3200)  # 4 ms worth of bytes, at least two packets
    # a deep queue (0.5 s): the userspace datapath forwards in bursts after it commits a
    # large bundle, and a shallow queue would drop what a hardware switch would not
    limit = max(rate // 8 // 2, 3 * 1514)
    pre = ["ip", "netns", "exec", ns] if ns else []
    _run(*pre, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{rate}bit", "burst", str(burst),
         "limit", str(limit))


def leftovers(prefix: str) -> list[str]:
    """Namespaces, bridges and links of ``prefix`` still there (tests check none)."""
    out = [ns.split()[0] for ns in _run("ip", "netns", "list").stdout.splitlines() if ns.startswith(prefix)]
    out += [b for b in _run("ovs-vsctl", "list-br", check=False).stdout.split() if b.startswith(prefix)]
    out += [ln.split(":")[1].strip().split("@")[0] for ln in _run("ip", "-o", "link").stdout.splitlines()
            if ln.split(":")[1].strip().startswith(prefix)]
    return out


def iperf_json(proc: subprocess.Popen, timeout: float) -> dict:
    """Wait for an iperf3 started with ``--json`` and return its report."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        return {"error": " ".join((err or out or "no output").split())[:300]}


def wait_port(tb: Testbed, h: int, port: int, timeout: float = 5.0) -> None:
    """Wait until host ``h`` listens on TCP ``port`` (iperf3's server is up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = _run(*tb.exec(h, "ss", "-ltn"), check=False).stdout
        if f":{port} " in out:
            return
        time.sleep(0.02)
    raise RuntimeError(f"iperf3 did not listen on {tb.ips[h]}:{port}")


__all__ = ["Testbed", "check_machine", "ensure_ovs", "leftovers", "iperf_json", "wait_port"]
