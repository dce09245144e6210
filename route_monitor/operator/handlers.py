"""The kopf edge: watch-event handlers that feed the supervisor, and kopf's settings.

Only ``@kopf.on.event`` handlers: they store nothing on the objects (no finalizers, no
annotations, no status), and there are no kopf daemons or timers on users' Routes, Services,
Ingresses or HTTPRoutes. The persistence settings make sure of it: kopf's progress and
diff-base storages are replaced with ones that never write.

One handler per row of :data:`route_monitor.sources.SOURCES` and per dependency (Gateways). A
kind whose API this cluster does not serve (no Routes outside OpenShift, no Gateway API) is
left out by kopf's one resource scan at start (scanning is off), with one warning line, and
never retried.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import kopf
from kopf._core.reactor import inventory

from alert_rules import names
from route_monitor import sources
from route_monitor.operator.supervisor import Supervisor


class _NoProgress(kopf.ProgressStorage):
    """Keeps no handler progress on objects (event handlers need none)."""

    def fetch(self, **_: Any) -> None:
        return None

    def store(self, **_: Any) -> None:
        pass

    def purge(self, **_: Any) -> None:
        pass

    def touch(self, **_: Any) -> None:
        pass

    def clear(self, *, essence: Any) -> Any:
        return essence


class _NoDiffBase(kopf.DiffBaseStorage):
    """Keeps no last-handled configuration on objects (no annotation), and builds none: kopf would
    deep-copy every event's whole body (managedFields included) to compare essences, which only
    on-create/update/field handlers use, and there are none."""

    def fetch(self, **_: Any) -> None:
        return None

    def build(self, **_: Any) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def store(self, **_: Any) -> None:
        pass


class _NoMemories(inventory.ResourceMemories):
    """kopf's record per object (a memo, an error throttler, index and daemon state: ~1 KiB each,
    two objects per monitor, plus every other Route and Service), made afresh for each event and
    kept nowhere. kopf keeps one per object until it is deleted, for what only daemons, timers,
    indices, resume handlers and patch retries use; event handlers (all there are here) use none
    of it (``benchmarks/RESULTS-operator.md``, memory per monitor)."""

    async def recall(self, raw_body: kopf.RawBody, *, memobase: Any = None, noticed_by_listing: bool = False,
                     ephemeral: bool = False) -> inventory.ResourceMemory:
        return await super().recall(raw_body, memobase=memobase, noticed_by_listing=noticed_by_listing,
                                    ephemeral=True)


def memories() -> inventory.ResourceMemories:
    """For ``kopf.operator(memories=...)``."""
    return _NoMemories()


IDLE_WORKER_SECONDS = 0.1
"""How long kopf keeps an object's event worker (a task, its queue, its coroutines) after its last
event; kopf's default is 5 s. In a burst (1,000 new Routes) that kept a worker alive for every
object touched in the last 5 s, ~2,000 at once, and the holes they left in the heap stayed in the
operator's resident memory: 28.6 -> 16.4 KiB per monitor at 1,000 (``benchmarks/RESULTS-operator.md``).
Events of one object within this time still share a worker; a later one starts a new one (a task)."""


class _RetryForever:
    """kopf's delays between retries of a failing API request (5xx, 429, unreachable), never
    running out. kopf's default runs out after 54 s, and a watch that runs out ends kopf and with
    it the probe engine; the process then neither restarted nor exited (an API answering 500 for
    60 s, ``tests/test_chaos_apiserver.py``). Iterated afresh for every request."""

    def __iter__(self) -> Iterator[float]:
        return itertools.chain((1, 1, 2, 3, 5, 8), itertools.repeat(10))


def kopf_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = _NoProgress()
    settings.persistence.diffbase_storage = _NoDiffBase()
    settings.persistence.finalizer = f"{names.GROUP}/unused"  # never added: no handler requires one
    settings.posting.enabled = False  # the operator posts its own, deduplicated Warning events
    settings.scanning.disabled = True  # no list/watch of CRDs and namespaces needed (least privilege)
    settings.peering.standalone = True  # one replica; no peering resources needed
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.networking.request_timeout = 30
    settings.networking.error_backoffs = _RetryForever()
    settings.queueing.idle_timeout = IDLE_WORKER_SECONDS
    return settings


def watched() -> list[tuple[str, str, str]]:
    """(kind, apiVersion, plural) of every source and dependency the operator watches."""
    return [*((s.kind, s.api_version, s.plural) for s in sources.SOURCES),
            *((kind, api_version, plural) for kind, (api_version, _, plural) in sources.DEPENDENCIES.items())]


def _observer(supervisor: Supervisor, kind: str) -> Callable[..., Awaitable[None]]:
    """``async``: kopf runs a plain function in a thread pool, one thread hop per event, and the
    supervisor's world and queue belong to the event loop's thread."""

    async def observe(event: kopf.RawEvent, **_: Any) -> None:
        supervisor.observe(kind, event["type"], event["object"])

    observe.__name__ = f"{kind}_event"  # kopf's handler id
    return observe


def build_registry(supervisor: Supervisor, *, on_cleanup: Callable[[], Awaitable[None]],
                   watch_monitors: bool = True) -> kopf.OperatorRegistry:
    """``on_cleanup`` stops the supervisor and the probe engine when kopf stops: kopf treats
    every task started after it as its own and would wait 5 s for them before cancelling.
    ``watch_monitors=False``: RouteMonitors come from :mod:`~route_monitor.operator.monitorwatch`."""
    registry = kopf.OperatorRegistry()

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        await on_cleanup()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    for kind, api_version, plural in watched():
        group, _, version = api_version.rpartition("/")
        kopf.on.event(group, version, plural, registry=registry)(_observer(supervisor, kind))

    if watch_monitors:
        on_monitors = kopf.on.event(names.GROUP, names.VERSION, names.PLURAL, registry=registry)
        on_monitors(_observer(supervisor, "routemonitor"))

    @kopf.on.probe(id="monitors", registry=registry)
    def monitors(**_: Any) -> dict[str, int]:
        return supervisor.metrics.counts()

    logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    return registry
