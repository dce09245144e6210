"""The operator's view of the cluster: the Routes, Services and RouteMonitors it watches.

Fed by watch events (``observe``), read by the pure planning functions. It answers one
question for the supervisor: which monitors (``(namespace, name)`` keys) does a change touch?
A Route or Service change touches the monitor of the same name (generated from its annotations)
and every RouteMonitor whose target names it. A relist after a reconnect delivers objects that
did not change: those touch nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from alert_rules import names

Kind = Literal["route", "service", "routemonitor"]
Key = tuple[str, str]
Ref = tuple[str, str, str]
"""(kind, namespace, name) of a Route or Service a monitor targets."""

_VOLATILE_META = ("resourceVersion", "managedFields")


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name")))


def trimmed(obj: Mapping[str, Any], kind: Kind) -> dict[str, Any]:
    """What the operator keeps of an object: no managedFields; a RouteMonitor's own status
    is kept (it is compared with what the operator wrote); a Service's status is dropped."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    out = {k: v for k, v in obj.items() if k != "metadata"}
    if kind == "service":
        out.pop("status", None)
    out["metadata"] = meta
    return out


def _essence(obj: Mapping[str, Any] | None, kind: Kind) -> object:
    """What a change must touch to matter: not resourceVersion; for RouteMonitors not the
    status either (the operator writes it; nothing it does depends on it)."""
    if obj is None:
        return None
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_META}
    status = None if kind == "routemonitor" else obj.get("status")
    return ({k: v for k, v in obj.items() if k not in ("metadata", "status")}, meta, status)


def target_ref(monitor: Mapping[str, Any]) -> Ref | None:
    target = (monitor.get("spec") or {}).get("target") or {}
    namespace, _ = key_of(monitor)
    for kind in ("route", "service"):
        ref = target.get(kind)
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            return (kind, namespace, ref["name"])
    return None


@dataclass
class World:
    routes: dict[Key, dict[str, Any]] = field(default_factory=dict)
    services: dict[Key, dict[str, Any]] = field(default_factory=dict)
    monitors: dict[Key, dict[str, Any]] = field(default_factory=dict)
    _targeting: dict[Ref, set[Key]] = field(default_factory=dict)
    """Reverse index: Route/Service -> monitors whose target names it."""

    def _store(self, kind: Kind) -> dict[Key, dict[str, Any]]:
        return {"route": self.routes, "service": self.services, "routemonitor": self.monitors}[kind]

    def observe(self, kind: Kind, event_type: str | None, obj: Mapping[str, Any]) -> set[Key]:
        """Record one watch event; return the monitor keys it may change."""
        key = key_of(obj)
        store = self._store(kind)
        old = store.get(key)
        new = None if event_type == "DELETED" else trimmed(obj, kind)
        if _essence(old, kind) == _essence(new, kind):
            if new is not None:
                store[key] = new
            return set()
        if new is None:
            store.pop(key, None)
        else:
            store[key] = new
        if kind == "routemonitor":
            self._reindex(key, old, new)
            return {key}
        return {key} | self._targeting.get((kind, *key), set())

    def _reindex(self, key: Key, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        old_ref = target_ref(old) if old else None
        new_ref = target_ref(new) if new else None
        if old_ref == new_ref:
            return
        if old_ref is not None:
            keys = self._targeting.get(old_ref, set())
            keys.discard(key)
            if not keys:
                self._targeting.pop(old_ref, None)
        if new_ref is not None:
            self._targeting.setdefault(new_ref, set()).add(key)

    def opted_in_keys(self) -> set[Key]:
        """Keys of Routes and Services carrying the opt-in annotation (their monitors may not exist yet)."""
        return {k for store in (self.routes, self.services) for k, obj in store.items()
                if names.ANN_SLO in ((obj.get("metadata") or {}).get("annotations") or {})}

    def get(self, kind: str, key: Key) -> dict[str, Any] | None:
        return self._store(kind).get(key)  # type: ignore[arg-type]
