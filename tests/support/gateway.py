"""Ingresses, HTTPRoutes, GRPCRoutes, TCPRoutes and Gateways for the operator tests, and their status written the way
the real controllers write it.

Objects are created through the apiserver (the upstream Gateway API CRDs are installed by
``tests/support/cluster.py``), so every manifest here passes the real schemas. A gateway
controller's status on an HTTPRoute is ``status.parents[]``: one entry per parent with its
``parentRef``, the ``controllerName`` and ``Accepted``/``ResolvedRefs`` conditions (``metav1.Condition``:
type, status, reason, message, lastTransitionTime, observedGeneration).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from lightkube import Client
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.networking_v1 import Ingress
from lightkube.types import PatchType

GROUP = "gateway.networking.k8s.io"
HTTPRoute = create_namespaced_resource(GROUP, "v1", "HTTPRoute", "httproutes")
Gateway = create_namespaced_resource(GROUP, "v1", "Gateway", "gateways")
GRPCRoute = create_namespaced_resource(GROUP, "v1", "GRPCRoute", "grpcroutes")
TCPRoute = create_namespaced_resource(GROUP, "v1", "TCPRoute", "tcproutes")
CONTROLLER = "example.net/gateway-controller"


def ingress(ns: str, name: str, rules: list[tuple[str, str]], ann: dict[str, str] | None = None,
            tls_hosts: tuple[str, ...] = ()) -> Any:
    """``rules``: (host, Prefix path) pairs, one rule each."""
    spec: dict[str, Any] = {"rules": [
        {"host": host, "http": {"paths": [{"path": path, "pathType": "Prefix",
                                           "backend": {"service": {"name": name, "port": {"number": 80}}}}]}}
        for host, path in rules]}
    if tls_hosts:
        spec["tls"] = [{"hosts": list(tls_hosts), "secretName": f"{name}-tls"}]
    return Ingress.from_dict({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                              "metadata": {"name": name, "namespace": ns, "annotations": ann or {}}, "spec": spec})


def gateway(ns: str, name: str, *listeners: tuple[str, str, int]) -> Any:
    """``listeners``: (name, protocol, port)."""
    return Gateway.from_dict({"apiVersion": f"{GROUP}/v1", "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
                              "spec": {"gatewayClassName": "example", "listeners": [
                                  {"name": n, "protocol": p, "port": port} for n, p, port in listeners]}})


def httproute(ns: str, name: str, hostnames: list[str], path: str, ann: dict[str, str] | None = None,
              parent: str = "edge", section: str = "web") -> Any:
    return HTTPRoute.from_dict({
        "apiVersion": f"{GROUP}/v1", "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": ns, "annotations": ann or {}},
        "spec": {"parentRefs": [{"name": parent, "sectionName": section}], "hostnames": hostnames,
                 "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": path}}],
                            "backendRefs": [{"name": name, "port": 8080}]}]}})


def grpcroute(ns: str, name: str, hostnames: list[str], ann: dict[str, str] | None = None,
              parent: str = "edge", section: str = "web") -> Any:
    return GRPCRoute.from_dict({
        "apiVersion": f"{GROUP}/v1", "kind": "GRPCRoute",
        "metadata": {"name": name, "namespace": ns, "annotations": ann or {}},
        "spec": {"parentRefs": [{"name": parent, "sectionName": section}], "hostnames": hostnames,
                 "rules": [{"backendRefs": [{"name": name, "port": 50051}]}]}})


def tcproute(ns: str, name: str, ann: dict[str, str] | None = None, parent: str = "edge",
             section: str = "redis") -> Any:
    return TCPRoute.from_dict({
        "apiVersion": f"{GROUP}/v1", "kind": "TCPRoute",
        "metadata": {"name": name, "namespace": ns, "annotations": ann or {}},
        "spec": {"parentRefs": [{"name": parent, "sectionName": section}],
                 "rules": [{"backendRefs": [{"name": name, "port": 6379}]}]}})


def set_gateway_address(kube: Client, ns: str, name: str, address: str) -> None:
    """What a gateway controller writes once its load balancer has an address."""
    kube.patch(Gateway.Status, name, {"status": {"addresses": [{"type": "IPAddress", "value": address}]}},
               namespace=ns, patch_type=PatchType.MERGE)


def _condition(type_: str, ok: bool, reason: str, generation: int) -> dict[str, Any]:
    return {"type": type_, "status": "True" if ok else "False", "reason": reason, "message": f"{reason} by the test",
            "observedGeneration": generation,
            "lastTransitionTime": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def set_parent_status(kube: Client, ns: str, name: str, *, gateway_name: str = "edge", section: str = "web",
                      accepted: bool = True, kind: Any = HTTPRoute) -> None:
    """What a gateway controller writes once it has looked at the route's parentRef (``kind``:
    :data:`HTTPRoute`, :data:`GRPCRoute` or :data:`TCPRoute`)."""
    route = kube.get(kind, name, namespace=ns)
    generation = int(route.metadata.generation or 1)
    reason = "Accepted" if accepted else "NotAllowedByListeners"
    parent = {"parentRef": {"group": GROUP, "kind": "Gateway", "namespace": ns, "name": gateway_name,
                            "sectionName": section},
              "controllerName": CONTROLLER,
              "conditions": [_condition("Accepted", accepted, reason, generation),
                             _condition("ResolvedRefs", True, "ResolvedRefs", generation)]}
    kube.patch(kind.Status, name, {"status": {"parents": [parent]}}, namespace=ns, patch_type=PatchType.MERGE)
