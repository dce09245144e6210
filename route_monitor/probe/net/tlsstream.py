"""TLS for one probe connection without asyncio's SSL transport: an ``ssl.SSLObject`` on memory
BIOs, driven by a small protocol over the plain socket transport.

asyncio's ``SSLProtocol`` is general and written in Python (flow control and buffering both
ways, renegotiation, a graceful shutdown with its own timer); a probe needs one handshake, one
small write and reads until the response is complete, on a connection it then aborts. Measured
on the same targets in the same run: 10-20 % less CPU per HTTPS probe (``benchmarks/RESULTS.md``).
The handshake itself (OpenSSL, the full verification) is unchanged.

What the prober sees is what asyncio's streams gave it (``reasons.classify`` and
``closed_after_handshake`` rely on it):

- handshake: the ``ssl.SSLError`` of ``do_handshake`` (``SSLCertVerificationError`` for a
  certificate), the socket's ``OSError``, or ``ConnectionResetError`` when the server closes
  during the handshake;
- after it: ``read`` returns the data received, then ``b""`` at the end (close_notify or the TCP
  end), or raises the ``ssl.SSLError`` of an alert or the socket's ``OSError``.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any

READ_SIZE = 65536
BUFFER_LIMIT = 1 << 16
"""Reading from the socket pauses while this much is buffered and not read by the prober."""


class _Driver(asyncio.Protocol):
    def __init__(self, obj: ssl.SSLObject, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO,
                 handshake: asyncio.Future[None]) -> None:
        self.obj = obj
        self._in, self._out = incoming, outgoing
        self.handshake = handshake
        self.buffer = bytearray()
        self.closed = False
        """No more data will come (end of stream or error)."""
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.transport: asyncio.Transport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._pump()

    def data_received(self, data: bytes) -> None:
        self._in.write(data)
        self._pump()

    def eof_received(self) -> bool:
        if not self.handshake.done():
            self._finish(ConnectionResetError("the server closed the connection during the TLS handshake"))
        else:
            self._in.write_eof()
            self._pump()
            self._finish(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None and not self.handshake.done():
            exc = ConnectionResetError("the connection was closed during the TLS handshake")
        self._finish(exc)

    def _pump(self) -> None:
        try:
            if not self.handshake.done():
                self.obj.do_handshake()
                self.handshake.set_result(None)
            while not self.closed:
                chunk = self.obj.read(READ_SIZE)
                if not chunk:
                    self._finish(None)
                    break
                self.buffer += chunk
                self._wake()
                if len(self.buffer) >= BUFFER_LIMIT and self.transport is not None and not self.paused:
                    self.paused = True
                    self.transport.pause_reading()
                    break
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError) as e:
            self._finish(None if self.handshake.done() else e)
        except Exception as e:  # an alert, a certificate refused: the handshake's or the read's error
            self._finish(e)
        self.flush()

    def flush(self) -> None:
        if self._out.pending and self.transport is not None and not self.transport.is_closing():
            self.transport.write(self._out.read())

    def resume(self) -> None:
        if self.paused and len(self.buffer) < BUFFER_LIMIT and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
            self._pump()  # what the incoming BIO already holds: no more socket data may come for it

    def _finish(self, exc: BaseException | None) -> None:
        if self.closed:
            return
        self.closed = True
        self.error = exc
        if not self.handshake.done():
            self.handshake.set_exception(exc or ConnectionResetError("connection closed during the TLS handshake"))
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class TLSStream:
    """One TLS connection's byte stream, with the same methods as ``connect.Stream``."""

    __slots__ = ("_driver",)

    def __init__(self, driver: _Driver) -> None:
        self._driver = driver

    async def read(self, max_bytes: int) -> bytes:
        d = self._driver
        while not d.buffer and not d.closed:
            d.waiter = asyncio.get_running_loop().create_future()
            try:
                await d.waiter
            finally:
                d.waiter = None
        if d.buffer:
            chunk = bytes(d.buffer[:max_bytes])
            del d.buffer[:max_bytes]
            d.resume()
            return chunk
        if d.error is not None:
            raise d.error
        return b""

    async def write(self, buffer: bytes) -> None:
        d = self._driver
        if d.error is not None:
            raise d.error
        if buffer:
            d.obj.write(buffer)
            d.flush()

    def abort(self) -> None:
        transport = self._driver.transport
        if transport is not None and not transport.is_closing():
            transport.abort()

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._driver.obj
        return self._driver.transport.get_extra_info(info) if self._driver.transport is not None else None


async def open_tls(sock: socket.socket, context: ssl.SSLContext, server_hostname: str) -> TLSStream:
    """Handshake over the connected ``sock`` (which the stream then owns, or which is closed)."""
    loop = asyncio.get_running_loop()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    try:
        obj = context.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    except BaseException:
        sock.close()
        raise
    driver = _Driver(obj, incoming, outgoing, loop.create_future())
    try:
        transport, _ = await loop.create_connection(lambda: driver, sock=sock)
    except BaseException:
        sock.close()
        raise
    try:
        await driver.handshake
    except BaseException:
        transport.abort()
        raise
    return TLSStream(driver)
