"""The one way the operator writes an object it generates: create; on 409 read what holds the
name; leave it alone unless it is ours; replace it only pinned to the uid and resourceVersion read.

Every generated kind (RouteMonitors made from annotations, PrometheusRules, the per-namespace
scrape objects) goes through :func:`apply`, so the rule "never write over what the operator did
not create, nor over a version it has not seen" is written once. Nothing here retries and
nothing is remembered: the callers keep what they last wrote (to skip unchanged writes) and
decide when to try again.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from route_monitor.kube import ownership
from route_monitor.kube.apierrors import status_code

Obj = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """The three requests :func:`apply` makes for one kind of object."""

    create: Callable[[Mapping[str, Any]], Awaitable[Obj]]
    """Create; raises with 409 when anything holds the name."""
    get: Callable[[str, str], Awaitable[Obj | None]]
    """``(namespace, name)``: the object as the API server has it now, None when there is none."""
    replace: Callable[[Mapping[str, Any], str, str], Awaitable[Obj]]
    """``(object, uid, resourceVersion)``: replace that very object at that version (409 otherwise)."""


class Outcome(enum.Enum):
    CREATED = "created"
    REPLACED = "replaced"
    UNCHANGED = "unchanged"
    """Ours and already as desired: nothing written."""
    FOREIGN = "foreign"
    """Someone else's object holds the name: left untouched."""
    CHANGED = "changed"
    """Changed or replaced by someone else since it was read: read it again and decide anew."""
    GONE = "gone"
    """Removed by someone else while being written: nothing holds the name now."""


@dataclass(frozen=True)
class Applied:
    outcome: Outcome
    stored: Obj | None = None
    """The object as stored after the write, or as read (unchanged, foreign); None when changed or gone."""

    @property
    def uid(self) -> str:
        return ownership.uid_of(self.stored or {})

    @property
    def resource_version(self) -> str:
        return ownership.version_of(self.stored or {})


def _never(_existing: Mapping[str, Any], _desired: Mapping[str, Any]) -> bool:
    return False


def _as_is(_existing: Mapping[str, Any], desired: Mapping[str, Any]) -> Mapping[str, Any]:
    return desired


async def apply(kind: Kind, desired: Mapping[str, Any], *, found: Mapping[str, Any] | None = None,
                pinned: tuple[str, str] | None = None,
                ours: Callable[[Mapping[str, Any]], bool] = ownership.is_ours,
                same: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] = _never,
                body: Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]] = _as_is) -> Applied:
    """Put ``desired`` in place, never over a foreign object or an unseen version.

    ``pinned`` (uid, resourceVersion of our object as last written): replace it straight away.
    ``found`` (the object at the name, already read, e.g. from a watch or a listing): no create.
    Neither: create, and on 409 read what holds the name. An object read is replaced only when
    it is ``ours`` and not ``same`` as desired; ``body(existing, desired)`` is what replaces it.
    """
    if pinned is not None:
        return await _replace(kind, desired, *pinned)
    existing: Mapping[str, Any] | None = found
    if existing is None:
        try:
            return Applied(Outcome.CREATED, await kind.create(desired))
        except Exception as e:
            if status_code(e) != 409:
                raise
        meta = desired["metadata"]
        existing = await kind.get(str(meta.get("namespace") or "default"), str(meta["name"]))
        if existing is None:  # deleted again meanwhile
            return Applied(Outcome.GONE)
    if not ours(existing):
        return Applied(Outcome.FOREIGN, dict(existing))
    if same(existing, desired):
        return Applied(Outcome.UNCHANGED, dict(existing))
    return await _replace(kind, body(existing, desired), ownership.uid_of(existing), ownership.version_of(existing))


async def _replace(kind: Kind, desired: Mapping[str, Any], uid: str, resource_version: str) -> Applied:
    try:
        return Applied(Outcome.REPLACED, await kind.replace(desired, uid, resource_version))
    except Exception as e:
        code = status_code(e)
        if code in (404, 409):  # removed, or replaced or changed, since it was read
            return Applied(Outcome.GONE if code == 404 else Outcome.CHANGED)
        raise
