"""The flow engine's clock and SimGrid's timing precision, per sharing model.

Kept apart from :mod:`netsteer.sim.driver` so a streamed MPI run
(:mod:`netsteer.sim.stream`) makes its engine without importing the driver and the
controller core.
"""

from __future__ import annotations

from .._core import Engine
from ..errors import NetsteerError

#: The engine's timing per sharing model: (merge window in ns, ticks per ns). CM02 is
#: SimGrid's model, so it runs with SimGrid's timing precision (what falls due less than
#: 1 ns after an event happens with it) on a 0.1 ns clock: runs agree with SMPI's
#: default runs on contended workloads too, which that precision moves by up to a few
#: percent from the model's exact answer (``docs/simgrid-validation.md``). Max-min,
#: and the packet fidelity, are exact on the ns clock.
MODEL_TIMING = {"cm02": (1, 10)}
EXACT_TIMING = (0, 1)


def timing_for(sharing: str, merge_window_ns: int | None = None, ticks_per_ns: int | None = None,
               *, packet=None) -> tuple[int, int]:
    """``(merge_window_ns, ticks_per_ns)``: those given, the others the model's.

    Examples
    --------
    >>> timing_for("cm02"), timing_for("maxmin"), timing_for("cm02", merge_window_ns=0)
    ((1, 10), (0, 1), (0, 10))
    """
    window, ticks = EXACT_TIMING if packet is not None else MODEL_TIMING.get(sharing, EXACT_TIMING)
    return (window if merge_window_ns is None else merge_window_ns,
            ticks if ticks_per_ns is None else ticks_per_ns)


#: The sharing models the engine has.
SHARING_MODELS = ("maxmin", "cm02")


def check_sharing(sharing) -> None:
    """Refuse a sharing model the engine does not have, naming ``sharing``.

    >>> check_sharing("foo")
    Traceback (most recent call last):
    ...
    netsteer.errors.NetsteerError: sharing: unknown sharing model 'foo'; use maxmin or cm02
    """
    if not isinstance(sharing, str) or sharing not in SHARING_MODELS:
        from ..errors import short_repr

        raise NetsteerError(f"unknown sharing model {short_repr(sharing)}; use {' or '.join(SHARING_MODELS)}",
                            field="sharing")


def engine_for(capacity, latency, sharing, tcp_gamma, *, packet=None, ticks_per_ns: int = 1):
    """The engine, its bad settings refused as input errors (``sharing``, ``ticks_per_ns``)."""
    check_sharing(sharing)
    try:
        return Engine(capacity, latency, sharing, tcp_gamma, packet=packet, ticks_per_ns=int(ticks_per_ns))
    except ValueError as exc:
        if "ticks_per_ns" not in str(exc):
            raise
        raise NetsteerError(str(exc), field="ticks_per_ns") from None


def set_merge_window(engine, window_ns: int) -> None:
    """Give ``engine`` SimGrid's timing precision: what falls due less than
    ``window_ns`` after an event happens with it (0: exact; see
    ``Engine::set_merge_window`` in ``crates/netsteer-core/src/engine.rs``)."""
    if window_ns:
        try:
            engine.set_merge_window(int(window_ns))
        except ValueError as exc:
            raise NetsteerError(str(exc), field="merge_window_ns") from None
