"""Writes to the Kubernetes API, through the operator's client (:mod:`~route_monitor.kube.rest`);
reads come from the watches
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
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any

from alert_rules import names
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.apply import Kind
from route_monitor.kube.leaseapi import LeaseRequests
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.resources import EVENT, PROMETHEUS_RULE, ROUTE_MONITOR, Resource
from route_monitor.kube.rest import Rest

COMPONENT = "route-monitor"
BACKGROUND = "Background"
"""Deletes leave the dependents (a generated RouteMonitor's PrometheusRule) to the garbage collector."""


def _path(res: Resource, obj: Mapping[str, Any], *, item: bool = False) -> str:
    """The collection of ``obj`` (a namespaced ``res``), or with ``item`` the object itself."""
    meta = obj["metadata"]
    return res.item(meta["namespace"], meta["name"]) if item else res.collection(meta["namespace"])


def _time(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


_REQUESTS: ContextVar[int] = ContextVar("route_monitor_kube_requests", default=0)


def requests_made() -> int:
    """Requests this asyncio task has made through a :class:`KubeWriter` so far (a reconcile that
    made some and raised nothing heard the API answer)."""
    return _REQUESTS.get()


RULES_PAGE = 100
"""PrometheusRules per page when a replica lists its own at start: a generated rule is ~18 KB, and
an API server under load took 11.9 s to start answering a page of 500 (9 MB) at 10,000 monitors,
past the client's 10 s read timeout, so every restart listed from the start again, three times
(benchmarks/RESULTS-fleet.md); a page of 100 is ~1.8 MB."""


class KubeWriter:
    """The operator's writes; each one is counted in ``route_monitor_kube_requests_total``."""

    def __init__(self, metrics: OperatorMetrics, *, rest: Rest, instance: str | None = None) -> None:
        self._rest = rest
        self._metrics = metrics
        self._instance = instance or socket.gethostname()
        self.monitors = Kind(self.create_monitor, self.get_monitor, self.replace_monitor)
        """Generated RouteMonitors, for :func:`~route_monitor.kube.apply.apply`."""
        self.rules = Kind(self.create_rule, self.get_rule, self.replace_rule)
        """PrometheusRules, for :func:`~route_monitor.kube.apply.apply`."""
        self.leases = LeaseRequests(rest, count=self._count, delete=self._delete)
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
        return await self._rest.create(_path(ROUTE_MONITOR, manifest), manifest)

    async def replace_monitor(self, manifest: Mapping[str, Any], uid: str, resource_version: str) -> dict[str, Any]:
        """Replace a generated RouteMonitor, the one read as ours (uid, version); returns it as stored.
        A replace, not an apply: the object was created by POST, whose fields an apply would not own."""
        self._count("update", names.PLURAL)
        return await self._rest.replace(_path(ROUTE_MONITOR, manifest, item=True),
                                        self._at_version(manifest, uid, resource_version))

    async def get_monitor(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The RouteMonitor at ``name`` as the API server has it now, or None."""
        return await self._get(ROUTE_MONITOR, names.PLURAL, namespace, name)

    async def delete_monitor(self, namespace: str, name: str, uid: str) -> None:
        """Delete a generated RouteMonitor (its PrometheusRule follows by garbage collection)."""
        await self._delete(ROUTE_MONITOR, names.PLURAL, namespace, name, uid)

    async def get_rule(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The PrometheusRule at ``name``, or None."""
        return await self._get(PROMETHEUS_RULE, "prometheusrules", namespace, name)

    async def _get(self, res: Resource, resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The object at ``name`` (a namespaced ``res``) as the API server has it now, or None."""
        self._count("get", resource)
        try:
            return await self._rest.get(res.item(namespace, name), {})
        except Exception as e:
            if status_code(e) == 404:
                return None
            raise

    async def list_our_rules(self, namespaces: tuple[str, ...], *,
                             keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None
                             ) -> list[dict[str, Any]] | None:
        """The PrometheusRules labelled as route-monitor's (``keep(rule)`` of each, if given, as
        each page arrives); None when the API is not installed."""
        self._count("list", "prometheusrules")
        out: list[dict[str, Any]] = []
        selector = {"labelSelector": f"{names.LABEL_MANAGED_BY}={names.MANAGED_BY}"}
        try:
            for ns in namespaces or (None,):
                items, _ = await self._rest.list(PROMETHEUS_RULE.collection(ns), selector, chunk=RULES_PAGE, keep=keep)
                out.extend(items)
        except Exception as e:  # an API group not served answers 404
            if status_code(e) == 404:
                return None
            raise
        return out

    async def create_rule(self, rule: Mapping[str, Any]) -> dict[str, Any]:
        """Create a PrometheusRule; 409 if any object holds the name (never overwritten)."""
        self._count("create", "prometheusrules")
        return await self._rest.create(_path(PROMETHEUS_RULE, rule), rule)

    async def replace_rule(self, rule: Mapping[str, Any], uid: str, resource_version: str) -> dict[str, Any]:
        """Replace a PrometheusRule, the one read as ours (uid, version); 409 if it changed since."""
        self._count("update", "prometheusrules")
        return await self._rest.replace(_path(PROMETHEUS_RULE, rule, item=True),
                                        self._at_version(rule, uid, resource_version))

    async def delete_rule(self, namespace: str, name: str, uid: str) -> None:
        await self._delete(PROMETHEUS_RULE, "prometheusrules", namespace, name, uid)

    async def delete_at_uid(self, res: Resource, resource: str, namespace: str, name: str, uid: str) -> None:
        """Delete the object ``uid`` at ``name`` (of any kind), never one that replaced it."""
        await self._delete(res, resource, namespace, name, uid)

    async def _delete(self, res: Resource, resource: str, namespace: str, name: str, uid: str) -> None:
        """DELETE with a uid precondition: only the object we checked is deleted, never one that
        replaced it meanwhile (409). A 404 is success."""
        self._count("delete", resource)
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid},
                   "propagationPolicy": BACKGROUND}
        try:
            await self._rest.delete(res.item(namespace, name), options)
        except Exception as e:
            if status_code(e) != 404:
                raise

    async def patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self._count("patch", names.PLURAL + "/status")
        await self._rest.merge_patch(ROUTE_MONITOR.item(namespace, name, "status"),
                                     {"status": dict(status)})

    async def warn(self, involved: Mapping[str, str], reason: str, message: str) -> None:
        self._count("create", "events")
        now = _time(dt.datetime.now(dt.UTC))
        reference = {"apiVersion": involved["apiVersion"], "kind": involved["kind"], "name": involved["name"],
                     "namespace": involved["namespace"]}
        if involved.get("uid"):
            reference["uid"] = involved["uid"]
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}.", "namespace": involved["namespace"]},
            "involvedObject": reference, "reason": reason, "message": message[:1024], "type": "Warning",
            "count": 1, "firstTimestamp": now, "lastTimestamp": now, "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT, "reportingInstance": self._instance[:128],
        }
        await self._rest.create(EVENT.collection(involved["namespace"]), event)
