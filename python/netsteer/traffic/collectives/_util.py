"""Small helpers shared by the algorithm modules."""

from __future__ import annotations

from ...errors import NetsteerError

def _pof2_floor(p: int) -> int:
    """Largest power of two not above ``p``."""
    return 1 << (p.bit_length() - 1)


def _is_pof2(p: int) -> bool:
    return p > 0 and p & (p - 1) == 0


def _elements(nbytes: int, elem_bytes: int) -> int:
    if elem_bytes < 1:
        raise NetsteerError(f"element size must be at least 1 byte, got {elem_bytes}")
    if nbytes % elem_bytes:
        raise NetsteerError(
            f"buffer of {nbytes} bytes is not a whole number of {elem_bytes}-byte elements"
        )
    return nbytes // elem_bytes


def _check_root(p: int, root: int) -> None:
    if not 0 <= root < p:
        raise NetsteerError(f"root {root} is not a rank of a {p}-rank job (0..{p - 1})")


# --------------------------------------------------------------------------------------
