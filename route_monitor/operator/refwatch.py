"""Watches on exactly the Secrets and ConfigMaps that monitors reference, and nothing else.

There is no cluster-wide Secret watch: each referenced object gets its own watch, in the
monitor's namespace, with a field selector on its name (``metadata.name=NAME``), started when
the first monitor references it and stopped when the last one stops. The API server authorizes
such a request like a request for that one object, so a namespace Role with ``resourceNames``
(``get`` and ``watch`` on named Secrets) is enough.

Each watch keeps the object's keys and decoded values in memory only (never logged, never
stored anywhere) and its state: ``found``, ``missing`` (404), ``forbidden`` (403). A change of
any of them calls ``on_change`` with the monitors that reference the object, so a rotation is
picked up without a restart. A broken watch (API server restart, expired resource version,
RBAC granted later) reads the object again after ``retry`` seconds; so does a read that got no
answer (:func:`apierrors.unreachable`), keeping what was known.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from route_monitor.kube.apierrors import ApiError, unreachable
from route_monitor.kube.rest import Rest, path
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


def decode(kind: RefKind, obj: Any) -> dict[str, bytes]:
    """The keys and values of a Secret (base64 ``data``) or a ConfigMap (``data`` and ``binaryData``)."""
    raw = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    out = {k: base64.b64decode(v) for k, v in (raw.get("data") or {}).items()} if kind == "secret" else {
        **{k: v.encode("utf-8") for k, v in (raw.get("data") or {}).items()},
        **{k: base64.b64decode(v) for k, v in (raw.get("binaryData") or {}).items()}}
    return out


class ReferenceWatches:
    def __init__(self, client: Rest, on_change: Callable[[set[MonitorKey]], None], *,
                 retry: float = 10.0, server_timeout: int = 300) -> None:
        self._client = client
        self._on_change = on_change
        self._retry = retry
        self._server_timeout = server_timeout
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
        collection = path("", "v1", "secrets" if kind == "secret" else "configmaps", namespace)
        while True:
            version: str | None = None
            try:
                got = await self._client.get(f"{collection}/{name}", {})
                version = (got.get("metadata") or {}).get("resourceVersion")
                self._set(obj, Seen("found", decode(kind, got)))
            except ApiError as e:
                code = e.status
                if code not in (403, 404):
                    self._set(obj, Seen("error", detail=f"cannot read it: HTTP {code}"))
                    await asyncio.sleep(self._retry)
                    continue
                self._set(obj, Seen("missing" if code == 404 else "forbidden"))
                if code == 403:
                    await asyncio.sleep(self._retry)  # RBAC may be granted later
                    continue
            except Exception as e:
                if unreachable(e):  # the last values stay in use meanwhile
                    log.warning("%s %s/%s: cannot read it (%s), retrying in %.0fs", *obj, type(e).__name__,
                                self._retry)
                else:  # not the API's: a bug of ours, logged with its traceback; the watch goes on
                    log.error("%s %s/%s: cannot read it, retrying in %.0fs", *obj, self._retry, exc_info=True)
                    self._set(obj, Seen("error", detail=f"cannot read it: {type(e).__name__}"))
                await asyncio.sleep(self._retry)
                continue
            try:
                async for event, changed in self._follow(collection, name, version):
                    if event == "DELETED":
                        self._set(obj, Seen("missing"))
                    elif event in ("ADDED", "MODIFIED"):
                        self._set(obj, Seen("found", decode(kind, changed)))
            except asyncio.CancelledError:
                raise
            except Exception as e:  # a broken watch: read again, then watch again
                log.info("watch of %s %s/%s ended (%s); reading it again in %.0fs", *obj, type(e).__name__,
                         self._retry)
            await asyncio.sleep(self._retry)

    async def _follow(self, collection: str, name: str, version: str | None) -> AsyncIterator[tuple[str, Any]]:
        """The watch of ``name`` from ``version``, watched again from the last version seen when the
        API server ends it (``timeoutSeconds``); an ERROR event raises."""
        while True:
            query = {"fieldSelector": f"metadata.name={name}", "timeoutSeconds": str(self._server_timeout),
                     **({"resourceVersion": version} if version else {})}
            async for event in self._client.watch(collection, query, read_timeout=None):
                kind, changed = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":
                    raise ApiError(int(changed.get("code") or 500), str(changed.get("reason") or ""),
                                   str(changed.get("message") or ""))
                version = (changed.get("metadata") or {}).get("resourceVersion") or version
                yield kind, changed
