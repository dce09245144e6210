"""Whose object is it? The operator writes over, and deletes, only what it made.

An object is the operator's when it carries the ``app.kubernetes.io/managed-by: route-monitor``
label (only the operator sets it) or an ownerReference to a RouteMonitor. Anything else at a name
the operator wants (a team's own PrometheusRule, a hand-written RouteMonitor) is *foreign*: it is
never applied over, never deleted, and the monitor reports a ``NameConflict``.

Pure functions over API objects (dicts); :func:`route_monitor.kube.apply.apply`, the one way
generated objects are written, decides with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alert_rules import names

NAME_CONFLICT = "NameConflict"
"""Condition reason and event reason: a foreign object holds the name a generated object needs."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def version_of(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("resourceVersion") or "")


def replacement(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any]:
    """``desired`` as a replacement of ``existing`` (one of ours): what we set wins; labels and
    annotations that others added to our object are kept."""
    em, dm = _meta(existing), desired["metadata"]
    meta = {**dm, "labels": {**(em.get("labels") or {}), **(dm.get("labels") or {})}}
    if em.get("annotations"):
        meta["annotations"] = {**em["annotations"], **(dm.get("annotations") or {})}
    return {**desired, "metadata": meta}


def owner_uids(obj: Mapping[str, Any]) -> set[str]:
    return {str(o.get("uid")) for o in _meta(obj).get("ownerReferences") or [] if o.get("uid")}


def is_ours(obj: Mapping[str, Any]) -> bool:
    """Made by route-monitor: our managed-by label, or owned by a RouteMonitor."""
    labels = _meta(obj).get("labels") or {}
    if labels.get(names.LABEL_MANAGED_BY) == names.MANAGED_BY:
        return True
    return any(o.get("kind") == names.KIND and str(o.get("apiVersion", "")).startswith(names.GROUP + "/")
               for o in _meta(obj).get("ownerReferences") or [])


def is_legacy_rule_of(obj: Mapping[str, Any], namespace: str, monitor: str) -> bool:
    """A PrometheusRule that an earlier version generated for ``monitor`` under the monitor's own
    name (before generated rules were named ``route-monitor-<monitor>``): ours, at the old name."""
    meta = _meta(obj)
    return (is_ours(obj) and meta.get("name") == monitor and (meta.get("namespace") or "default") == namespace
            and monitor != names.prometheus_rule_name(monitor))


def conflict_message(kind: str, namespace: str, name: str) -> str:
    return (f"{kind} {namespace}/{name} exists and was not created by route-monitor (no "
            f"{names.LABEL_MANAGED_BY}={names.MANAGED_BY} label, no RouteMonitor owner): it is left untouched "
            "and this monitor has no alerting rules until it is renamed or removed")
