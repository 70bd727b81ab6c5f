"""MPI context in a 48-bit destination MAC address: the UnisonFlow tag.

The tagging agent on a host writes the tag of every MPI message into the
destination MAC of its packets; switches match on it and the last switch restores
the receiver's true MAC. The layout, most significant bit first (bit 47 is the
first bit of the first octet as written, ``aa`` in ``aa:bb:cc:dd:ee:ff``)::

    47      42 41 40 39    34 33  30 29            15 14             0
    +---------+--+--+--------+------+----------------+----------------+
    |primitive| 1| 0|  job   | comm |    src rank    |    dst rank    |
    | 6 bits  |UL|IG| 6 bits |4 bits|    15 bits     |    15 bits     |
    +---------+--+--+--------+------+----------------+----------------+

- bit 41 (U/L) is 1: the address is locally administered, so it never collides
  with a vendor's address; bit 40 (I/G) is 0: it is never multicast, so switches
  and NICs treat it as unicast.
- ``primitive`` 0 is reserved for true host addresses (``02:00:...``, see
  :func:`host_mac`): no tag is ever a host's address. Codes 1..63 are MPI
  primitives (:data:`PRIMITIVES`); the codes not listed are refused.
- Limits: 64 jobs (0..63), 16 communicators per job (0..15), ranks 0..32767
  (communicators of up to 32,768 ranks), 63 primitive codes. A value past its
  field is refused, never wrapped.

Examples
--------
>>> t = Tag("bcast", job=1, comm=0, src=0, dst=5)
>>> mac = t.mac(); mac
'0a:04:00:00:00:05'
>>> Tag.from_mac(mac) == t
True
>>> is_tag(host_mac(3)), is_tag(encode(t))
(False, True)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from numbers import Integral

from ..errors import NetsteerError

#: Primitive codes (the tag's top 6 bits). Append, never renumber: codes are on the wire.
PRIMITIVES: dict[str, int] = {
    "send": 1,
    "bcast": 2,
    "reduce": 3,
    "allreduce": 4,
    "gather": 5,
    "scatter": 6,
    "allgather": 7,
    "alltoall": 8,
    "barrier": 9,
}
PRIMITIVE_NAMES: dict[int, str] = {v: k for k, v in PRIMITIVES.items()}

#: field -> (shift, bits)
LAYOUT: dict[str, tuple[int, int]] = {
    "primitive": (42, 6),
    "job": (34, 6),
    "comm": (30, 4),
    "src": (15, 15),
    "dst": (0, 15),
}
LOCAL_BIT = 1 << 41  # U/L: locally administered
GROUP_BIT = 1 << 40  # I/G: multicast (never set)
MAX_JOBS = 1 << LAYOUT["job"][1]
MAX_COMMS = 1 << LAYOUT["comm"][1]
MAX_RANKS = 1 << LAYOUT["src"][1]

_MASK48 = (1 << 48) - 1


class TagError(NetsteerError):
    """A tag that cannot be encoded or decoded; names the field and the limit."""


@dataclass(frozen=True)
class Tag:
    """MPI context of one message: primitive, job, communicator, source and
    destination rank (ranks within the communicator)."""

    primitive: str
    job: int
    comm: int
    src: int
    dst: int

    def __post_init__(self) -> None:
        # a NumPy integer (a rank from an array) is the same number: kept as an int,
        # so tags compare, hash and print as Python's; other values are refused by encode
        for name in ("job", "comm", "src", "dst"):
            v = getattr(self, name)
            if type(v) is not int and isinstance(v, Integral) and not isinstance(v, bool):
                object.__setattr__(self, name, int(v))

    def value(self) -> int:
        """The 48-bit tag (kept from decoding: a controller asks for it per rule)."""
        v = self.__dict__.get("_v")
        return v if v is not None else encode(self)

    def mac(self) -> str:
        return format_mac(encode(self))

    @classmethod
    def from_mac(cls, mac: str | int, comm_size: int | None = None) -> "Tag":
        return decode(mac, comm_size)

    def as_dict(self) -> dict:
        return asdict(self)


def _integer(value, field: str) -> int:
    """``value`` as an int: Python's or NumPy's integers, not a bool or a float."""
    if isinstance(value, bool) or not isinstance(value, Integral) or type(value).__name__ == "bool_":
        raise TagError(f"must be an integer, got {value!r}", field=field)
    return int(value)


def _field(name: str, value: int) -> int:
    shift, bits = LAYOUT[name]
    value = _integer(value, name)
    if not 0 <= value < (1 << bits):
        raise TagError(f"{value} does not fit the tag's {bits} bits (0..{(1 << bits) - 1})", field=name)
    return value << shift


def encode(tag: Tag, comm_size: int | None = None) -> int:
    """The 48-bit tag of ``tag`` as an integer.

    Raises :class:`TagError` for an unknown primitive or a value past its field,
    and (with ``comm_size``) for a rank outside the communicator.

    >>> hex(encode(Tag("reduce", 0, 0, 1, 0)))
    '0xe0000008000'
    >>> encode(Tag("reduce", 0, 0, 40000, 0))
    Traceback (most recent call last):
    ...
    netsteer.unisonflow.tags.TagError: src: 40000 does not fit the tag's 15 bits (0..32767)
    """
    code = PRIMITIVES.get(tag.primitive)
    if code is None:
        raise TagError(f"unknown primitive {tag.primitive!r}; known: {', '.join(PRIMITIVES)}", field="primitive")
    _check_ranks(tag.src, tag.dst, comm_size)
    v = _field("primitive", code) | LOCAL_BIT
    for name in ("job", "comm", "src", "dst"):
        v |= _field(name, getattr(tag, name))
    return v


def check_comm_size(comm_size: int | None, field: str = "comm_size") -> None:
    """Refuse a communicator size the tag cannot carry: ranks have 15 bits, so
    1..:data:`MAX_RANKS` ranks (None: no size given).

    >>> check_comm_size(40000, field="--size")
    Traceback (most recent call last):
    ...
    netsteer.unisonflow.tags.TagError: --size: communicator size must be 1..32768 (the tag's ranks have 15 bits), got 40000
    """
    if comm_size is None:
        return
    comm_size = _integer(comm_size, field)
    if not 1 <= comm_size <= MAX_RANKS:
        raise TagError(f"communicator size must be 1..{MAX_RANKS} (the tag's ranks have {LAYOUT['src'][1]} bits), "
                       f"got {comm_size}", field=field)


def _check_ranks(src: int, dst: int, comm_size: int | None) -> None:
    if comm_size is None:
        return
    check_comm_size(comm_size)
    for name, r in (("src", src), ("dst", dst)):
        if not 0 <= r < comm_size:
            raise TagError(f"rank {r} is outside the communicator of {comm_size} ranks", field=name)


def parse_mac(mac: str | int) -> int:
    """A MAC as an integer: ``aa:bb:cc:dd:ee:ff``, ``aa-bb-...``, ``aabbccddeeff``
    or an int.

    >>> parse_mac("0A-04-00-00-00-05") == parse_mac("0a0400000005") == 0x0a0400000005
    True
    >>> parse_mac("0a:04-00:00:00:05")  # one separator throughout
    Traceback (most recent call last):
    ...
    netsteer.unisonflow.tags.TagError: mac: '0a:04-00:00:00:05' is not a MAC address (six hex octets, aa:bb:cc:dd:ee:ff)
    """
    if isinstance(mac, Integral) and not isinstance(mac, bool) and type(mac).__name__ != "bool_":
        mac = int(mac)
        if not 0 <= mac <= _MASK48:
            raise TagError(f"{mac} is not a 48-bit address", field="mac")
        return mac
    text = str(mac).strip().lower()
    digits = text.replace(":", "").replace("-", "")
    seps_ok = len(text) == 12 or (len(text) == 17 and len(set(text[2::3])) == 1 and text[2] in ":-")
    if len(digits) != 12 or not seps_ok or any(c not in "0123456789abcdef" for c in digits):
        raise TagError(f"{str(mac)[:40]!r} is not a MAC address (six hex octets, aa:bb:cc:dd:ee:ff)", field="mac")
    return int(digits, 16)


def format_mac(value: int) -> str:
    """``aa:bb:cc:dd:ee:ff`` for a 48-bit integer."""
    return ":".join(f"{(value >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def is_tag(mac: str | int) -> bool:
    """Whether ``mac`` is shaped like a tag (locally administered, unicast, primitive
    code not 0); it may still carry an unknown primitive."""
    v = parse_mac(mac)
    return bool(v & LOCAL_BIT) and not v & GROUP_BIT and (v >> LAYOUT["primitive"][0]) != 0


def decode(mac: str | int, comm_size: int | None = None) -> Tag:
    """The MPI context in a tag.

    Raises :class:`TagError` for an address that is not a tag (universally
    administered, multicast, a host's address), an unknown primitive code, and
    (with ``comm_size``) a rank outside the communicator.

    >>> decode("0a:04:00:00:00:05")
    Tag(primitive='bcast', job=1, comm=0, src=0, dst=5)
    >>> decode("0a:04:00:00:00:05", comm_size=4)
    Traceback (most recent call last):
    ...
    netsteer.unisonflow.tags.TagError: dst: rank 5 is outside the communicator of 4 ranks
    """
    v = mac if type(mac) is int and 0 <= mac <= _MASK48 else parse_mac(mac)
    if v & GROUP_BIT:
        raise TagError(f"{format_mac(v)} is a multicast address, never a tag", field="mac")
    if not v & LOCAL_BIT:
        raise TagError(f"{format_mac(v)} is not locally administered, so not a tag", field="mac")
    code = v >> 42
    if code == 0:
        raise TagError(f"{format_mac(v)} is a host address (primitive code 0), not a tag", field="primitive")
    name = PRIMITIVE_NAMES.get(code)
    if name is None:
        raise TagError(f"unknown primitive code {code} in {format_mac(v)}", field="primitive")
    src, dst = (v >> 15) & 0x7FFF, v & 0x7FFF
    if comm_size is not None and not (type(comm_size) is int and src < comm_size and dst < comm_size <= MAX_RANKS):
        _check_ranks(src, dst, comm_size)  # raises: the size or a rank is out of range
    # built without the dataclass's __init__: decoding is on the controller's hot path
    t = object.__new__(Tag)
    t.__dict__.update(primitive=name, job=(v >> 34) & 0x3F, comm=(v >> 30) & 0xF, src=src, dst=dst, _v=v)
    return t


def host_mac(host: int) -> int:
    """The true MAC of host ``host``: ``02:00:`` and the host index in 32 bits
    (primitive code 0, so never a tag).

    >>> format_mac(host_mac(258))
    '02:00:00:00:01:02'
    """
    if not 0 <= host < 1 << 32:
        raise TagError(f"host {host} does not fit a host address (0..{(1 << 32) - 1})", field="host")
    return LOCAL_BIT | host


def layout_table() -> list[dict]:
    """The layout as rows (field, bits, width, range), for docs and ``tag layout``:
    the values a tag carries, so primitive codes start at 1 (0 is a host's address).

    >>> [(r["field"], r["range"]) for r in layout_table()][:2]
    [('primitive', '1..63 (0: host address)'), ('U/L (1)', '1')]
    """
    low = {"primitive": 1}
    rows = [{"field": n, "bits": f"{s + b - 1}..{s}", "width": b, "range": f"{low.get(n, 0)}..{(1 << b) - 1}"}
            for n, (s, b) in LAYOUT.items()]
    rows[0]["range"] += " (0: host address)"
    rows.insert(1, {"field": "U/L (1)", "bits": "41", "width": 1, "range": "1"})
    rows.insert(2, {"field": "I/G (0)", "bits": "40", "width": 1, "range": "0"})
    return rows
