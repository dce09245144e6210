"""Target resolution (Contract 2's URL rules) and the forbidden-address safety checks.

Covers: a Route's host from an admitted ingress else spec.host, https with spec.tls, path
precedence, never scheme-less, NoHost; a Service's cluster DNS name with port by name or
number, first port by default, scheme rules, PortNotFound/NoPorts; URL targets with path
replacement and the operator's opt-in; link-local and metadata refused, loopback allowed.
"""

from __future__ import annotations

from typing import Any

import pytest

from route_monitor.spec.monitor import ServiceRef, Target, UrlTarget
from route_monitor.targets.resolve import TargetError, check_url_safe, resolve_route, resolve_service, resolve_url
from route_monitor.targets.safety import forbidden_host, forbidden_ip


def route(host: str | None = "shop.apps.example.com", *, tls: bool = False, path: str | None = None,
          ingress: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"to": {"kind": "Service", "name": "shop"}}
    if host:
        spec["host"] = host
    if tls:
        spec["tls"] = {"termination": "edge"}
    if path:
        spec["path"] = path
    return {"kind": "Route", "metadata": {"name": "shop", "namespace": "prod"}, "spec": spec,
            "status": {"ingress": ingress or []}}


def admitted(host: str, status: str = "True") -> dict[str, Any]:
    return {"host": host, "conditions": [{"type": "Admitted", "status": status}]}


@pytest.mark.parametrize(("obj", "path", "url"), [
    pytest.param(route(), None, "http://shop.apps.example.com/", id="spec-host-http-root"),
    pytest.param(route(tls=True), None, "https://shop.apps.example.com/", id="tls-means-https"),
    pytest.param(route(path="/api"), None, "http://shop.apps.example.com/api", id="route-spec-path"),
    pytest.param(route(path="/api"), "/healthz", "http://shop.apps.example.com/healthz", id="given-path-wins"),
    pytest.param(route(ingress=[admitted("router.example.net")]), None, "http://router.example.net/",
                 id="admitted-ingress-host-wins"),
    pytest.param(route(ingress=[admitted("pending.example.net", "False")]), None, "http://shop.apps.example.com/",
                 id="unadmitted-ingress-ignored"),
    pytest.param(route(None, ingress=[admitted("only.example.net")]), None, "http://only.example.net/",
                 id="no-spec-host-but-admitted"),
])
def test_route_url(obj: dict[str, Any], path: str | None, url: str) -> None:
    t = resolve_route(obj, path)
    assert (t.url, t.kind, t.name) == (url, "route", "shop")


def test_route_without_host_is_no_host() -> None:
    with pytest.raises(TargetError) as e:
        resolve_route(route(None), None)
    assert e.value.reason == "NoHost" and "shop" in e.value.message


def service(*ports: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Service", "metadata": {"name": "api", "namespace": "prod"}, "spec": {"ports": list(ports)}}


@pytest.mark.parametrize(("svc", "target", "path", "url"), [
    pytest.param(service({"name": "http", "port": 8080}), ServiceRef("api"), None,
                 "http://api.prod.svc.cluster.local:8080/", id="first-port"),
    pytest.param(service({"name": "metrics", "port": 9090}, {"name": "web", "port": 80}),
                 ServiceRef("api", port="web"), "/healthz", "http://api.prod.svc.cluster.local:80/healthz",
                 id="port-by-name"),
    pytest.param(service({"name": "a", "port": 9090}, {"port": 8443}), ServiceRef("api", port="8443"), None,
                 "https://api.prod.svc.cluster.local:8443/", id="port-by-number-8443-is-https"),
    pytest.param(service({"name": "https-web", "port": 9443}), ServiceRef("api"), None,
                 "https://api.prod.svc.cluster.local:9443/", id="https-named-port"),
    pytest.param(service({"port": 443}), ServiceRef("api", scheme="http"), None,
                 "http://api.prod.svc.cluster.local:443/", id="explicit-scheme-wins"),
])
def test_service_url(svc: dict[str, Any], target: Target, path: str | None, url: str) -> None:
    t = resolve_service(svc, target, path)
    assert (t.url, t.kind, t.name) == (url, "service", "api")


def test_service_cluster_domain() -> None:
    t = resolve_service(service({"port": 80}), ServiceRef("api"), None, cluster_domain="corp.internal")
    assert t.url == "http://api.prod.svc.corp.internal:80/"


@pytest.mark.parametrize(("svc", "target", "reason"), [
    pytest.param(service({"name": "http", "port": 80}), ServiceRef("api", port="grpc"), "PortNotFound",
                 id="unknown-port"),
    pytest.param(service(), ServiceRef("api"), "NoPorts", id="no-ports"),
])
def test_service_errors(svc: dict[str, Any], target: Target, reason: str) -> None:
    with pytest.raises(TargetError) as e:
        resolve_service(svc, target, None)
    assert e.value.reason == reason


@pytest.mark.parametrize(("url", "path", "expected"), [
    pytest.param("https://x.example.com", None, "https://x.example.com/", id="root-added"),
    pytest.param("https://x.example.com/a?b=1", None, "https://x.example.com/a?b=1", id="kept-as-written"),
    pytest.param("https://x.example.com/a", "/healthz", "https://x.example.com/healthz", id="path-replaces"),
    pytest.param("http://127.0.0.1:8080", "/", "http://127.0.0.1:8080/", id="loopback-allowed"),
])
def test_url_target(url: str, path: str | None, expected: str) -> None:
    assert resolve_url(UrlTarget(url), path).url == expected


def test_url_targets_can_be_disallowed() -> None:
    with pytest.raises(TargetError) as e:
        resolve_url(UrlTarget("https://x.example.com"), None, allow_url_targets=False)
    assert e.value.reason == "URLTargetsNotAllowed"


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/", "http://169.254.1.1:8080/", "http://[fe80::1]/",
    "http://metadata.google.internal/computeMetadata/v1/", "http://METADATA.google.internal./",
    "http://[fd00:ec2::254]/", "http://100.100.100.200/", "http://[::ffff:169.254.169.254]/",
])
def test_forbidden_urls(url: str) -> None:
    with pytest.raises(TargetError) as e:
        check_url_safe(url)
    assert e.value.reason == "Forbidden"
    with pytest.raises(TargetError):
        resolve_url(UrlTarget(url), None)


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://[::1]:8080/", "http://localhost/",
                                 "http://10.0.0.1/", "https://shop.example.com/"])
def test_allowed_urls(url: str) -> None:
    check_url_safe(url)


def test_route_pointing_at_metadata_is_forbidden() -> None:
    with pytest.raises(TargetError) as e:
        resolve_route(route("169.254.169.254"), None)
    assert e.value.reason == "Forbidden"


@pytest.mark.parametrize(("address", "forbidden"), [("169.254.0.1", True), ("fe80::abcd%eth0", True),
                                                    ("127.0.0.1", False), ("::1", False), ("not-an-ip", False)])
def test_forbidden_ip(address: str, forbidden: bool) -> None:
    assert forbidden_ip(address) is forbidden
    assert forbidden_host(address) is forbidden
