"""Pure planning: what the cluster should contain for one ``(namespace, name)`` key.

- :func:`plan_generated`: annotated source (a row of :data:`route_monitor.targets.sources.SOURCES`) -> the
  RouteMonitor to apply, delete or leave alone, plus Warning events (Contracts 1 and 7: bad
  annotation, precedence among sources of one name, a hand-written RouteMonitor of the same
  name is never overwritten, an Ingress/HTTPRoute without a usable host gets no monitor);
- :func:`resolve_target`: a RouteMonitor's target -> the URL to probe, or why not;
- :func:`rule_object`: the PrometheusRule for a monitor, owned by its RouteMonitor.

No I/O here: the supervisor does the writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import alert_rules
from alert_rules import fielderrors, names
from alert_rules.fielderrors import InvalidSpec, bounded
from alert_rules.model import RuleDefaults
from route_monitor.operator.world import Key, World
from route_monitor.spec.monitor import MonitorSpec, UrlTarget
from route_monitor.targets import resolve, sources, vet
from route_monitor.targets.annotations import annotation_for, annotations_of, is_opted_in, monitor_manifest
from route_monitor.targets.sources_fields import InvalidSource

ANNOTATION_MESSAGE_MAX = 1000


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
    source = sources.BY_KIND.get(kind)
    if source is not None:
        return tuple(source.reference(obj).items())
    meta = obj.get("metadata") or {}
    return (("apiVersion", names.API_VERSION), ("kind", names.KIND), ("name", str(meta.get("name"))),
            ("namespace", str(meta.get("namespace") or "default")), ("uid", str(meta.get("uid", ""))))


def owner_reference(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    ref = dict(reference(kind, obj))
    return {"apiVersion": ref["apiVersion"], "kind": ref["kind"], "name": ref["name"], "uid": ref["uid"],
            "controller": True}


def _annotation_message(e: InvalidSpec) -> str:
    """Every bad annotation of the object, bounded (an Event message holds 1,024 characters)."""
    parts = []
    for f in e.errors:
        annotation = f.field.removeprefix("metadata.annotations[").removesuffix("]")
        shown = "missing" if f.value is None else f.got
        parts.append(f"annotation {annotation}: {shown} is not accepted: {f.reason}")
    if e.omitted:
        parts.append(f"{e.omitted} more")
    end = "; no monitor change was made"
    text = "; ".join(parts)
    if len(parts) > 1 and len(text) + len(end) > ANNOTATION_MESSAGE_MAX:
        text = e.summary(ANNOTATION_MESSAGE_MAX - len(end))  # every annotation named, values left out
    return bounded(text, ANNOTATION_MESSAGE_MAX - len(end)) + end


def is_generated(monitor: Mapping[str, Any] | None) -> bool:
    """Made by the operator from annotations (the only RouteMonitors it writes over or deletes)."""
    labels = (monitor or {}).get("metadata", {}).get("labels") or {}
    return names.LABEL_GENERATED_FROM in labels


def same_monitor(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """``existing`` already says what the generated ``desired`` says: no write needed."""
    em, dm = existing.get("metadata") or {}, desired["metadata"]
    e_labels = em.get("labels") or {}
    return (existing.get("spec") == desired["spec"]
            and all(e_labels.get(k) == v for k, v in dm["labels"].items())
            and [o.get("uid") for o in em.get("ownerReferences") or []] == [o["uid"] for o in dm["ownerReferences"]])


def unknown_annotations(kind: str, obj: Mapping[str, Any]) -> list[WarningEvent]:
    """One ``UnknownAnnotation`` event per ``routemonitor.io/`` annotation route-monitor does not
    know, with the nearest known one (the words ``check`` prints)."""
    return [WarningEvent(reference(kind, obj), "UnknownAnnotation",
                         f"annotation {f.field.removeprefix('metadata.annotations[').removesuffix(']')}: {f.reason}; "
                         "it is ignored") for f in vet.unknown_annotations(obj)]


def plan_generated(world: World, key: Key) -> Generated:
    found = {s.kind: obj for s in sources.SOURCES if (obj := world.lookup(s.kind, key)) is not None}
    opted_in = {kind: obj for kind, obj in found.items() if is_opted_in(obj)}
    existing = world.monitors.get(key)
    winner = sources.winner(opted_in)
    warnings = [WarningEvent(reference(kind, obj), f"{winner.kind_name}TakesPrecedence",
                             f"{winner.kind_name} {key[0]}/{key[1]} is annotated too; the {winner.kind_name} is "
                             f"monitored, this {sources.BY_KIND[kind].kind_name}'s routemonitor.io annotations "
                             "are ignored")
                for kind, obj in opted_in.items() if winner is not None and kind != winner.kind]
    for kind, obj in found.items():
        warnings += unknown_annotations(kind, obj)
    if existing is not None and not is_generated(existing):
        warnings += unknown_annotations("routemonitor", existing)
    if winner is None:
        if existing is not None and is_generated(existing) and _source_seen_without_annotation(world, key, existing):
            return Generated("delete", warnings=tuple(warnings))
        return Generated("none", warnings=tuple(warnings))
    kind, source = winner.kind, opted_in[winner.kind]
    try:
        manifest = monitor_manifest(source, kind)
    except InvalidSpec as e:
        warnings.append(WarningEvent(reference(kind, source), "InvalidAnnotation", _annotation_message(e)))
        return Generated("none", warnings=tuple(warnings))
    manifest["metadata"]["ownerReferences"] = [owner_reference(kind, source)]
    if existing is not None and not is_generated(existing):
        warnings.append(WarningEvent(reference(kind, source), "RouteMonitorExists",
                                f"RouteMonitor {key[0]}/{key[1]} was not generated from annotations; "
                                "it is left as it is and the annotations are ignored"))
        return Generated("none", warnings=tuple(warnings))
    try:
        problem = sources.host_problem(kind, source, annotations_of(source).get(names.ANN_HOST, ""))
    except InvalidSource as e:
        problem = resolve.TargetError("InvalidSource", str(e))
    if problem is not None:
        warnings.append(WarningEvent(reference(kind, source), problem.reason, f"{problem.message}; no monitor "
                                     "change was made"))
        return Generated("none", warnings=tuple(warnings))
    if existing is not None and same_monitor(existing, manifest):
        return Generated("none", manifest, tuple(warnings))
    return Generated("apply", manifest, tuple(warnings))


def _source_seen_without_annotation(world: World, key: Key, monitor: Mapping[str, Any]) -> bool:
    """Delete a generated monitor only when its owner is known and no longer opted in. An owner
    not (yet) seen is left to the garbage collector: at start-up, RouteMonitors may be listed
    before the Routes that own them."""
    owners = {o.get("uid") for o in (monitor.get("metadata") or {}).get("ownerReferences") or []}
    for source in sources.SOURCES:
        obj = world.lookup(source.kind, key)
        if obj is not None and (obj.get("metadata") or {}).get("uid") in owners:
            return not is_opted_in(obj)
    return False


def resolve_target(spec: MonitorSpec, world: World, *, allow_url_targets: bool,
                   cluster_domain: str = "cluster.local") -> resolve.ResolvedTarget | Unresolved:
    if isinstance(spec.target, UrlTarget) and not allow_url_targets:
        return Unresolved("URLTargetsNotAllowed", "url targets are off: the operator runs without "
                          "--allow-url-targets; use a route or service target")
    ctx = sources.Context(lookup=world.lookup, cluster_domain=cluster_domain,
                          default_ingress_class=world.default_ingress_class())
    try:
        return sources.resolve_target(spec.target, spec.namespace, spec.path, ctx, spec.paths)
    except resolve.TargetError as e:
        return Unresolved(e.reason, e.message)
    except InvalidSource as e:
        return Unresolved("InvalidSource", f"{sources.kind_name(e.ref[0])} {e.ref[1]}/{e.ref[2]}: {e}")


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
    generated = is_generated(monitor)
    errors: list[str] = []
    warnings: list[str] = []
    for f in alert_rules.findings(spec.slo()):
        annotation = annotation_for(f.field) if generated else None
        text = f"{annotation or f.field}: {f.message}"
        (errors if f.severity == "error" else warnings).append(text)
    return tuple(errors), tuple(warnings)


KEPT_NOTE = "; probing goes on with the last valid spec"


def invalid_message(error: InvalidSpec, *, kept: bool) -> str:
    """The ``InvalidSpec`` condition's message: every field error, and whether the monitor goes on
    probing with its last valid spec, in at most :data:`fielderrors.MAX_MESSAGE` characters."""
    note = KEPT_NOTE if kept else ""
    return error.summary(fielderrors.MAX_MESSAGE - len(note)) + note
