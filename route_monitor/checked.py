"""A RouteMonitor manifest checked as the API server and then the operator check it: every error at once.

:func:`routemonitor` runs three passes over one object and raises one
:class:`~alert_rules.fielderrors.InvalidSpec` with all they find:

1. fields the CRD's schema does not declare (:func:`route_monitor.crdschema.unknown_fields`:
   the API server would drop them; ``alerts`` meant ``alerting``);
2. the parser (:func:`route_monitor.spec.parse_routemonitor`: what the operator refuses, in
   its own words, e.g. a timeout longer than the interval);
3. the CRD's schema (:func:`route_monitor.crdschema.schema_errors`: what the API server
   refuses, e.g. ``availability: 99.9``, a number where the schema says string).

A field the parser already names is not named again by the schema (one error per mistake),
and a field the user misspelt is not also reported missing: ``availabilty`` is one error
("did you mean `availability`?"), not two.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from alert_rules.fielderrors import FieldError, InvalidSpec
from route_monitor import crdschema
from route_monitor.spec import MonitorSpec, parse_routemonitor


def _related(a: str, b: str) -> bool:
    """Whether one field is the other or under it."""
    return a == b or a.startswith((f"{b}.", f"{b}[")) or b.startswith((f"{a}.", f"{a}["))


def _meant(unknown: Iterable[FieldError]) -> set[str]:
    """The fields the misspelt ones were meant to be (``spec.slo.availabilty`` -> ``spec.slo.availability``)."""
    out = set()
    for f in unknown:
        if f.suggestion:
            parent = f.field[:len(f.field) - len(f.field.rsplit(".", 1)[-1])].rstrip(".")
            out.add(f"{parent}.{f.suggestion}" if parent else f.suggestion)
    return out


def errors(obj: Mapping[str, Any], parse_errors: Iterable[FieldError]) -> list[FieldError]:
    """Unknown fields, then the parser's errors, then what only the schema refuses."""
    unknown = crdschema.unknown_fields(obj)
    meant = _meant(unknown)
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
