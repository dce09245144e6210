"""Where a field sits in a YAML file: walks over composed YAML nodes (both PyYAML loaders).

A parsed document keeps its node tree, whose marks give each key's and item's line in the file:
:func:`line_of` turns a field path as the parsers name it (``spec.probe.expectedStatus[1]``,
``metadata.annotations[routemonitor.io/slo]``, ``spec.alerting.labels.app.kubernetes.io/team``)
into the line that holds it. :func:`duplicate_key` finds the first key written twice in one
mapping (the API server refuses such a manifest; PyYAML keeps the last value silently), and
:func:`path_to` names the node a value of which could not be built. Every walk is iterative:
a document nested a thousand deep does not exhaust the interpreter's stack.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import yaml

MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Duplicate:
    field: str
    """The path of the key written the second time."""
    line: int
    """0-based, in the document's text."""
    first_line: int


def key_text(node: yaml.Node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def child_path(parent: str, key: str | int) -> str:
    """``spec`` + ``probe`` -> ``spec.probe``; a list index or a key with a dot or a slash in brackets."""
    if isinstance(key, int) or "." in key or "/" in key:
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _children(node: yaml.Node, path: str) -> Iterator[tuple[str, yaml.Node, yaml.Node | None]]:
    """(path, child, key node) of a mapping's values and keys or a sequence's items."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            name = key_text(k)
            yield child_path(path, name if name is not None else "?"), v, k
            yield path, k, None
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield child_path(path, i), item, None


def walk(root: yaml.Node) -> Iterator[tuple[str, yaml.Node]]:
    """Every node once with its path (an alias's node is visited where it was defined only)."""
    seen: set[int] = set()
    stack: list[tuple[str, yaml.Node]] = [("", root)]
    while stack:
        path, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield path, node
        stack.extend((p, child) for p, child, _ in reversed(list(_children(node, path))))


def duplicate_key(root: yaml.Node) -> Duplicate | None:
    """The first key written twice in one mapping (paths are built only for the one found)."""
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for k, v in node.value:
                stack.append(v)
                if not isinstance(k, yaml.ScalarNode) or k.tag == MERGE_TAG:
                    stack.append(k)
                    continue
                ident = (k.tag, k.value)
                if ident in first:
                    return Duplicate(child_path(path_to(root, node), k.value), k.start_mark.line, first[ident])
                first[ident] = k.start_mark.line
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def path_to(root: yaml.Node, target: yaml.Node) -> str:
    """The path of ``target`` under ``root`` ("" when it is the root or not found)."""
    for path, node in walk(root):
        if node is target:
            return path
    return ""


def _tokens(field: str) -> Iterator[tuple[bool, str]]:
    """``a.b[c.d][0].e`` -> (dotted, text): ``(True, "a.b")``, ``(False, "c.d")``, ``(False, "0")``,
    ``(True, "e")``; a dotted run is matched against keys that may hold dots themselves."""
    rest = field
    while rest:
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0:
                return
            yield False, rest[1:end]
            rest = rest[end + 1:].removeprefix(".")
            continue
        end = rest.find("[")
        head, rest = (rest, "") if end < 0 else (rest[:end], rest[end:])
        yield True, head


def line_of(root: yaml.Node, field: str) -> int:
    """The 0-based line of the deepest part of ``field`` found under ``root`` (the key's line for
    a mapping value, the item's for a list item; the document's first line when nothing matches)."""
    node, line = root, root.start_mark.line
    for dotted, token in _tokens(field):
        if dotted:
            rest = token
            while rest and isinstance(node, yaml.MappingNode):
                match = max(((k, v) for k, v in node.value if isinstance(key_text(k), str) and
                             (rest == k.value or rest.startswith(k.value + "."))),
                            key=lambda kv: len(kv[0].value), default=None)
                if match is None:
                    return line
                node, line = match[1], match[0].start_mark.line
                rest = rest[len(match[0].value) + 1:]
            if rest:
                return line
        elif isinstance(node, yaml.SequenceNode) and token.isdigit() and int(token) < len(node.value):
            node = node.value[int(token)]
            line = node.start_mark.line
        elif isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if key_text(k) == token), None)
            if found is None:
                return line
            node, line = found[1], found[0].start_mark.line
        else:
            return line
    return line


def scalar_at(root: yaml.Node, *keys: str) -> str | None:
    """The scalar at ``keys`` under a mapping root (``kind``; ``metadata``, ``name``), or None."""
    node: yaml.Node = root
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        found = next((v for k, v in node.value if key_text(k) == key), None)
        if found is None:
            return None
        node = found
    return node.value if isinstance(node, yaml.ScalarNode) else None
