"""``check -o json``: the monitors and the findings as one JSON object, for CI.

``{"monitors": [...], "errors": [...], "warnings": [...], "summary": {...}}``. Each finding has
the same keys whether or not it knows them (``null`` when not): ``file``, ``line``, ``object``,
``field``, ``message``, ``suggestion``. They are read from the finding objects of
:mod:`route_monitor.files.manifests` as they are; a finding that carries no line of its own gives the
one its ``source`` names (``path:LINE``), and ``path#N`` (the N-th document) becomes ``file`` and
``document``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from alert_rules import explain
from route_monitor.files.manifests import ManifestError
from route_monitor.spec.monitor import MonitorSpec, UrlTarget

_SOURCE = re.compile(r"^(?P<file>.*?)(?::(?P<line>\d+))?(?:#(?P<doc>\d+))?(?::(?P<line2>\d+))?$")


def finding(p: ManifestError) -> dict[str, Any]:
    """One finding with every key present."""
    parsed = _SOURCE.match(p.source)
    assert parsed is not None  # the pattern matches every string
    line = getattr(p, "line", None) or parsed["line"] or parsed["line2"]
    return {
        "file": getattr(p, "file", None) or parsed["file"] or None,
        "document": int(parsed["doc"]) if parsed["doc"] else None,
        "line": int(line) if line else None,
        "object": p.ref or None,
        "field": p.field or None,
        "message": p.message,
        "suggestion": getattr(p, "suggestion", None) or None,
    }


def monitor(spec: MonitorSpec, source: str | None, protocol: str = "") -> dict[str, Any]:
    t = spec.target
    parsed = _SOURCE.match(source or "")
    assert parsed is not None
    return {
        "namespace": spec.namespace,
        "name": spec.name,
        "file": parsed["file"] or None,
        "document": int(parsed["doc"]) if parsed["doc"] else None,
        "target": t.url if isinstance(t, UrlTarget) else f"{t.kind} {t.name}",
        "path": spec.path or None,
        "protocol": protocol or None,
        "interval_seconds": spec.probe.interval_ms / 1000,
        "vantages": spec.probe.vantages.count,
        "quorum": spec.probe.vantages.quorum,
        "paused": spec.paused,
        "explanation": explain(spec.slo()).rstrip(),
    }


def document(monitors: Sequence[MonitorSpec], sources: Mapping[tuple[str, str], str],
             problems: Sequence[ManifestError], protocols: Mapping[tuple[str, str], str] | None = None) -> str:
    errors = [finding(p) for p in problems if not p.warning]
    warnings = [finding(p) for p in problems if p.warning]
    return json.dumps({
        "monitors": [monitor(m, sources.get(m.key), (protocols or {}).get(m.key, "")) for m in monitors],
        "errors": errors,
        "warnings": warnings,
        "summary": {"monitors": len(monitors), "errors": len(errors), "warnings": len(warnings)},
    }, indent=2) + "\n"
