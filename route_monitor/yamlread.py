"""Reading manifest files into Kubernetes-shaped objects, every failure one bounded line.

The boundary between a user's bytes and :mod:`route_monitor.manifests`: whatever a file holds,
:func:`read_documents` returns its documents or one message (never raises for the file's
content), and :func:`objects_of` returns each document's objects or says why one is not an
object, so the rest of the code sees only mappings with a mapping ``metadata``.

Classes of bad input handled here (issue 15): bytes that are not UTF-8; YAML errors (one
line: the reader's two-line "in <file>, line N" text is folded into the location); values
YAML parses but Python cannot construct (``!!timestamp 2020-02-31``, a plain ``2020-99-99``,
``!!float abc``, an integer of more than 4,300 digits) and nesting too deep to build;
``kind: List`` whose ``items`` is not a list or holds scalars; ``metadata`` or
``metadata.annotations`` that is not a mapping; a name or namespace that is not a string.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from alert_rules.fielderrors import bounded, echo

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it (about 10x faster on thousands of objects)."""
MAX_MESSAGE = 300


@dataclass(frozen=True)
class ReadError:
    location: str
    """``path`` or ``path:line``."""
    message: str


def _line(e: BaseException) -> int | None:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    return None if mark is None else int(mark.line) + 1


def read_documents(path: Path) -> tuple[list[Any], ReadError | None]:
    """The YAML documents of ``path`` (CSafeLoader/SafeLoader: safe), or why it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return [], ReadError(str(path), f"cannot read: {e.strerror or e}")
    except UnicodeDecodeError as e:
        return [], ReadError(str(path), f"not UTF-8 text: byte 0x{e.object[e.start]:02x} at offset {e.start}")
    try:
        return list(yaml.load_all(text, Loader=_Loader)), None
    except yaml.YAMLError as e:
        line = _line(e)
        what = getattr(e, "problem", None) or getattr(e, "reason", None) or str(e)
        context = getattr(e, "context", None)
        message = f"{context} {what}" if context and isinstance(what, str) else str(what)
        where = f"{path}:{line}" if line else str(path)
        return [], ReadError(where, bounded(f"not valid YAML: {message}", MAX_MESSAGE))
    except (ValueError, TypeError, OverflowError) as e:  # a tag or value Python cannot construct
        return [], ReadError(str(path), bounded(f"a value cannot be read: {e}", MAX_MESSAGE))
    except RecursionError:
        return [], ReadError(str(path), "nested too deeply to read")


def objects_of(doc: Any, source: str) -> Iterator[tuple[str, Mapping[str, Any] | None, str]]:
    """``(source, object, "")`` for each object of a document (the items of a ``kind: List``),
    ``(source, None, problem)`` for each part that is not a usable object."""
    if not isinstance(doc, Mapping):
        yield source, None, f"expected a Kubernetes object (a mapping), got {echo(doc)}"
        return
    if doc.get("kind") != "List":
        yield source, *_check(doc)
        return
    items = doc.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        yield source, None, f"items: expected a list of objects, got {echo(items)}"
        return
    for j, item in enumerate(items):
        src = f"{source}.items[{j}]"
        if isinstance(item, Mapping):
            yield src, *_check(item)
        else:
            yield src, None, f"expected a Kubernetes object (a mapping), got {echo(item)}"


def _check(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str]:
    meta = obj.get("metadata")
    if meta is None:
        return obj, ""
    if not isinstance(meta, Mapping):
        return None, f"metadata: expected a mapping, got {echo(meta)}"
    for key in ("name", "namespace"):
        if meta.get(key) is not None and not isinstance(meta.get(key), str):
            return None, f"metadata.{key}: expected a string, got {echo(meta.get(key))}"
    annotations = meta.get("annotations")
    if annotations is not None and not isinstance(annotations, Mapping):
        return None, f"metadata.annotations: expected a mapping of strings, got {echo(annotations)}"
    return obj, ""
