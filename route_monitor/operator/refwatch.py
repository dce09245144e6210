"""Watches on exactly the Secrets and ConfigMaps that monitors reference, and nothing else.

There is no cluster-wide Secret watch: each referenced object gets its own watch, in the
monitor's namespace, with a field selector on its name (``metadata.name=NAME``), started when
the first monitor references it and stopped when the last one stops. The API server authorizes
such a request like a request for that one object, so a namespace Role with ``resourceNames``
(``get`` and ``watch`` on named Secrets) is enough. Each is a
:class:`~route_monitor.kube.reflector.Reflector` on that one object (read with a GET, then
watched from its version).

Each watch keeps the object's keys and decoded values in memory only (never logged, never
stored anywhere) and its state: ``found``, ``missing`` (404), ``forbidden`` (403). A change of
any of them calls ``on_change`` with the monitors that reference the object, so a rotation is
picked up without a restart. A broken watch (API server restart) watches again after ``retry``
seconds, and an expired resource version reads the object again at once; a read refused (RBAC
granted later) or that got no answer (:func:`apierrors.unreachable`) is tried again after
``retry`` seconds, keeping what was known.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from route_monitor.kube.apierrors import status_code, unreachable
from route_monitor.kube.reflector import Reflector
from route_monitor.kube.rest import Rest
from route_monitor.kube.watched import Backoff, Change, Watched
from route_monitor.spec.request import RefKind
from route_monitor.waits import wait_event

log = logging.getLogger(__name__)
ObjectKey = tuple[RefKind, str, str]
"""(``secret``|``configMap``, namespace, name)"""
MonitorKey = tuple[str, str]
State = Literal["pending", "found", "missing", "forbidden", "error"]


@dataclass(frozen=True)
class Seen:
    state: State
    data: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    detail: str = ""
    """For ``error``: what went wrong (never a value)."""


def decode(kind: RefKind, raw: Mapping[str, Any]) -> dict[str, bytes]:
    """The keys and values of a Secret (base64 ``data``) or a ConfigMap (``data`` and ``binaryData``)."""
    out = {k: base64.b64decode(v) for k, v in (raw.get("data") or {}).items()} if kind == "secret" else {
        **{k: v.encode("utf-8") for k, v in (raw.get("data") or {}).items()},
        **{k: base64.b64decode(v) for k, v in (raw.get("binaryData") or {}).items()}}
    return out


class ReferenceWatches:
    def __init__(self, rest: Rest, on_change: Callable[[set[MonitorKey]], None], *, retry: float = 10.0) -> None:
        self._rest = rest
        self._on_change = on_change
        self._backoff = Backoff((retry,))
        self._users: dict[ObjectKey, set[MonitorKey]] = {}
        self._wants: dict[MonitorKey, set[ObjectKey]] = {}
        self._tasks: dict[ObjectKey, asyncio.Task[None]] = {}
        self._seen: dict[ObjectKey, Seen] = {}
        self._first: dict[ObjectKey, asyncio.Event] = {}

    def watched(self) -> set[ObjectKey]:
        return set(self._tasks)

    def want(self, monitor: MonitorKey, objects: set[ObjectKey]) -> None:
        """``monitor`` references exactly ``objects`` now: start and stop watches to match."""
        before = self._wants.get(monitor, set())
        if before == objects:
            return
        if objects:
            self._wants[monitor] = set(objects)
        else:
            self._wants.pop(monitor, None)
        for obj in objects - before:
            self._users.setdefault(obj, set()).add(monitor)
            if obj not in self._tasks:
                self._first[obj] = asyncio.Event()
                self._seen[obj] = Seen("pending")
                self._tasks[obj] = asyncio.create_task(self._watch(obj), name=f"watch {obj[0]} {obj[1]}/{obj[2]}")
        for obj in before - objects:
            users = self._users.get(obj, set())
            users.discard(monitor)
            if not users:
                self._stop(obj)

    def _stop(self, obj: ObjectKey) -> None:
        self._users.pop(obj, None)
        task = self._tasks.pop(obj, None)
        if task is not None:
            task.cancel()
        self._seen.pop(obj, None)
        self._first.pop(obj, None)
        log.info("stopped watching %s %s/%s (no monitor references it)", *obj)

    async def seen(self, obj: ObjectKey, wait: float = 5.0) -> Seen:
        """What is known of ``obj``, after its first read (at most ``wait`` seconds)."""
        first = self._first.get(obj)
        if first is not None and not first.is_set():
            await wait_event(first, wait)
        return self._seen.get(obj, Seen("pending"))

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    def _set(self, obj: ObjectKey, seen: Seen) -> None:
        old = self._seen.get(obj)
        self._seen[obj] = seen
        first = self._first.get(obj)
        if first is not None:
            first.set()
        if old is None or old.state != seen.state:
            log.info("%s %s/%s: %s", *obj, seen.state)
        if old != seen:
            self._on_change(set(self._users.get(obj, set())))

    async def _watch(self, obj: ObjectKey) -> None:
        kind, namespace, name = obj
        watched = Watched(api_version="v1", kind="Secret" if kind == "secret" else "ConfigMap",
                          plural="secrets" if kind == "secret" else "configmaps", namespace=namespace, name=name)
        await Reflector(self._rest, watched, functools.partial(self._changed, obj),
                        on_synced=functools.partial(self._synced, obj), on_failure=functools.partial(self._failed, obj),
                        backoff=self._backoff, log=log).run()

    def _changed(self, obj: ObjectKey, change: Change, got: dict[str, Any]) -> None:
        if change in (Change.DELETED, Change.VANISHED):
            self._set(obj, Seen("missing"))
        else:
            self._set(obj, Seen("found", decode(obj[0], got)))

    def _synced(self, obj: ObjectKey) -> None:
        """Read: not found is missing (a vanished one was said already)."""
        seen = self._seen.get(obj)
        if seen is None or seen.state != "found":
            self._set(obj, Seen("missing"))

    def _failed(self, obj: ObjectKey, e: Exception, delay: float, reading: bool) -> None:
        """A failed read sets the state (refused, or an error); a read or a watch that got no
        answer keeps what was known meanwhile."""
        code = status_code(e)
        if unreachable(e):
            log.warning("%s %s/%s: cannot read it (%s), retrying in %.0fs", *obj, type(e).__name__, delay)
        elif not reading:  # a broken watch: watched again from where it was
            log.info("watch of %s %s/%s ended (%s); watching it again in %.0fs", *obj, type(e).__name__, delay)
        elif code == 403:  # RBAC may be granted later
            self._set(obj, Seen("forbidden"))
        elif code is not None:
            self._set(obj, Seen("error", detail=f"cannot read it: HTTP {code}"))
        else:  # not the API's: a bug of ours, logged with its traceback; the watch goes on
            log.error("%s %s/%s: cannot read it, retrying in %.0fs", *obj, delay, exc_info=e)
            self._set(obj, Seen("error", detail=f"cannot read it: {type(e).__name__}"))
