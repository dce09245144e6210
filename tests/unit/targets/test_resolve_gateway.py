"""GRPCRoute and TCPRoute targets (Contract 13 by Contract 7's rules), on objects shaped as the API
serves them.

Covers: a GRPCRoute's host (as an HTTPRoute's) and its listener's port, h2c for HTTP and TLS for
HTTPS (``grpc://``, ``grpcs://``), with the gRPC protocol coming with the target; a TCPRoute at its
accepted Gateway's address (status first, then spec; IPv6 in brackets) and TCP/TLS listener port;
the failures (NoAcceptedParent, ListenerNotFound for a listener of another protocol,
NoGatewayAddress); the paths (``gateway:ns/name``) and the Gateways each depends on; and the
field-shape check of both kinds and of a Gateway's addresses.
"""

from __future__ import annotations

from typing import Any

import pytest

from route_monitor.spec.monitor import GRPCRouteRef, TCPRouteRef, parse_target
from route_monitor.spec.protocol import Protocol
from route_monitor.targets import sources, sources_fields
from route_monitor.targets.resolve import TargetError
from route_monitor.targets.resolve_gateway import resolve_grpcroute, resolve_tcproute
from tests.unit.targets.test_resolve_http import gateway, listener, parent


def route(kind: str, *parents: dict[str, Any], hostnames: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"parentRefs": [{"name": "edge", "namespace": "infra"}],
                            "rules": [{"backendRefs": [{"name": "shop", "port": 9000}]}]}
    if hostnames:
        spec["hostnames"] = list(hostnames)
    return {"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": {"name": "shop", "namespace": "prod"},
            "spec": spec, "status": {"parents": list(parents)}}


def edge(*addresses: dict[str, str], spec_addresses: tuple[dict[str, str], ...] = ()) -> dict[str, Any]:
    gw = gateway(listener("web", "HTTP", 80), listener("grpc", "HTTPS", 8443), listener("redis", "TCP", 6379),
                 listener("rediss", "TLS", 6380), listener("other", "HTTP", 8081, "*.other.example"))
    if spec_addresses:
        gw["spec"]["addresses"] = list(spec_addresses)
    if addresses:
        gw["status"] = {"addresses": list(addresses)}
    return gw


IP = {"type": "IPAddress", "value": "192.0.2.10"}


@pytest.mark.parametrize(("ref", "host", "url", "tls"), [
    pytest.param({}, "", "grpc://shop.example.com/", False, id="http-listener-h2c"),
    pytest.param({"sectionName": "grpc"}, "", "grpcs://shop.example.com:8443/", True, id="https-listener-tls"),
    pytest.param({"port": 8443}, "b.example.com", "grpcs://b.example.com:8443/", True, id="wanted-host-by-port"),
])
def test_grpcroute_url_and_protocol(ref: dict[str, Any], host: str, url: str, tls: bool) -> None:
    obj = route("GRPCRoute", parent(**ref), hostnames=("*.example.com", "shop.example.com", "b.example.com"))
    t = resolve_grpcroute(obj, host, {("infra", "edge"): edge()}.get)
    assert (t.url, t.kind, t.name) == (url, "grpcroute", "shop")
    assert t.protocol is not None and t.protocol[0].protocol is Protocol.GRPC and t.protocol[0].grpc.tls is tls
    assert t.protocol[1].startswith("from the GRPCRoute's Gateway listener")


@pytest.mark.parametrize(("obj", "reason", "says"), [
    pytest.param(route("GRPCRoute", hostnames=("shop.example.com",)), "NoAcceptedParent", "GRPCRoute prod/shop",
                 id="not-accepted"),
    pytest.param(route("GRPCRoute", parent(sectionName="redis"), hostnames=("shop.example.com",)),
                 "ListenerNotFound", "no HTTP or HTTPS listener sectionName 'redis'", id="tcp-listener"),
    pytest.param(route("GRPCRoute", parent()), "NoUsableHost", "no host", id="no-hostnames"),
])
def test_grpcroute_errors(obj: dict[str, Any], reason: str, says: str) -> None:
    with pytest.raises(TargetError) as e:
        resolve_grpcroute(obj, "", {("infra", "edge"): edge()}.get)
    assert (e.value.reason, says in e.value.message) == (reason, True), e.value.message


