"""The operator's view of the cluster: the sources it watches (:data:`route_monitor.targets.sources.SOURCES`:
Routes, Services, ...), the objects they depend on (Gateways), and RouteMonitors.

Fed by watch events (``observe``), read by the pure planning functions. It answers one
question for the supervisor: which monitors (``(namespace, name)`` keys) does a change touch?
A source's change touches the monitor of the same name (generated from its annotations) and
every RouteMonitor whose target names it; a dependency's change (a Gateway) touches what the
sources that read it touch. A relist after a reconnect delivers objects that did not change:
those touch nothing. Sources without an objective, most of a cluster's, are held packed
(:mod:`~route_monitor.operator.packed`) and decoded by :meth:`World.lookup`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from route_monitor.operator import packed
from route_monitor.spec.paths import default_ingress_class
from route_monitor.targets.annotations import is_opted_in
from route_monitor.targets.sources import BY_KIND, DEPENDENCIES, SOURCES, Key, Ref, dependency_ref, key_of

__all__ = ["KINDS", "Key", "Kind", "Ref", "World", "key_of", "target_ref", "trimmed"]

Kind = str
"""A row of :data:`SOURCES`, a kind of :data:`DEPENDENCIES`, or ``routemonitor``."""
KINDS: tuple[Kind, ...] = (*(s.kind for s in SOURCES), *DEPENDENCIES, "routemonitor")
_VOLATILE_META = ("resourceVersion", "managedFields")
_META_UNREAD = frozenset({"managedFields", "selfLink"})
"""Metadata nothing reads (``selfLink``: up to Kubernetes 1.23, ~60 characters per object)."""
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_STATUS_IGNORED = ("service", "ingress", *DEPENDENCIES)
"""Kinds whose status nothing reads (a Service's, an Ingress's load balancer, a Gateway's but for
its ``addresses``: where a TCPRoute is reached)."""


def trimmed(obj: Mapping[str, Any], kind: Kind, *, compact: bool = True) -> dict[str, Any]:
    """What the operator keeps of an object: no managedFields or selfLink, no last-applied
    configuration of the sources (Routes, Services...); a RouteMonitor's own status
    is kept (it is compared with what the operator wrote); statuses nothing reads are dropped.
    Kept compact: keys and short strings are interned, so that the same ``type``, ``status``,
    ``True``, ``Ready``... are one string for all objects, not one per object as JSON parsing
    leaves them (a RouteMonitor with its status: 7.6 -> 3.7 KiB; ~10 us per event)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _META_UNREAD}
    out = {k: v for k, v in obj.items() if k != "metadata"}
    if kind in _STATUS_IGNORED:
        status = out.pop("status", None)
        if kind == "gateway" and isinstance(status, Mapping) and status.get("addresses"):
            out["status"] = {"addresses": status["addresses"]}
    if kind != "routemonitor" and _LAST_APPLIED in (meta.get("annotations") or {}):
        # a copy of the whole object (kubectl apply) that nothing reads; a RouteMonitor's
        # annotations are kept whole (a replacement of a generated one keeps others' annotations)
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != _LAST_APPLIED}
    out["metadata"] = meta
    if not compact:  # about to be packed (``packed.pack``): interning would be wasted
        return out
    interned: dict[str, Any] = _compact(out)
    return interned


