"""ibsim net files: reading ibsim's own examples, writing, round trips, real ibsim."""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from netsteer.errors import NetsteerError
from netsteer.topology import (
    TopologyBuilder,
    hybrid,
    hyperx,
    pgft,
    read_ibnetdiscover,
    read_ibsim_net,
    write_ibsim_net,
)
from netsteer.topology.ibsim_net import ibsim_args

# ibsim-utils' net-examples/net.2sw2path4hca, comments dropped
NET_2SW = '''\
Switch\t8 "Switch1"
[1]\t"Hca1"[1]
[2]\t"Hca3"[1]
[3]\t"Switch2"[3]
[5]\t"Switch2"[5]

Switch 8 "Switch2"
[1]\t"Hca2"[1]
[2]\t"Hca4"[1]
[3]\t"Switch1"[3]
[5]\t"Switch1"[5]

Hca\t2 "Hca1"
[1]\t"Switch1"[1]

Hca\t2 "Hca2"
[1]\t"Switch2"[1]

Hca\t2 "Hca3"
[1]\t"Switch1"[2]

Hca \t2 "Hca4"
[1]\t"Switch2"[2]
'''


def write(tmp_path: Path, text: str, name: str = "net") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def adjacency(t):
    return {frozenset(((t.node_names[a], int(pa)), (t.node_names[b], int(pb))))
            for a, pa, b, pb in zip(t.link_a, t.link_a_port, t.link_b, t.link_b_port)}


def test_reads_ibsim_example_with_ibsim_guids(tmp_path):
    t = read_ibsim_net(write(tmp_path, NET_2SW))
    assert (t.n_hosts, t.n_switches, t.n_links) == (4, 2, 6)
    # sim_net.c: switches from 0x200000 one each, CAs from 0x100000 ports+1 each
    guids = {n: int(g) for n, g in zip(t.node_names, t.node_guid)}
    assert guids == {"Switch1": 0x200000, "Switch2": 0x200001, "Hca1": 0x100000,
                     "Hca2": 0x100003, "Hca3": 0x100006, "Hca4": 0x100009}
    assert frozenset({("Switch1", 5), ("Switch2", 5)}) in adjacency(t)
    assert set(t.link_bandwidth.tolist()) == {8e9}  # ibsim's default 4x SDR


def test_installed_examples_parse():
    examples = Path("/usr/share/doc/ibsim-utils/net-examples")
    files = sorted(p for p in examples.glob("net*")) if examples.is_dir() else []
    if not files:
        pytest.skip("ibsim-utils examples not installed")
    for p in files:
        t = read_ibsim_net(p)
        assert t.n_hosts >= 2 and t.n_links >= 2


def test_options_globals_and_guid_bases(tmp_path):
    text = '''\
width=10
speed=7
switchguid=0x5000
Switch 4 "a"   # "spine A" base port 0 lid 0 lmc 0
[1] "b"[1] w=2 s=2
[2] "c"

caguid=0x9000
Switch 2 "b"
[1] "a"[1]

Hca 1 "c"
[1] "a"[2]
'''
    t = read_ibsim_net(write(tmp_path, text))
    assert t.node_names == ["spine A", "b", "c"]
    assert [int(g) for g in t.node_guid] == [0x5000, 0x5001, 0x9000]
    bw = {frozenset((t.node_names[a], t.node_names[b])): float(x)
          for a, b, x in zip(t.link_a, t.link_b, t.link_bandwidth)}
    assert bw[frozenset(("spine A", "b"))] == 16e9  # w=2 (4x) s=2 (DDR) vs 4x|12x QDR
    assert bw[frozenset(("spine A", "c"))] == 96e9  # file default 4x|12x, SDR..QDR: 12xQDR
    # remote port defaults to 1 when omitted
    assert t.port_peer(t.node("spine A"), 2) == (t.node("c"), 1)


def test_include_is_relative_to_including_file(tmp_path):
    sub = tmp_path / "parts"
    sub.mkdir()
    write(sub, 'Hca 1 "h"\n[1] "s"[1]\n', "hosts.net")
    p = write(tmp_path, 'include "parts/hosts.net"\n\nSwitch 2 "s"\n[1] "h"[1]\n')
    t = read_ibsim_net(p)
    assert t.node_names == ["h", "s"] and t.n_links == 1


