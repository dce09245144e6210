"""Contracts 1 and 7: an annotated object (a row of :data:`route_monitor.targets.sources.SOURCES`)
becomes a RouteMonitor manifest.

``monitor_manifest`` is pure: it turns the object's annotations into the RouteMonitor that the
operator applies (owned by the object) and that ``standalone`` monitors directly. A bad value
raises one :class:`InvalidSpec` with every bad annotation, each naming the annotation, never a
spec path the user did not write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alert_rules import names
from alert_rules.fielderrors import FieldError, InvalidSpec
from route_monitor.spec import checked
from route_monitor.spec.maintenance import annotation_items, as_annotation_error
from route_monitor.spec.monitor import MonitorSpec, ServiceRef, parse_paused, parse_routemonitor
from route_monitor.spec.paths import annotation_items as paths_items
from route_monitor.targets.sources import BY_KIND

# spec field path -> annotation that sets it (for error messages)
_FIELD_TO_ANNOTATION = {
    "spec.slo.availability": names.ANN_SLO,
    "spec.path": names.ANN_PATH,
    "spec.probe.interval": names.ANN_INTERVAL,
    "spec.probe.timeout": names.ANN_INTERVAL,
    "spec.slo.latency.threshold": names.ANN_LATENCY_THRESHOLD,
    "spec.slo.latency.objective": names.ANN_LATENCY_SLO,
    "spec.target.service.port": names.ANN_PORT,
    "spec.paused": names.ANN_PAUSED,
    "spec.target.ingress.host": names.ANN_HOST,
    "spec.target.httpRoute.host": names.ANN_HOST,
    "spec.target.grpcRoute.host": names.ANN_HOST,
    "spec.paths": names.ANN_PATHS,
}


def annotation_for(field: str) -> str | None:
    """The annotation that sets a spec field (``spec.slo.availability`` -> ``routemonitor.io/slo``)."""
    if field.startswith("spec.maintenance"):
        return names.ANN_MAINTENANCE
    if field.startswith("spec.paths"):
        return names.ANN_PATHS
    return _FIELD_TO_ANNOTATION.get(field)


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def is_opted_in(obj: Mapping[str, Any]) -> bool:
    return names.ANN_SLO in annotations_of(obj)


def _ann_error(annotation: str, value: object, reason: str) -> FieldError:
    return FieldError.of(f"metadata.annotations[{annotation}]", value, reason)


def _as_annotation(e: FieldError, ann: Mapping[str, Any]) -> FieldError:
    """A spec field error as the annotation that set the field (unchanged when none did)."""
    annotation = annotation_for(e.field)
    if annotation is None:
        return e
    if annotation == names.ANN_MAINTENANCE:
        return as_annotation_error(e, f"metadata.annotations[{annotation}]")
    return _ann_error(annotation, ann.get(annotation, e.value), e.reason)


def monitor_manifest(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The RouteMonitor manifest for an annotated object of ``kind`` (a key of ``sources.BY_KIND``),
    without ownerReferences. Every bad annotation is reported at once."""
    meta = obj.get("metadata") or {}
    ann = annotations_of(obj)
    if names.ANN_SLO not in ann:
        raise InvalidSpec.of([_ann_error(names.ANN_SLO, None, "missing: this object is not opted in")])
    errors: list[FieldError] = []
    source = BY_KIND[kind]
    ref: dict[str, Any] = {"name": meta.get("name")}
    target: dict[str, Any] = {source.ref.field: ref}
    if names.ANN_PORT in ann:
        if source.ref is not ServiceRef:
            errors.append(_ann_error(names.ANN_PORT, ann[names.ANN_PORT],
                                     f"only applies to Services; a {source.kind_name}'s port is its own"))
        else:
            ref["port"] = ann[names.ANN_PORT]
    if names.ANN_HOST in ann:
        if source.hosts is None:
            errors.append(_ann_error(names.ANN_HOST, ann[names.ANN_HOST], "only applies to Ingresses, "
                                     f"HTTPRoutes and GRPCRoutes (a {source.kind_name} has no choice of host)"))
        else:
            ref["host"] = ann[names.ANN_HOST]
    spec: dict[str, Any] = {"target": target, "slo": {"availability": ann[names.ANN_SLO]}}
    if names.ANN_PATH in ann:
        spec["path"] = ann[names.ANN_PATH]
    if names.ANN_INTERVAL in ann:
        spec["probe"] = {"interval": ann[names.ANN_INTERVAL]}
    has_thr, has_slo = names.ANN_LATENCY_THRESHOLD in ann, names.ANN_LATENCY_SLO in ann
    if has_thr != has_slo:
        missing = names.ANN_LATENCY_SLO if has_thr else names.ANN_LATENCY_THRESHOLD
        present = names.ANN_LATENCY_THRESHOLD if has_thr else names.ANN_LATENCY_SLO
        errors.append(_ann_error(missing, None, f"required together with {present} (a latency SLO needs both)"))
    elif has_thr:
        spec["slo"]["latency"] = {"threshold": ann[names.ANN_LATENCY_THRESHOLD],
                                  "objective": ann[names.ANN_LATENCY_SLO]}
    if names.ANN_MAINTENANCE in ann:
        field = f"metadata.annotations[{names.ANN_MAINTENANCE}]"
        try:
            spec["maintenance"] = annotation_items(ann[names.ANN_MAINTENANCE], field)
        except InvalidSpec as e:
            errors.extend(e.errors)
    if names.ANN_PATHS in ann:
        try:
            spec["paths"] = paths_items(ann[names.ANN_PATHS], f"metadata.annotations[{names.ANN_PATHS}]")
        except InvalidSpec as e:
            errors.extend(e.errors)
    if names.ANN_PAUSED in ann:
        try:
            spec["paused"] = parse_paused(ann[names.ANN_PAUSED], f"metadata.annotations[{names.ANN_PAUSED}]")
        except InvalidSpec as e:
            errors.extend(e.errors)
    manifest = {
        "apiVersion": names.API_VERSION,
        "kind": names.KIND,
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace") or "default",
            "labels": {names.LABEL_GENERATED_FROM: kind},
        },
        "spec": spec,
    }
    omitted = 0
    try:
        checked.routemonitor(manifest)  # what the API server refuses too: the operator could not apply it
    except InvalidSpec as e:
        errors.extend(_as_annotation(error, ann) for error in e.errors)
        omitted = e.omitted
    if errors:
        raise InvalidSpec.of(errors, omitted)
    return manifest


def monitor_spec(obj: Mapping[str, Any], kind: str) -> MonitorSpec:
    return parse_routemonitor(monitor_manifest(obj, kind))
