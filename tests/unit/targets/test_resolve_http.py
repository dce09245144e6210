"""Contract 7's URL rules for Ingresses and HTTPRoutes, on objects shaped as the API serves them.

Covers: the host (the wanted one, which must be among the object's hosts, else the first
non-wildcard one; wildcard-only -> NoUsableHost), the Ingress scheme (https when spec.tls lists
the host), the HTTPRoute scheme and port (from the listener of a Gateway that accepted the route:
sectionName, port, hostname), the path (annotation, else the first Exact/Prefix/PathPrefix path
of the rule serving the host, else /), and every way resolution fails (NoAcceptedParent,
GatewayNotFound, ListenerNotFound) with a message naming the object. Precedence among sources
(Route > HTTPRoute > GRPCRoute > TCPRoute > Ingress > Service) is the order of the one table, checked here too.
"""

from __future__ import annotations

from typing import Any

import pytest

from route_monitor.targets import sources
from route_monitor.targets.resolve import TargetError
from route_monitor.targets.resolve_http import gateway_refs, resolve_httproute, resolve_ingress


def ingress(*rules: dict[str, Any], tls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "shop", "namespace": "prod"},
            "spec": {"rules": list(rules), "tls": tls or []}}


def rule(host: str | None, *paths: tuple[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"http": {"paths": [{"path": p, "pathType": t, "backend": {"service": {"name": "shop"}}}
                                              for p, t in paths]}}
    if host is not None:
        out["host"] = host
    return out


@pytest.mark.parametrize(("obj", "host", "path", "url"), [
    pytest.param(ingress(rule("shop.example.com", ("/", "Prefix"))), "", None, "http://shop.example.com/",
                 id="first-host-http"),
    pytest.param(ingress(rule("*.example.com"), rule("shop.example.com", ("/api", "Prefix"))), "", None,
                 "http://shop.example.com/api", id="wildcard-skipped-path-of-the-host-rule"),
    pytest.param(ingress(rule("a.example.com", ("/a", "Exact")), rule("b.example.com", ("/b", "Prefix")),
                         tls=[{"hosts": ["b.example.com"], "secretName": "b"}]), "b.example.com", None,
                 "https://b.example.com/b", id="wanted-host-with-tls"),
    pytest.param(ingress(rule("a.example.com", ("/a", "Exact")), tls=[{"hosts": ["other.example.com"]}]), "", None,
                 "http://a.example.com/a", id="tls-for-another-host-is-http"),
    pytest.param(ingress(rule("a.example.com", ("/impl", "ImplementationSpecific"), ("/x", "Prefix"))), "", None,
                 "http://a.example.com/x", id="implementation-specific-path-skipped"),
    pytest.param(ingress(rule("a.example.com", ("/x", "Prefix"))), "", "/healthz", "http://a.example.com/healthz",
                 id="annotation-path-wins"),
    pytest.param(ingress(rule("a.example.com")), "", None, "http://a.example.com/", id="no-paths-root"),
])
def test_ingress_url(obj: dict[str, Any], host: str, path: str | None, url: str) -> None:
    t = resolve_ingress(obj, host, path)
    assert (t.url, t.kind, t.name) == (url, "ingress", "shop")


@pytest.mark.parametrize(("obj", "host", "reason", "says"), [
    pytest.param(ingress(rule("*.example.com")), "", "NoUsableHost", "only wildcard hosts (*.example.com)",
                 id="wildcard-only"),
    pytest.param(ingress(rule(None, ("/", "Prefix"))), "", "NoUsableHost", "no host", id="no-host"),
    pytest.param(ingress(rule("a.example.com")), "b.example.com", "HostNotFound", "'b.example.com'",
                 id="wanted-host-not-among-hosts"),
])
def test_ingress_errors(obj: dict[str, Any], host: str, reason: str, says: str) -> None:
    with pytest.raises(TargetError) as e:
        resolve_ingress(obj, host, None)
    assert e.value.reason == reason
    assert "Ingress prod/shop" in e.value.message and says in e.value.message


def gateway(*listeners: dict[str, Any], name: str = "edge", ns: str = "infra") -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": name, "namespace": ns},
            "spec": {"gatewayClassName": "example", "listeners": list(listeners)}}


def listener(name: str, protocol: str, port: int, hostname: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "protocol": protocol, "port": port}
    if hostname:
        out["hostname"] = hostname
    return out


def parent(accepted: bool = True, **ref: Any) -> dict[str, Any]:
    return {"parentRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "edge",
                          "namespace": "infra", **ref},
            "controllerName": "example.com/gateway-controller",
            "conditions": [{"type": "Accepted", "status": "True" if accepted else "False", "reason": "Accepted",
                            "message": "", "lastTransitionTime": "2026-11-23T10:00:00Z", "observedGeneration": 1}]}


