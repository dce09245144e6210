"""Every kind the operator watches (RouteMonitors, Routes, Services, Ingresses, HTTPRoutes,
Gateways), kept current by one list and a watch per namespace scope, fed to the supervisor.

Semantics of a Kubernetes reflector: list (in pages), then watch from the list's
``resourceVersion`` with bookmarks; when a watch ends, watch again from the last version seen;
when the version is too old (410 Gone), list again, and objects that vanished meanwhile are
observed as deleted (a watch that was down missed their DELETED events). Any failure (API
unreachable, 5xx, 429, RBAC, an API answering 404 for the seconds after an apiserver restart)
is tried again after 1, 2, 5, then every 10 s, forever: a watch never gives up and never ends
the operator. A warning line comes at the first try of a streak and every 30th after it, and one
line when it works again.

A kind this cluster does not serve (no Routes outside OpenShift, no Gateway API) answers 404
from the start: it is asked for again every minute without a line (the start-up listing said it
once), and watched from the moment its CRD is installed.

Before, kopf watched all but RouteMonitors: a watch that kopf does not retry (a 404 after an
apiserver restart) ended kopf's whole operator, whose shutdown could then hang on its other
watches; the operator stayed up, blind (``tests/chaos/test_chaos_apiserver.py``). Its per-event
machinery (handler invocation, state, logger and body wrappers, a worker task per object) went
with it: annotation -> PrometheusRule p99 15-20 % shorter in a burst of 1,000 Routes, CPU per new
monitor unchanged within the noise (``benchmarks/RESULTS-operator.md``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from alert_rules import names
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.patience import DELAYS, until_answered
from route_monitor.kube.rest import Rest, path
from route_monitor.operator.world import KINDS, Key, Kind
from route_monitor.targets import sources

log = logging.getLogger(__name__)
PAGE = "500"
SERVER_TIMEOUT = 300
"""Seconds the API server keeps one watch open (it then ends it; the next starts where it ended)."""
NOT_SERVED_DELAY = 60.0
"""Seconds between two tries of a kind whose API has never been served during this run."""
Observe = Callable[[Kind, str | None, Any], None]


class Gone(Exception):
    """The version to watch from is too old (410): list again."""


@dataclass(frozen=True)
class Api:
    """Where the objects of one kind live."""

    kind: Kind
    api_version: str
    kind_name: str
    plural: str

    def collection(self, namespace: str | None) -> str:
        group, _, version = self.api_version.rpartition("/")
        return path(group, version, self.plural, namespace)


def api_of(kind: Kind) -> Api:
    if kind == "routemonitor":
        return Api(kind, names.API_VERSION, names.KIND, names.PLURAL)
    if kind in sources.BY_KIND:
        s = sources.BY_KIND[kind]
        return Api(kind, s.api_version, s.kind_name, s.plural)
    return Api(kind, *sources.DEPENDENCIES[kind])


class KindWatch:
    def __init__(self, rest: Rest, api: Api, namespaces: Iterable[str], *, observe: Observe,
                 known: Callable[[], Iterable[Key]], delays: tuple[float, ...] = DELAYS,
                 not_served_delay: float = NOT_SERVED_DELAY) -> None:
        self._rest, self.api = rest, api
        self._scopes: tuple[str | None, ...] = tuple(namespaces) or (None,)
        self._observe, self._known, self._delays, self._not_served_delay = observe, known, delays, not_served_delay
        self._failures: dict[str | None, int] = {}
        """Failed tries in a row per scope (reset by the next answer: a list page or an event)."""
        self._served: set[str | None] = set()
        """Scopes whose API has answered during this run."""
        self._not_served: set[str | None] = set()
        """Scopes answered 404 before their API ever answered (no CRD yet)."""
        self._primed: dict[str | None, str] = {}
        """The resourceVersion of each scope's start-up list (:meth:`prime`), where its watch starts."""

    async def prime(self) -> bool:
        """The start-up list of every scope, observed before the watches run: each is tried again
        until the API answers (:func:`patience.until_answered`), and its watch later starts from
        its version (one list per kind at start, not two). False when the API is not served
        (404: no CRD yet); :meth:`run` then keeps asking."""
        served = True
        for ns in self._scopes:
            version = await until_answered(f"listing {self.api.kind_name}s{_where(ns)}",
                                           functools.partial(self._first_list, ns))
            if version is None:
                served = False
            else:
                self._primed[ns] = version
        return served

    async def _first_list(self, namespace: str | None) -> str | None:
        try:
            return await self._relist(namespace)
        except Exception as e:
            if status_code(e) == 404 and namespace not in self._served:
                return None
            raise

    async def run(self) -> None:
        await asyncio.gather(*(self._scope(ns) for ns in self._scopes))

    async def _scope(self, namespace: str | None) -> None:
        loop = asyncio.get_running_loop()
        version: str | None = self._primed.pop(namespace, None)
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
                    log.info("%s watch%s: resourceVersion too old, listing again", self.api.kind_name,
                             _where(namespace))
                    version = None
                    continue
                await asyncio.sleep(self._failed(namespace, e))
                continue
            if loop.time() - started < 1.0:
                await asyncio.sleep(1.0)  # a watch the API server ends at once: not in a tight loop

    def _failed(self, namespace: str | None, e: Exception) -> float:
        """Log the failure as it deserves; the seconds to wait before the next try."""
        failures = self._failures.get(namespace, 0)
        self._failures[namespace] = failures + 1
        if status_code(e) == 404 and namespace not in self._served:
            self._not_served.add(namespace)
            log.debug("%s (%s) not served%s; asking again in %.0f s", self.api.kind_name, self.api.api_version,
                      _where(namespace), self._not_served_delay)
            return self._not_served_delay
        delay = self._delays[min(failures, len(self._delays) - 1)]
        log.log(logging.WARNING if failures % 30 == 0 else logging.DEBUG,  # then every ~5 minutes
                "%s watch%s failed (%s: %s); trying again in %.0f s (try %d)", self.api.kind_name, _where(namespace),
                type(e).__name__, (str(e).splitlines() or [""])[0][:200], delay, failures + 1)
        return delay

    def _answered(self, namespace: str | None) -> None:
        failures = self._failures.pop(namespace, 0)
        self._served.add(namespace)
        if namespace in self._not_served:
            self._not_served.discard(namespace)
            log.info("%s (%s) is served now%s: watching it", self.api.kind_name, self.api.api_version,
                     _where(namespace))
        elif failures:
            log.info("%s watch%s works again after %d failed tries", self.api.kind_name, _where(namespace), failures)

    async def _relist(self, namespace: str | None) -> str:
        """Every object in scope, observed; those known but no longer listed, observed as
        deleted. Returns the list's resourceVersion."""
        # known before the list was asked for: an object created meanwhile (a RouteMonitor by this
        # operator's own reconcile, say) is not in an older snapshot, and must not be taken for deleted
        before = [k for k in self._known() if namespace is None or k[0] == namespace]
        listed: set[Key] = set()
        query: dict[str, str] = {"limit": PAGE}
        kind = self.api.kind
        while True:
            page = await self._rest.get(self.api.collection(namespace), query)
            self._answered(namespace)
            for obj in page.get("items") or ():
                obj.setdefault("apiVersion", self.api.api_version)
                obj.setdefault("kind", self.api.kind_name)
                listed.add(sources.key_of(obj))
                self._observe(kind, None, obj)
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            query = {"limit": PAGE, "continue": meta["continue"]}
        for key in [k for k in before if k not in listed]:
            self._observe(kind, "DELETED", {"metadata": {"namespace": key[0], "name": key[1]}})
        return str(meta.get("resourceVersion") or "")

    async def _watch(self, namespace: str | None, version: str) -> str:
        """Events after ``version`` until the API server ends the watch; the last version seen."""
        query = {"resourceVersion": version, "allowWatchBookmarks": "true", "timeoutSeconds": str(SERVER_TIMEOUT)}
        async for event in self._rest.watch(self.api.collection(namespace), query, read_timeout=SERVER_TIMEOUT + 30):
            self._answered(namespace)
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                if _code(obj) == 410:
                    raise Gone()
                raise RuntimeError(f"the API server ended the watch: {obj.get('message') or obj}")
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self._observe(self.api.kind, kind, obj)
        return version


def watch_all(rest: Rest, namespaces: Iterable[str], *, observe: Observe,
              known: Callable[[Kind], Iterable[Key]]) -> list[KindWatch]:
    """One watch per kind the world holds; cluster-scoped ones (IngressClasses) cluster-wide, and
    not at all when the operator is limited to some namespaces."""
    scopes = tuple(namespaces)
    return [KindWatch(rest, api_of(kind), () if kind in sources.CLUSTER_SCOPED else scopes, observe=observe,
                      known=functools.partial(known, kind))
            for kind in KINDS if not (scopes and kind in sources.CLUSTER_SCOPED)]


def _code(status: Mapping[str, Any]) -> int | None:
    code = status.get("code")
    return code if isinstance(code, int) else None


def _where(namespace: str | None) -> str:
    return f" in namespace {namespace}" if namespace else ""
