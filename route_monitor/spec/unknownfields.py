"""Fields and names nobody declared: a misspelling, said with the nearest known name.

The API server drops a field the RouteMonitor CRD does not declare (pruning) and ignores an
annotation nobody reads; ``check`` names each instead. :func:`unknown_fields` walks a manifest
along the CRD's own schema (:func:`route_monitor.spec.crdschema.files_schema`), so a field added to
the CRD is known here at once; ``metadata`` is Kubernetes' ObjectMeta, which the schema leaves
open. :func:`unknown` words one unknown name with :func:`suggestion` (``difflib``), for fields
and annotations alike.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from alert_rules.fielderrors import NOT_SHOWN, FieldError
from route_monitor.spec.crdschema import files_schema
from route_monitor.spec.yamlnodes import child_path

OBJECT_META = ("name", "namespace", "labels", "annotations", "generateName", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
               "finalizers", "managedFields", "selfLink", "clusterName")
"""The fields of Kubernetes' ObjectMeta (``metadata``), which the CRD's schema leaves open."""


def suggestion(name: object, known: Any) -> str:
    """The nearest of ``known`` to a misspelt ``name`` ("" when none is near)."""
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return close[0] if close else ""


def unknown(field: str, name: object, known: Any, what: str = "unknown field") -> FieldError:
    """One unknown name, with the nearest known one when there is one."""
    near = suggestion(name, known)
    hint = f"; did you mean `{near}`?" if near else f"; known: {', '.join(sorted(map(str, known)))}"
    return FieldError.of(field, NOT_SHOWN, f"{what}{hint}", near)


def unknown_fields(obj: Mapping[str, Any]) -> list[FieldError]:
    """Every field of ``obj`` the CRD's schema does not declare (the API server would drop it)."""
    out: list[FieldError] = []
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        out += [unknown(child_path("metadata", str(k)), k, OBJECT_META) for k in meta if k not in OBJECT_META]
    stack: list[tuple[str, Any, Mapping[str, Any]]] = [("", {k: v for k, v in obj.items() if k != "status"},
                                                        files_schema())]
    while stack:
        path, value, s = stack.pop()
        if isinstance(value, list) and isinstance(s.get("items"), Mapping):
            stack.extend((child_path(path, i), item, s["items"]) for i, item in enumerate(value))
        if not isinstance(value, Mapping) or s.get("x-kubernetes-preserve-unknown-fields"):
            continue
        props, extra = s.get("properties"), s.get("additionalProperties")
        for key, item in value.items():
            at = child_path(path, str(key))
            if isinstance(props, Mapping) and key in props:
                stack.append((at, item, props[key]))
            elif isinstance(extra, Mapping):
                stack.append((at, item, extra))
            elif isinstance(props, Mapping) and extra is None:
                out.append(unknown(at, key, props))
    return sorted(out, key=lambda f: f.field)