@pytest.mark.parametrize("text,line,match", [
    ('Switch 2 "s"\n[1] "h"[1]\nHca 1 "h"\n[1] "s"[1]\n', 3, "skips that line"),
    ('Switch 2 "s"\n[1] "h"[1]\n\nHca 1 "h"\n', 2, "does not list it back"),
    ('Switch 2 "s"\n[1] "h"[1] w=2\n\nHca 1 "h"\n[1] "s"[1] w=8\n', 2, "no common width"),
    ('Switch 2 "s"\n[3] "h"[1]\n', 2, r"outside 1..2"),
    ('Switch 2 "s"\n[1] "h"[1] x=3\n', 2, "unknown port option x="),
    ('Switch 2 "s"\n[1] "h"[0]\n', 2, "invalid remote port"),
    ('Switch 2 "s"\n\nSwitch 2 "s"\n', 3, "defined twice"),
    ('Switch 2 "s#1"\n', 1, "without # or @"),
    ('switchguid=0x7\nSwitch 2 "a"\n\nswitchguid=0x7\nSwitch 2 "b"\n', 5, "GUID 0x7"),
    ('Rt 2 "r"\n', 1, "router"),
    ('Swtich 2 "s"\n', 1, "cannot read line"),
    ('include "missing.net"\n', 1, "cannot include"),
])
def test_errors_name_file_and_line(tmp_path, text, line, match):
    p = write(tmp_path, text)
    with pytest.raises(NetsteerError, match=match) as e:
        read_ibsim_net(p)
    assert e.value.file == str(p) and e.value.field == f"line {line}"


def test_error_in_included_file_names_that_file(tmp_path):
    inc = write(tmp_path, 'Switch 2 "s"\n[1] "h"[1] q=1\n', "inc.net")
    p = write(tmp_path, 'include "inc.net"\n')
    with pytest.raises(NetsteerError) as e:
        read_ibsim_net(p)
    assert (e.value.file, e.value.field) == (str(inc), "line 2")


def test_include_loop_is_an_error(tmp_path):
    p = write(tmp_path, 'include "net"\n')
    with pytest.raises(NetsteerError, match="nest deeper"):
        read_ibsim_net(p)


@pytest.mark.parametrize("topo", [
    pgft(2, [4, 4], [1, 2], [1, 2], link_bandwidth=[32e9, 100e9], link_latency_ns=100),
    pgft(3, [2, 2, 2], [2, 2, 2], link_bandwidth=56e9, link_latency_ns=100),
    hyperx([3, 4], [2, 1], 2, link_bandwidth=200e9, link_latency_ns=100, host_bandwidth=100e9),
], ids=["pgft2", "pgft3-multihomed", "hyperx"])
def test_round_trip(tmp_path, topo):
    p = tmp_path / "out.net"
    write_ibsim_net(topo, p)
    back = read_ibsim_net(p, link_latency_ns=100)
    assert (back.n_hosts, back.n_switches, back.n_links) == (topo.n_hosts, topo.n_switches,
                                                              topo.n_links)
    assert back.node_names == topo.node_names
    assert adjacency(back) == adjacency(topo)
    # rates that are InfiniBand rates come back exactly
    exact = {32e9, 100e9, 200e9}
    for a, b in zip(sorted(zip(topo.link_a, topo.link_b, topo.link_bandwidth)),
                    sorted(zip(back.link_a, back.link_b, back.link_bandwidth))):
        if a[2] in exact:
            assert b[2] == a[2]
    guids = [int(g) for g in back.node_guid]
    assert len(set(guids)) == len(guids) and 0 not in guids


def test_round_trip_keeps_guids_and_awkward_names(tmp_path):
    b = TopologyBuilder("odd")
    s = b.add_switch('core "A" #1', guid=0x0002C903000A0B0C)
    h = b.add_host("x" * 80, guid=0x0002C903000A0B10)
    b.add_link(s, h, bandwidth=32e9, latency_ns=1, a_port=7, b_port=1)
    t = b.build()
    p = tmp_path / "odd.net"
    write_ibsim_net(t, p)
    back = read_ibsim_net(p)
    assert [int(g) for g in back.node_guid] == [0x0002C903000A0B0C, 0x0002C903000A0B10]
    assert back.node_names == ["core _A_ #1", "x" * 64]  # ibsim keeps 64 characters
    assert back.port_peer(0, 7) == (1, 1)


def test_write_refuses_circuit_switches(tmp_path):
    t = hybrid(2, 1, server_bandwidth=1e9, tor_uplinks=1, core_bandwidth=1e9, circuit_ports=2,
               circuit_uplinks=1, circuit_bandwidth=1e9, switching_time_ns=1, link_latency_ns=1)
    with pytest.raises(NetsteerError, match="ibsim has no circuit switches.*ocs0") as e:
        write_ibsim_net(t, tmp_path / "x.net")
    assert e.value.file == str(tmp_path / "x.net")


