"""What the scenario files' comments say about their trees is what the trees are."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from netsteer.scenario import load_scenario
from netsteer.topology.model import HOST
from netsteer.topology.spec import build_topology

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "scenarios").glob("*.yaml")) + sorted((ROOT / "benchmarks" / "scenarios").glob("*.yaml"))
CLAIM = re.compile(r"\b(\d+):1 (?:oversubscribed|tree|leaves|fat-tree)")


def leaf_ratio(path: Path) -> float:
    """The scenario's tree at its leaves: the bandwidth of a leaf's host cables over
    that of its up cables (the largest over the leaves)."""
    topo = build_topology(load_scenario(path).model.topology, file=str(path))
    host = topo.node_kind == HOST
    src, dst, bw = topo.channel_src(), topo.channel_dst(), topo.channel_bandwidth()
    return max(bw[(src == leaf) & host[dst]].sum() / bw[(src == leaf) & ~host[dst]].sum()
               for leaf in np.unique(dst[host[src]]))


def comments(path: Path) -> str:
    """A file's comment lines as one line of text (a claim may wrap)."""
    return " ".join(ln.lstrip("#").strip() for ln in path.read_text().splitlines() if ln.startswith("#"))


CLAIMS = [(f, int(m.group(1))) for f in FILES for m in CLAIM.finditer(comments(f))]


def test_the_claims_are_found():
    assert {f.name for f, _ in CLAIMS} >= {"allreduce-ft.yaml", "mpi-with-background.yaml",
                                           "pftree-victim-aggressor.yaml"}


@pytest.mark.parametrize("path,ratio", CLAIMS, ids=[f"{f.name}-{r}:1" for f, r in CLAIMS])
def test_an_oversubscription_in_a_comment_is_the_trees(path, ratio):
    got = leaf_ratio(path)
    assert got == ratio, f"{path.name} says {ratio}:1, its leaves are {got:g}:1"
