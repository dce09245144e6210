"""The Lease requests of the replicas (Contract 6), in the operator's own namespace: held by
:class:`~route_monitor.kube.writer.KubeWriter` as ``kube.leases``, and counted and sent (a delete
pinned to a uid) as its other requests are, through the two functions it hands over."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.coordination_v1 import Lease

from route_monitor.kube.rest import Rest, path


class LeaseRequests:
    def __init__(self, client: AsyncClient, rest: Rest, *, count: Callable[[str, str], None],
                 delete: Callable[[Any, str, str, str, str], Awaitable[None]]) -> None:
        self._client, self._rest = client, rest
        self._count = count
        """``(verb, resource)``: one request, in ``route_monitor_kube_requests_total``."""
        self._delete = delete
        """``(resource type, plural, namespace, name, uid)``: a delete pinned to that uid."""

    async def create_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        self._count("create", "leases")
        obj: Any = Lease.from_dict(dict(lease))
        return dict((await self._client.create(obj)).to_dict())

    async def patch_lease(self, namespace: str, name: str, spec: Mapping[str, Any],
                          annotations: Mapping[str, str | None] | None = None) -> dict[str, Any]:
        """Merge-patch the Lease's ``spec`` (and ``annotations``: None removes one); the Lease as written."""
        self._count("patch", "leases")
        body: dict[str, Any] = {"spec": dict(spec)}
        if annotations:
            body["metadata"] = {"annotations": dict(annotations)}
        return await self._rest.merge_patch(path("coordination.k8s.io", "v1", "leases", namespace, name), body)

    async def delete_lease(self, namespace: str, name: str, uid: str) -> None:
        await self._delete(Lease, "leases", namespace, name, uid)

    async def list_leases(self, namespace: str, labels: Mapping[str, str]) -> tuple[list[dict[str, Any]], str]:
        """The Leases matching ``labels`` and the resourceVersion to watch from."""
        self._count("list", "leases")
        selector: dict[str, Any] = dict(labels)
        listing = self._client.list(Lease, namespace=namespace, labels=selector)
        items = [dict(o.to_dict()) async for o in listing]
        return items, listing.resourceVersion

    async def watch_leases(self, namespace: str, labels: Mapping[str, str],
                           resource_version: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Changes to the Leases matching ``labels`` after ``resource_version``; raises when the
        watch breaks (the caller lists again)."""
        self._count("watch", "leases")
        selector: dict[str, Any] = dict(labels)
        async for event, obj in self._client.watch(Lease, namespace=namespace, labels=selector,
                                                   resource_version=resource_version):
            yield event, dict(obj.to_dict())
