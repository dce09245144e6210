"""The kinds of objects the operator and ``doctor`` ask the API server about, and where each one
lives: one table instead of a client library's generated models (the operator sends and reads
plain JSON, :mod:`~route_monitor.kube.rest`)."""

from __future__ import annotations

from dataclasses import dataclass

from alert_rules import names
from route_monitor.kube.rest import path


@dataclass(frozen=True)
class Resource:
    group: str
    """"" for the core API (``/api/v1``)."""
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection(self, namespace: str | None = None) -> str:
        """The collection in ``namespace``; without one, across all namespaces (or cluster-scoped)."""
        return path(self.group, self.version, self.plural, namespace if self.namespaced else None)

    def item(self, namespace: str | None, name: str, subresource: str | None = None) -> str:
        return path(self.group, self.version, self.plural, namespace if self.namespaced else None, name, subresource)


ROUTE_MONITOR = Resource(names.GROUP, names.VERSION, names.KIND, names.PLURAL)
PROMETHEUS_RULE = Resource("monitoring.coreos.com", "v1", "PrometheusRule", "prometheusrules")
SERVICE_MONITOR = Resource("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors")
PROMETHEUS = Resource("monitoring.coreos.com", "v1", "Prometheus", "prometheuses")
ROUTE = Resource("route.openshift.io", "v1", "Route", "routes")
LEASE = Resource("coordination.k8s.io", "v1", "Lease", "leases")
EVENT = Resource("", "v1", "Event", "events")
SERVICE = Resource("", "v1", "Service", "services")
ENDPOINTS = Resource("", "v1", "Endpoints", "endpoints")
NAMESPACE = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
DEPLOYMENT = Resource("apps", "v1", "Deployment", "deployments")
SUBJECT_ACCESS_REVIEW = Resource("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
                                 namespaced=False)


def endpoint_slice(version: str) -> Resource:
    """discovery.k8s.io's EndpointSlice at ``version`` (v1 from Kubernetes 1.21, v1beta1 before)."""
    return Resource("discovery.k8s.io", version, "EndpointSlice", "endpointslices")
