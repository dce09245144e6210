"""Per-namespace scrape objects, for Prometheus stacks that enforce namespaces (pure).

OpenShift's user-workload monitoring, and any prometheus-operator Prometheus with
``enforcedNamespaceLabel``, set the ``namespace`` label of every scraped series to the namespace
of the ServiceMonitor that found it (``honor_labels`` forced off) and scope each PrometheusRule to
its own namespace. One central ServiceMonitor therefore labels every probe series
``namespace="route-monitor"`` and no generated rule in an application namespace ever matches.

With ``--scrape-per-namespace`` the operator keeps, in each namespace that has monitors, four
objects named :data:`names.SCRAPE_OBJECT_NAME`:

- a selectorless headless **Service** (it selects no pods: the operator's pods live elsewhere);
- its **Endpoints** and its **EndpointSlice**, both listing the ready addresses of the operator's
  own metrics Service (the EndpointSlices Kubernetes keeps for ``route-monitor-metrics`` in the
  operator's namespace), so every replica is scraped: each exports only the monitors it owns.
  Both, because Prometheus discovers a Service's targets through one or the other (the
  ``endpoints`` role, prometheus-operator's default and OpenShift user-workload monitoring's, or
  the ``endpointslice`` role) and Kubernetes builds neither from the other for a selectorless
  Service (its mirroring controller would copy Endpoints into a second slice: the Endpoints opt out);
- a **ServiceMonitor** selecting that Service, asking ``/metrics?namespace=NS``: each replica
  answers with that namespace's probe series only, so the enforced label is the true one;

and a **PrometheusRule** :data:`names.SHARED_RULE_NAME` with the shared SLI groups the monitors'
alerts read (in cluster-scrape mode the operator keeps one such rule in its own namespace instead:
``route_monitor.operator.outputs.sharedrule``, built by :func:`shared_rule` too).

This module only computes the objects; :mod:`route_monitor.operator.outputs.scrapesync` writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from alert_rules import names
from alert_rules.shared import shared_rule_groups

METRICS_PORT_NAME = "metrics"
SCRAPE_INTERVAL = "15s"
LABELS = {names.LABEL_MANAGED_BY: names.MANAGED_BY, "app.kubernetes.io/name": names.SCRAPE_OBJECT_NAME}


@dataclass(frozen=True)
class OperatorEndpoints:
    """Where the operator's replicas serve ``/metrics``: ready addresses and the port."""

    addresses: tuple[str, ...]
    port: int
    address_type: str = "IPv4"


def operator_endpoints(slices: Iterable[Mapping[str, Any]]) -> OperatorEndpoints | None:
    """The ready endpoints of the operator's metrics Service, from its EndpointSlices; None when
    none is ready yet (or the slices carry no ``metrics`` port)."""
    addresses: set[str] = set()
    port: int | None = None
    address_type = "IPv4"
    for s in slices:
        ports = [p for p in s.get("ports") or [] if p.get("name") == METRICS_PORT_NAME and p.get("port")]
        if not ports:
            continue
        port = int(ports[0]["port"])
        address_type = str(s.get("addressType") or "IPv4")
        for ep in s.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready", True) is not False:
                addresses.update(str(a) for a in ep.get("addresses") or [])
    if port is None or not addresses:
        return None
    return OperatorEndpoints(tuple(sorted(addresses)), port, address_type)


def _meta(namespace: str, extra_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"name": names.SCRAPE_OBJECT_NAME, "namespace": namespace, "labels": {**LABELS, **(extra_labels or {})}}


def service(namespace: str, endpoints: OperatorEndpoints) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta(namespace),
            "spec": {"clusterIP": "None", "ports": [{"name": METRICS_PORT_NAME, "port": endpoints.port,
                                                     "targetPort": endpoints.port, "protocol": "TCP"}]}}


def endpoints_object(namespace: str, endpoints: OperatorEndpoints) -> dict[str, Any]:
    """The v1 Endpoints of the Service (the ``endpoints`` discovery role reads these)."""
    return {"apiVersion": "v1", "kind": "Endpoints", "metadata": _meta(namespace, {names.LABEL_SKIP_MIRROR: "true"}),
            "subsets": [{"addresses": [{"ip": a} for a in endpoints.addresses],
                         "ports": [{"name": METRICS_PORT_NAME, "port": endpoints.port, "protocol": "TCP"}]}]}


def endpoint_slice(namespace: str, endpoints: OperatorEndpoints, *, version: str) -> dict[str, Any]:
    """``version``: ``v1`` (Kubernetes 1.21+) or ``v1beta1``; the fields used here are the same."""
    labels = {names.LABEL_SERVICE_NAME: names.SCRAPE_OBJECT_NAME,
              names.LABEL_ENDPOINTSLICE_MANAGED_BY: names.ENDPOINTSLICE_MANAGER}
    return {"apiVersion": f"discovery.k8s.io/{version}", "kind": "EndpointSlice",
            "metadata": _meta(namespace, labels), "addressType": endpoints.address_type,
            "endpoints": [{"addresses": [a], "conditions": {"ready": True}} for a in endpoints.addresses],
            "ports": [{"name": METRICS_PORT_NAME, "port": endpoints.port, "protocol": "TCP"}]}


def service_monitor(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": _meta(namespace),
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": names.SCRAPE_OBJECT_NAME}},
                     "endpoints": [{"port": METRICS_PORT_NAME, "path": "/metrics", "interval": SCRAPE_INTERVAL,
                                    "params": {names.SCRAPE_PARAM_NAMESPACE: [namespace]}}]}}


def shared_rule(namespace: str, rule_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The shared SLI groups every monitor's alerts read (``alert_rules.shared``), for this namespace's
    monitors: the enforcing Prometheus scopes the rule to the namespace as it does the monitors' own."""
    meta = {**_meta(namespace, {**(rule_labels or {}), **LABELS}), "name": names.SHARED_RULE_NAME}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": meta,
            "spec": {"groups": shared_rule_groups()}}


def objects(namespace: str, endpoints: OperatorEndpoints, *, slice_version: str,
            rule_labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The objects of ``namespace``, in the order they are written: the shared rule first (its name is
    not the scrape objects' one, so a foreign Service holding theirs does not keep the monitors'
    ``RouteMonitorProbesAbsent`` from saying they are not scraped)."""
    return [shared_rule(namespace, rule_labels), service(namespace, endpoints), endpoints_object(namespace, endpoints),
            endpoint_slice(namespace, endpoints, version=slice_version), service_monitor(namespace)]


def contains(existing: Any, desired: Any) -> bool:
    """Everything ``desired`` says, ``existing`` says too (the API server adds defaults of its own)."""
    if isinstance(desired, Mapping):
        return isinstance(existing, Mapping) and all(contains(existing.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return (isinstance(existing, list) and len(existing) == len(desired)
                and all(contains(e, d) for e, d in zip(existing, desired, strict=True)))
    return bool(existing == desired)


def up_to_date(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    body = {k: v for k, v in desired.items() if k not in ("apiVersion", "kind", "metadata")}
    labels = desired["metadata"]["labels"]
    return contains(existing, body) and contains((existing.get("metadata") or {}).get("labels") or {}, labels)
