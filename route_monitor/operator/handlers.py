"""The kopf edge: the operator's lifecycle (start, SIGTERM/SIGINT, cleanup), its login and its
``/healthz`` liveness endpoint, and kopf's settings. kopf watches nothing: every kind comes
through :mod:`~route_monitor.operator.watches` (a watch kopf gave up on ended its whole
operator, and its shutdown could hang on the others).

No handler stores anything on objects (no finalizers, no annotations, no status): the
persistence settings make sure of it, kopf's progress and diff-base storages are replaced with
ones that never write.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import kopf

from alert_rules import names
from route_monitor.operator.supervisor import Supervisor


class _NoProgress(kopf.ProgressStorage):
    """Keeps no handler progress on objects."""

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
    """Keeps no last-handled configuration on objects (no annotation)."""

    def fetch(self, **_: Any) -> None:
        return None

    def build(self, **_: Any) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def store(self, **_: Any) -> None:
        pass


class _RetryForever:
    """kopf's delays between retries of a failing API request, never running out (kopf's default
    runs out after 54 s and ends the operator). Iterated afresh for every request."""

    def __iter__(self) -> Iterator[float]:
        return itertools.chain((1, 1, 2, 3, 5, 8), itertools.repeat(10))


def kopf_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = _NoProgress()
    settings.persistence.diffbase_storage = _NoDiffBase()
    settings.persistence.finalizer = f"{names.GROUP}/unused"  # never added: no handler requires one
    settings.posting.enabled = False  # the operator posts its own, deduplicated Warning events
    settings.scanning.disabled = True  # no list/watch of CRDs and namespaces needed (least privilege)
    settings.peering.standalone = True  # replicas find each other through Leases, not kopf's peering
    settings.networking.request_timeout = 30
    settings.networking.error_backoffs = _RetryForever()
    return settings


def build_registry(supervisor: Supervisor, *, on_cleanup: Callable[[], Awaitable[None]]) -> kopf.OperatorRegistry:
    """``on_cleanup`` stops the watches, the supervisor and the probe engine when kopf stops:
    kopf treats every task started after it as its own and would wait 5 s for them before
    cancelling."""
    registry = kopf.OperatorRegistry()

    @kopf.on.cleanup(registry=registry)
    async def cleanup(**_: Any) -> None:
        await on_cleanup()

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.probe(id="monitors", registry=registry)
    def monitors(**_: Any) -> dict[str, int]:
        return supervisor.metrics.counts()

    return registry
