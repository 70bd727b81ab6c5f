"""Run OpenSM on an ibsim fabric, and InfiniBand diagnostics against it.

ibsim simulates the fabric described by a net file; programs built on libibumad
(OpenSM, ``ibroute``, ``ibnetdiscover``, ``saquery``) reach it when
``libumad2sim.so`` is preloaded. The preload talks to ibsim over abstract
unix sockets named after ``IBSIM_SOCKNAME`` (``<name>:ctl``), so each
:class:`IbFabric` picks its own name and several fabrics can run at once.
``SIM_HOST`` chooses the node a client attaches to (default: the first node in
the net file). umad2sim creates ``./sys-<pid>`` directories, so every process
runs in the fabric's work directory.

OpenSM is started with a fresh cache (``OSM_CACHE_DIR``), an empty config file,
sweeping off (``-s 0``), ``-D 0x43`` (errors, info, routing: the LFT dump) and
forced log flushing (``-d 2``), dumps into the work directory, and is ready when
its log says ``SUBNET UP``. Readiness of ibsim is its control socket appearing in
``/proc/net/unix``. All waits are bounded polls on those conditions.

Examples
--------
A sketch (needs ibsim, so not run as a doctest)::

    with IbFabric("net", workdir, engine="ftree") as fab:
        lft, lids = read_lft_dump(fab.lfts_dump, topo)
        print(fab.ibroute(1))
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
_counter = itertools.count()
_IBROUTE_RANGE = re.compile(r"Unicast lids \[0x[0-9a-f]+-0x([0-9a-f]+)\]")
_IBROUTE_FOOTER = re.compile(r"(\d+)( valid lids dumped.*)$")
_ENGINE_USED = re.compile(r"osm_ucast_mgr_process: (\S+) tables configured on all switches")


class FabricError(RuntimeError):
    """ibsim or OpenSM did not come up, or a diagnostic tool failed."""


def tools_available() -> list[str]:
    """Names of the programs this module needs that are missing (empty when all are there)."""
    missing = [t for t in ("ibsim", "opensm", "ibroute", "ibnetdiscover") if not shutil.which(t)]
    if not os.path.exists(UMAD2SIM):
        missing.append(UMAD2SIM)
    return missing


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no output)"


def _stop(proc: subprocess.Popen | None, grace: float) -> None:
    """SIGTERM the process group ``proc`` leads, then SIGKILL it if it lingers."""
    if proc is None or proc.returncode is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)  # started with start_new_session: pgid == pid
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait(timeout=grace)


class IbFabric:
    """Context manager: ibsim on ``net_file`` with OpenSM on top.

    Parameters
    ----------
    net_file : str or Path
        ibsim net file.
    workdir : str or Path, optional
        Where logs, dumps and OpenSM's cache go; a temporary directory (removed on
        exit) when omitted.
    engine : str
        OpenSM routing engine(s) for ``-R`` (``ftree``, ``minhop``, ``file`` ...).
    lfts_file : str or Path, optional
        ``-U`` file for the ``file`` engine.
    partitions : str or Path, optional
        ``-P`` file; without it OpenSM gets a path that does not exist, which
        means ``Default=0x7fff : ALL=full``.
    sm_host : str, optional
        Net-file node the SM attaches to (``SIM_HOST``).
    require_engine : bool
        Raise :class:`FabricError` when OpenSM fell back to another engine.
    timeout : float
        Seconds to wait for each of ibsim and OpenSM to come up.
    opensm_args : sequence of str
        Extra OpenSM arguments.
    ibsim_args : sequence of str
        Extra ibsim arguments, e.g. size flags from
        :func:`netsteer.topology.ibsim_net.ibsim_args` for large fabrics.

    Attributes
    ----------
    workdir, lfts_dump, guid2lid, opensm_log : Path
    engine_used : str, the engine OpenSM's log says configured the switches
    """

    def __init__(
        self,
        net_file: str | Path,
        workdir: str | Path | None = None,
        *,
        engine: str = "ftree",
        lfts_file: str | Path | None = None,
        partitions: str | Path | None = None,
        sm_host: str | None = None,
        require_engine: bool = True,
        timeout: float = 60.0,
        opensm_args: tuple[str, ...] = (),
        ibsim_args: tuple[str, ...] = (),
    ):
        self.net_file = Path(net_file).resolve()
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="netsteer-ib-")).resolve()
        self.engine = engine
        self.lfts_file = Path(lfts_file).resolve() if lfts_file else None
        self.partitions = Path(partitions).resolve() if partitions else None
        self.sm_host = sm_host
        self.require_engine = require_engine
        self.timeout = timeout
        self.opensm_args = tuple(opensm_args)
        self.ibsim_args = tuple(ibsim_args)
        self.sockname = f"netsteer{os.getpid()}x{next(_counter)}"
        self.ibsim: subprocess.Popen | None = None
        self.opensm: subprocess.Popen | None = None
        self.engine_used = ""
        self._port_cache: dict[int, tuple[str, int, str]] = {}

    # -- paths ---------------------------------------------------------------
    @property
    def lfts_dump(self) -> Path:
        return self.workdir / "opensm-lfts.dump"

    @property
    def guid2lid(self) -> Path:
        return self.workdir / "cache" / "guid2lid"

    @property
    def opensm_log(self) -> Path:
        return self.workdir / "opensm.log"

    def env(self, sim_host: str | None = None) -> dict[str, str]:
        """Environment for a libibumad program that should talk to this fabric."""
        env = dict(os.environ)
        env.update(
            LD_PRELOAD=UMAD2SIM,
            IBSIM_SOCKNAME=self.sockname,
            OSM_CACHE_DIR=str(self.workdir / "cache"),
            OSM_TMP_DIR=str(self.workdir),
        )
        env.pop("IBSIM_SERVER_NAME", None)  # set, it would switch umad2sim to TCP
        host = sim_host or self.sm_host
        if host:
            env["SIM_HOST"] = host
        else:
            env.pop("SIM_HOST", None)
        return env

    # -- start/stop ----------------------------------------------------------
    def __enter__(self) -> "IbFabric":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        missing = tools_available()
        if missing:
            raise FabricError(f"missing InfiniBand tools: {', '.join(missing)}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        cache = self.workdir / "cache"
        if cache.exists():
            shutil.rmtree(cache)  # a stale guid2lid would pin old LIDs
        cache.mkdir()
        # stale outputs of an earlier run here would satisfy the readiness checks
        for stale in (self.lfts_dump, self.opensm_log, self.workdir / "opensm.out", self.workdir / "ibsim.log"):
            stale.unlink(missing_ok=True)
        self._start_ibsim()
        self._start_opensm()

    def _popen(self, argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
        with open(log, "wb") as out:
            return subprocess.Popen(
                argv,
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() kills it whole
            )

    def _start_ibsim(self) -> None:
        env = dict(os.environ, IBSIM_SOCKNAME=self.sockname)
        env.pop("LD_PRELOAD", None)
        log = self.workdir / "ibsim.log"
        self.ibsim = self._popen(["ibsim", "-s", "-n", *self.ibsim_args, str(self.net_file)], log, env)
        ctl = f"@{self.sockname}:ctl"
        self._wait(lambda: ctl in _unix_sockets(), self.ibsim, log, "ibsim control socket")

    def _start_opensm(self) -> None:
        conf = self.workdir / "opensm.conf"
        conf.write_text("")  # defaults only: no /etc/opensm/opensm.conf
        argv = [
            "opensm",
            "-F", str(conf),
            "-R", self.engine,
            "-s", "0",
            "-D", "0x43",
            "-d", "2",
            "-e",
            "-f", str(self.opensm_log),
            "--dump_files_dir", str(self.workdir),
            "-P", str(self.partitions or self.workdir / "no-partitions.conf"),
        ]  # fmt: skip
        if self.lfts_file:
            argv += ["-U", str(self.lfts_file)]
        argv += list(self.opensm_args)
        out = self.workdir / "opensm.out"
        self.opensm = self._popen(argv, out, self.env())
        self._wait(lambda: "SUBNET UP" in _read(self.opensm_log), self.opensm, self.opensm_log, "SUBNET UP")
        m = _ENGINE_USED.search(_read(self.opensm_log))
        self.engine_used = m.group(1) if m else ""
        wanted = self.engine.split(",")[0]
        if self.require_engine and self.engine_used != wanted:
            raise FabricError(
                f"OpenSM configured the switches with {self.engine_used or 'no'} engine, "
                f"not {wanted}:\n{_tail(self.opensm_log)}"
            )

    def _wait(self, ready, proc: subprocess.Popen, log: Path, what: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not ready():
            if proc.poll() is not None:
                raise FabricError(f"{proc.args[0]} exited ({proc.returncode}) before {what}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise FabricError(f"no {what} after {self.timeout:.0f}s:\n{_tail(log)}")
            time.sleep(0.05)  # poll interval of a bounded wait on a real condition

    def stop(self, grace: float = 5.0) -> None:
        """Stop OpenSM, then ibsim (whole process groups); idempotent."""
        _stop(self.opensm, grace)
        _stop(self.ibsim, grace)
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- tools ---------------------------------------------------------------
    def run(self, argv: list[str], *, timeout: float = 60.0, sim_host: str | None = None) -> str:
        """Run a libibumad tool against this fabric; its stdout, or :class:`FabricError`."""
        try:
            p = subprocess.run(
                argv,
                cwd=self.workdir,
                env=self.env(sim_host),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise FabricError(f"{' '.join(argv)} took more than {timeout}s") from None
        if p.returncode != 0:
            raise FabricError(f"{' '.join(argv)} exited {p.returncode}: {p.stderr.strip()[-500:]}")
        return p.stdout

    def ibroute(self, lid: int, **kw) -> str:
        """``ibroute LID``: the LFT installed in the switch with that LID.

        infiniband-diags' ``ibroute`` reads LFT blocks ``block < ALIGN(top, 64) / 64``,
        so when the switch's LinearFDBTop is a multiple of 64 it never prints the
        top LID (older versions used ``<=``). That entry is read here with
        ``smpdump LID 0x19 BLOCK`` (the LinearForwardingTable attribute) and added
        before the footer in ibroute's own line format.
        """
        out = self.run(["ibroute", str(lid)], **kw)
        m = _IBROUTE_RANGE.match(out)
        top = int(m.group(1), 16) if m else 0
        if not top or top % 64 or f"\n0x{top:04x} " in out:
            return out
        block = self.run(["smpdump", str(lid), "0x19", str(top // 64)], **kw).split()
        port = int(block[0][:2], 16)  # the block's first byte is LID top's port
        if port == 255:
            return out  # no route: ibroute would not print it either
        lines = out.rstrip("\n").split("\n")
        kind, guid, desc = self._port_info(top, **kw)
        lines.insert(-1, f"0x{top:04x} {port:03d} : ({kind} portguid 0x{guid:016x}: '{desc}')")
        footer = _IBROUTE_FOOTER.match(lines[-1])
        if footer:
            lines[-1] = f"{int(footer.group(1)) + 1}{footer.group(2)}"
        return "\n".join(lines) + "\n"

    def _port_info(self, lid: int, **kw) -> tuple[str, int, str]:
        """(node type, port GUID, description) of the port with ``lid``, via smpquery."""
        if lid not in self._port_cache:
            info = self.run(["smpquery", "nodeinfo", str(lid)], **kw)
            fields = dict(re.findall(r"^(\w+):\.+(.*)$", info, re.M))
            desc = self.run(["smpquery", "nodedesc", str(lid)], **kw)
            d = re.search(r"Node Description:\.+(.*)$", desc, re.M)
            self._port_cache[lid] = (fields["NodeType"], int(fields["PortGuid"], 16), d.group(1) if d else "")
        return self._port_cache[lid]

    def ibroute_all(self, lids: list[int], **kw) -> str:
        """Concatenated ``ibroute`` output for several switches (an LFT dump itself)."""
        return "".join(self.ibroute(l, **kw) for l in lids)

    def ibnetdiscover(self, **kw) -> str:
        return self.run(["ibnetdiscover"], **kw)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _unix_sockets() -> str:
    return _read(Path("/proc/net/unix"))
