"""The Lease requests of the replicas (Contract 6), in the operator's own namespace: held by
:class:`~route_monitor.kube.writer.KubeWriter` as ``kube.leases``, and counted and sent (a delete
pinned to a uid) as its other requests are, through the two functions it hands over."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from route_monitor.kube.apierrors import ApiError
from route_monitor.kube.resources import LEASE, Resource
from route_monitor.kube.rest import Rest


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


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

    async def list_leases(self, namespace: str, labels: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
        """The Leases matching ``labels`` and the resourceVersion to watch from."""
        self._count("list", "leases")
        return await self._rest.list(LEASE.collection(namespace), {"labelSelector": _selector(labels)})

    async def watch_leases(self, namespace: str, labels: Mapping[str, str],
                           resource_version: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Changes to the Leases matching ``labels`` after ``resource_version``, watched again from
        the last one seen when the API server ends a watch; raises when the watch breaks (the
        caller lists again)."""
        self._count("watch", "leases")
        version = resource_version
        while True:
            query = {"labelSelector": _selector(labels), **({"resourceVersion": version} if version else {})}
            async for event in self._rest.watch(LEASE.collection(namespace), query, read_timeout=None):
                kind, obj = str(event.get("type")), event.get("object") or {}
                if kind == "ERROR":  # a Status: 410 when the version is too old
                    raise ApiError(int(obj.get("code") or 500), str(obj.get("reason") or ""),
                                   str(obj.get("message") or ""))
                if kind == "BOOKMARK":
                    continue
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                yield kind, obj
