"""The refusal of a host cabled to several switches, by the engines that route each host
by one switch (ftree, pftree, dor), with the engines to use instead.

The advice depends on who asks: a scenario can run any engine, ``netsteer route``
only one an LFT can hold, so the error keeps its parts and :func:`advise` re-words it.

>>> e = single_homed_error("ftree", "h0", ["s1_0", "s1_1"])
>>> e.reason.split("; ")
['ftree needs single-homed hosts: h0 is cabled to 2 switches (s1_0, s1_1)', 'route this fabric with minhop or ecmp']
>>> advise(e, ("minhop", "dmodk", "ftree")).reason.split("; ")[1]
'route this fabric with minhop'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import NetsteerError, RoutingError

#: Engines that route hosts cabled to several switches.
MULTI_HOMED_ENGINES = ("minhop", "ecmp")


def single_homed_error(engine: str, host: str, switches: Sequence[str], *,
                       instead: Iterable[str] = MULTI_HOMED_ENGINES) -> RoutingError:
    """``engine`` refuses ``host``, cabled to ``switches``; the reason names ``instead``."""
    instead = list(instead)
    err = RoutingError(f"{engine} needs single-homed hosts: {host} is cabled to {len(switches)} switches "
                       f"({', '.join(switches)}); route this fabric with {' or '.join(instead)}")
    err.single_homed = (engine, host, list(switches))
    return err


def advise(exc: NetsteerError, engines: Sequence[str]) -> NetsteerError:
    """``exc``, its advice naming only ``engines`` if it is a :func:`single_homed_error`;
    any other error as it is."""
    parts = getattr(exc, "single_homed", None)
    if parts is None:
        return exc
    err = single_homed_error(*parts, instead=[e for e in MULTI_HOMED_ENGINES if e in engines])
    err.file, err.field = exc.file, exc.field
    return err
