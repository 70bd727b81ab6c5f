"""Reading input files: every way a file can be unreadable becomes one located error.

:func:`read_text` reads a file as UTF-8 text, refusing (with the line) bytes that
are not UTF-8 and NUL bytes, and files larger than the limit; :func:`load_yaml`
parses YAML (or JSON, which is YAML) refusing duplicate keys, nesting deeper than
:data:`MAX_DEPTH` and documents whose aliases expand past the limit (a "billion
laughs" bomb), each with its line.

Examples
--------
>>> load_yaml("a: 1\\nb: [1, 2]", file="x.yaml")
{'a': 1, 'b': [1, 2]}
>>> load_yaml("a: 1\\na: 2", file="x.yaml")
Traceback (most recent call last):
...
netsteer.errors.NetsteerError: x.yaml: line 2: key 'a' is given twice (first on line 1)
>>> load_yaml("a: &x [1, 2]\\nb: &y [*x, *x]\\nc: [*y, *y]", file="x.yaml", max_nodes=8)
Traceback (most recent call last):
...
netsteer.errors.LimitError: x.yaml: line 2: the document expands to more than 8 values (aliases counted each time they are used); raise the limit with --max-memory or NETSTEER_MAX_MEMORY
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from .errors import LimitError, NetsteerError, short_repr

#: File extensions a topology's name drops (``fabric.net`` is ``fabric``); any other
#: dotted part is the name's own (ibsim's examples are ``net.2sw2path``, ``net.1``).
NAME_SUFFIXES = (".net", ".txt", ".out", ".log", ".topo", ".ibnd", ".dump", ".json", ".yaml", ".yml")


def file_label(path: str | os.PathLike) -> str:
    """A name for what a file holds: its file name without a known extension
    (:data:`NAME_SUFFIXES`), not ``Path.stem``, which would call ``net.2sw2path`` and
    ``net.1`` both ``net``.

    >>> file_label("/x/fabric.net"), file_label("net.2sw2path4hca"), file_label("net.1"), file_label("ibnd")
    ('fabric', 'net.2sw2path4hca', 'net.1', 'ibnd')
    """
    name = Path(path).name
    suffix = Path(name).suffix
    return name[: -len(suffix)] if suffix.lower() in NAME_SUFFIXES and len(name) > len(suffix) else name


#: Deepest nesting of lists and mappings a YAML or JSON input may have.
MAX_DEPTH = 64


def read_text(path: str | os.PathLike, *, file: str | None = None, max_bytes: int | None = None,
              what: str = "file") -> str:
    """The UTF-8 text of ``path``; errors name ``file`` (default: the path) and the line."""
    from .limits import current, fmt_bytes

    name = file if file is not None else str(path)
    limit = max_bytes if max_bytes is not None else current().max_file_bytes
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except IsADirectoryError:
        raise NetsteerError(f"cannot read {what}: it is a directory", file=name) from None
    except OSError as exc:
        raise NetsteerError(f"cannot read {what}: {exc.strerror or exc}", file=name) from None
    if len(data) > limit:
        raise LimitError(f"the file is larger than {fmt_bytes(limit)}, the largest input read "
                         "(raise it with --max-memory or NETSTEER_MAX_MEMORY)", file=name)
    return decode(data, file=name)


def decode(data: bytes, *, file: str | None) -> str:
    """UTF-8 text without NUL bytes, else an error naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise NetsteerError(f"not UTF-8 text: byte {data[exc.start]:#04x} at offset {exc.start}",
                            file=file, field=f"line {line}") from None
    nul = text.find("\0")
    if nul >= 0:
        raise NetsteerError("a NUL byte: this is not a text file", file=file,
                            field=f"line {text.count(chr(10), 0, nul) + 1}")
    return text


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, deep nesting and alias bombs."""

    max_nodes = 0

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded: dict[int, int] = {}  # id(node) -> values it expands to
        self._total = 0
        self._open: set[str] = set()  # anchors whose value is being composed

    def compose_node(self, parent, index):
        self._depth += 1
        event = self.peek_event()
        mark, anchor = event.start_mark, getattr(event, "anchor", None)
        alias = isinstance(event, yaml.AliasEvent)
        try:
            if self._depth > MAX_DEPTH:
                raise _Located(f"nested deeper than {MAX_DEPTH} levels", mark)
            if alias and anchor in self._open:
                raise _Located(f"alias *{short_repr(anchor)} refers to a value that contains it", mark)
            if anchor is not None and not alias:
                self._open.add(anchor)
            node = super().compose_node(parent, index)
            # an alias re-uses a node: count its whole expansion again
            self._total += self._size(node) if alias else 1
            if self._total > self.max_nodes:
                raise _Located(
                    f"the document expands to more than {self.max_nodes} values (aliases counted each "
                    "time they are used); raise the limit with --max-memory or NETSTEER_MAX_MEMORY", mark,
                    limit=True)
            return node
        finally:
            self._depth -= 1
            if anchor is not None and not alias:
                self._open.discard(anchor)

    def _size(self, node) -> int:
        """Values ``node`` expands to (memoised, so shared subtrees cost nothing to count)."""
        key = id(node)
        got = self._expanded.get(key)
        if got is not None:
            return got
        if isinstance(node, yaml.SequenceNode):
            n = 1 + sum(self._size(c) for c in node.value)
        elif isinstance(node, yaml.MappingNode):
            n = 1 + sum(self._size(k) + self._size(v) for k, v in node.value)
        else:
            n = 1
        self._expanded[key] = n
        return n

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                # the mapping's own keys; merged ones (<<) may be overridden
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        hash(key)
                    except TypeError:
                        continue
                    if key in seen:
                        raise _Located(f"key {short_repr(key)} is given twice (first on line "
                                       f"{seen[key].line + 1})", key_node.start_mark)
                    seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


class _Located(Exception):
    def __init__(self, reason: str, mark, limit: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.mark, self.limit = reason, mark, limit


def load_yaml(text: str, *, file: str | None = None, max_nodes: int | None = None) -> Any:
    """Parse YAML (or JSON) text; every failure is a :class:`NetsteerError` naming the line."""
    from .limits import current

    loader = None
    try:
        loader = _Loader(text)
        loader.max_nodes = max_nodes if max_nodes is not None else current().max_yaml_nodes
        return loader.get_single_data()
    except _Located as exc:
        cls = LimitError if exc.limit else NetsteerError
        raise cls(exc.reason, file=file, field=f"line {exc.mark.line + 1}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
        raise NetsteerError(f"not valid YAML: character {exc.character!r} is not allowed", file=file,
                            field=f"line {line}" if line else None) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        ctx = getattr(exc, "context", None)
        reason = f"not valid YAML: {problem}" + (f" ({ctx})" if ctx else "")
        raise NetsteerError(reason, file=file, field=f"line {mark.line + 1}" if mark else None) from None
    except RecursionError:
        raise NetsteerError(f"nested deeper than {MAX_DEPTH} levels", file=file) from None
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors (dates, tags) fail in many ways
        raise NetsteerError(f"not valid YAML: a value cannot be read ({type(exc).__name__}: {exc})",
                            file=file) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_json(text: str, *, file: str | None = None) -> Any:
    """Parse JSON text, refusing duplicate keys and deep nesting, naming the line."""
    import json

    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise NetsteerError(f"key {short_repr(k)} is given twice", file=file)
            out[k] = v
        return out

    depth = max_depth = 0
    for ch in text:  # nesting, before the recursive parser sees it
        if ch in "[{":
            depth += 1
            max_depth = max(max_depth, depth)
        elif ch in "]}":
            depth -= 1
    if max_depth > MAX_DEPTH:
        raise NetsteerError(f"nested deeper than {MAX_DEPTH} levels", file=file)
    try:
        return json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise NetsteerError(f"not valid JSON: {exc.msg}", file=file, field=f"line {exc.lineno}") from None
    except (RecursionError, ValueError) as exc:
        raise NetsteerError(f"not valid JSON: {exc}", file=file) from None


def load_yaml_file(path: str | os.PathLike, *, file: str | None = None) -> Any:
    """:func:`read_text` then :func:`load_yaml`."""
    name = file if file is not None else str(path)
    return load_yaml(read_text(Path(path), file=name), file=name)
