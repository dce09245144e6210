"""What an object says to route-monitor besides its monitor's fields: nothing unknown passes silently.

- :func:`unknown_annotations`: a ``routemonitor.io/`` annotation route-monitor does not know
  (``routemonitor.io/intreval``), with the nearest known one. The known ones are the ``ANN_``
  names of :mod:`alert_rules.names`, so an annotation added there is known here at once. The
  operator posts the same words as a Warning event on the object.
- :func:`kind_problem`: an object route-monitor would skip although it is meant for it: a
  RouteMonitor of a version the CRD does not serve (``routemonitor.io/v1``), any other kind of
  the ``routemonitor.io`` group (``Routemonitor``), or ``routemonitor.io/`` annotations on a
  kind no monitor is made from (``kind: Rout``), each saying which kinds and versions are read.
- :func:`ignored_annotations`: known annotations where they do nothing (``routemonitor.io/interval``
  on a Route without ``routemonitor.io/slo``; ``routemonitor.io/slo`` on a RouteMonitor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alert_rules import names
from alert_rules.fielderrors import NOT_SHOWN, FieldError
from route_monitor.spec import unknownfields
from route_monitor.targets import sources

KNOWN_ANNOTATIONS = frozenset(v for k, v in vars(names).items() if k.startswith("ANN_") and isinstance(v, str))
ON_ROUTEMONITOR = frozenset({names.ANN_MAINTENANCE, names.ANN_PAUSED})
"""The annotations a RouteMonitor itself reads (Contract 9)."""
READ = {names.KIND: names.API_VERSION, **{s.kind_name: s.api_version for s in sources.SOURCES}}
"""Kind -> apiVersion of what monitors are made from."""


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    found = meta.get("annotations") if isinstance(meta, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _ours(obj: Mapping[str, Any]) -> list[str]:
    return [str(k) for k in _annotations(obj) if str(k).startswith(names.ANNOTATION_PREFIX)]


def _field(annotation: str) -> str:
    return f"metadata.annotations[{annotation}]"


def unknown_annotations(obj: Mapping[str, Any]) -> list[FieldError]:
    return [unknownfields.unknown(_field(k), k, KNOWN_ANNOTATIONS, "unknown annotation")
            for k in _ours(obj) if k not in KNOWN_ANNOTATIONS]


def meant_annotations(obj: Mapping[str, Any]) -> set[str]:
    """The fields (``metadata.annotations[...]``) of known annotations that misspelt ones were
    meant to be, when those are not set: an error about one of them is the misspelling's."""
    present = _annotations(obj)
    return {_field(f.suggestion) for f in unknown_annotations(obj) if f.suggestion and f.suggestion not in present}


def _read_list() -> str:
    """``Route (route.openshift.io/v1), HTTPRoute, GRPCRoute (gateway.networking.k8s.io/v1), ...``:
    kinds of one apiVersion in a row share it (the message stays within its bound)."""
    items = list(READ.items())
    return ", ".join(kind if i + 1 < len(items) and items[i + 1][1] == api else f"{kind} ({api})"
                     for i, (kind, api) in enumerate(items))


def kind_problem(obj: Mapping[str, Any]) -> FieldError | None:
    kind, api = str(obj.get("kind") or ""), str(obj.get("apiVersion") or "")
    if READ.get(kind) == api or (kind in sources.BY_KIND_NAME and kind != names.KIND):
        return None
    group = api.rpartition("/")[0]
    if kind == names.KIND:
        return FieldError.of("apiVersion", NOT_SHOWN, f"{kind} is served as {names.API_VERSION} only, not as "
                             f"{api or 'no apiVersion'}; did you mean `{names.API_VERSION}`?", names.API_VERSION)
    if group != names.GROUP and not _ours(obj):
        return None
    near = unknownfields.suggestion(kind, READ)
    hint = f"did you mean `{near}`? " if near else ""
    return FieldError.of("kind", NOT_SHOWN, f"{kind or 'no kind'} ({api or 'no apiVersion'}) is not a kind "
                         f"route-monitor monitors; {hint}it reads {_read_list()}", near)


def ignored_annotations(obj: Mapping[str, Any]) -> list[FieldError]:
    """Known annotations that do nothing where they are (warnings: the object is otherwise fine)."""
    ours = [k for k in _ours(obj) if k in KNOWN_ANNOTATIONS]
    if obj.get("kind") == names.KIND:
        return [FieldError.of(_field(k), NOT_SHOWN, "only read on Routes, HTTPRoutes, Ingresses and Services; "
                              "a RouteMonitor sets it in its spec") for k in ours if k not in ON_ROUTEMONITOR]
    if names.ANN_SLO in ours or obj.get("kind") not in sources.BY_KIND_NAME:
        return []
    return [FieldError.of(_field(k), NOT_SHOWN, f"has no effect without {names.ANN_SLO} (this object is not "
                          "monitored)") for k in ours]