def _compact(value: Any) -> Any:
    """A copy of ``value`` (parsed JSON) with its keys and strings of up to 40 characters interned."""
    if isinstance(value, dict):
        return {_intern(k): _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    if type(value) is str and len(value) <= _SHORT:
        return _intern(value)
    return value


_SHORT = 40
"""Up to uids (36) and the API versions and messages every monitor repeats (``probing and alerting
rules applied``, ``monitoring.routemonitor.io/v1alpha1``); a uid is then one string for an
object and the ownerReferences that name it."""
_intern = sys.intern


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
    for source in SOURCES:
        ref = target.get(source.ref.field)
        if isinstance(ref, Mapping) and isinstance(ref.get("name"), str):
            return (source.kind, namespace, ref["name"])
    return None


def _depends(kind: Kind, obj: Mapping[str, Any] | None) -> set[Ref]:
    source = BY_KIND.get(kind)
    return set(source.depends(obj)) if source is not None and obj is not None else set()


Held = dict[str, Any] | bytes
"""An object as the world holds it: a dict, or (a source without an objective) packed JSON
(:mod:`~route_monitor.operator.packed`); read it through :meth:`World.lookup`."""


@dataclass
class World:
    objects: dict[Kind, dict[Key, Held]] = field(default_factory=lambda: {k: {} for k in KINDS})
    _targeting: dict[Ref, tuple[Key, ...]] = field(default_factory=dict)
    """Reverse index: source object -> monitors whose target names it."""
    _depending: dict[Ref, tuple[Ref, ...]] = field(default_factory=dict)
    """Reverse index: dependency (a Gateway) -> source objects whose resolution reads it."""

    @property
    def routes(self) -> dict[Key, Held]:
        return self.objects["route"]

    @property
    def services(self) -> dict[Key, Held]:
        return self.objects["service"]

    @property
    def monitors(self) -> dict[Key, dict[str, Any]]:
        return self.objects["routemonitor"]  # type: ignore[return-value]  # never packed

    def lookup(self, kind: str, key: Key) -> dict[str, Any] | None:
        held = self.objects.get(kind, {}).get(key)
        return None if held is None else packed.unpack(held)

    def observe(self, kind: Kind, event_type: str | None, obj: Mapping[str, Any]) -> set[Key]:
        """Record one watch event; return the monitor keys it may change."""
        key = key_of(obj)
        store = self.objects[kind]
        held = store.get(key)
        pack = event_type != "DELETED" and kind in BY_KIND and not is_opted_in(obj)
        new = None if event_type == "DELETED" else trimmed(obj, kind, compact=not pack)
        keep: Held | None = new
        if pack and new is not None:
            keep = packed.pack(new)  # a source without an objective, rarely read: ~0.8 KiB, not ~2
            if keep == held:
                return set()
        old = None if held is None else packed.unpack(held)
        if _essence(old, kind) == _essence(new, kind):
            if keep is not None:
                store[key] = keep
            return set()
        if keep is None:
            store.pop(key, None)
        else:
            store[key] = keep
        if kind == "routemonitor":
            _reindex(self._targeting, key, target_ref(old) if old else None, target_ref(new) if new else None)
            return {key}
        ref = (kind, *key) if kind in BY_KIND else dependency_ref(kind, key)
        for dep in _depends(kind, old) ^ _depends(kind, new):
            _reindex(self._depending, ref, dep if dep in _depends(kind, old) else None,
                     dep if dep in _depends(kind, new) else None)
        touched = (ref,) if kind in BY_KIND else self._depending.get(ref, ())
        keys: set[Key] = set()
        for src_kind, ns, name in touched:
            keys.add((ns, name))
            keys.update(self._targeting.get((src_kind, ns, name), ()))
        return keys

    def default_ingress_class(self) -> str | None:
        """The cluster's default IngressClass, as watched (None: none, or not watched)."""
        return default_ingress_class(packed.unpack(c) for c in self.objects["ingressclass"].values())

    def opted_in_keys(self) -> set[Key]:
        """Keys of annotated sources (their monitors may not exist yet)."""
        return {k for s in SOURCES for k, obj in self.objects[s.kind].items()
                if not isinstance(obj, bytes) and is_opted_in(obj)}


def _reindex(index: dict[Any, tuple[Any, ...]], member: Any, old: Any, new: Any) -> None:
    """Move ``member`` from ``index[old]`` to ``index[new]`` (None: not indexed). Members are
    tuples, not sets: nearly always one (a 1-tuple is 56 bytes, a set 216), rarely changed."""
    if old == new:
        return
    if old is not None:
        members = tuple(m for m in index.get(old, ()) if m != member)
        if members:
            index[old] = members
        else:
            index.pop(old, None)
    if new is not None:
        members = index.get(new, ())
        if member not in members:
            index[new] = (*members, member)
