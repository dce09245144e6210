"""The kopf edge: the operator's lifecycle (start, SIGTERM/SIGINT, cleanup), its login and its
``/healthz`` liveness endpoint, and kopf's settings. kopf watches nothing: every kind comes
through :mod:`~route_monitor.operator.watches` (a watch kopf gave up on ended its whole
operator, and its shutdown could hang on the others).

kopf has no handler on any object, so it stores nothing on them (no finalizers, no annotations,
no status).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import kopf

from route_monitor.operator.supervisor import Supervisor


def kopf_settings() -> kopf.OperatorSettings:
    """kopf makes no request of its own: no resource handlers (so no progress, diff-base or
    finalizer is ever stored on an object), no scan of CRDs or namespaces (least privilege), no
    peering objects (replicas find each other through Leases), no events posted (the operator
    posts its own, deduplicated Warning events)."""
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.scanning.disabled = True
    settings.peering.standalone = True
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
