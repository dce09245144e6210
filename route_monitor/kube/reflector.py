"""One list+watch loop for everything the operator watches: the kinds it monitors
(:mod:`~route_monitor.operator.watches`), the Secrets and ConfigMaps monitors reference
(:mod:`~route_monitor.operator.refwatch`) and the replicas' Leases
(:mod:`~route_monitor.operator.replicas.membership`), instead of a loop and a retry policy each.

The semantics of a Kubernetes reflector (client-go's): list (in pages), then watch from the list's
``resourceVersion`` with bookmarks; when the API server ends a watch, watch again from the last
version seen; when that version is too old (410 Gone: etcd compacted it), list again, and what was
known but is no longer listed is reported :attr:`Change.VANISHED` (its DELETED event was missed).
One named object is read with a GET instead of a list, so that a Role granting ``get`` and
``watch`` on that name is enough (a list would need ``list``); a 404 there is an empty listing.

A watch that was cut is watched again from the last version seen; one that the API server refused
(a status: RBAC, 5xx, 429) lists again. Any failure is tried again after the :class:`Backoff`'s
delays (reset by the next answer), forever: a reflector never gives up and never ends the
operator. A warning line comes at the first try of a streak and every 30th after it, and one line
when it works again. An API never served during this run (404 from the start: no CRD yet) is
asked for again every ``not_served`` seconds, quietly. Lines go to the caller's logger.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from route_monitor.kube.apierrors import status_code
from route_monitor.kube.patience import until_answered
from route_monitor.kube.rest import Rest, path
from route_monitor.kube.watched import Backoff, Change, Key, Watched, key_of, where

PAGE = "500"
SERVER_TIMEOUT = 300
"""Seconds the API server keeps one watch open (it then ends it; the next starts where it ended)."""
OnChange = Callable[[Change, dict[str, Any]], None]
STANDARD = Backoff()
_EVENTS = {"ADDED": Change.ADDED, "MODIFIED": Change.MODIFIED, "DELETED": Change.DELETED}
"""The watch events that change an object (a BOOKMARK only moves the version)."""
_LOG = logging.getLogger(__name__)


class Gone(Exception):
    """The version to watch from is too old (410): list again."""


def _nothing() -> None: ...


class Reflector:
    def __init__(self, rest: Rest, watched: Watched, on_change: OnChange, *, on_synced: Callable[[], None] = _nothing,
                 on_failure: Callable[[Exception, float, bool], None] | None = None,
                 known: Callable[[], Iterable[Key]] | None = None, count: Callable[[str], None] | None = None,
                 backoff: Backoff = STANDARD, log: logging.Logger = _LOG) -> None:
        """``on_change`` gets every object listed or changed; ``on_synced`` is called once a (re)list
        has been reported whole. ``known``: the keys the caller holds (by default, those this
        reflector reported), of which those not in a relist vanished. ``on_failure(error, delay,
        listing)`` logs a failed try (of a list, or of a watch) instead of the reflector's line;
        ``count`` gets each request's verb."""
        self.watched, self._rest = watched, rest
        self._on_change, self._on_synced, self._on_failure = on_change, on_synced, on_failure
        self._known, self._count, self._backoff, self._log = known, count, backoff, log
        self._keys: set[Key] = set()
        """What this reflector reported present (kept only when the caller does not say, ``known``)."""
        self._version: str | None = None
        """Where the next watch starts; None: list first."""
        self._failures = 0
        """Failed tries in a row (reset by the next answer: a list page or an event)."""
        self._served = self._not_served = False
        self._steady = False
        """Answered, with no failure since: nothing for :meth:`_answered` to say or reset."""

    async def prime(self) -> bool:
        """The first list, tried again until the API answers (:func:`patience.until_answered`); the
        watch then starts from its version. False when the API is not served (404: no CRD yet):
        :meth:`run` then keeps asking."""
        w = self.watched
        return await until_answered(f"listing {w.kind}s{where(w.namespace)}", self._first_list)

    async def _first_list(self) -> bool:
        try:
            await self.list()
        except Exception as e:
            if status_code(e) == 404 and not self._served:
                return False
            raise
        return True

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started, listing = loop.time(), self._version is None
            try:
                if listing:
                    await self.list()
                    listing = False
                await self._watch()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # logged, then tried again: a reflector never gives up
                if isinstance(e, Gone) or status_code(e) == 410:
                    self._log.info("%s: resourceVersion too old, listing again", self.watched.subject)
                    self._version = None
                    continue
                if status_code(e) is not None:  # refused (RBAC, 5xx, 429): list again, as client-go does
                    self._version = None
                await asyncio.sleep(self._failed(e, listing))
                continue
            if loop.time() - started < 1.0:
                await asyncio.sleep(1.0)  # a watch the API server ends at once: not in a tight loop

    async def list(self) -> str:
        """Every object in scope, reported :attr:`Change.LISTED`; those known but no longer there,
        :attr:`Change.VANISHED`. Returns the version the next watch starts from."""
        # known before the list was asked for: an object the caller learnt of meanwhile (a
        # RouteMonitor its own reconcile created, say) is not in an older snapshot, and not gone
        ns = self.watched.namespace
        before = set(self._keys) if self._known is None else {k for k in self._known() if ns is None or k[0] == ns}
        listed: set[Key] = set()
        version = await (self._get if self.watched.name is not None else self._pages)(listed)
        for namespace, name in before - listed:
            meta = {"namespace": namespace, "name": name} if namespace else {"name": name}
            self._on_change(Change.VANISHED, {"metadata": meta})
        if self._known is None:
            self._keys = listed
        self._version = version
        self._on_synced()
        return version

    async def _pages(self, listed: set[Key]) -> str:
        w, query = self.watched, {"limit": PAGE, **self.watched.query()}
        while True:
            self._counted("list")
            page = await self._rest.get(w.collection(), query)
            self._answered()
            for obj in page.get("items") or ():
                obj.setdefault("apiVersion", w.api_version)
                obj.setdefault("kind", w.kind)
                listed.add(key_of(obj))
                self._on_change(Change.LISTED, obj)
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                return str(meta.get("resourceVersion") or "")
            query = {**query, "continue": meta["continue"]}

    async def _get(self, listed: set[Key]) -> str:
        w = self.watched
        group, _, version = w.api_version.rpartition("/")
        self._counted("get")
        try:
            obj = await self._rest.get(path(group, version, w.plural, w.namespace, w.name), {})
        except Exception as e:
            if status_code(e) != 404:
                raise
            self._answered()
            return ""  # not there: watched from now on, its creation comes as ADDED
        self._answered()
        listed.add(key_of(obj))
        self._on_change(Change.LISTED, obj)
        return str((obj.get("metadata") or {}).get("resourceVersion") or "")

    async def _watch(self) -> None:
        """Events after the version until the API server ends the watch."""
        query = {**({"resourceVersion": self._version} if self._version else {}), "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(SERVER_TIMEOUT), **self.watched.query()}
        self._counted("watch")
        async for event in self._rest.watch(self.watched.collection(), query, read_timeout=SERVER_TIMEOUT + 30):
            if not self._steady:
                self._answered()
            kind, obj = str(event.get("type")), event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise Gone()
                raise RuntimeError(f"the API server ended the watch: {obj.get('message') or obj}")
            self._version = str((obj.get("metadata") or {}).get("resourceVersion") or self._version)
            change = _EVENTS.get(kind)
            if change is not None:
                if self._known is None:
                    (self._keys.discard if change is Change.DELETED else self._keys.add)(key_of(obj))
                self._on_change(change, obj)

    def _counted(self, verb: str) -> None:
        if self._count is not None:
            self._count(verb)

    def _failed(self, e: Exception, listing: bool) -> float:
        """Log the failure as it deserves; the seconds to wait before the next try."""
        w, failures = self.watched, self._failures
        self._failures += 1
        self._steady = False
        if status_code(e) == 404 and not self._served:
            self._not_served = True
            self._log.debug("%s (%s) not served%s; asking again in %.0f s", w.kind, w.api_version, where(w.namespace),
                            self._backoff.not_served)
            return self._backoff.not_served
        delay = self._backoff.delay(failures)
        if self._on_failure is not None:
            self._on_failure(e, delay, listing)
        else:
            self._log.log(logging.WARNING if failures % 30 == 0 else logging.DEBUG,  # then every ~5 minutes
                          "%s failed (%s: %s); trying again in %.0f s (try %d)", w.subject, type(e).__name__,
                          (str(e).splitlines() or [""])[0][:200], delay, failures + 1)
        return delay

    def _answered(self) -> None:
        failures, self._failures = self._failures, 0
        self._served = self._steady = True
        if self._not_served:
            self._not_served = False
            w = self.watched
            self._log.info("%s (%s) is served now%s: watching it", w.kind, w.api_version, where(w.namespace))
        elif failures:
            self._log.info("%s works again after %d failed tries", self.watched.subject, failures)
