"""Writes to the Kubernetes API, through lightkube's async client; reads come from kopf's watches.

Every write is idempotent: RouteMonitors and PrometheusRules are server-side applied under the
field manager ``route-monitor`` (a PATCH that creates when missing), status is a merge patch on
the status subresource, and Events are created. Nothing here retries: the supervisor does.
"""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Mapping
from typing import Any

from lightkube import ALL_NS, AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.core_v1 import EventSource, ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Event, Service
from lightkube.types import CascadeType, PatchType

from alert_rules import names
from route_monitor.operator.metrics import OperatorMetrics

RouteMonitor = create_namespaced_resource(names.GROUP, names.VERSION, names.KIND, names.PLURAL)
PrometheusRule = create_namespaced_resource("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules")
Route = create_namespaced_resource("route.openshift.io", "v1", "Route", "routes")
COMPONENT = "route-monitor"
WATCHED: dict[str, Any] = {"route": Route, "service": Service, "routemonitor": RouteMonitor}


def status_code(error: BaseException) -> int | None:
    if isinstance(error, ApiError) and error.status is not None:
        return int(error.status.code or 0) or None
    return None


class KubeWriter:
    """The operator's writes; each one is counted in ``route_monitor_kube_requests_total``."""

    def __init__(self, client: AsyncClient, metrics: OperatorMetrics, *, instance: str | None = None) -> None:
        self._client = client
        self._metrics = metrics
        self._instance = instance or socket.gethostname()

    def _count(self, verb: str, resource: str) -> None:
        self._metrics.kube_requests.labels(verb=verb, resource=resource).inc()

    async def list_all(self, kind: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]] | None:
        """Every object of ``kind`` (``route``, ``service``, ``routemonitor``) in ``namespaces``
        (all when empty); None when the API does not exist here (e.g. no Routes outside OpenShift)."""
        res = WATCHED[kind]
        out: list[dict[str, Any]] = []
        try:
            for ns in namespaces or (ALL_NS,):
                async for obj in self._client.list(res, namespace=ns, chunk_size=500):
                    out.append(obj.to_dict() if hasattr(obj, "to_dict") and not isinstance(obj, dict) else dict(obj))
        except ApiError as e:
            if status_code(e) == 404:
                return None
            raise
        return out

    async def apply_monitor(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Apply a generated RouteMonitor; returns it as stored (with its uid)."""
        self._count("apply", names.PLURAL)
        meta = manifest["metadata"]
        applied = await self._client.patch(RouteMonitor, meta["name"], dict(manifest), namespace=meta["namespace"],
                                 patch_type=PatchType.APPLY, field_manager=names.FIELD_MANAGER, force=True)
        return dict(applied.to_dict())  # type: ignore[no-untyped-call]

    async def delete_monitor(self, namespace: str, name: str) -> None:
        """Delete a generated RouteMonitor (its PrometheusRule follows by garbage collection)."""
        self._count("delete", names.PLURAL)
        try:
            await self._client.delete(RouteMonitor, name, namespace=namespace, cascade=CascadeType.BACKGROUND)
        except ApiError as e:
            if status_code(e) != 404:
                raise

    async def apply_rule(self, rule: Mapping[str, Any]) -> None:
        self._count("apply", "prometheusrules")
        meta = rule["metadata"]
        await self._client.patch(PrometheusRule, meta["name"], dict(rule), namespace=meta["namespace"],
                                 patch_type=PatchType.APPLY, field_manager=names.FIELD_MANAGER, force=True)

    async def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self._count("patch", names.PLURAL + "/status")
        await self._client.patch(RouteMonitor.Status, name, {"status": dict(status)}, namespace=namespace,
                                 patch_type=PatchType.MERGE, field_manager=names.FIELD_MANAGER)

    async def warn(self, involved: Mapping[str, str], reason: str, message: str) -> None:
        self._count("create", "events")
        now = dt.datetime.now(dt.UTC)
        event = Event(
            metadata=ObjectMeta(generateName=f"{involved['name']}.", namespace=involved["namespace"]),
            involvedObject=ObjectReference(apiVersion=involved["apiVersion"], kind=involved["kind"],
                                           name=involved["name"], namespace=involved["namespace"],
                                           uid=involved.get("uid") or None),
            reason=reason, message=message[:1024], type="Warning", count=1,
            firstTimestamp=now, lastTimestamp=now, source=EventSource(component=COMPONENT),
            reportingComponent=COMPONENT, reportingInstance=self._instance[:128],
        )
        await self._client.create(event)  # namespaced by its metadata
