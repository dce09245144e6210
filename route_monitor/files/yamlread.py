"""Reading manifest files into documents, every failure one bounded error with its line.

The boundary between a user's bytes and :mod:`route_monitor.files.manifests`: whatever a file holds,
:func:`read_documents` returns every document that parses and one :class:`ReadError` per one
that does not (never raises for the file's content). A file is split at its document markers
as kubectl's YAML reader splits it (a line ``---``, maybe followed by a comment), so a syntax
error in one document (an unclosed quote, a tab, an unknown alias, flow nesting libyaml
refuses) costs that document only, and its error names the line in the file.

Each document is read as the API server would take it from kubectl: a key written twice in one
mapping is an error (PyYAML alone keeps the last value silently), and a plain ``2026-12-01``
stays a string (kubectl's YAML reader makes no dates). A value the loader cannot build
(``!!timestamp 99999-01-01``, ``!!float abc``, an integer of 5,000 digits) is one error naming
the field. Both PyYAML loaders behave the same: libyaml's (:data:`LOADERS` ``"libyaml"``, about
ten times faster on thousands of objects) when PyYAML has it, else the pure-Python one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from alert_rules.fielderrors import bounded
from route_monitor.files import yamlerrors
from route_monitor.spec import yamlnodes

MAX_MESSAGE = 300
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Unbuildable(Exception):
    def __init__(self, node: yaml.Node, error: Exception) -> None:
        super().__init__(str(error))
        self.node, self.error = node, error


class _Kubernetes:
    """What both loaders share: no implicit dates, and the node a value cannot be built from."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)  # type: ignore[misc]
        except (ValueError, TypeError, OverflowError, AttributeError, KeyError) as e:
            raise _Unbuildable(node, e) from None


def _no_dates(resolvers: dict[Any, list[tuple[str, Any]]]) -> dict[Any, list[tuple[str, Any]]]:
    return {first: [(tag, rx) for tag, rx in rs if tag != _TIMESTAMP] for first, rs in resolvers.items()}


class PythonLoader(_Kubernetes, yaml.SafeLoader):
    yaml_implicit_resolvers = _no_dates(yaml.SafeLoader.yaml_implicit_resolvers)


LOADERS: dict[str, type[Any]] = {"python": PythonLoader}
if hasattr(yaml, "CSafeLoader"):
    class LibyamlLoader(_Kubernetes, yaml.CSafeLoader):
        yaml_implicit_resolvers = _no_dates(yaml.CSafeLoader.yaml_implicit_resolvers)

    LOADERS["libyaml"] = LibyamlLoader
Loader: type[Any] = LOADERS.get("libyaml", PythonLoader)
"""The loader :func:`read_documents` uses (tests run both)."""


@dataclass(frozen=True)
class ReadError:
    file: str
    line: int | None
    """1-based; None when the error is the whole file's (unreadable, not UTF-8)."""
    message: str
    field: str = ""
    ref: str = ""
    """``Kind/namespace/name`` when the document says which object it is."""


@dataclass(frozen=True)
class Document:
    """One parsed document (or one item of a ``kind: List``) and where it is in its file.

    Its node tree is not kept (about 13 KiB a small object): the lines of its fields are found
    again, when a problem names one, by composing its part of the file anew (:func:`_nodes`)."""

    data: Any
    text: str
    """The part of the file (between document markers) the document was read from."""
    offset: int
    """0-based line in the file where ``text`` starts."""
    index: int = 0
    """Which document of ``text`` (a ``--- {...}`` line starts another one within it)."""
    item: int | None = None
    """For an item of a ``kind: List``: its index in ``items``."""
    start: int = 0
    """0-based line of the document (or item) in ``text``."""

    @property
    def line(self) -> int:
        return self.offset + self.start + 1

    def _node(self) -> yaml.Node | None:
        nodes = _nodes(self.text)
        node = nodes[self.index] if self.index < len(nodes) else None
        if node is not None and self.item is not None:
            seq = next((v for k, v in getattr(node, "value", ()) if yamlnodes.key_text(k) == "items"), None)
            node = seq.value[self.item] if isinstance(seq, yaml.SequenceNode) and self.item < len(seq.value) else None
        return node

    def line_of(self, field: str) -> int:
        """The 1-based line of ``field`` (``spec.probe.interval``), or of the nearest part of it written."""
        node = self._node()
        return self.line if node is None else self.offset + yamlnodes.line_of(node, field) + 1

    def item_of(self, index: int, data: Any) -> Document:
        """The document of ``data``, the ``index``-th of this one's ``items`` (a ``kind: List``)."""
        item = replace(self, data=data, item=index)
        node = item._node()
        return replace(item, start=node.start_mark.line) if node is not None else item


