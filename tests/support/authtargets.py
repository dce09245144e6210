"""HTTPS targets that check what a probe sends: credentials, headers, SNI, client certificates.

Each :class:`AuthTarget` is a real threaded HTTP server on loopback, with TLS from ``trustme``
when asked. It answers 200 when the request carries the expected ``Authorization`` (401 when
not), and records, per request, the path, the headers and the SNI name the client sent. A
:class:`PrivateCA` issues the server certificate (a company CA the system store does not know)
and client certificates; a target can require a client certificate from a given CA.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import trustme


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    sni: str | None


@dataclass
class PrivateCA:
    ca: trustme.CA = field(default_factory=trustme.CA)

    @property
    def pem(self) -> bytes:
        return self.ca.cert_pem.bytes()

    def server_context(self, *names: str, client_ca: PrivateCA | None = None) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ca.issue_cert(*(names or ("localhost", "127.0.0.1"))).configure_cert(ctx)
        if client_ca is not None:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(cadata=client_ca.pem.decode())
        return ctx

    def client_pair(self, name: str = "probe@route-monitor") -> tuple[bytes, bytes]:
        """(certificate chain PEM, private key PEM) of a client certificate, as in a kubernetes.io/tls Secret."""
        cert = self.ca.issue_cert(name)
        chain = b"".join(p.bytes() for p in cert.cert_chain_pems)
        return chain, cert.private_key_pem.bytes()


class AuthTarget:
    def __init__(self, *, tls: ssl.SSLContext | None = None, authorization: str | None = None,
                 location: str | None = None) -> None:
        self.expected = authorization
        self.location = location
        """Answer every request with a 302 to this URL (to test what is sent to the next hop)."""
        self.seen: list[Seen] = []
        self._sni: dict[int, str | None] = {}
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                sni = owner._sni.get(id(self.request)) if tls is not None else None
                with owner._lock:
                    owner.seen.append(Seen(self.path, {k: v for k, v in self.headers.items()}, sni))
                if owner.location is not None:
                    self.send_response(302)
                    self.send_header("Location", owner.location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                ok = owner.expected is None or self.headers.get("Authorization") == owner.expected
                body = b"ok\n" if ok else b"unauthorized\n"
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.handle_error = lambda *_: None  # type: ignore[method-assign]  # refused handshakes are expected
        if tls is not None:
            def on_sni(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: ssl.SSLContext) -> None:
                self._sni[id(sock)] = name
            tls.sni_callback = on_sni  # type: ignore[assignment]
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, host: str = "127.0.0.1", scheme: str | None = None) -> str:
        scheme = scheme or ("https" if isinstance(self._server.socket, ssl.SSLSocket) else "http")
        return f"{scheme}://{host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def started() -> Iterator[list[AuthTarget]]:
    """A list the test appends its :class:`AuthTarget` s to; each is closed after the test."""
    made: list[AuthTarget] = []
    yield made
    for t in made:
        t.close()
