"""The Kubernetes objects of a parsed YAML document, or why a part of it is not one.

:func:`objects_of` returns each object of a document (the items of a ``kind: List``) with its
own :class:`~route_monitor.files.yamlread.Document` (so its fields' lines are known), or the problem
that keeps a part from being an object the API server would take: not a mapping, ``metadata``
or ``metadata.annotations`` that is not a mapping, a name or namespace that is not a string, a
label or annotation value that is not a string (``routemonitor.io/slo: 99.9`` unquoted: the API
server refuses the whole object). The rest of the code sees only mappings with a mapping
``metadata`` whose annotations are strings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from alert_rules.fielderrors import echo
from route_monitor.files.yamlread import Document
from route_monitor.spec.yamlnodes import child_path


@dataclass(frozen=True)
class Part:
    """An object of a document (``problem`` empty), or a part that is not a usable object."""

    source: str
    """``path``, ``path#N`` or ``path#N.items[j]``: unique among everything read."""
    doc: Document
    obj: Mapping[str, Any] | None
    field: str = ""
    problem: str = ""


def objects_of(doc: Document, source: str) -> Iterator[Part]:
    data = doc.data
    if not isinstance(data, Mapping):
        yield Part(source, doc, None, "", f"expected a Kubernetes object (a mapping), got {echo(data)}")
        return
    if data.get("kind") != "List":
        yield _checked(source, doc)
        return
    items = data.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        yield Part(source, doc, None, "items", f"expected a list of objects, got {echo(items)}")
        return
    for j, item in enumerate(items):
        if isinstance(item, Mapping):
            yield _checked(f"{source}.items[{j}]", doc.item_of(j, item))
        else:
            yield Part(f"{source}.items[{j}]", doc, None, f"items[{j}]", f"expected a Kubernetes object "
                       f"(a mapping), got {echo(item)}")


def _checked(source: str, doc: Document) -> Part:
    obj: Mapping[str, Any] = doc.data
    meta = obj.get("metadata")
    if meta is None:
        return Part(source, doc, obj)
    if not isinstance(meta, Mapping):
        return Part(source, doc, None, "metadata", f"expected a mapping, got {echo(meta)}")
    for key in ("name", "namespace"):
        if meta.get(key) is not None and not isinstance(meta.get(key), str):
            return Part(source, doc, None, f"metadata.{key}", f"expected a string, got {echo(meta.get(key))}")
    for key in ("annotations", "labels"):
        values = meta.get(key)
        if values is None:
            continue
        if not isinstance(values, Mapping):
            return Part(source, doc, None, f"metadata.{key}", f"expected a mapping of strings, got {echo(values)}")
        for name, value in values.items():
            if not isinstance(value, str):
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                hint = f'; quote it: "{shown}"' if isinstance(value, (int, float)) else ""
                return Part(source, doc, None, child_path(f"metadata.{key}", str(name)),
                            f"expected a string, got {echo(value)}{hint}")
    return Part(source, doc, obj)