def test_ibnetdiscover_output_reads_the_same_both_ways(tmp_path):
    topo = pgft(2, [2, 2], [1, 2], link_bandwidth=32e9, link_latency_ns=0)
    p = tmp_path / "w.net"
    write_ibsim_net(topo, p)
    # the writer's output is in ibnetdiscover's format as far as ibsim needs, so the
    # ibnetdiscover reader (which takes any identifiers) agrees with the ibsim reader
    assert adjacency(read_ibnetdiscover(p)) == adjacency(read_ibsim_net(p))


def test_ibsim_args_grow_with_the_fabric():
    small = pgft(2, [2, 2], [1, 1], link_bandwidth=1e9, link_latency_ns=0)
    assert ibsim_args(small) == ["-N", "2048", "-S", "256", "-P", str(256 * 36 + 2048 * 2)]
    big = hyperx([16, 20], 1, 4, link_bandwidth=1e9, link_latency_ns=0)
    args = dict(zip(ibsim_args(big)[::2], ibsim_args(big)[1::2]))
    # 320 switches of 4 + 15 + 19 ports plus port 0, and 1280 one-port hosts
    assert (args["-N"], args["-S"], args["-P"]) == ("2048", "320", str(320 * 39 + 1280))


# -- the real ibsim ------------------------------------------------------------------------
UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"


def _start_ibsim(net: Path, extra: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen(["ibsim", "-s", "-n", *extra, str(net)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)


def _wait_ready(proc: subprocess.Popen, limit_s: float = 60.0) -> str:
    """Read ibsim's output until it says it is ready, exits, or ``limit_s`` passes."""
    out = b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + limit_s
    while b"Network simulator ready" not in out and time.monotonic() < deadline:
        if not sel.select(timeout=deadline - time.monotonic()):
            break
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:  # ibsim exited
            break
        out += chunk
    sel.close()
    return out.decode(errors="replace")


@pytest.mark.ib
@pytest.mark.skipif(shutil.which("ibsim") is None, reason="ibsim (ibsim-utils) not installed")
def test_real_ibsim_accepts_written_file_and_ibnetdiscover_sees_the_same_fabric(tmp_path):
    topo = pgft(2, [4, 4], [1, 2], [1, 2], link_bandwidth=[32e9, 100e9], link_latency_ns=100)
    net = tmp_path / "fabric.net"
    write_ibsim_net(topo, net)
    env = {**os.environ, "IBSIM_SOCKNAME": f"netsteer-topo-{os.getpid()}"}
    proc = _start_ibsim(net, ibsim_args(topo), env)
    try:
        out = _wait_ready(proc)
        assert "Network simulator ready" in out, out
        assert "fatal" not in out and "parsing failed" not in out, out
        assert f"{net}: parsed" in out
        if shutil.which("ibnetdiscover") is None or not os.path.exists(UMAD2SIM):
            return
        disc = subprocess.run(["ibnetdiscover"], env={**env, "LD_PRELOAD": UMAD2SIM},
                              capture_output=True, text=True, timeout=120)
        assert disc.returncode == 0, disc.stderr
    finally:
        proc.kill()
        proc.wait()
    found = tmp_path / "discovered.txt"
    found.write_text(disc.stdout)
    seen = read_ibnetdiscover(found)
    assert adjacency(seen) == adjacency(topo)
    by_name = {frozenset((seen.node_names[a], seen.node_names[b])): float(bw)
               for a, b, bw in zip(seen.link_a, seen.link_b, seen.link_bandwidth)}
    assert by_name[frozenset(("h0", "s1_0"))] == 32e9
    assert by_name[frozenset(("s1_0", "s2_1"))] == 100e9  # 4xEDR as ibsim reports it


def test_a_file_is_named_after_its_whole_name_less_a_known_extension(tmp_path):
    # ibsim's examples are net.1, net.2sw2path, ...: Path.stem called them all "net"
    names = {n: read_ibsim_net(write(tmp_path, NET_2SW, n)).name
             for n in ("net.2sw2path", "net.1", "fabric.net", "fabric.txt", "net")}
    assert names == {"net.2sw2path": "net.2sw2path", "net.1": "net.1", "fabric.net": "fabric",
                     "fabric.txt": "fabric", "net": "net"}
