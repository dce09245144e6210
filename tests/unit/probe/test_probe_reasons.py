"""Every failure reason of Contract 3, produced for real against loopback servers.

Covers: success (HTTP, HTTPS, redirects followed), refused port, unresolvable name, accept-and-
hang (timeout), 5xx and unexpected statuses (http_status), expired and wrong-host certificates
(certificate_invalid, with notAfter still read), TLS to a plain HTTP port (tls_error), a
redirect loop (too_many_redirects), a body mismatch, malformed responses (protocol_error), a
forbidden address before and after DNS (other, "forbidden address"), and that ``classify`` can
only ever return a member of the closed set.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from route_monitor.cli.demo_targets import Reply
from route_monitor.probe.net import dns
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.reasons import Phase, classify
from route_monitor.probe.result import FailureReason as R
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import ProbeSettings
from tests.support import servers
from tests.support.servers import Targets, hang, raw, redirect_loop, redirect_to, status

targets = servers.targets

pytestmark = pytest.mark.timeout(20)

Case = Callable[[Targets], tuple[str, ProbeSettings]]


def settings(**kw: object) -> ProbeSettings:
    return ProbeSettings(**{"timeout_ms": 2000, "interval_ms": 5000, **kw})  # type: ignore[arg-type]


async def probe(targets: Targets, url: str, s: ProbeSettings | None = None) -> ProbeResult:
    prober = Prober(tls=TLSContexts(verify=targets.client_context()))
    return await prober.probe(ProbeRequest.build(("ns", "m"), url, s or settings()))


CASES = [
    pytest.param(lambda t: (t.http(), settings()), True, None, 200, id="http-200-succeeds"),
    pytest.param(lambda t: (t.https(), settings()), True, None, 200, id="https-verified-succeeds"),
    pytest.param(lambda t: (t.http(redirect_to(t.http() + "/final")), settings()), True, None, 200,
                 id="redirect-followed-to-200"),
    pytest.param(lambda t: (t.http(status(404)), settings(expected_status=((404, 404),))), True, None, 404,
                 id="expected-404-is-success"),
    pytest.param(lambda t: (t.http(lambda m, p: Reply(body=b"status: healthy")), settings(body_regex="healthy")),
                 True, None, 200, id="body-regex-matches"),
    pytest.param(lambda t: (t.https(cert="expired"), settings(insecure_skip_verify=True)), True, None, 200,
                 id="insecure-skip-verify-accepts-expired"),
    pytest.param(lambda t: (t.refused_url(), settings()), False, R.CONNECTION_REFUSED, None, id="refused-port"),
    pytest.param(lambda t: ("http://nonexistent.invalid/", settings()), False, R.DNS_ERROR, None,
                 id="unresolvable-name"),
    pytest.param(lambda t: (t.http(hang), settings(timeout_ms=300)), False, R.TIMEOUT, None,
                 id="accepts-and-never-answers-times-out"),
    pytest.param(lambda t: (t.http(status(503)), settings()), False, R.HTTP_STATUS, 503, id="5xx"),
    pytest.param(lambda t: (t.http(status(404)), settings()), False, R.HTTP_STATUS, 404, id="404-not-expected"),
    pytest.param(lambda t: (t.https(cert="expired"), settings()), False, R.CERTIFICATE_INVALID, None,
                 id="expired-certificate"),
    pytest.param(lambda t: (t.https(cert="wrong-host"), settings()), False, R.CERTIFICATE_INVALID, None,
                 id="wrong-host-certificate"),
    pytest.param(lambda t: ("https" + t.http()[4:], settings()), False, R.TLS_ERROR, None,
                 id="tls-to-plain-http-port"),
    pytest.param(lambda t: (t.http(redirect_loop), settings()), False, R.TOO_MANY_REDIRECTS, 302,
                 id="redirect-loop"),
    pytest.param(lambda t: (t.http(redirect_loop), settings(max_redirects=0, expected_status=((200, 299),))),
                 False, R.HTTP_STATUS, 302, id="redirects-off-judges-the-3xx"),
    pytest.param(lambda t: (t.http(), settings(body_regex="^healthy$")), False, R.BODY_MISMATCH, 200,
                 id="body-mismatch"),
    pytest.param(lambda t: (t.http(raw(b"this is not http\r\n\r\n")), settings()), False, R.PROTOCOL_ERROR, None,
                 id="malformed-status-line"),
    pytest.param(lambda t: (t.http(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")), settings()),
                 False, R.PROTOCOL_ERROR, 200, id="truncated-body"),
    pytest.param(lambda t: (t.http(raw(b"")), settings()), False, R.PROTOCOL_ERROR, None,
                 id="closed-without-response"),
    pytest.param(lambda t: ("http://169.254.169.254/latest/meta-data/", settings()), False, R.OTHER, None,
                 id="metadata-ip-forbidden"),
    pytest.param(lambda t: ("http://metadata.google.internal/", settings()), False, R.OTHER, None,
                 id="metadata-name-forbidden"),
]


@pytest.mark.parametrize(("case", "success", "reason", "code"), CASES)
async def test_probe_outcome(targets: Targets, case: Case, success: bool, reason: R | None,
                             code: int | None) -> None:
    url, s = case(targets)
    result = await probe(targets, url, s)
    assert (result.success, result.reason, result.status_code) == (success, reason, code), result.detail
    assert result.url == url and result.key == ("ns", "m")
    assert result.detail and result.duration_seconds >= 0


@pytest.mark.parametrize("cert", ["expired", "wrong-host", "good"])
async def test_certificate_not_after_is_read_even_when_verification_fails(targets: Targets, cert: str) -> None:
    result = await probe(targets, targets.https(cert=cert))
    assert result.cert_not_after == pytest.approx(targets.not_after(cert), abs=1)
    assert result.success is (cert == "good")


async def test_forbidden_detail_says_so(targets: Targets) -> None:
    result = await probe(targets, "http://169.254.169.254/")
    assert "forbidden address" in result.detail


async def test_name_resolving_to_metadata_address_is_refused_at_connect_time(
        targets: Targets, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_lookup(host: str) -> list[str]:  # what getaddrinfo would have answered
        assert host == "innocent.example"
        return ["169.254.169.254"]

    monkeypatch.setattr(dns, "_lookup", fake_lookup)
    result = await probe(targets, "http://innocent.example/")
    assert (result.success, result.reason) == (False, R.OTHER)
    assert "forbidden address 169.254.169.254" in result.detail


async def test_redirect_to_forbidden_address_is_refused(targets: Targets) -> None:
    result = await probe(targets, targets.http(redirect_to("http://169.254.169.254/")))
    assert (result.reason, "forbidden address" in result.detail) == (R.OTHER, True)


async def test_body_is_read_only_up_to_the_limit(targets: Targets) -> None:
    big = b"x" * 100_000 + b"needle"
    url = targets.http(lambda m, p: Reply(body=big))
    assert (await probe(targets, url, settings(body_regex="needle", max_body_bytes=1000))).reason is R.BODY_MISMATCH
    assert (await probe(targets, url, settings(body_regex="needle"))).success


@pytest.mark.parametrize(("path", "sent"), [
    pytest.param("/health?x=1&y=%2F", "/health?x=1&y=%2F", id="kept-as-written"),
    pytest.param("/caf\u00e9 menu", "/caf%C3%A9%20menu", id="non-ascii-and-space-percent-encoded"),
])
async def test_request_target(targets: Targets, path: str, sent: str) -> None:
    seen: list[str] = []

    def record(m: str, target: str) -> Reply:
        seen.append(target)
        return Reply()

    assert (await probe(targets, targets.http(record) + path)).success
    assert seen == [sent]


@pytest.mark.parametrize("method", ["HEAD", "POST", "OPTIONS"])
async def test_other_methods(targets: Targets, method: str) -> None:
    seen: list[str] = []

    def record(m: str, target: str) -> Reply:
        seen.append(m)
        return Reply()

    result = await probe(targets, targets.http(record), settings(method=method))
    assert result.success and result.status_code == 200 and seen == [method]


@pytest.mark.parametrize("exc", [ValueError("x"), RuntimeError(), KeyError("k"), OSError(99, "odd"),
                                 TimeoutError(), ConnectionResetError()])
@pytest.mark.parametrize("phase", list(Phase))
def test_classify_only_returns_the_closed_set(exc: BaseException, phase: Phase) -> None:
    reason, detail = classify(exc, phase)
    assert isinstance(reason, R) and detail


def test_the_reason_set_is_exactly_contract_3() -> None:
    assert {r.value for r in R} == {
        "dns_error", "connection_refused", "connection_timeout", "tls_error", "certificate_invalid", "timeout",
        "http_status", "body_mismatch", "too_many_redirects", "protocol_error", "grpc_not_serving", "grpc_status",
        "expect_mismatch", "dns_rcode", "dns_answer_mismatch", "other"}
