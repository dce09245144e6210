"""gRPC health, TCP and DNS probes against real servers: grpcio's own health servicer (h2c, TLS,
mutual TLS), a Redis-like line server (plain and TLS), a dnslib name server; each verdict and
reason as a user reads it in the status and the metrics."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from route_monitor.probe.result import FailureReason as R
from route_monitor.targets.credentials import Credentials
from tests.support.dnsserver import DNSServer
from tests.support.protocolprobe import DNS_ANSWERS, ca_file, probe, prober, settings
from tests.support.protocolservers import (
    BANNER,
    CLOSE,
    ERROR,
    PONG,
    SILENT,
    GRPCHealth,
    LineServer,
)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[trustme.CA, Path]:
    return ca_file(tmp_path_factory.mktemp("ca"))


# --- TCP -----------------------------------------------------------------------------------

PING = {"tcp": {"steps": [{"send": "PING\r\n"}, {"expect": "^\\+PONG"}]}}


@pytest.mark.parametrize(("mode", "probe_spec", "ok", "reason", "detail"), [
    (PONG, PING, True, None, "matched '+PONG'"),
    (PONG, {"protocol": "tcp"}, True, None, "connected"),
    (BANNER, {"tcp": {"steps": [{"expect": "^220 "}]}}, True, None, "matched '220 '"),
    (CLOSE, PING, False, R.EXPECT_MISMATCH, "expected /^\\+PONG/"),
    (SILENT, PING, False, R.TIMEOUT, "deadline exceeded"),
], ids=["ping-pong", "connect-only", "smtp-banner", "closed-at-once", "silent"])
async def test_tcp_verdicts(mode: str, probe_spec: dict[str, Any], ok: bool, reason: R | None, detail: str) -> None:
    server = LineServer(mode)
    try:
        result = await probe(f"tcp://127.0.0.1:{server.port}", settings(probe_spec))
    finally:
        server.close()
    assert (result.success, result.reason) == (ok, reason), result
    assert detail in result.detail
    assert result.status_code is None


async def test_tcp_wrong_answer_kept_open_is_expect_mismatch_naming_what_came() -> None:
    server = LineServer(ERROR)
    try:
        result = await probe(f"tcp://127.0.0.1:{server.port}", settings(PING))
    finally:
        server.close()
    assert result.reason is R.EXPECT_MISMATCH
    assert "-ERR unknown command" in result.detail and "/^\\+PONG/" in result.detail


async def test_tcp_refused_port() -> None:
    server = LineServer()
    port = server.port
    server.close()
    result = await probe(f"tcp://127.0.0.1:{port}", settings(PING))
    assert result.reason is R.CONNECTION_REFUSED


async def test_tcp_over_tls_verifies_the_certificate(ca: tuple[trustme.CA, Path]) -> None:
    authority, cafile = ca
    ctx = authority.issue_cert("localhost", "127.0.0.1")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.configure_cert(server_ctx)
    server = LineServer(PONG, tls=server_ctx)
    try:
        tls_ping = {"tcp": {"tls": True, "steps": PING["tcp"]["steps"]}}
        good = await probe(f"tls://127.0.0.1:{server.port}", settings(tls_ping), cafile)
        untrusted = await probe(f"tls://127.0.0.1:{server.port}", settings(tls_ping))
    finally:
        server.close()
    assert good.success, good
    assert good.cert_not_after is not None
    assert untrusted.reason is R.CERTIFICATE_INVALID


# --- DNS -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dns_server() -> Iterator[DNSServer]:
    server = DNSServer(DNS_ANSWERS, port=0)
    yield server
    server.close()


@pytest.mark.parametrize(("dns", "ok", "reason", "detail"), [
    ({"name": "shop.example"}, True, None, "NOERROR, 1 answer record"),
    ({"name": "shop.example", "answerRegex": "10\\.96\\."}, True, None, "10.96.4.2"),
    ({"name": "shop.example", "answerRegex": "10\\.97\\."}, False, R.DNS_ANSWER_MISMATCH, "no answer record"),
    ({"name": "gone.example"}, False, R.DNS_RCODE, "NXDOMAIN for gone.example A"),
    ({"name": "gone.example", "validRcodes": ["NOERROR", "NXDOMAIN"]}, True, None, "NXDOMAIN"),
    ({"name": "broken.example"}, False, R.DNS_RCODE, "SERVFAIL"),
    ({"name": "hang.example"}, False, R.TIMEOUT, "deadline exceeded"),
], ids=["answers", "answer-matches", "answer-mismatch", "nxdomain", "nxdomain-accepted", "servfail", "silent"])
async def test_dns_verdicts(dns_server: DNSServer, dns: dict[str, Any], ok: bool, reason: R | None,
                            detail: str) -> None:
    result = await probe(f"dns://127.0.0.1:{dns_server.port}", settings({"dns": dns}))
    assert (result.success, result.reason) == (ok, reason), result
    assert detail in result.detail


async def test_dns_server_field_overrides_the_target(dns_server: DNSServer) -> None:
    s = settings({"dns": {"name": "shop.example", "server": f"127.0.0.1:{dns_server.port}"}})
    result = await probe("dns://127.0.0.1:1", s)
    assert result.success, result


# --- gRPC ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("service", "serving", "ok", "reason", "detail"), [
    ("", True, True, None, "SERVING"),
    ("checkout.v1.Checkout", True, True, None, "SERVING"),
    ("checkout.v1.Checkout", False, False, R.GRPC_NOT_SERVING, "NOT_SERVING"),
    ("checkout.v1.Checkout", None, False, R.GRPC_NOT_SERVING, "UNKNOWN"),
    ("unknown.Service", True, False, R.GRPC_STATUS, "NOT_FOUND"),
], ids=["server-serving", "service-serving", "not-serving", "unknown-status", "unknown-service"])
async def test_grpc_h2c_verdicts(service: str, serving: bool | None, ok: bool, reason: R | None,
                                 detail: str) -> None:
    server = GRPCHealth()
    server.set("", True)
    if service != "unknown.Service":
        server.set(service, serving)
    try:
        result = await probe(f"grpc://127.0.0.1:{server.port}", settings({"grpc": {"service": service}}))
    finally:
        server.close()
    assert (result.success, result.reason) == (ok, reason), result
    assert detail in result.detail


async def test_grpc_to_an_http1_server_is_a_protocol_error() -> None:
    server = LineServer(SILENT)
    try:
        result = await probe(f"grpc://127.0.0.1:{server.port}", settings({"grpc": {}}))
    finally:
        server.close()
    assert result.reason in (R.PROTOCOL_ERROR, R.TIMEOUT), result


async def test_grpc_over_tls_and_mutual_tls(ca: tuple[trustme.CA, Path], tmp_path: Path) -> None:
    authority, cafile = ca
    tls = GRPCHealth(authority)
    mutual = GRPCHealth(authority, mutual=True)
    for server in (tls, mutual):
        server.set("", True)
    client = authority.issue_cert("route-monitor")
    pem = client.private_key_and_cert_chain_pem.bytes()
    s = settings({"grpc": {"tls": True}})
    try:
        ok = await probe(f"grpcs://127.0.0.1:{tls.port}", s, cafile)
        untrusted = await probe(f"grpcs://127.0.0.1:{tls.port}", s)
        no_client_cert = await probe(f"grpcs://127.0.0.1:{mutual.port}", s, cafile)
        with_client_cert = await probe(f"grpcs://127.0.0.1:{mutual.port}", s, cafile,
                                       Credentials(client_pem=pem))
    finally:
        tls.close()
        mutual.close()
    assert ok.success, ok
    assert untrusted.reason is R.CERTIFICATE_INVALID
    assert no_client_cert.reason is R.TLS_ERROR, no_client_cert
    assert with_client_cert.success, with_client_cert


async def test_grpc_metadata_reaches_the_server_as_headers() -> None:
    s = settings({"grpc": {}, "headers": {"X-Tenant": "shop"}})
    p = prober()
    req = p.request(("ns", "m"), "grpc://127.0.0.1:1", s)
    assert req.other is not None and (b"x-tenant", b"shop") in req.other.metadata

