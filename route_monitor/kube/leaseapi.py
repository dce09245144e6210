"""The Lease requests of the replicas (Contract 6), in the operator's own namespace: held by
:class:`~route_monitor.kube.writer.KubeWriter` as ``kube.leases``, and counted and sent (a delete
pinned to a uid) as its other requests are, through the two functions it hands over."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from route_monitor.kube.reflector import OnChange, Reflector
from route_monitor.kube.resources import LEASE, Resource
from route_monitor.kube.rest import Rest
from route_monitor.kube.watched import Backoff, Selector, Watched


class LeaseRequests:
    def __init__(self, rest: Rest, *, count: Callable[[str, str], None],
                 delete: Callable[[Resource, str, str, str, str], Awaitable[None]]) -> None:
        self._rest = rest
        self._count = count
        """``(verb, resource)``: one request, in ``route_monitor_kube_requests_total``."""
        self._delete = delete
        """``(resource, plural, namespace, name, uid)``: a delete pinned to that uid."""

    async def create_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        self._count("create", "leases")
        body = {"apiVersion": LEASE.api_version, "kind": LEASE.kind, **lease}
        return await self._rest.create(LEASE.collection(str(lease["metadata"]["namespace"])), body)

    async def patch_lease(self, namespace: str, name: str, spec: Mapping[str, Any],
                          annotations: Mapping[str, str | None] | None = None) -> dict[str, Any]:
        """Merge-patch the Lease's ``spec`` (and ``annotations``: None removes one); the Lease as written."""
        self._count("patch", "leases")
        body: dict[str, Any] = {"spec": dict(spec)}
        if annotations:
            body["metadata"] = {"annotations": dict(annotations)}
        return await self._rest.merge_patch(LEASE.item(namespace, name), body)

    async def delete_lease(self, namespace: str, name: str, uid: str) -> None:
        await self._delete(LEASE, "leases", namespace, name, uid)

    def reflector(self, namespace: str, labels: Mapping[str, str], on_change: OnChange, *,
                  on_synced: Callable[[], None], backoff: Backoff, log: logging.Logger) -> Reflector:
        """The Leases matching ``labels``, listed and watched (each request counted)."""
        watched = Watched(api_version=LEASE.api_version, kind=LEASE.kind, plural=LEASE.plural, namespace=namespace,
                          selector=Selector(labels=dict(labels)))
        return Reflector(self._rest, watched, on_change, on_synced=on_synced, backoff=backoff, log=log,
                         count=lambda verb: self._count(verb, "leases"))
