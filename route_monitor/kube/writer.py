"""Writes to the Kubernetes API, through lightkube's async client; reads come from the watches
(:mod:`~route_monitor.operator.watches`), which also make the operator's first lists.

Nothing is ever written over an object the operator has not checked to be its own: generated
RouteMonitors and PrometheusRules are *created* (refused with 409 when anything holds the name),
and later *replaced* pinned to the uid and resourceVersion that were read (refused with 409 when
the object changed or was replaced since); deletes carry a uid precondition. Status is a merge
patch on the status subresource, and Events are created. All under the field manager
``route-monitor``. Nothing here retries: the supervisor does.
"""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from lightkube import ALL_NS, AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.core_v1 import EventSource, ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Event
from lightkube.types import CascadeType

from alert_rules import names
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.apply import Kind
from route_monitor.kube.leaseapi import LeaseRequests
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.rest import Rest, path

RouteMonitor = create_namespaced_resource(names.GROUP, names.VERSION, names.KIND, names.PLURAL)
PrometheusRule = create_namespaced_resource("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules")
Route = create_namespaced_resource("route.openshift.io", "v1", "Route", "routes")
COMPONENT = "route-monitor"


def _path(res: Any, obj: Mapping[str, Any], *, item: bool = False) -> str:
    """The collection of ``obj`` (a namespaced ``res``), or with ``item`` the object itself."""
    info = res._api_info
    meta = obj["metadata"]
    return path(info.resource.group, info.resource.version, info.plural, meta["namespace"],
                meta["name"] if item else None)


_REQUESTS: ContextVar[int] = ContextVar("route_monitor_kube_requests", default=0)


def requests_made() -> int:
    """Requests this asyncio task has made through a :class:`KubeWriter` so far (a reconcile that
    made some and raised nothing heard the API answer)."""
    return _REQUESTS.get()


