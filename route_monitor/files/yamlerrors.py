"""The words of a YAML document's failure, the same from either PyYAML loader where they can be.

:mod:`route_monitor.files.yamlread` reads a file document by document; when one fails this says
where (the line in the file) and what: a syntax error (an unclosed quote says where its
mapping opened; a tab, an unknown alias and nesting too deep get their own words, since
libyaml and the pure-Python parser word them differently), or a value that cannot be built
(the field it is in). :func:`ref_of` names the object (``Kind/namespace/name``) from the node
tree, when the document could not be built into one.
"""

from __future__ import annotations

import re

import yaml

from alert_rules.fielderrors import bounded, echo
from route_monitor.spec import yamlnodes


def ref_of(node: yaml.Node | None) -> str:
    if node is None:
        return ""
    kind, name = yamlnodes.scalar_at(node, "kind"), yamlnodes.scalar_at(node, "metadata", "name")
    namespace = yamlnodes.scalar_at(node, "metadata", "namespace") or "default"
    return f"{kind}/{namespace}/{name}" if kind and name else ""


def _code(character: object) -> int:
    return character if isinstance(character, int) else ord(str(character)[:1] or "\0")


def syntax(e: yaml.YAMLError, text: str, offset: int) -> tuple[int, str]:
    """(0-based line in ``text``, message) of a syntax error, as alike from either loader as can be;
    ``text`` starts on line ``offset`` of the file."""
    if isinstance(e, yaml.reader.ReaderError):
        return text.count("\n", 0, e.position), f"not valid YAML: {e.reason} (character U+{_code(e.character):04X})"
    problem, context = str(getattr(e, "problem", "") or e), getattr(e, "context", None) or ""
    mark = getattr(e, "problem_mark", None)
    if "end of stream" in problem and getattr(e, "context_mark", None) is not None:
        mark = e.context_mark  # type: ignore[attr-defined]  # where the unclosed thing opened
    line = mark.line if mark is not None else 0
    at = text[mark.index:mark.index + 80] if mark is not None else ""
    if at.startswith("\t"):
        return line, "not valid YAML: a tab character; YAML indents with spaces only"
    if "nesting depth" in problem:
        return line, "nested too deeply to read"
    alias = re.match(r"\*([^\s,\[\]{}]+)", at)
    if "undefined alias" in problem and alias:
        return line, f"not valid YAML: unknown alias *{alias[1]} (no anchor &{alias[1]} before it in this document)"
    opened = getattr(e, "context_mark", None)
    if context and opened is not None and opened.line != line:
        context += f" (opened on line {offset + opened.line + 1})"  # where an unclosed quote or bracket may be
    return line, f"not valid YAML: {context} {problem}".replace("  ", " ")


def unbuildable(node: yaml.Node, error: Exception, root: yaml.Node | None) -> tuple[int, str, str]:
    """(0-based line, field, message) of a value that cannot be built from ``node``."""
    kind = str(node.tag).rsplit(":", 1)[-1]
    field = yamlnodes.path_to(root, node) if root is not None else ""
    detail = f" ({bounded(str(error), 120)})" if isinstance(error, (ValueError, OverflowError)) else ""
    value = echo(node.value) if isinstance(node, yaml.ScalarNode) else f"a {type(node).__name__}"
    return node.start_mark.line, field, f"a value cannot be read: {value} is not a valid !!{kind}{detail}"
