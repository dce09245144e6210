"""HTTPS probes through ``probe/net/tlsstream.py`` (an SSLObject driven over the plain transport):
the outcomes a user sees on real TLS servers, beyond the common cases in test_probe_reasons.

Large bodies (reading pauses and resumes), a body cut short, a server that closes without an
answer or during the handshake, and the certificate's notAfter read on the same connection.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from route_monitor.cli.demo_targets import Reply
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import FailureReason as R
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import ProbeSettings
from tests.support import servers
from tests.support.servers import Targets, raw

targets = servers.targets
pytestmark = pytest.mark.timeout(30)


def settings(**kw: object) -> ProbeSettings:
    return ProbeSettings(**{"timeout_ms": 5000, "interval_ms": 10000, **kw})  # type: ignore[arg-type]


async def probe(targets: Targets, url: str, s: ProbeSettings | None = None) -> ProbeResult:
    prober = Prober(tls=TLSContexts(verify=targets.client_context()))
    return await prober.probe(ProbeRequest.build(("ns", "m"), url, s or settings()))


async def test_large_body_over_tls_is_read_to_the_limit_or_whole(targets: Targets) -> None:
    big = b"x" * 1_000_000 + b"needle"
    url = targets.https(lambda m, p: Reply(body=big))
    cut = await probe(targets, url, settings(body_regex="needle", max_body_bytes=10_000))
    assert (cut.success, cut.reason) == (False, R.BODY_MISMATCH), cut.detail
    assert "10000 bytes read" in cut.detail
    whole = await probe(targets, url, settings(body_regex="needle", max_body_bytes=2_000_000))
    assert whole.success, whole.detail
    assert whole.cert_not_after == pytest.approx(targets.not_after("good"))


async def test_body_cut_short_over_tls_is_a_protocol_error(targets: Targets) -> None:
    url = targets.https(raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"))
    result = await probe(targets, url)
    assert (result.success, result.reason, result.status_code) == (False, R.PROTOCOL_ERROR, 200), result.detail


async def test_tls_server_closing_without_a_response(targets: Targets) -> None:
    result = await probe(targets, targets.https(raw(b"")))
    assert (result.success, result.status_code) == (False, None)
    assert result.reason in (R.PROTOCOL_ERROR, R.TLS_ERROR), result.detail


@pytest.fixture()
def closes_during_handshake() -> Iterator[str]:
    """A TCP server that reads the ClientHello and closes the connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(4096)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield f"https://127.0.0.1:{server.getsockname()[1]}/"
    server.close()


async def test_server_closing_during_the_handshake_is_a_tls_error(targets: Targets,
                                                                   closes_during_handshake: str) -> None:
    result = await probe(targets, closes_during_handshake)
    assert (result.success, result.reason) == (False, R.TLS_ERROR), result.detail
    assert result.detail.startswith("TLS handshake failed")


async def test_many_concurrent_https_probes_all_succeed(targets: Targets) -> None:
    url = targets.https()
    results = await asyncio.gather(*(probe(targets, f"{url}/p{i}") for i in range(50)))
    assert [r.reason for r in results if not r.success] == []
