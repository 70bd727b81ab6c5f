"""The per-packet tag writer: ``tag_writer.bpf.c`` on a host's fabric egress.

Built with Debian's clang 14 at run time, attached with ``tc`` (sched_cls,
``clsact`` egress, direct action) inside the host's namespace. Its two maps are
pinned by name in a bpffs mounted for that host alone (one tag per host: the
host's rank and its active primitive), so the controller side and the PMPI
library reach them by path. :meth:`TagWriter.set` writes the maps through the
``bpf`` system call (no library needed).

A host where the program cannot be built or attached raises
:class:`NetsteerError` before any MPI traffic starts: never untagged traffic
where tags were asked for.
"""

from __future__ import annotations

import ctypes
import shutil
import socket
import struct
import subprocess
from pathlib import Path

from ...errors import NetsteerError

SOURCE = Path(__file__).with_name("tag_writer.bpf.c")
_SYS_BPF = 321  # x86_64
_OBJ_GET, _MAP_UPDATE = 7, 2
_libc = ctypes.CDLL(None, use_errno=True)


def build(out_dir: str | Path) -> Path:
    """Compile the program (clang-14 -target bpf)."""
    clang = shutil.which("clang-14") or shutil.which("clang")
    if clang is None:
        raise NetsteerError("clang is not installed: the tag writer needs clang-14 and libbpf-dev (scripts/setup.sh)",
                            field="hosttag")
    obj = Path(out_dir) / "tag_writer.bpf.o"
    p = subprocess.run([clang, "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c", str(SOURCE),
                        "-o", str(obj)], capture_output=True, text=True)
    if p.returncode != 0:
        raise NetsteerError(f"{SOURCE.name}: clang failed: {' '.join(p.stderr.split())[:300]}", field="hosttag")
    return obj


def _bpf(cmd: int, attr: bytes) -> int:
    buf = ctypes.create_string_buffer(attr, len(attr))
    r = _libc.syscall(_SYS_BPF, cmd, buf, len(attr))
    if r < 0:
        raise OSError(ctypes.get_errno(), f"bpf command {cmd}")
    return r


class TagWriter:
    """The writer on one host: ``attach`` then ``set``; ``close`` detaches it and
    unmounts its bpffs."""

    def __init__(self, ns: str, dev: str, obj: Path, pin_dir: Path):
        self.ns, self.dev, self.obj, self.pin = ns, dev, obj, Path(pin_dir)
        self.mounted = False
        self.fds: dict[str, int] = {}

    def attach(self) -> "TagWriter":
        self.pin.mkdir(parents=True, exist_ok=True)
        steps = [["mount", "-t", "bpf", "bpf", str(self.pin)],
                 ["ip", "netns", "exec", self.ns, "tc", "qdisc", "add", "dev", self.dev, "clsact"],
                 ["ip", "netns", "exec", self.ns, "tc", "filter", "add", "dev", self.dev, "egress", "bpf", "da",
                  "obj", str(self.obj), "sec", "tc"]]
        for i, cmd in enumerate(steps):
            env = {"TC_BPF_MNT": str(self.pin), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                self.close()
                raise NetsteerError(f"the tag writer cannot attach to {self.dev} in {self.ns}: "
                                    f"{' '.join((p.stderr or p.stdout).split())[:300]}", field="hosttag")
            if i == 0:
                self.mounted = True
        for name in ("tag_base", "ip_rank"):
            path = ctypes.create_string_buffer(str(self.pin / "tc" / "globals" / name).encode())
            self.fds[name] = _bpf(_OBJ_GET, struct.pack("QII", ctypes.addressof(path), 0, 0) + bytes(112))
        return self

    def _update(self, name: str, key: bytes, value: bytes) -> None:
        k, v = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(value, len(value))
        _bpf(_MAP_UPDATE, struct.pack("I4xQQQ", self.fds[name], ctypes.addressof(k), ctypes.addressof(v), 0)
             + bytes(96))

    def set_ranks(self, ips: dict[str, int]) -> None:
        """Destination address -> destination rank (the peer table's addresses)."""
        for ip, rank in ips.items():
            self._update("ip_rank", socket.inet_aton(ip), struct.pack("I", rank))

    def set(self, base: int) -> None:
        """The tag without its destination rank (0: untagged from now on)."""
        self._update("tag_base", struct.pack("I", 0), struct.pack("Q", base))

    def close(self) -> None:
        import os

        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        subprocess.run(["ip", "netns", "exec", self.ns, "tc", "qdisc", "del", "dev", self.dev, "clsact"],
                       capture_output=True)
        if self.mounted:
            subprocess.run(["umount", str(self.pin)], capture_output=True)
            self.mounted = False


__all__ = ["TagWriter", "build"]
