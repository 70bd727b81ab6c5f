"""Unmodified MPICH programs across the testbed's host namespaces.

MPICH's own launcher (Hydra) starts one proxy per host through
``-launcher ssh -launcher-exec SCRIPT``: the script receives ``-x HOST cmd...``
and runs ``cmd`` in HOST's namespace instead of over ssh. Two networks reach
every namespace:

- the fabric (the testbed's switches), which carries the MPI traffic: UCX is
  told to use TCP on the fabric device only (``UCX_TLS=tcp``,
  ``UCX_NET_DEVICES``) and MPICH not to use shared memory between ranks
  (``MPIR_CVAR_NOLOCAL=1``; Debian's MPICH 4.0.2 is ch4:ucx, which would
  otherwise pass everything through shared memory, the namespaces sharing a
  kernel);
- a management bridge of the run's own (a Linux bridge in the root namespace,
  one veth into each host, 10.200.0.0/24) that carries Hydra's control (PMI)
  connections only, so the fabric's counters see MPI traffic and nothing else.

Everything created here (bridge, veths, the script) is removed on exit, also
after a failure. Only loopback and addresses inside the run's namespaces are
used.

Examples
--------
>>> mgmt_ip(0), mgmt_ip(23)
('10.200.0.1', '10.200.0.24')
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from ..errors import NetsteerError
from .testbed import Testbed, _run

PROGRAMS = Path(__file__).with_name("programs")
PMPI_SOURCE = Path(__file__).with_name("hosttag") / "pmpi_tag.c"
MGMT_NET = "10.200.0"
MGMT_ROOT = f"{MGMT_NET}.254"
MGMT_DEV = "mg0"  # its name inside every host namespace
TAGGERS = ("ebpf", "ovs", "auto")


OWNER = "netsteer-pid="  # the management bridge's alias: which process made it


def check_management_net() -> None:
    """Refuse, before a testbed is built, when another bridge holds the management
    network (its PMI connections would go there): a live run's (MPI emulations cannot
    run side by side: wait), or one a killed run left (delete it). Only a bridge whose
    owner process is gone is said to be safe to delete."""
    for line in _run("ip", "-o", "-4", "addr").stdout.splitlines():
        if f" {MGMT_NET}." not in line:
            continue
        dev = line.split()[1]
        alias = _run("ip", "-o", "link", "show", "dev", dev, check=False).stdout
        m = re.search(rf"alias {OWNER}(\d+)", alias)
        pid = int(m.group(1)) if m else None
        if pid is not None and pid != os.getpid() and os.path.exists(f"/proc/{pid}"):
            raise NetsteerError(f"{dev} holds {MGMT_NET}.0/24 for a run still going (process {pid}); MPI emulations "
                                "cannot run side by side: wait for it to end", field="emulate")
        why = f"its run, process {pid}, is gone" if pid is not None else "made by no netsteer run it can name"
        raise NetsteerError(f"{dev} already holds {MGMT_NET}.0/24 ({why}; if no netsteer MPI emulation is running, "
                            f"ip link del {dev})", field="emulate")


def mgmt_ip(h: int) -> str:
    """Host ``h``'s address on the management bridge (PMI only)."""
    return f"{MGMT_NET}.{h + 1}"


def check_mpich() -> str:
    """The MPICH version, or a :class:`NetsteerError` naming what is missing."""
    for tool in ("mpicc", "mpiexec", "mpichversion"):
        if shutil.which(tool) is None:
            raise NetsteerError(f"{tool} is not installed: MPI runs need MPICH (Debian mpich, libmpich-dev; "
                                "scripts/setup.sh installs them)", field="mpi")
    out = _run("mpichversion").stdout
    m = re.search(r"MPICH Version:\s*(\S+)", out)
    if not m:
        raise NetsteerError("mpichversion did not report an MPICH version: the MPI found is not MPICH", field="mpi")
    return m.group(1)


def check_program(path: str | os.PathLike) -> None:
    """Refuse, before anything starts, a program that is not an MPICH executable
    (Open MPI programs speak another launch protocol and would hang or run as
    singletons)."""
    p = Path(path)
    if not p.is_file() or not os.access(p, os.X_OK):
        raise NetsteerError(f"{p}: not an executable file", field="program")
    libs = _run("ldd", str(p), check=False).stdout
    if "libmpich" not in libs:
        other = re.search(r"(libmpi[^\s]*|libmpi_\w+)", libs)
        why = f"it links {other.group(1)}, not MPICH" if other else "it does not link MPICH (libmpich)"
        raise NetsteerError(f"{p}: {why}; compile it with MPICH's mpicc", field="program")


