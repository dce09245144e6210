"""TLS for one probe connection on the socket itself: a pyOpenSSL connection on memory BIOs
(:mod:`~route_monitor.probe.tls.connection`, on the OpenSSL bundled with ``cryptography``), fed
from the socket's reads and written with ``socket.send``, as the plain stream of ``connect`` is.

asyncio's ``SSLProtocol`` is general and written in Python (flow control and buffering both
ways, renegotiation, a graceful shutdown with its own timer), and even a protocol of our own
needs a socket transport (two syscalls to build, a loop turn to start, another to close): a
probe needs one handshake, one small write and reads until the response is complete, on a
connection it then closes. The handshake itself (OpenSSL, the full verification) is unchanged.

The client's last handshake flight (its ``Finished``) is sent with the first write or before the
first read, whichever comes first: one segment with the request instead of two, and the server
wakes once for both (what a kernel's TLS or a browser's ``TCP_NODELAY`` plus corking achieves).
Session tickets the server sends after the handshake are read by OpenSSL as part of the stream
and never used: every probe makes a full handshake, as a new user does (their parsing costs
about 3 % of a probe's instructions, ``benchmarks/RESULTS.md``).

Reads wait on the socket's readiness directly (``add_reader``, as ``connect.Stream`` does), not
through ``loop.sock_recv`` (a done callback and per-call checks for every wait), and right after
a flight was sent they wait at once instead of trying a ``recv`` that cannot have an answer yet.
Nine tenths of an HTTPS probe's CPU is OpenSSL's handshake itself, which no caller can shorten
(on the system's OpenSSL 3.0, whose decoders building an ``EVP_PKEY`` for each received
certificate were a third of it, the reason the probes use ``cryptography``'s newer OpenSSL).

What the prober sees is what asyncio's streams gave it (``reasons.classify`` and
``closed_after_handshake`` rely on it):

- handshake: the ``ssl.SSLError`` of the handshake (``SSLCertVerificationError`` for a
  certificate, raised by the connection as the stdlib would), the socket's ``OSError``, or
  ``ConnectionResetError`` when the server closes during the handshake;
- after it: ``read`` returns the data received, then ``b""`` at the end (close_notify or the TCP
  end), or raises the ``ssl.SSLError`` of an alert or the socket's ``OSError``.
"""

from __future__ import annotations

import asyncio
import socket
from typing import TYPE_CHECKING, Any

from route_monitor.probe.net.readiness import until_readable

if TYPE_CHECKING:
    from route_monitor.probe.tls.connection import TLSConnection
    from route_monitor.probe.tls.ossl import ClientContext

READ_SIZE = 65536
"""Bytes asked of the socket at once; a probe's whole answer usually comes in one read."""


class TLSStream:
    """One TLS connection's byte stream, with the same methods as ``connect.Stream``."""

    __slots__ = ("_eof", "_fd", "_loop", "_sent", "_sock", "_tls")

    def __init__(self, sock: socket.socket, tls: TLSConnection) -> None:
        self._loop = asyncio.get_running_loop()
        self._sock, self._tls = sock, tls
        self._fd = sock.fileno()
        self._eof = False
        self._sent = False
        """A flight was sent and nothing received since: its answer cannot be there yet."""

    async def _send_pending(self) -> None:
        data = self._tls.outgoing()
        if not data:
            return
        self._sent = True
        try:
            sent = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(data):
            await self._loop.sock_sendall(self._sock, data[sent:])

    async def _receive(self) -> bool:
        """More TLS bytes from the socket into the connection; False at the end of the stream.
        Right after a flight was sent, waits for readiness before the first ``recv``."""
        recv, wait_first, self._sent = self._sock.recv, self._sent, False
        while True:
            if not wait_first:
                try:
                    data = recv(READ_SIZE)
                    break
                except (BlockingIOError, InterruptedError):
                    pass
            wait_first = False
            await until_readable(self._loop, self._fd)
        if not data:
            self._eof = True
            self._tls.feed_eof()
            return False
        self._tls.feed(data)
        return True

    async def handshake(self) -> None:
        while not self._tls.handshake():  # the client's Finished stays out until the first write or read
            await self._send_pending()
            if not await self._receive():
                raise ConnectionResetError("the server closed the connection during the TLS handshake") from None

    async def read(self, max_bytes: int) -> bytes:
        await self._send_pending()
        while True:
            data = self._tls.read(max_bytes)  # b"" at close_notify or the TCP end: the end of the stream
            if data is not None:
                return data
            if self._eof:
                return b""
            await self._receive()

    async def write(self, buffer: bytes) -> None:
        if buffer:
            self._tls.write(buffer)
        await self._send_pending()

    def abort(self) -> None:
        self._sock.close()

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._tls
        return None


async def open_tls(sock: socket.socket, context: ClientContext, server_hostname: str) -> TLSStream:
    """Handshake over the connected, non-blocking ``sock`` (which the stream then owns, or which
    is closed)."""
    try:
        stream = TLSStream(sock, context.connection(server_hostname))
        await stream.handshake()
    except BaseException:
        sock.close()
        raise
    return stream
