"""Pure planning: what the cluster should contain for one ``(namespace, name)`` key.

- :func:`plan_generated`: annotated Route/Service -> the RouteMonitor to apply, delete or leave
  alone, plus Warning events (Contract 1: bad annotation, Route wins over Service, a hand-written
  RouteMonitor of the same name is never overwritten);
- :func:`resolve_target`: a RouteMonitor's target -> the URL to probe, or why not;
- :func:`rule_object`: the PrometheusRule for a monitor, owned by its RouteMonitor.

No I/O here: the supervisor does the writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import alert_rules
from alert_rules import names
from alert_rules.model import InvalidSpec, RuleDefaults
from route_monitor import resolve
from route_monitor.annotations import annotation_for, is_opted_in, monitor_manifest
from route_monitor.operator.world import Key, World
from route_monitor.spec import MonitorSpec

SOURCE_TYPES = {"route": ("route.openshift.io/v1", "Route"), "service": ("v1", "Service")}


@dataclass(frozen=True)
class WarningEvent:
    """A Warning Event to post on ``involved`` (an object reference)."""

    involved: tuple[tuple[str, str], ...]
    reason: str
    message: str


@dataclass(frozen=True)
class Generated:
    action: Literal["apply", "delete", "none"]
    manifest: Mapping[str, Any] | None = None
    warnings: tuple[WarningEvent, ...] = ()


@dataclass(frozen=True)
class Unresolved:
    """Why a monitor's target has no URL: ``reason`` is a CamelCase condition reason."""

    reason: str
    message: str


def reference(kind: str, obj: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    api_version, kind_name = SOURCE_TYPES.get(kind, (names.API_VERSION, names.KIND))
    meta = obj.get("metadata") or {}
    return (("apiVersion", api_version), ("kind", kind_name), ("name", str(meta.get("name"))),
            ("namespace", str(meta.get("namespace") or "default")), ("uid", str(meta.get("uid", ""))))


def owner_reference(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    ref = dict(reference(kind, obj))
    return {"apiVersion": ref["apiVersion"], "kind": ref["kind"], "name": ref["name"], "uid": ref["uid"],
            "controller": True}


def _annotation_message(e: InvalidSpec) -> str:
    annotation = e.field.removeprefix("metadata.annotations[").removesuffix("]")
    shown = "missing" if e.value is None else f"{e.value!r}"
    return f"annotation {annotation}: {shown} is not accepted: {e.reason}; no monitor change was made"


def _is_generated(monitor: Mapping[str, Any] | None) -> bool:
    labels = (monitor or {}).get("metadata", {}).get("labels") or {}
    return names.LABEL_GENERATED_FROM in labels


def _same(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    em, dm = existing.get("metadata") or {}, desired["metadata"]
    e_labels = em.get("labels") or {}
    return (existing.get("spec") == desired["spec"]
            and all(e_labels.get(k) == v for k, v in dm["labels"].items())
            and [o.get("uid") for o in em.get("ownerReferences") or []] == [o["uid"] for o in dm["ownerReferences"]])


def plan_generated(world: World, key: Key) -> Generated:
    route, service, existing = world.routes.get(key), world.services.get(key), world.monitors.get(key)
    route_on = route is not None and is_opted_in(route)
    service_on = service is not None and is_opted_in(service)
    warnings: list[WarningEvent] = []
    if route_on and service_on:
        assert service is not None
        warnings.append(WarningEvent(reference("service", service), "RouteTakesPrecedence",
                                f"Route {key[0]}/{key[1]} is annotated too; the Route is monitored, "
                                "this Service's routemonitor.io annotations are ignored"))
    kind = "route" if route_on else "service" if service_on else None
    source = route if route_on else service
    if kind is None or source is None:
        if existing is not None and _is_generated(existing) and _source_seen_without_annotation(world, key, existing):
            return Generated("delete", warnings=tuple(warnings))
        return Generated("none", warnings=tuple(warnings))
    try:
        manifest = monitor_manifest(source, kind)  # type: ignore[arg-type]
    except InvalidSpec as e:
        warnings.append(WarningEvent(reference(kind, source), "InvalidAnnotation", _annotation_message(e)))
        return Generated("none", warnings=tuple(warnings))
    manifest["metadata"]["ownerReferences"] = [owner_reference(kind, source)]
    if existing is not None and not _is_generated(existing):
        warnings.append(WarningEvent(reference(kind, source), "RouteMonitorExists",
                                f"RouteMonitor {key[0]}/{key[1]} was not generated from annotations; "
                                "it is left as it is and the annotations are ignored"))
        return Generated("none", warnings=tuple(warnings))
    if existing is not None and _same(existing, manifest):
        return Generated("none", manifest, tuple(warnings))
    return Generated("apply", manifest, tuple(warnings))


def _source_seen_without_annotation(world: World, key: Key, monitor: Mapping[str, Any]) -> bool:
    """Delete a generated monitor only when its owner is known and no longer opted in. An owner
    not (yet) seen is left to the garbage collector: at start-up, RouteMonitors may be listed
    before the Routes that own them."""
    owners = {o.get("uid") for o in (monitor.get("metadata") or {}).get("ownerReferences") or []}
    for obj in (world.routes.get(key), world.services.get(key)):
        if obj is not None and (obj.get("metadata") or {}).get("uid") in owners:
            return not is_opted_in(obj)
    return False


def resolve_target(spec: MonitorSpec, world: World, *, allow_url_targets: bool,
                   cluster_domain: str = "cluster.local") -> resolve.ResolvedTarget | Unresolved:
    key = (spec.namespace, spec.target.name)
    try:
        if spec.target.kind == "route":
            route = world.routes.get(key)
            if route is None:
                return Unresolved("RouteNotFound", f"Route {key[0]}/{key[1]} does not exist (yet)")
            target = resolve.resolve_route(route, spec.path)
        elif spec.target.kind == "service":
            service = world.services.get(key)
            if service is None:
                return Unresolved("ServiceNotFound", f"Service {key[0]}/{key[1]} does not exist (yet)")
            target = resolve.resolve_service(service, spec.target, spec.path, cluster_domain=cluster_domain)
        else:
            if not allow_url_targets:
                return Unresolved("URLTargetsNotAllowed", "url targets are off: the operator runs without "
                                  "--allow-url-targets; use a route or service target")
            target = resolve.resolve_url(spec.target, spec.path)
        resolve.check_url_safe(target.url)
    except resolve.TargetError as e:
        return Unresolved(e.reason, e.message)
    return target


def rule_object(spec: MonitorSpec, monitor: Mapping[str, Any], defaults: RuleDefaults | None = None
                ) -> dict[str, Any]:
    d = defaults or RuleDefaults()
    obj = dict(alert_rules.prometheus_rule_object(d.apply(spec.slo()), extra_labels=d.object_labels))
    meta = dict(obj.get("metadata") or {})
    meta.setdefault("name", spec.name)
    meta["namespace"] = spec.namespace
    meta["ownerReferences"] = [owner_reference("routemonitor", monitor)]
    obj["metadata"] = meta
    return obj


def findings(spec: MonitorSpec, monitor: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The generator's findings on the objective as (errors, warnings), each ``field: message``;
    for a monitor generated from annotations the field is the annotation the user wrote."""
    generated = _is_generated(monitor)
    errors: list[str] = []
    warnings: list[str] = []
    for f in alert_rules.findings(spec.slo()):
        annotation = annotation_for(f.field) if generated else None
        text = f"{annotation or f.field}: {f.message}"
        (errors if f.severity == "error" else warnings).append(text)
    return tuple(errors), tuple(warnings)
