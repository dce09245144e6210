"""The prober's own HTTP/1.1 response reader (``probe/net/http11.py``), against real loopback servers
answering with exact bytes: each framing a server may use, the limits, and what is refused.
What is checked is what a user sees: success or the reason, the status, whether ``bodyRegex``
found text that only the right framing delivers.
"""

from __future__ import annotations

import pytest

from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import FailureReason as R
from route_monitor.spec.monitor import ProbeSettings
from tests.support import servers
from tests.support.servers import Targets, raw

targets = servers.targets

pytestmark = pytest.mark.timeout(20)


def settings(**kw: object) -> ProbeSettings:
    return ProbeSettings(**{"timeout_ms": 2000, "interval_ms": 5000, **kw})  # type: ignore[arg-type]


async def probe(targets: Targets, answer: bytes, **kw: object) -> tuple[bool, R | None, int | None, str]:
    result = await Prober().probe(ProbeRequest.build(("ns", "m"), targets.http(raw(answer)), settings(**kw)))
    return result.success, result.reason, result.status_code, result.detail


OK = (True, None, 200)
CASES = [
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nhealthy", {"body_regex": "^healthy$"}, OK,
                 id="content-length"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nheal\r\n3;x=1\r\nthy\r\n0\r\n\r\n",
                 {"body_regex": "^healthy$"}, OK, id="chunked-with-extension"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", {}, OK,
                 id="chunked-last-coding"),
    pytest.param(b"HTTP/1.0 200 OK\r\n\r\nhealthy until close", {"body_regex": "until close$"}, OK,
                 id="read-until-close"),
    pytest.param(b"HTTP/1.1 200\nContent-Length: 2\n\nok", {"body_regex": "^ok$"}, OK,
                 id="bare-LF-and-no-reason-phrase"),
    pytest.param(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                 b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", {"body_regex": "^ok$"}, OK,
                 id="interim-responses-skipped"),
    pytest.param(b"HTTP/1.1 200 OK\r\nX-Long: a\r\n  b\r\nContent-Length: 2\r\n\r\nok", {}, OK, id="obs-fold"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", {}, OK,
                 id="repeated-equal-content-length"),
    pytest.param(b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", {"expected_status": ((204, 204),)},
                 (True, None, 204), id="204-has-no-body"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", {"method": "HEAD"}, OK, id="head-has-no-body"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nneedle\r\n5\r\nhay", {
        "body_regex": "^nee$", "max_body_bytes": 3}, OK, id="limit-inside-a-chunk-reads-no-further"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", {},
                 (False, R.PROTOCOL_ERROR, 200), id="conflicting-content-length"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok", {}, (False, R.PROTOCOL_ERROR, 200),
                 id="negative-content-length"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok", {}, (False, R.PROTOCOL_ERROR, 200),
                 id="unsupported-transfer-encoding"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", {},
                 (False, R.PROTOCOL_ERROR, 200), id="bad-chunk-size"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n", {},
                 (False, R.PROTOCOL_ERROR, 200), id="chunk-without-crlf"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok", {},
                 (False, R.PROTOCOL_ERROR, 200), id="closed-inside-a-chunk"),
    pytest.param(b"HTTP/1.1 200 OK\r\nBad Header: x\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None),
                 id="space-in-header-name"),
    pytest.param(b"HTTP/2 200 OK\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None), id="not-http-1x"),
    pytest.param(b"HTTP/1.1 101 Switching Protocols\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None),
                 id="switching-protocols-refused"),
    pytest.param(b"HTTP/1.1 000 X\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", {},
                 (False, R.PROTOCOL_ERROR, None), id="status-000-is-not-an-interim-response"),
    pytest.param(b"HTTP/1.1 099 X\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None), id="status-099-then-close"),
    pytest.param(b"HTTP/1.1 1000 X\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None), id="four-digit-status"),
    pytest.param(b"HTTP/1.1 100 Continue\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None),
                 id="interim-response-then-close"),
    pytest.param(b"HTTP/1.1 200 OK\r\nX: " + b"v" * 70_000 + b"\r\n\r\n", {}, (False, R.PROTOCOL_ERROR, None),
                 id="head-over-64KiB"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Le", {}, (False, R.PROTOCOL_ERROR, None), id="closed-inside-head"),
]


@pytest.mark.parametrize(("answer", "kw", "expected"), CASES)
async def test_response_framing(targets: Targets, answer: bytes, kw: dict[str, object],
                                expected: tuple[bool, R | None, int | None]) -> None:
    success, reason, status, detail = await probe(targets, answer, **kw)
    assert (success, reason, status) == expected, detail


@pytest.mark.parametrize("answer", [b"HTTP/1.1 000 X\r\n\r\n", b"HTTP/1.1 099 X\r\n\r\n", b"HTTP/1.1 42 X\r\n\r\n"])
async def test_status_below_100_is_named_in_the_detail(targets: Targets, answer: bytes) -> None:
    success, reason, status, detail = await probe(targets, answer)
    assert (success, reason, status) == (False, R.PROTOCOL_ERROR, None), detail
    assert "status line" in detail and answer.split()[1].decode() in detail, detail


@pytest.mark.parametrize(("answer", "reason", "words"), [
    pytest.param(b"HTTP/1.1 099 X\r\n\r\n", R.PROTOCOL_ERROR, "099", id="status-099-then-close"),
    pytest.param(b"HTTP/1.1 000 X\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", R.PROTOCOL_ERROR,
                 "000", id="status-000-then-200"),
    pytest.param(b"HTTP/1.1 100 Continue\r\n\r\n", R.PROTOCOL_ERROR, "interim", id="interim-response-then-close"),
    pytest.param(b"", R.TLS_ERROR, "right after the TLS handshake, before any response",
                 id="nothing-at-all-may-be-a-refused-client-certificate"),
])
async def test_over_tls_only_a_connection_closed_before_any_byte_blames_the_client_certificate(
        targets: Targets, answer: bytes, reason: R, words: str) -> None:
    request = ProbeRequest.build(("ns", "m"), targets.https(raw(answer)), settings(),
                                 ssl_context=targets.client_context())
    result = await Prober().probe(request)
    assert (result.success, result.reason, result.status_code) == (False, reason, None), result.detail
    assert words in result.detail
    assert ("client certificate" in result.detail) is (reason is R.TLS_ERROR), result.detail
