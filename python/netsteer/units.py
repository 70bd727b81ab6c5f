"""Units in values (``10Gbps``, ``1us``, ``16MiB``), parsed once, at the edge, into SI numbers.

Bandwidth comes out in bits per second (float), sizes in bytes (int), durations in
integer nanoseconds (the simulator's clock).

Examples
--------
>>> parse_bandwidth("10Gbps")
10000000000.0
>>> parse_size("1GiB")
1073741824
>>> parse_duration("1.5us")
1500
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

_NUM = r"(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>[A-Za-z/]*)"
_RE = re.compile(rf"^\s*{_NUM}\s*$")
#: A zero with no unit ("0", "0.0"): unambiguous as a duration.
_ZERO = re.compile(r"^\s*0+(?:\.0*)?\s*$")

_BANDWIDTH = {
    "bps": 1.0, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12,
    "Bps": 8.0, "kBps": 8e3, "KBps": 8e3, "MBps": 8e6, "GBps": 8e9, "TBps": 8e12,
    "KiBps": 8 * 2**10, "MiBps": 8 * 2**20, "GiBps": 8 * 2**30,
}
_SIZE = {
    "B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
}
_DURATION_NS = {
    "ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9,
}


class UnitError(ValueError):
    """A value whose unit is missing, unknown, or of the wrong kind."""


#: The largest duration: the simulator's clock is int64 nanoseconds (about 292 years).
MAX_DURATION_NS = 2**63 - 1


def _show(value) -> str:
    from .errors import short_repr

    return short_repr(value)


def _split(value: str | int | float, kind: str, table: dict) -> tuple[Decimal, str]:
    """The number (exact) and the unit of ``value``."""
    if isinstance(value, bool):
        raise UnitError(f"expected a {kind} such as {_example(kind)}, got {_show(value)}")
    if isinstance(value, (int, float)):
        if kind == "size" and value >= 0 and math.isfinite(value):
            return Decimal(value), "B"
        raise UnitError(f"expected a {kind} with a unit, such as {_example(kind)}, got {_show(value)}")
    if not isinstance(value, str) or len(value) > 100:
        raise UnitError(f"expected a {kind} such as {_example(kind)}, got {_show(value)}")
    m = _RE.match(value)
    if not m and _RE.match(value.strip().removeprefix("-")):
        raise UnitError(f"{kind} must not be negative, got {_show(value)}")
    if not m:
        raise UnitError(f"expected a {kind} such as {_example(kind)}, got {_show(value)}")
    unit = m.group("unit")
    if kind == "size" and unit == "":
        unit = "B"  # a bare number is bytes, written as text ("1000", a CLI option) or not
    if unit not in table:
        raise UnitError(
            f"unknown {kind} unit {_show(unit)} in {_show(value)}; use one of {', '.join(table)}"
        )
    num = Decimal(m.group("num"))
    if num.adjusted() > 40:  # refused before it is multiplied out, with the limit the parser states
        raise UnitError(f"{kind} {_show(value)} {_TOO_LARGE[kind]}")
    return num, unit


#: The largest bandwidth in bits per second: a topology's cables and a flow's rate.
MAX_BANDWIDTH_BPS = 1e18
#: Why a value too large is refused, by kind: the limit, as each parser states it.
_TOO_LARGE = {
    "bandwidth": "is too large: at most 1e18 bps (1 Ebps)",
    "size": "is too large: at most 2**80 bytes (1 YiB)",
    "duration": "is too long: the clock counts int64 nanoseconds (at most about 292 years)",
}


def _example(kind: str) -> str:
    return {"bandwidth": "'10Gbps'", "size": "'16MiB'", "duration": "'1us'"}[kind]


def parse_bandwidth(value: str | float) -> float:
    """Parse a bandwidth into bits per second.

    >>> parse_bandwidth("100 Mbps")
    100000000.0
    >>> parse_bandwidth("1e300Tbps")
    Traceback (most recent call last):
    ...
    netsteer.units.UnitError: bandwidth '1e300Tbps' is too large: at most 1e18 bps (1 Ebps)
    """
    num, unit = _split(value, "bandwidth", _BANDWIDTH)
    bps = float(num * Decimal(_BANDWIDTH[unit]))
    if not math.isfinite(bps) or bps > MAX_BANDWIDTH_BPS:
        raise UnitError(f"bandwidth {_show(value)} {_TOO_LARGE['bandwidth']}")
    if bps <= 0:
        raise UnitError(f"bandwidth must be positive, got {_show(value)}")
    return bps


def parse_size(value: str | int) -> int:
    """Parse a size into bytes; a bare non-negative integer is bytes.

    >>> parse_size("16MiB")
    16777216
    >>> parse_size(512), parse_size("512")
    (512, 512)
    """
    num, unit = _split(value, "size", _SIZE)
    n = num * _SIZE[unit]
    if n > 2**80:
        raise UnitError(f"size {_show(value)} {_TOO_LARGE['size']}")
    if n != n.to_integral_value():
        raise UnitError(f"size {_show(value)} is not a whole number of bytes")
    return int(n)


def parse_duration(value: str | int | float) -> int:
    """Parse a duration into integer nanoseconds; ``0`` alone needs no unit.

    The clock counts whole nanoseconds, so a duration that is not one (``500ps``,
    ``1.0005us``) is refused rather than rounded.

    >>> parse_duration("10ms")
    10000000
    >>> parse_duration(0), parse_duration("0"), parse_duration("2000ps")
    (0, 0, 2)
    >>> parse_duration("500ps")
    Traceback (most recent call last):
    ...
    netsteer.units.UnitError: duration '500ps' is not a whole number of nanoseconds (the simulator's clock counts ns)
    """
    if not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0:
        return 0
    if isinstance(value, str) and _ZERO.match(value):
        return 0
    num, unit = _split(value, "duration", _DURATION_NS)
    ns = num * Decimal(str(_DURATION_NS[unit]))
    if ns > MAX_DURATION_NS:
        raise UnitError(f"duration {_show(value)} {_TOO_LARGE['duration']}")
    if ns != ns.to_integral_value():
        raise UnitError(
            f"duration {_show(value)} is not a whole number of nanoseconds (the simulator's clock counts ns)"
        )
    return int(ns)


def format_bandwidth(bps: float) -> str:
    """Human form of a bit rate.

    >>> format_bandwidth(2.5e9)
    '2.5Gbps'
    """
    for unit, scale in (("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:.4g}{unit}"
    return f"{bps:.4g}bps"


def format_duration(ns: float) -> str:
    """Human form of a duration given in nanoseconds.

    >>> format_duration(1500000)
    '1.5ms'
    """
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.4g}{unit}"
    return f"{ns:.4g}ns"


def format_seconds(seconds: float) -> str:
    """A time in seconds for a table a user reads: in s, ms, us or ns, whichever
    leaves a number from 1 up, with every digit down to a tenth of a nanosecond (the
    finest clock, cm02's) and no trailing zeros, so runs that differ by a few ns
    read differently (a table of 6 decimals showed 2.003 us as 0.000002).

    >>> format_seconds(2.003e-06), format_seconds(1.6000020010000003), format_seconds(0.80002)
    ('2.003 us', '1.600002001 s', '800.02 ms')
    >>> format_seconds(0), format_seconds(5e-10), format_seconds(1e-3), format_seconds(86400.5)
    ('0 s', '0.5 ns', '1 ms', '86400.5 s')
    >>> format_seconds(0.00099999999), format_seconds(999.9e-9), format_seconds(1e-3 - 1e-6)
    ('1 ms', '999.9 ns', '999 us')

    Past about 10 days a float no longer holds every tenth of a ns: such a time shows
    the 15 significant digits every float holds, not rounding noise past them; give
    whole ns to :func:`format_ns` to show every digit.

    >>> format_seconds(4000000002832 * 1e-3), format_seconds(4_000_000_000_000_002_832 * 1e-9)
    ('4000000002.832 s', '4000000000 s')
    """
    if abs(seconds) * 1e10 < 2**53:
        tenths = round(abs(seconds) * 1e10)  # in tenths of a ns, so that 999.99999 us rounds to 1 ms
    else:
        tenths = int((Decimal(f"{abs(float(seconds)):.15g}") * 10**10).to_integral_value())
    return _format_tenths(tenths, seconds < 0)


def format_ns(ns: int) -> str:
    """A time in whole nanoseconds as :func:`format_seconds` shows it, every digit
    exact at any size (the engine's times are integer ns).

    >>> format_ns(4_000_000_000_000_002_832), format_ns(2003), format_ns(0)
    ('4000000000.000002832 s', '2.003 us', '0 s')
    """
    return _format_tenths(abs(int(ns)) * 10, ns < 0)


def _format_tenths(tenths: int, negative: bool) -> str:
    if tenths == 0:
        return "0 s"
    unit, places = next((u, p) for u, p in (("s", 10), ("ms", 7), ("us", 4), ("ns", 1)) if tenths >= 10**p or u == "ns")
    whole, frac = divmod(tenths, 10**places)
    frac_text = f"{frac:0{places}d}".rstrip("0")
    return f"{'-' if negative else ''}{whole}{'.' + frac_text if frac_text else ''} {unit}"


#: The largest flow or message: 1 EiB (the engine counts bytes in f64).
MAX_BYTES = 2**60
#: An iperf-like (bulk) flow's nominal size: it sends until stopped (its duration, or
#: the end of the others). Reports count what a flow of exactly this size sent; a sized
#: flow may be larger (up to MAX_BYTES) and counts its size.
BULK_BYTES = 10**18


def _not_negative(value, what: str) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ValueError(f"{what} must not be negative, got {value!r}")
    if isinstance(value, str) and value.strip().startswith("-"):
        raise ValueError(f"{what} must not be negative, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}")


def checked_size(value) -> int:
    """Bytes from ``16MiB`` or a bare non-negative integer, at most :data:`MAX_BYTES`
    (what input schemas accept as a size; ``ValueError`` otherwise).

    >>> checked_size("4KiB")
    4096
    """
    _not_negative(value, "size")
    try:
        n = parse_size(value)
    except (UnitError, OverflowError) as exc:
        raise ValueError(str(exc)) from None
    if n > MAX_BYTES:
        raise ValueError(f"size {value!r} is larger than the {MAX_BYTES} bytes (1 EiB) a flow may carry")
    return n


def checked_duration(value) -> int:
    """Integer nanoseconds from ``1ms`` (``0`` needs no unit), as input schemas accept
    a duration (``ValueError`` otherwise).

    >>> checked_duration("1ms")
    1000000
    """
    _not_negative(value, "duration")
    try:
        return parse_duration(value)
    except (UnitError, OverflowError) as exc:
        raise ValueError(str(exc)) from None
