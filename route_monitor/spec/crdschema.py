"""The RouteMonitor CRD's own ``openAPIV3Schema``, applied to a manifest as the API server applies it.

``check``, ``rules`` and ``standalone`` accept what the API server accepts: a manifest is
validated against the schema of the CRD this package ships (``route_monitor/crds/``, a copy of
``crds/routemonitor.yaml`` kept equal by a test) with the ``jsonschema`` library, not a second
hand-written copy of the rules. Where OpenAPI and JSON Schema differ, the schema is translated
once: ``x-kubernetes-int-or-string`` becomes "an integer or a string", ``format: date-time``
is checked as the API server's ``strfmt`` checks it, ``status`` is left out (the API server
resets it on create), and a reference under ``spec.probe`` may name a ``dir`` of files instead of
a ``name`` (``standalone``'s credentials from files; the API server refuses such a manifest).

The API server prunes a field the schema does not declare; :mod:`route_monitor.spec.unknownfields`
names each one instead, walking :func:`files_schema`.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import yaml

from alert_rules import names
from alert_rules.fielderrors import FieldError
from route_monitor.spec.yamlnodes import child_path

_TIME = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))")
_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
          "array": "a list", "object": "a mapping"}


def crd() -> Mapping[str, Any]:
    """The CRD as shipped in this package."""
    text = resources.files("route_monitor").joinpath("crds/routemonitor.yaml").read_text(encoding="utf-8")
    loaded: Mapping[str, Any] = yaml.safe_load(text)
    return loaded


def _translate(node: Any) -> Any:
    """OpenAPI -> JSON Schema, recursively (``x-kubernetes-int-or-string``)."""
    if isinstance(node, list):
        return [_translate(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _translate(v) for k, v in node.items()}
    if out.pop("x-kubernetes-int-or-string", False):
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


@cache
def schema() -> Mapping[str, Any]:
    """The served version's ``openAPIV3Schema``, as in the CRD."""
    version = next(v for v in crd()["spec"]["versions"] if v["name"] == names.VERSION)
    found: Mapping[str, Any] = version["schema"]["openAPIV3Schema"]
    return found


def _with_dir(node: Any, under_probe: bool = False) -> Any:
    """Files only: a reference under ``spec.probe`` (a Secret's, a ConfigMap's) may name a ``dir``
    instead of a ``name`` (:mod:`route_monitor.files.filecreds`: ``standalone`` reads credentials from
    files). Such a manifest is for ``standalone``: the API server refuses it, the parser says so."""
    if isinstance(node, list):
        return [_with_dir(n, under_probe) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _with_dir(v, under_probe or k == "probe") for k, v in node.items()}
    props = out.get("properties")
    if under_probe and isinstance(props, dict) and out.get("required") == ["name"] and "name" in props:
        out["properties"] = {**props, "dir": {"type": "string", "minLength": 1}}
        del out["required"]
        out["anyOf"] = [{"required": ["name"]}, {"required": ["dir"]}]
    return out


@cache
def files_schema() -> Mapping[str, Any]:
    """:func:`schema` in JSON Schema words (``x-kubernetes-int-or-string``), with the ``dir`` of
    files (:func:`_with_dir`): what ``check`` applies to a manifest."""
    translated: Mapping[str, Any] = _with_dir(_translate(copy.deepcopy(dict(schema()))))
    return translated


def is_date_time(value: object) -> bool:
    """``format: date-time`` as the API server's ``strfmt.IsDateTime`` reads it."""
    if not isinstance(value, str):
        return True
    parts = value.lower().split("t")
    if len(parts) < 2 or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", parts[0]):
        return False
    try:
        dt.date.fromisoformat(parts[0])
    except ValueError:
        return False
    m = _TIME.fullmatch(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("date-time")(is_date_time)


@cache
def _validator() -> Any:
    applied = {**files_schema(), "properties": {k: v for k, v in files_schema()["properties"].items()
                                                 if k != "status"}}  # reset by the API server on create
    return jsonschema.Draft4Validator(applied, format_checker=_FORMATS)


def _path(parts: Iterator[Any]) -> str:
    out = ""
    for p in parts:
        out = child_path(out, p if isinstance(p, int) else str(p))
    return out


def _reason(e: Any) -> tuple[str, str]:
    """(field, reason) of one jsonschema error, in the words of the parsers' messages."""
    field = _path(iter(e.absolute_path))
    if e.validator == "type":
        wanted = e.validator_value if isinstance(e.validator_value, list) else [e.validator_value]
        return field, "expected " + " or ".join(_TYPES.get(str(t), str(t)) for t in wanted)
    if e.validator == "anyOf" and all("type" in s for s in e.validator_value):
        return field, "expected " + " or ".join(_TYPES.get(s["type"], s["type"]) for s in e.validator_value)
    if e.validator == "required":
        missing = next((p for p in e.validator_value if p not in (e.instance or {})), "")
        return child_path(field, str(missing)), "required"
    if e.validator == "oneOf":
        keys = [", ".join(s.get("required", [])) for s in e.validator_value]
        return field, f"exactly one of {' or '.join('{' + k + '}' for k in keys)} is required"
    if e.validator == "enum":
        return field, f"expected one of {', '.join(map(str, e.validator_value))}"
    if e.validator == "pattern":
        described = e.schema.get("description")
        return field, f"not accepted by the CRD: {described}" if described else \
            f"does not match the CRD's pattern {e.validator_value}"
    if e.validator == "format":
        return field, 'expected an RFC 3339 date and time, e.g. "2026-12-01T02:00:00Z"'
    return field, f"refused by the CRD's schema ({e.validator}: {e.validator_value})"


def without_nulls(value: Any, depth: int = 0) -> Any:
    """``value`` without the ``null`` fields of its mappings: the API server drops them before it
    validates (no field of the schema is ``nullable``), as the parser reads them as not set."""
    if depth > 64:  # deeper than any field of the schema: left to the type checks
        return value
    if isinstance(value, Mapping):
        return {k: without_nulls(v, depth + 1) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v, depth + 1) for v in value]
    return value


def schema_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every field of ``obj`` the API server's validation of the CRD's schema refuses."""
    obj = without_nulls(obj)
    validator = _validator()
    if validator.is_valid(obj):  # the common case, three times faster than collecting no errors
        return []
    out = []
    for e in sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        field, reason = _reason(e)
        out.append(FieldError.of(field, e.instance if e.validator != "required" else None, reason))
    return out