@pytest.mark.parametrize(("gw", "ref", "url", "tls"), [
    pytest.param(edge(IP), {}, "tcp://192.0.2.10:6379", False, id="status-address-first-tcp-listener"),
    pytest.param(edge(IP), {"sectionName": "rediss"}, "tls://192.0.2.10:6380", True, id="tls-listener"),
    pytest.param(edge({"type": "example.com/Named", "value": "x"}, {"type": "Hostname", "value": "lb.example.net"}),
                 {"port": 6379}, "tcp://lb.example.net:6379", False, id="hostname-address-other-type-skipped"),
    pytest.param(edge(spec_addresses=({"value": "2001:db8::1"},)), {}, "tcp://[2001:db8::1]:6379", False,
                 id="spec-address-ipv6"),
])
def test_tcproute_url_and_protocol(gw: dict[str, Any], ref: dict[str, Any], url: str, tls: bool) -> None:
    t = resolve_tcproute(route("TCPRoute", parent(**ref)), {("infra", "edge"): gw}.get)
    assert (t.url, t.kind, t.name) == (url, "tcproute", "shop")
    assert t.protocol is not None and t.protocol[0].protocol is Protocol.TCP and t.protocol[0].tcp.tls is tls


@pytest.mark.parametrize(("obj", "gw", "reason", "says"), [
    pytest.param(route("TCPRoute", parent(accepted=False)), edge(IP), "NoAcceptedParent", "TCPRoute prod/shop",
                 id="not-accepted"),
    pytest.param(route("TCPRoute", parent(sectionName="web")), edge(IP), "ListenerNotFound",
                 "no TCP or TLS listener sectionName 'web'", id="http-listener"),
    pytest.param(route("TCPRoute", parent()), edge(), "NoGatewayAddress", "Gateway infra/edge has no address yet",
                 id="gateway-without-address"),
    pytest.param(route("TCPRoute", parent(name="gone")), edge(IP), "GatewayNotFound", "Gateway infra/gone",
                 id="gateway-missing"),
])
def test_tcproute_errors(obj: dict[str, Any], gw: dict[str, Any], reason: str, says: str) -> None:
    with pytest.raises(TargetError) as e:
        resolve_tcproute(obj, {("infra", "edge"): gw}.get)
    assert (e.value.reason, says in e.value.message) == (reason, True), e.value.message


def test_both_are_sources_with_gateway_paths_and_dependencies() -> None:
    world = {("gateway", ("infra", "edge")): edge(IP),
             ("grpcroute", ("prod", "shop")): route("GRPCRoute", parent(sectionName="grpc"),
                                                    hostnames=("shop.example.com",)),
             ("tcproute", ("prod", "shop")): route("TCPRoute", parent())}
    ctx = sources.Context(lookup=lambda kind, key: world.get((kind, key)))
    grpc = sources.resolve_target(parse_target({"grpcRoute": {"name": "shop"}}), "prod", None, ctx)
    tcp = sources.resolve_target(parse_target({"tcpRoute": {"name": "shop"}}), "prod", None, ctx)
    assert (grpc.url, grpc.paths) == ("grpcs://shop.example.com:8443/", ("dns:cluster", "gateway:infra/edge"))
    assert (tcp.url, tcp.paths) == ("tcp://192.0.2.10:6379", ("gateway:infra/edge",))
    for kind in ("grpcroute", "tcproute"):
        assert sources.BY_KIND[kind].depends(world[(kind, ("prod", "shop"))]) == (("gateway", "infra", "edge"),)


def test_target_fields_parse() -> None:
    assert parse_target({"grpcRoute": {"name": "shop", "host": "a.example.com"}}) == GRPCRouteRef("shop",
                                                                                                  "a.example.com")
    assert parse_target({"tcpRoute": {"name": "redis"}}) == TCPRouteRef("redis")


def test_wrong_shapes_are_named() -> None:
    bad = route("GRPCRoute", hostnames=("ok",))
    bad["spec"]["hostnames"].append(7)
    bad["spec"]["parentRefs"][0]["port"] = "80"
    with pytest.raises(sources_fields.InvalidSource) as e:
        sources_fields.check("grpcroute", bad)
    assert {f.field for f in e.value.errors} == {"spec.hostnames[1]", "spec.parentRefs[0].port"}
    gw = edge({"type": "IPAddress", "value": 7})
    with pytest.raises(sources_fields.InvalidSource) as e:
        sources_fields.check("gateway", gw)
    assert [f.field for f in e.value.errors] == ["status.addresses[0].value"]