@lru_cache(maxsize=8)
def _nodes(text: str) -> tuple[yaml.Node, ...]:
    """The node trees of ``text``'s documents (those before a syntax error, if any)."""
    out: list[yaml.Node] = []
    loader = None
    try:
        loader = Loader(text)
        while loader.check_node():
            out.append(loader.get_node())
    except (yaml.YAMLError, RecursionError):
        pass
    finally:
        if loader is not None:
            loader.dispose()
    return tuple(out)


def _chunks(text: str) -> list[tuple[int, str]]:
    """(0-based first line, text) of each part between document markers, as kubectl splits."""
    out: list[tuple[int, str]] = []
    lines = text.split("\n")
    start, buf = 0, list[str]()
    for i, line in enumerate(lines):
        rest = line[3:].strip()
        if line.startswith("---") and (not rest or rest.startswith("#")):
            if buf:
                out.append((start, "\n".join(buf) + "\n"))
            start, buf = i + 1, []
        else:
            buf.append(line)
    if any(line.strip() for line in buf):
        out.append((start, "\n".join(buf)))
    return out


def _read_chunk(file: str, offset: int, text: str, docs: list[Document], errors: list[ReadError]) -> None:
    node: yaml.Node | None = None
    index = -1
    loader = None
    try:
        loader = Loader(text)  # the pure-Python reader refuses control characters here already
        while loader.check_node():
            node, index = loader.get_node(), index + 1
            dup = yamlnodes.duplicate_key(node)
            if dup is not None:
                errors.append(ReadError(file, offset + dup.line + 1, f"duplicate key: already set on line "
                                        f"{offset + dup.first_line + 1} (the API server refuses a key written "
                                        "twice)", dup.field, yamlerrors.ref_of(node)))
                continue
            docs.append(Document(loader.construct_document(node), text, offset, index, start=node.start_mark.line))
    except yaml.YAMLError as e:
        line, message = yamlerrors.syntax(e, text, offset)
        errors.append(ReadError(file, offset + line + 1, bounded(message, MAX_MESSAGE)))
    except _Unbuildable as e:
        line, field, message = yamlerrors.unbuildable(e.node, e.error, node)
        errors.append(ReadError(file, offset + line + 1, bounded(message, MAX_MESSAGE), field, yamlerrors.ref_of(node)))
    except RecursionError:
        line = node.start_mark.line if node is not None else 0
        errors.append(ReadError(file, offset + line + 1, "nested too deeply to read", "", yamlerrors.ref_of(node)))
    finally:
        if loader is not None:
            loader.dispose()


def read_documents(path: Path) -> tuple[list[Document], list[ReadError]]:
    """Every document of ``path`` that parses, and one error per one that does not."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return [], [ReadError(str(path), None, f"cannot read: {e.strerror or e}")]
    except UnicodeDecodeError as e:
        return [], [ReadError(str(path), None, f"not UTF-8 text: byte 0x{e.object[e.start]:02x} at offset {e.start}")]
    docs: list[Document] = []
    errors: list[ReadError] = []
    for offset, chunk in _chunks(text.removeprefix("\ufeff")):
        _read_chunk(str(path), offset, chunk, docs, errors)
    return docs, errors
