"""Lazy packages (``netsteer._lazy``): a streamed MPI run imports only what it needs,
and every name of ``netsteer.sim`` and ``netsteer.topology`` still loads, as the
same object, whatever was imported first. Each case runs in a fresh interpreter
(this one has imported everything already)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _run(code: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def test_the_streamed_path_leaves_drivers_importers_and_the_controller_unloaded():
    out = _run(
        "import sys\n"
        "from netsteer.topology.pgft import pgft\n"
        "from netsteer.sim.stream import simulate_mpi\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('netsteer'))))"
    )
    loaded = set(out.split())
    assert "netsteer.sim.stream" in loaded and "netsteer.topology.pgft" in loaded
    for heavy in ["netsteer.sim.driver", "netsteer.sim.simulate", "netsteer.control", "netsteer.topology.spec",
                  "netsteer.topology.metrics", "netsteer.topology.ibnetdiscover", "netsteer.topology.ibsim_net"]:
        assert heavy not in loaded, heavy


@pytest.mark.parametrize("first", ["", "import netsteer.sim.run", "import netsteer.sim.simulate",
                                   "from netsteer.sim.simulate import run_driver"])
def test_a_function_named_as_its_module_stays_the_function(first):
    # netsteer.sim.run imports the submodule netsteer.sim.simulate, which Python
    # then sets on the package; the name must still be the function
    out = _run(
        f"{first}\n"
        "import types, netsteer.sim as s\n"
        "from netsteer.sim import simulate\n"
        "from netsteer.sim.simulate import simulate as direct\n"
        "print(isinstance(simulate, types.FunctionType), simulate is direct, s.simulate is direct)"
    )
    assert out == "True True True"


@pytest.mark.parametrize("first", ["", "import netsteer.topology.spec", "import netsteer.topology.hyperx"])
def test_topology_names_load_as_before(first):
    out = _run(
        f"{first}\n"
        "import types, netsteer.topology as t\n"
        "from netsteer.topology import pgft, hyperx, hybrid, describe, Topology, read_ibsim_net\n"
        "from netsteer.topology.hyperx import hyperx as direct\n"
        "print(isinstance(pgft, types.FunctionType), hyperx is direct, t.hyperx is direct,"
        " all(n in dir(t) and getattr(t, n) is not None for n in t.__all__), len(t.__all__))"
    )
    assert out == "True True True True 20"


def test_an_unknown_name_is_an_attribute_error():
    out = _run(
        "import netsteer.sim, netsteer.topology\n"
        "for m in (netsteer.sim, netsteer.topology):\n"
        "    try:\n"
        "        m.no_such_name\n"
        "    except AttributeError as e:\n"
        "        print('no_such_name' in str(e))"
    )
    assert out.split() == ["True", "True"]


def test_a_streamed_run_of_a_plain_job_spec_never_imports_pydantic_or_numpy_random():
    out = _run(
        "import sys\n"
        "from netsteer.topology.pgft import pgft\n"
        "from netsteer.sim.stream import simulate_mpi\n"
        "from netsteer.traffic.program import MpiJobSpec\n"
        "t = pgft(2, [4, 4], [1, 2], link_bandwidth=10e9, link_latency_ns=1000)\n"
        "job = MpiJobSpec(ranks=16, placement='random', seed=1, program=[\n"
        "    {'op': 'allreduce', 'bytes': '1MiB', 'algorithm': 'rabenseifner'},\n"
        "    {'op': 'bcast', 'bytes': '64KiB', 'root': 3}, {'op': 'compute', 'duration': '1us'}])\n"
        "r = simulate_mpi(t, 'dmodk', [job], sharing='cm02')\n"
        "print(r.status, sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')),"
        " 'numpy.random' in sys.modules,"
        " sorted(m for m in sys.modules if m in ('netsteer.sim.driver', 'netsteer.control')))"
    )
    # random placement needs no numpy.random either, and the engine no driver or controller core
    assert out == "done [] False []"


def test_openblas_gets_one_thread_unless_the_environment_says_otherwise():
    # numpy's OpenBLAS threads busy-wait after start-up; netsteer does no linear algebra
    code = "import os, netsteer.topology.pgft, numpy\nprint(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    for given, want in ((None, "1"), ("3", "3")):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env if given is None else {**env, "OPENBLAS_NUM_THREADS": given})
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == want
