"""A RouteMonitor manifest checked as the API server and then the operator check it: every error at once.

:func:`routemonitor` runs three passes over one object and raises one
:class:`~alert_rules.fielderrors.InvalidSpec` with all they find:

1. fields the CRD's schema does not declare (:func:`route_monitor.spec.unknownfields.unknown_fields`:
   the API server would drop them; ``alerts`` meant ``alerting``);
2. the parser (:func:`route_monitor.spec.monitor.parse_routemonitor`: what the operator refuses, in
   its own words, e.g. a timeout longer than the interval);
3. the CRD's schema (:func:`route_monitor.spec.crdschema.schema_errors`: what the API server
   refuses, e.g. ``availability: 99.9``, a number where the schema says string).

A field the parser already names is not named again by the schema (one error per mistake),
and a field the user misspelt is not also reported missing: ``availabilty`` is one error
("did you mean `availability`?"), not two.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from alert_rules.fielderrors import FieldError, InvalidSpec
from route_monitor.spec import crdschema, unknownfields
from route_monitor.spec.monitor import MonitorSpec, parse_routemonitor


def _related(a: str, b: str) -> bool:
    """Whether one field is the other or under it."""
    return a == b or a.startswith((f"{b}.", f"{b}[")) or b.startswith((f"{a}.", f"{a}["))


def _present(obj: Any, field: str) -> bool:
    """Whether ``field`` (``spec.probe.tls.insecureSkipVerify``, ``spec.maintenance[0].timeZone``) is set in ``obj``."""
    node = obj
    for part in re.findall(r"[^.\[\]]+", field):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            return False
    return True


def _meant(obj: Mapping[str, Any], unknown: Iterable[FieldError]) -> set[str]:
    """The fields misspelt ones were meant to be, when those are not set
    (``spec.slo.availabilty`` -> ``spec.slo.availability``), and the mappings that hold them."""
    out = set()
    for f in unknown:
        parent = f.field[:len(f.field) - len(f.field.rsplit(".", 1)[-1])].rstrip(".")
        meant = f"{parent}.{f.suggestion}" if parent else f.suggestion
        if f.suggestion and not _present(obj, meant):
            out |= {meant, parent}
    return out


def errors(obj: Mapping[str, Any], parse_errors: Iterable[FieldError]) -> list[FieldError]:
    """Unknown fields, then the parser's errors, then what only the schema refuses; an error a
    misspelt field explains (the field it meant is missing, its mapping lacks a field) is left out."""
    unknown = unknownfields.unknown_fields(obj)
    meant = _meant(obj, unknown)
    parsed = [f for f in parse_errors if f.field not in meant]
    schema = [f for f in crdschema.schema_errors(obj)
              if f.field not in meant and not any(_related(f.field, p.field) for p in parsed)]
    return [*unknown, *parsed, *schema]


def routemonitor(obj: Mapping[str, Any], *, default_namespace: str = "default") -> MonitorSpec:
    """The monitor of a RouteMonitor manifest the API server and the operator both accept."""
    spec: MonitorSpec | None = None
    parse_errors: tuple[FieldError, ...] = ()
    omitted = 0
    try:
        spec = parse_routemonitor(obj, default_namespace=default_namespace)
    except InvalidSpec as e:
        parse_errors, omitted = e.errors, e.omitted
    found = errors(obj, parse_errors)
    if found or spec is None:
        raise InvalidSpec.of(found, omitted)
    return spec