def httproute(*parents: dict[str, Any], hostnames: tuple[str, ...] = ("shop.example.com",),
              matches: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "shop", "namespace": "prod"},
            "spec": {"parentRefs": [{"name": "edge", "namespace": "infra"}], "hostnames": list(hostnames),
                     "rules": [{"matches": matches or [{"path": {"type": "PathPrefix", "value": "/"}}]}]},
            "status": {"parents": list(parents)}}


GATEWAYS = {("infra", "edge"): gateway(listener("http", "HTTP", 80), listener("https", "HTTPS", 443),
                                       listener("alt", "HTTP", 8080, "shop.example.com"),
                                       listener("other", "HTTP", 8081, "*.other.example"),
                                       listener("tcp", "TCP", 9000))}


@pytest.mark.parametrize(("obj", "host", "path", "url"), [
    pytest.param(httproute(parent()), "", None, "http://shop.example.com/", id="first-fitting-listener"),
    pytest.param(httproute(parent(sectionName="https")), "", None, "https://shop.example.com/",
                 id="section-https-default-port"),
    pytest.param(httproute(parent(sectionName="alt")), "", None, "http://shop.example.com:8080/",
                 id="section-with-port"),
    pytest.param(httproute(parent(port=8080)), "", None, "http://shop.example.com:8080/", id="parentref-port"),
    pytest.param(httproute(parent(accepted=False), parent(sectionName="https")), "", None,
                 "https://shop.example.com/", id="only-the-accepted-parent-counts"),
    pytest.param(httproute(parent(), hostnames=("*.example.com", "a.example.com", "b.example.com")), "b.example.com",
                 None, "http://b.example.com/", id="wanted-host"),
    pytest.param(httproute(parent(), matches=[{"path": {"type": "RegularExpression", "value": "/r.*"}},
                                              {"path": {"type": "Exact", "value": "/healthz"}}]), "", None,
                 "http://shop.example.com/healthz", id="first-exact-or-prefix-path"),
    pytest.param(httproute(parent(), matches=[{"headers": [{"name": "x", "value": "y"}]},
                                              {"path": {"type": "Exact", "value": "/healthz"}}]), "", None,
                 "http://shop.example.com/", id="match-without-path-is-the-apis-default-prefix-root"),
    pytest.param(httproute(parent()), "", "/ready", "http://shop.example.com/ready", id="annotation-path-wins"),
])
def test_httproute_url(obj: dict[str, Any], host: str, path: str | None, url: str) -> None:
    t = resolve_httproute(obj, host, path, GATEWAYS.get)
    assert (t.url, t.kind, t.name) == (url, "httproute", "shop")


@pytest.mark.parametrize(("obj", "reason", "says"), [
    pytest.param(httproute(), "NoAcceptedParent", "not accepted by any parent Gateway", id="no-status-yet"),
    pytest.param(httproute(parent(accepted=False)), "NoAcceptedParent", "Accepted=True", id="not-accepted"),
    pytest.param(httproute(parent(name="gone")), "GatewayNotFound", "Gateway infra/gone", id="gateway-missing"),
    pytest.param(httproute(parent(sectionName="nope")), "ListenerNotFound", "sectionName 'nope'",
                 id="section-not-found"),
    pytest.param(httproute(parent(sectionName="tcp")), "ListenerNotFound", "no HTTP or HTTPS listener",
                 id="tcp-listener"),
    pytest.param(httproute(parent(sectionName="other")), "ListenerNotFound", "for host shop.example.com",
                 id="listener-hostname-does-not-match"),
    pytest.param(httproute(parent(), hostnames=("*.example.com",)), "NoUsableHost", "only wildcard hosts",
                 id="wildcard-only"),
])
def test_httproute_errors(obj: dict[str, Any], reason: str, says: str) -> None:
    with pytest.raises(TargetError) as e:
        resolve_httproute(obj, "", None, GATEWAYS.get)
    assert e.value.reason == reason
    assert says in e.value.message


def test_a_manifest_without_status_uses_its_parent_refs_in_files_only() -> None:
    route = httproute()
    route["spec"]["parentRefs"] = [{"name": "edge", "namespace": "infra", "sectionName": "https"}]
    assert resolve_httproute(route, "", None, GATEWAYS.get, from_files=True).url == "https://shop.example.com/"
    with pytest.raises(TargetError):
        resolve_httproute(route, "", None, GATEWAYS.get)


def test_gateway_refs_from_spec_and_status() -> None:
    route = httproute(parent(name="b"))
    route["spec"]["parentRefs"].append({"name": "svc", "kind": "Service", "group": ""})
    assert gateway_refs(route) == (("infra", "edge"), ("infra", "b"))


def test_precedence_is_route_httproute_grpcroute_tcproute_ingress_service() -> None:
    assert [s.kind_name for s in sources.SOURCES] == ["Route", "HTTPRoute", "GRPCRoute", "TCPRoute", "Ingress",
                                                      "Service"]
    winner = sources.winner({"service", "ingress", "httproute"})
    assert winner is not None and winner.kind == "httproute"
