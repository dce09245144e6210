"""RouteMonitors kept current by one list and a watch per namespace scope, fed to the supervisor
like kopf's events, without kopf's per-event machinery.

Two of the three watch events a new monitor causes are the operator's own writes coming back
(the RouteMonitor it created, then its first status): through kopf, each cost a handler
invocation with its state, logger, throttling and body wrappers (about a sixth of the
operator's CPU per new monitor in a burst of 1,000); here each is one JSON decode and
:meth:`Supervisor.observe`.

Semantics of a Kubernetes reflector: list (in pages), then watch from the list's
``resourceVersion`` with bookmarks; when a watch ends, watch again from the last version seen;
when the version is too old (410 Gone), list again, and monitors that vanished meanwhile are
observed as deleted (a watch that was down missed their DELETED events). A failure (API
unreachable, 5xx, 429, RBAC) is tried again after 1, 2, 5, then every 10 s, forever (a watch
never gives up and never ends the operator), with a warning line at the first try of a streak
and every 30th after it, and one line when it works again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from alert_rules import names
from route_monitor.operator.apierrors import status_code
from route_monitor.operator.patience import DELAYS
from route_monitor.operator.rest import Rest
from route_monitor.operator.world import Key

log = logging.getLogger(__name__)
KIND = "routemonitor"
PAGE = "500"
SERVER_TIMEOUT = 300
"""Seconds the API server keeps one watch open (it then ends it; the next starts where it ended)."""


class Gone(Exception):
    """The version to watch from is too old (410): list again."""


def collection(namespace: str | None) -> str:
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{names.GROUP}/{names.VERSION}{scope}/{names.PLURAL}"


class MonitorWatch:
    def __init__(self, rest: Rest, namespaces: Iterable[str], *, observe: Callable[[str, str | None, Any], None],
                 known: Callable[[], Iterable[Key]], delays: tuple[float, ...] = DELAYS) -> None:
        self._rest = rest
        self._scopes: tuple[str | None, ...] = tuple(namespaces) or (None,)
        self._observe, self._known, self._delays = observe, known, delays
        self._failures: dict[str | None, int] = {}
        """Failed tries in a row per scope (reset by the next answer: a list page or an event)."""

    async def run(self) -> None:
        await asyncio.gather(*(self._scope(ns) for ns in self._scopes))

    async def _scope(self, namespace: str | None) -> None:
        loop = asyncio.get_running_loop()
        version: str | None = None
        while True:
            started = loop.time()
            try:
                if version is None:
                    version = await self._relist(namespace)
                version = await self._watch(namespace, version)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # logged, then tried again: a watch never gives up
                if isinstance(e, Gone) or status_code(e) == 410:
                    log.info("RouteMonitor watch%s: resourceVersion too old, listing again", _where(namespace))
                    version = None
                    continue
                failures = self._failures.get(namespace, 0)
                delay = self._delays[min(failures, len(self._delays) - 1)]
                failures = self._failures[namespace] = failures + 1
                log.log(logging.WARNING if failures % 30 == 1 else logging.DEBUG,  # then every ~5 minutes
                        "RouteMonitor watch%s failed (%s: %s); trying again in %.0f s (try %d)", _where(namespace),
                        type(e).__name__, (str(e).splitlines() or [""])[0][:200], delay, failures)
                await asyncio.sleep(delay)
                continue
            if loop.time() - started < 1.0:
                await asyncio.sleep(1.0)  # a watch the API server ends at once: not in a tight loop

    def _answered(self, namespace: str | None) -> None:
        failures = self._failures.pop(namespace, 0)
        if failures:
            log.info("RouteMonitor watch%s works again after %d failed tries", _where(namespace), failures)

    async def _relist(self, namespace: str | None) -> str:
        """Every RouteMonitor in scope, observed; those known but no longer listed, observed as
        deleted. Returns the list's resourceVersion."""
        # known before the list was asked for: a monitor created meanwhile (by this operator's own
        # reconcile, say) is not in an older snapshot, and must not be taken for a deleted one
        before = [k for k in self._known() if namespace is None or k[0] == namespace]
        listed: set[Key] = set()
        query: dict[str, str] = {"limit": PAGE}
        while True:
            page = await self._rest.get(collection(namespace), query)
            self._answered(namespace)
            for obj in page.get("items") or ():
                obj.setdefault("apiVersion", names.API_VERSION)
                obj.setdefault("kind", names.KIND)
                meta = obj.get("metadata") or {}
                listed.add((str(meta.get("namespace")), str(meta.get("name"))))
                self._observe(KIND, None, obj)
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            query = {"limit": PAGE, "continue": meta["continue"]}
        for key in [k for k in before if k not in listed]:
            self._observe(KIND, "DELETED", {"metadata": {"namespace": key[0], "name": key[1]}})
        return str(meta.get("resourceVersion") or "")

    async def _watch(self, namespace: str | None, version: str) -> str:
        """Events after ``version`` until the API server ends the watch; the last version seen."""
        query = {"resourceVersion": version, "allowWatchBookmarks": "true", "timeoutSeconds": str(SERVER_TIMEOUT)}
        async for event in self._rest.watch(collection(namespace), query, read_timeout=SERVER_TIMEOUT + 30):
            self._answered(namespace)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if _code(obj) == 410:
                    raise Gone()
                raise RuntimeError(f"the API server ended the watch: {obj.get('message') or obj}")
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._observe(KIND, kind, obj)
        return version


def _code(status: Mapping[str, Any]) -> int | None:
    code = status.get("code")
    return code if isinstance(code, int) else None


def _where(namespace: str | None) -> str:
    return f" in namespace {namespace}" if namespace else ""
