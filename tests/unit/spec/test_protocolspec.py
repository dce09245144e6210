"""``spec.probe.protocol`` and its blocks as a user writes them: every field error at once, a
block alone naming its protocol, HTTP-only fields refused elsewhere, URL schemes that must fit,
and a Service port's ``appProtocol`` or name prefix choosing the protocol."""

from __future__ import annotations

from typing import Any

import pytest

from alert_rules.model import InvalidSpec
from route_monitor.spec.monitor import ServiceRef, parse_routemonitor
from route_monitor.spec.protocol import (
    Protocol,
    ProtocolSettings,
    TCPSettings,
    describe,
    discovered,
    from_port,
    url_for,
)
from route_monitor.targets.resolve import resolve_service


def monitor(probe: dict[str, Any], url: str = "tcp://redis.shop.svc:6379") -> dict[str, Any]:
    return {"apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
            "metadata": {"name": "m", "namespace": "shop"},
            "spec": {"target": {"url": url}, "probe": probe, "slo": {"availability": "99.9"}}}


def errors(obj: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(obj)
    return [(f.field, f.reason) for f in e.value.errors]


def test_a_block_alone_names_the_protocol() -> None:
    spec = parse_routemonitor(monitor({"tcp": {"steps": [{"send": "PING\r\n"}, {"expect": "^\\+PONG"}]}}))
    assert spec.probe.protocol.protocol is Protocol.TCP
    assert spec.probe.protocol.tcp.steps[0].send == b"PING\r\n"
    assert spec.probe.protocol.tcp.steps[1].expect == "^\\+PONG"


def test_every_field_error_at_once() -> None:
    found = errors(monitor({"protocol": "tcp", "method": "POST", "tcp": {
        "tls": "yes", "steps": [{"send": ""}, {"expect": "("}, {"sned": "x"}]}}))
    fields = [f for f, _ in found]
    assert fields == ["spec.probe.tcp.tls", "spec.probe.tcp.steps[0].send", "spec.probe.tcp.steps[1].expect",
                      "spec.probe.tcp.steps[2]", "spec.probe.method"], found


def test_unknown_protocol_lists_the_known_ones() -> None:
    assert errors(monitor({"protocol": "udp"})) == [("spec.probe.protocol", "expected one of http, grpc, tcp, dns")]


def test_a_block_for_another_protocol_is_an_error() -> None:
    assert errors(monitor({"protocol": "grpc", "dns": {"name": "a.example"}}, url="grpc://h:50051")) == [
        ("spec.probe.dns", "only with protocol: dns (this probe is grpc)")]


def test_dns_fields_are_checked() -> None:
    found = errors(monitor({"dns": {"name": "bad name!", "type": "AXFR", "validRcodes": ["NOPE"],
                                    "server": "10.96.0.10:99999", "answerRegex": "["}}, url="dns://10.96.0.10"))
    assert [f for f, _ in found] == ["spec.probe.dns.name", "spec.probe.dns.type", "spec.probe.dns.validRcodes[0]",
                                     "spec.probe.dns.server", "spec.probe.dns.answerRegex"], found


@pytest.mark.parametrize(("probe", "url", "problem"), [
    ({"protocol": "tcp"}, "http://redis:6379", "a tcp probe takes a tcp:// or tls:// URL"),
    ({"protocol": "tcp"}, "tcp://redis", "a tcp:// URL needs its port"),
    ({"protocol": "tcp"}, "tls://redis:6380", "tls:// is tcp over TLS: set spec.probe.tcp.tls: true"),
    ({"grpc": {}}, "grpcs://api:443", "grpcs:// is grpc over TLS: set spec.probe.grpc.tls: true"),
    ({}, "grpc://api:50051", "a http probe takes a http:// or https:// URL"),
], ids=["http-url-for-tcp", "tcp-without-port", "tls-scheme-without-tls", "grpcs-without-tls", "grpc-url-for-http"])
def test_url_scheme_must_fit_the_protocol(probe: dict[str, Any], url: str, problem: str) -> None:
    found = errors(monitor(probe, url=url))
    assert len(found) == 1 and found[0][0] == "spec.target.url" and problem in found[0][1], found


def test_http_only_fields_are_refused_for_other_protocols() -> None:
    assert errors(monitor({"protocol": "dns", "dns": {"name": "a.example"}, "expectedStatus": ["200"],
                           "headers": {"X": "y"}}, url="dns://10.0.0.1")) == [
        ("spec.probe.expectedStatus", "applies to HTTP probes only (this probe is dns)"),
        ("spec.probe.headers", "applies to HTTP probes only (this probe is dns)")]


def test_grpc_keeps_headers_as_metadata() -> None:
    spec = parse_routemonitor(monitor({"grpc": {"service": "checkout.v1.Checkout"}, "headers": {"X-Tenant": "a"}},
                                      url="grpc://api:50051"))
    assert spec.probe.protocol.grpc.service == "checkout.v1.Checkout"
    assert spec.probe.request.headers == (("X-Tenant", "a"),)


@pytest.mark.parametrize(("port", "protocol", "tls", "why"), [
    ({"port": 50051, "appProtocol": "grpc"}, Protocol.GRPC, False, "appProtocol grpc"),
    ({"port": 50051, "appProtocol": "kubernetes.io/h2c"}, Protocol.GRPC, False, "appProtocol kubernetes.io/h2c"),
    ({"port": 6379, "name": "tcp-redis"}, Protocol.TCP, False, "port name tcp-redis"),
    ({"port": 6380, "name": "tls-redis"}, Protocol.TCP, True, "port name tls-redis"),
    ({"port": 6380, "appProtocol": "tls"}, Protocol.TCP, True, "appProtocol tls"),
    ({"port": 53, "name": "dns-udp"}, Protocol.DNS, False, "port name dns-udp"),
    ({"port": 8080, "name": "http-web"}, Protocol.HTTP, False, "port name http-web"),
    ({"port": 8080, "appProtocol": "kubernetes.io/ws", "name": "grpc-x"}, Protocol.HTTP, False,
     "appProtocol kubernetes.io/ws"),
], ids=["grpc", "h2c", "tcp-name", "tls-name", "tls-app", "dns-name", "http-name", "appprotocol-wins"])
def test_a_service_port_declares_its_protocol(port: dict[str, Any], protocol: Protocol, tls: bool, why: str) -> None:
    found = from_port(port)
    assert found is not None
    settings, reason = found
    assert (settings.protocol, settings.uses_tls) == (protocol, tls)
    assert reason == f"from the Service's {why}"


def test_a_port_without_a_known_protocol_stays_http() -> None:
    assert from_port({"port": 8080, "name": "web"}) is None
    assert from_port({"port": 8080, "appProtocol": "example.com/custom"}) is None


def test_a_grpc_service_resolves_to_a_grpc_url_and_the_spec_can_override() -> None:
    svc = {"metadata": {"name": "api", "namespace": "shop"},
           "spec": {"ports": [{"name": "grpc-api", "port": 50051}]}}
    t = resolve_service(svc, ServiceRef("api"), None)
    assert t.url == "grpc://api.shop.svc.cluster.local:50051/"
    assert t.protocol is not None and t.protocol[0].protocol is Protocol.GRPC
    explicit_http = ProtocolSettings(explicit=True)
    assert url_for(t.url, discovered(explicit_http, t.protocol[0])) == "http://api.shop.svc.cluster.local:50051/"
    assert describe(ProtocolSettings(), t.protocol) == "grpc, from the Service's port name grpc-api"
    tls = ProtocolSettings(protocol=Protocol.TCP, tcp=TCPSettings(tls=True), explicit=True)
    assert describe(tls) == "tcp over TLS (spec.probe)"
    assert url_for(t.url, tls) == "tls://api.shop.svc.cluster.local:50051/"
