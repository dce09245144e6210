"""Real HTTP/HTTPS targets on loopback for probe tests, running in a background thread.

The targets run on their own event loop in their own thread, so they serve the same way to a
prober in the test's event loop and to a ``route-monitor`` subprocess. Certificates come from
``trustme``: one CA the tests trust, and leaf certificates that are good, expired, or for the
wrong host.

Usage: the ``targets`` fixture (a :class:`Targets`); ``targets.http(responder)`` returns a base
URL; ``targets.https(responder, cert="expired")``; ``targets.refused_url()`` is a port with
nothing listening.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from route_monitor.cli.demo_targets import Reply, Responder, healthy, port_of, start_target
from route_monitor.probe.tls.ossl import ClientContext
from route_monitor.probe.tls.truststore import verify_context

CERT_KINDS = ("good", "expired", "wrong-host")


class Targets:
    def __init__(self, folder: Path) -> None:
        self.ca = trustme.CA()
        self.cafile = folder / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.cafile))
        now = dt.datetime.now(dt.UTC)
        self.certs = {
            "good": self.ca.issue_cert("localhost", "127.0.0.1"),
            "expired": self.ca.issue_cert("localhost", "127.0.0.1", not_before=now - dt.timedelta(days=30),
                                          not_after=now - dt.timedelta(days=1)),
            "wrong-host": self.ca.issue_cert("wrong.example"),
        }
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-targets", daemon=True)
        self._thread.start()
        self._servers: list[asyncio.Server] = []
        self._refused: list[socket.socket] = []

    def client_context(self) -> ClientContext:
        """A verifying probe context that trusts this CA (and nothing else)."""
        return verify_context(str(self.cafile))

    def _start(self, responder: Responder, tls: ssl.SSLContext | None) -> int:
        fut = asyncio.run_coroutine_threadsafe(start_target(responder, tls=tls), self._loop)
        server = fut.result(timeout=10)
        self._servers.append(server)
        return port_of(server)

    def tls_port(self, ctx: ssl.SSLContext, responder: Responder | None = None) -> int:
        """A target served with the server context ``ctx`` as it is (its certificate, ALPN, versions)."""
        return self._start(responder or healthy(), ctx)

    def http(self, responder: Responder | None = None) -> str:
        return f"http://127.0.0.1:{self._start(responder or healthy(), None)}"

    def https(self, responder: Responder | None = None, *, cert: str = "good", host: str = "localhost") -> str:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.certs[cert].configure_cert(ctx)
        return f"https://{host}:{self._start(responder or healthy(), ctx)}"

    def not_after(self, cert: str) -> float:
        from cryptography import x509
        pem = self.certs[cert].cert_chain_pems[0].bytes()
        return x509.load_pem_x509_certificate(pem).not_valid_after_utc.timestamp()

    def refused_url(self) -> str:
        """A loopback port that nothing listens on (bound, never listening: nobody else gets it)."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        self._refused.append(s)
        return f"http://127.0.0.1:{s.getsockname()[1]}"

    def close(self) -> None:
        async def stop() -> None:
            for s in self._servers:
                s.close()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        for sock in self._refused:
            sock.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


def redirect_loop(method: str, target: str) -> Reply:
    return Reply(status=302, body=b"", headers=(("Location", target),))


def redirect_to(url: str) -> Responder:
    return lambda method, target: Reply(status=301, body=b"", headers=(("Location", url),))


def status(code: int) -> Responder:
    return lambda method, target: Reply(status=code, body=b"error\n")


def raw(data: bytes) -> Responder:
    return lambda method, target: Reply(raw=data)


def hang(method: str, target: str) -> Reply:
    return Reply(hang=True)


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Targets]:
    t = Targets(tmp_path_factory.mktemp("targets"))
    try:
        yield t
    finally:
        t.close()