def compile_program(src: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """``mpicc -O2`` ``src`` into ``out_dir``; a bundled program's name (``bcast_reduce``)
    is found in :data:`PROGRAMS`."""
    check_mpich()
    s = Path(src)
    if not s.suffix and not s.exists():
        s = PROGRAMS / f"{s}.c"
    if not s.is_file():
        raise NetsteerError(f"{src}: no such C source", field="program")
    exe = Path(out_dir) / s.stem
    p = subprocess.run(["mpicc", "-O2", "-o", str(exe), str(s)], capture_output=True, text=True)
    if p.returncode != 0:
        raise NetsteerError(f"{s}: mpicc failed: {' '.join(p.stderr.split())[:300]}", field="program")
    return exe


def build_pmpi(out_dir: str | os.PathLike) -> Path:
    """Compile the PMPI interposition library (``hosttag/pmpi_tag.c``) with MPICH's
    ``mpicc``; its ``MPI_Finalize`` ends with a barrier (see the source)."""
    check_mpich()
    lib = Path(out_dir) / "libnetsteer_pmpi.so"
    p = subprocess.run(["mpicc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(PMPI_SOURCE)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise NetsteerError(f"{PMPI_SOURCE}: mpicc failed: {' '.join(p.stderr.split())[:300]}", field="hosttag")
    return lib


def read_peer_tables(tag_dir: str | os.PathLike) -> dict[int, dict]:
    """The PMPI library's per-rank tables: rank -> ``{"peers": {rank: ip}, "comms":
    {id: [world ranks]}, "prims": [(t_ns, code, comm)], "end_ns": int, "drain":
    {"changes", "waited_ns", "timeouts"}}``: ``drain`` counts the changes of
    primitive that waited for the previous primitive's unsent bytes; with the host
    OVS tag writer, ``agent`` (same keys) counts the tag changes it was asked for,
    the time the library waited for them and the answers that came too late."""
    out = {}
    for f in sorted(Path(tag_dir).glob("rank-*.tsv")):
        r = int(f.stem.split("-")[1])
        t = {"peers": {}, "comms": {}, "prims": [], "end_ns": None,
             "drain": {"changes": 0, "waited_ns": 0, "timeouts": 0}}
        for line in f.read_text().splitlines():
            x = line.split("\t")
            if x[0] == "peer":
                t["peers"][int(x[1])] = x[2]
            elif x[0] == "comm":
                t["comms"][int(x[1])] = [int(v) for v in x[3:]]
            elif x[0] == "prim":
                t["prims"].append((int(x[1]), int(x[2]), int(x[3])))
            elif x[0] == "agent":
                t["agent"] = dict(zip(("changes", "waited_ns", "timeouts"), map(int, x[1:4])))
            elif x[0] == "drain":
                t["drain"] = dict(zip(("changes", "waited_ns", "timeouts"), map(int, x[1:4])))
            elif x[0] == "end":
                t["end_ns"] = int(x[1])
        out[r] = t
    return out


def phases(table: dict, merge=(0, 9)) -> list[tuple[int, int, int]]:
    """``(code, start_ns, end_ns)`` runs of one primitive in a rank's table: a run
    lasts until another primitive starts (the last one until ``MPI_Finalize``);
    the codes in ``merge`` (none, barrier) start no run of their own, so the
    barrier between two phases counts with the phase before it.

    >>> t = {"prims": [(0, 0, 0), (10, 2, 0), (50, 9, 0), (60, 3, 0), (90, 9, 0)], "end_ns": 100}
    >>> phases(t)
    [(2, 10, 60), (3, 60, 100)]
    """
    runs: list[list[int]] = []
    for t, code, _ in table["prims"]:
        if code in merge or (runs and runs[-1][0] == code):
            continue
        if runs:
            runs[-1][2] = t
        runs.append([code, t, t])
    if runs:
        runs[-1][2] = table["end_ns"] or runs[-1][1]
    return [tuple(r) for r in runs]


_LAUNCHER = """#!/bin/sh
# Hydra's "ssh": -x HOST cmd... runs cmd in HOST's namespace (netsteer.emulate.mpi)
[ "$1" = "-x" ] && shift
host="$1"; shift
case "$host" in
{cases}
  *) echo "netsteer launcher: unknown host $host" >&2; exit 255;;
esac
"""


def _ends(text: str, n: int = 400) -> str:
    """A failed run's output on one line, its start and its end: the first error (a
    rank, a proxy) comes first, mpiexec's own teardown messages come last."""
    flat = " ".join(text.split())
    return flat if len(flat) <= 2 * n else f"{flat[:n]} ... {flat[-n:]}"


class MpiHosts:
    """The management network and Hydra's launcher for a built :class:`Testbed`;
    use as a context manager, then :meth:`run`.

    Parameters
    ----------
    tb : Testbed
        Built (inside its ``with``).
    env : dict, optional
        Extra environment for every rank (set in each namespace by the launcher,
        e.g. ``LD_PRELOAD`` of the tagging library).
    tags : bool
        Tag every frame at the hosts (the PMPI library and a tag writer).
    tagger : {"ebpf", "ovs", "auto"}
        The tag writer: the eBPF program on the host's egress, the host's own
        Open vSwitch bridge (:mod:`.hosttag.host_ovs`; needs a testbed built with
        ``host_bridges=True``), or eBPF where it attaches and the host bridge
        elsewhere. A host where neither can tag is refused before anything runs.
        :attr:`taggers` says which one each host got.
    nice : int
        The ranks' niceness: MPICH over UCX polls while it waits, so many ranks on
        few cores would take the CPU from the switches that carry their traffic.
    """

    def __init__(self, tb: Testbed, env: dict[str, str] | None = None, *, pmpi: bool = True, tags: bool = False,
                 tagger: str = "ebpf", nice: int = 0):
        if tagger not in TAGGERS:
            raise NetsteerError(f"{tagger!r} is not a tag writer; there is {', '.join(TAGGERS)}", field="tagger")
        if tags and tagger == "ovs" and not tb.host_bridges:
            raise NetsteerError("the host OVS tag writer needs a testbed built with host_bridges=True", field="tagger")
        self.tb = tb
        self.tagger = tagger
        self.taggers: dict[int, str] = {}
        self.host_taggers: list = []
        self._bpf_obj = None
        self.nice = nice
        self.env = dict(env or {})
        self.pmpi = pmpi or tags
        self.tags = tags
        self.writers: list = []
        self.bridge = f"{tb.prefix}mg"
        self.veths: list[str] = []
        self.dir = None

    def __enter__(self) -> "MpiHosts":
        check_mpich()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _build(self) -> None:
        tb = self.tb
        check_management_net()  # again: a run may have started since the caller checked
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        # its owner, so that another run's check can tell a live run's bridge from a leftover
        _run("ip", "link", "set", "dev", self.bridge, "alias", f"{OWNER}{os.getpid()}")
        _run("ip", "addr", "add", f"{MGMT_ROOT}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        cases = []
        self.dir = tempfile.mkdtemp(prefix=f"netsteer-{tb.prefix}-mpi-")
        self.tag_dir = Path(self.dir) / "tags"
        self.tag_dir.mkdir()
        if self.pmpi:
            self.env.update({"LD_PRELOAD": str(build_pmpi(self.dir)), "NETSTEER_TAG_DIR": str(self.tag_dir)})
        for h, ns in enumerate(tb.namespaces):
            root_end = f"{tb.prefix}m{h}"
            self.veths.append(root_end)  # recorded first: an interrupted ``ip link add`` may have made it
            _run("ip", "link", "add", root_end, "type", "veth", "peer", "name", MGMT_DEV, "netns", ns)
            _run("ip", "link", "set", root_end, "master", self.bridge, "up")
            _run("ip", "-n", ns, "addr", "add", f"{mgmt_ip(h)}/24", "dev", MGMT_DEV)
            _run("ip", "-n", ns, "link", "set", MGMT_DEV, "up")
            # TCP on the fabric: segments no larger than the fabric's frames, checksummed
            _run("ip", "netns", "exec", ns, "ethtool", "-K", tb.host_dev[h], "tso", "off", "gso", "off", "gro", "off",
                 check=False)
            env = {"UCX_NET_DEVICES": tb.host_dev[h], "NETSTEER_FABRIC_IP": tb.ips[h], **self.env}
            if self.tags:
                env.update(self._tagger(h, ns))
            envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            cases.append(f"  {mgmt_ip(h)}) exec ip netns exec {ns} nice -n {self.nice} env {envs} sh -c \"$*\";;")
        script = Path(self.dir) / "launch.sh"
        script.write_text(_LAUNCHER.format(cases="\n".join(cases)))
        script.chmod(0o755)
        self.script = str(script)

    def _tagger(self, h: int, ns: str) -> dict[str, str]:
        """Host ``h``'s tag writer, attached; the environment that tells its PMPI library."""
        if self.tagger != "ovs":
            # the eBPF tag writer on the host's fabric egress; the PMPI library writes its maps
            from .hosttag.writer import TagWriter, build

            try:
                if self._bpf_obj is None:
                    self._bpf_obj = build(self.dir)
                w = TagWriter(ns, self.tb.host_dev[h], self._bpf_obj, Path(self.dir) / f"bpf-h{h}")
                w.attach()
            except NetsteerError:
                if self.tagger == "ebpf" or not self.tb.host_bridges:
                    raise
            else:
                self.writers.append(w)
                self.taggers[h] = "ebpf"
                return {"NETSTEER_TAG_PIN": str(w.pin / "tc" / "globals")}
        from .hosttag.host_ovs import HostOvsTagger

        t = HostOvsTagger(self.tb.host_bridges[h], Path(self.dir) / f"tag-h{h}.sock").start()
        self.host_taggers.append(t)
        self.taggers[h] = "ovs"
        return {"NETSTEER_TAG_SOCK": t.path}

    def tagger_report(self) -> dict:
        """Which writer each host got; for host OVS: tag changes, swap times, errors."""
        out: dict = {"ebpf_hosts": sorted(h for h, k in self.taggers.items() if k == "ebpf"),
                     "ovs_hosts": sorted(h for h, k in self.taggers.items() if k == "ovs")}
        if self.host_taggers:
            s = sorted(x for t in self.host_taggers for x in t.install_s)
            out.update({"ovs_changes": sum(t.changes for t in self.host_taggers),
                        "ovs_swap_median_s": s[len(s) // 2] if s else None,
                        "ovs_errors": [e for t in self.host_taggers for e in t.errors]})
        return out

    def command(self, program: str, args: list[str], hosts: list[int], ppn: int = 1) -> list[str]:
        """The ``mpiexec`` command line: ``ppn`` ranks on each of ``hosts``, in order."""
        hl = ",".join(f"{mgmt_ip(h)}:{ppn}" for h in hosts)
        return ["mpiexec", "-launcher", "ssh", "-launcher-exec", self.script, "-iface", self.bridge,
                "-hosts", hl, "-n", str(len(hosts) * ppn), program, *args]

    def run(self, program: str, args: list[str], hosts: list[int], *, ppn: int = 1, timeout: float = 120.0,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        """Run ``program`` (an MPICH executable, checked first) on ``hosts``; the ranks'
        traffic crosses the fabric. A failure or a timeout raises :class:`NetsteerError`
        with the end of the output; the whole process group is killed on a timeout."""
        check_program(program)
        e = dict(os.environ)
        e.update({"UCX_TLS": "tcp", "MPIR_CVAR_NOLOCAL": "1", "HYDRA_LAUNCHER": "ssh"})
        e.update(env or {})
        for k in ("UCX_NET_DEVICES", "LD_PRELOAD", "NETSTEER_FABRIC_IP"):  # set per namespace by the launcher
            e.pop(k, None)
        # output to files, not pipes: a rank's helper thread may keep a pipe open past
        # mpiexec's exit, and the exit status is what says the job ended
        out_path, err_path = Path(self.dir) / "stdout", Path(self.dir) / "stderr"
        with open(out_path, "w") as fo, open(err_path, "w") as fe:
            proc = subprocess.Popen(self.command(program, args, hosts, ppn), stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                    text=True, env=e, start_new_session=True, cwd=self.dir)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        out, err = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
        if proc.returncode is None or proc.returncode < 0 and proc.returncode == -signal.SIGKILL:
            raise NetsteerError(f"{Path(program).name} did not finish within {timeout:g} s: "
                                f"{_ends(err or out)}", field="program")
        if proc.returncode != 0:
            raise NetsteerError(f"{Path(program).name} failed (exit {proc.returncode}): "
                                f"{_ends(err or out)}", field="program")
        return subprocess.CompletedProcess(proc.args, 0, out, err)

    def close(self) -> None:
        # ranks left behind by a killed mpiexec: only processes inside this run's namespaces
        for ns in self.tb.namespaces:
            for pid in _run("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for w in self.writers:  # after the ranks: they hold the maps open
            w.close()
        self.writers = []
        for t in self.host_taggers:
            t.close()
        self.host_taggers = []
        for v in self.veths:
            _run("ip", "link", "del", v, check=False)
        self.veths = []
        _run("ip", "link", "del", self.bridge, check=False)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


__all__ = ["MpiHosts", "build_pmpi", "check_mpich", "check_program", "compile_program", "mgmt_ip", "phases",
           "read_peer_tables"]
