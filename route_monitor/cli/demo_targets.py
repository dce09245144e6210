"""Small local HTTP(S) targets on loopback: the demo's targets, and the tests' building block.

A target is an asyncio server whose *responder* decides, per request, what to send back: a
normal response (optionally late), raw bytes (a malformed response), or nothing at all (a
server that accepts and never answers). Each connection serves one request and is closed,
like the probes that hit it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b"ok\n"
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    """Seconds to wait before answering."""
    raw: bytes | None = None
    """Send exactly these bytes instead of a well-formed response."""
    hang: bool = False
    """Accept the request and never answer."""

    def encode(self, method: str) -> bytes:
        if self.raw is not None:
            return self.raw
        phrase = HTTPStatus(self.status).phrase if self.status in HTTPStatus._value2member_map_ else "Status"
        head = [f"HTTP/1.1 {self.status} {phrase}", f"Content-Length: {len(self.body)}",
                "Content-Type: text/plain; charset=utf-8", "Connection: close",
                *(f"{k}: {v}" for k, v in self.headers)]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (b"" if method == "HEAD" else self.body)


Responder = Callable[[str, str], Reply]
"""(method, request target) -> what to send."""


_METHOD_START = frozenset(bytes([c]) for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")


class _OneRequest(asyncio.Protocol):
    def __init__(self, responder: Responder) -> None:
        self._responder = responder
        self._buffer = b""
        self._transport: asyncio.Transport | None = None
        self._answered = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if not self._answered and self._buffer[:1] not in _METHOD_START:  # e.g. a TLS ClientHello
            self._answered = True
            self._send(Reply(status=400, body=b"bad request\n"), "GET")
            return
        if self._answered or b"\r\n\r\n" not in self._buffer:
            return
        self._answered = True
        method, _, rest = self._buffer.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
        reply = self._responder(method, rest.rsplit(" ", 1)[0])
        if reply.hang:
            return
        if reply.delay > 0:
            asyncio.get_running_loop().call_later(reply.delay, self._send, reply, method)
        else:
            self._send(reply, method)

    def _send(self, reply: Reply, method: str) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(reply.encode(method))
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None


async def start_target(responder: Responder, *, host: str = "127.0.0.1", port: int = 0,
                       tls: ssl.SSLContext | None = None) -> asyncio.Server:
    loop = asyncio.get_running_loop()
    return await loop.create_server(lambda: _OneRequest(responder), host, port, ssl=tls, backlog=1024)


def port_of(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


def healthy(body: bytes = b"ok\n") -> Responder:
    return lambda method, target: Reply(body=body)


def flaky(error_rate: float, rng: random.Random | None = None) -> Responder:
    r = rng or random.Random()
    return lambda method, target: Reply(status=503, body=b"unavailable\n") if r.random() < error_rate else Reply()


def slow(delay: float, jitter: float = 0.0, rng: random.Random | None = None) -> Responder:
    r = rng or random.Random()
    return lambda method, target: Reply(delay=delay + r.uniform(0, jitter))


def self_signed(folder: Path, host: str = "localhost", *, days: int = 10) -> tuple[Path, Path]:
    """A self-signed certificate (untrusted by design) for ``host`` and 127.0.0.1, valid ``days``."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    certfile, keyfile = folder / "demo-cert.pem", folder / "demo-key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return certfile, keyfile


def server_context(certfile: Path, keyfile: Path) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(certfile), str(keyfile))
    return ctx
