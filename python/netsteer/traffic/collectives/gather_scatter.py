"""Gather and scatter: binomial trees and linear."""

from __future__ import annotations

from ._util import _check_root
from .programs import Program, recv, send


def _in_order_children(vrank: int, p: int) -> tuple[int | None, list[int]]:
    """Parent and children (virtual ranks) in Open MPI's in-order binomial tree."""
    children, mask = [], 1
    while mask < p:
        remote = vrank ^ mask
        if remote < vrank:
            return remote, children
        if remote < p:
            children.append(remote)
        mask <<= 1
    return None, children


def gather_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial gather (SMPI ``ompi_binomial``): receive each child's subtree
    (``min(vkid - vrank, p - vkid)`` blocks) for increasing masks, then send all
    gathered blocks to the parent."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        vrank = (rank - root) % p
        parent, kids = _in_order_children(vrank, p)
        total = 1
        for vkid in kids:
            progs[rank].append(recv((vkid + root) % p))
            total += min(vkid - vrank, p - vkid)
        if parent is not None:
            progs[rank].append(send((parent + root) % p, total * nbytes))
    return progs


def scatter_binomial(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Binomial scatter (SMPI ``ompi_binomial``): receive the subtree's blocks from
    the parent, then send each child ``min(vkid - vrank, p - vkid)`` blocks."""
    _check_root(p, root)
    progs: list[Program] = [[] for _ in range(p)]
    for rank in range(p):
        vrank = (rank - root) % p
        parent, kids = _in_order_children(vrank, p)
        if parent is not None:
            progs[rank].append(recv((parent + root) % p))
        for vkid in kids:
            progs[rank].append(send((vkid + root) % p, min(vkid - vrank, p - vkid) * nbytes))
    return progs


def gather_linear(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Linear gather (SMPI ``ompi_basic_linear``): the root receives from ranks
    ``0..p-1`` in order, one at a time."""
    _check_root(p, root)
    progs: list[Program] = [[send(root, nbytes)] if r != root else [] for r in range(p)]
    progs[root] = [recv(r) for r in range(p) if r != root]
    return progs


def scatter_linear(p: int, nbytes: int, root: int = 0, elem_bytes: int = 1) -> list[Program]:
    """Linear scatter (SMPI ``ompi_basic_linear``): the root sends to ranks
    ``0..p-1`` in order, one at a time."""
    _check_root(p, root)
    progs: list[Program] = [[recv(root)] if r != root else [] for r in range(p)]
    progs[root] = [send(r, nbytes) for r in range(p) if r != root]
    return progs