class KubeWriter:
    """The operator's writes; each one is counted in ``route_monitor_kube_requests_total``."""

    def __init__(self, client: AsyncClient, metrics: OperatorMetrics, *, rest: Rest,
                 instance: str | None = None) -> None:
        self._client = client
        """lightkube, for what is rare: listing PrometheusRules, deletes, Events, Leases."""
        self._rest = rest
        """The direct path (``kube/rest.py``) for the reads and writes each monitor costs."""
        self._metrics = metrics
        self._instance = instance or socket.gethostname()
        self.monitors = Kind(self.create_monitor, self.get_monitor, self.replace_monitor)
        """Generated RouteMonitors, for :func:`~route_monitor.kube.apply.apply`."""
        self.rules = Kind(self.create_rule, self.get_rule, self.replace_rule)
        """PrometheusRules, for :func:`~route_monitor.kube.apply.apply`."""
        self.leases = LeaseRequests(client, rest, count=self._count, delete=self._delete)
        """The replicas' Leases."""

    def _count(self, verb: str, resource: str) -> None:
        self._metrics.kube_requests.labels(verb=verb, resource=resource).inc()
        _REQUESTS.set(_REQUESTS.get() + 1)

    @staticmethod
    def _at_version(manifest: Mapping[str, Any], uid: str, resource_version: str) -> dict[str, Any]:
        """``manifest`` pinned to one object at one version: the API server refuses the write (409)
        if the object at that name was replaced (uid) or changed (resourceVersion) since it was read."""
        return {**manifest, "metadata": {**manifest["metadata"], "uid": uid, "resourceVersion": resource_version}}

    async def create_monitor(self, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """Create a generated RouteMonitor; 409 if any object holds the name (never overwritten)."""
        self._count("create", names.PLURAL)
        return await self._rest.create(_path(RouteMonitor, manifest), manifest)

    async def replace_monitor(self, manifest: Mapping[str, Any], uid: str, resource_version: str) -> dict[str, Any]:
        """Replace a generated RouteMonitor, the one read as ours (uid, version); returns it as stored.
        A replace, not an apply: the object was created by POST, whose fields an apply would not own."""
        self._count("update", names.PLURAL)
        return await self._rest.replace(_path(RouteMonitor, manifest, item=True),
                                        self._at_version(manifest, uid, resource_version))

    async def get_monitor(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The RouteMonitor at ``name`` as the API server has it now, or None."""
        return await self._get(RouteMonitor, names.PLURAL, namespace, name)

    async def delete_monitor(self, namespace: str, name: str, uid: str) -> None:
        """Delete a generated RouteMonitor (its PrometheusRule follows by garbage collection)."""
        await self._delete(RouteMonitor, names.PLURAL, namespace, name, uid)

    async def get_rule(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The PrometheusRule at ``name``, or None."""
        return await self._get(PrometheusRule, "prometheusrules", namespace, name)

    async def _get(self, res: Any, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object at ``name`` (a namespaced ``res``) as the API server has it now, or None."""
        self._count("get", resource)
        try:
            return await self._rest.get(_path(res, {"metadata": {"namespace": namespace, "name": name}}, item=True), {})
        except ApiError as e:
            if status_code(e) == 404:
                return None
            raise

    async def list_our_rules(self, namespaces: tuple[str, ...]) -> list[dict[str, Any]] | None:
        """The PrometheusRules labelled as route-monitor's; None when the API is not installed."""
        self._count("list", "prometheusrules")
        out: list[dict[str, Any]] = []
        selector: dict[str, Any] = {names.LABEL_MANAGED_BY: names.MANAGED_BY}
        try:
            for ns in namespaces or (ALL_NS,):
                async for obj in self._client.list(PrometheusRule, namespace=ns, labels=selector, chunk_size=500):
                    out.append(dict(obj.to_dict()))  # type: ignore[no-untyped-call]
        except Exception as e:  # an API group not served answers a plain 404, not an ApiError
            if status_code(e) == 404:
                return None
            raise
        return out

    async def create_rule(self, rule: Mapping[str, Any]) -> dict[str, Any]:
        """Create a PrometheusRule; 409 if any object holds the name (never overwritten)."""
        self._count("create", "prometheusrules")
        return await self._rest.create(_path(PrometheusRule, rule), rule)

    async def replace_rule(self, rule: Mapping[str, Any], uid: str, resource_version: str) -> dict[str, Any]:
        """Replace a PrometheusRule, the one read as ours (uid, version); 409 if it changed since."""
        self._count("update", "prometheusrules")
        return await self._rest.replace(_path(PrometheusRule, rule, item=True),
                                        self._at_version(rule, uid, resource_version))

    async def delete_rule(self, namespace: str, name: str, uid: str) -> None:
        await self._delete(PrometheusRule, "prometheusrules", namespace, name, uid)

    async def delete_at_uid(self, res: Any, resource: str, namespace: str, name: str, uid: str) -> None:
        """Delete the object ``uid`` at ``name`` (of any kind), never one that replaced it."""
        await self._delete(res, resource, namespace, name, uid)

    async def _delete(self, res: Any, resource: str, namespace: str, name: str, uid: str) -> None:
        """DELETE with a uid precondition: only the object we checked is deleted, never one that
        replaced it meanwhile (409). A 404 is success. lightkube's ``delete`` sends no body, so
        the request is built with its generic client."""
        self._count("delete", resource)
        generic = self._client._client
        request = generic.prepare_request("delete", res=res, name=name, namespace=namespace)
        request.data = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid},
                        "propagationPolicy": CascadeType.BACKGROUND.value}
        try:
            response = await generic.send(generic.build_adapter_request(request))  # type: ignore[no-untyped-call]
            generic.handle_response("delete", response, request)
        except ApiError as e:
            if status_code(e) != 404:
                raise

    async def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self._count("patch", names.PLURAL + "/status")
        await self._rest.merge_patch(path(names.GROUP, names.VERSION, names.PLURAL, namespace, name, "status"),
                                     {"status": dict(status)})

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
