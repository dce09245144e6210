"""A loopback server that answers with whatever bytes a test scripts, then misbehaves.

One server for many hypothesis examples: :meth:`Hostile.serve` sets the next answer (a list of
byte chunks, written one by one, then an ending: ``close``, ``reset`` or ``hang``).
:meth:`Hostile.tls_cut` is a proxy in front of a real TLS server that forwards the client's
bytes whole and only the first ``n`` bytes of the server's (its handshake cut at any point),
then ends the same ways. Runs on its own event loop in a thread, like ``tests.support.servers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from dataclasses import dataclass

ENDINGS = ("close", "reset", "hang")
TRICKLE = "trickle"
"""An ending for chaos tests: one byte every 100 ms for 30 s (slowloris)."""


@dataclass(frozen=True)
class Script:
    chunks: tuple[bytes, ...]
    ending: str = "close"
    read_request: bool = True
    """Wait for the request head before answering (False: answer at once)."""
    repeat: tuple[bytes, int] = (b"", 0)
    """After ``chunks``: this chunk written this many times (a huge body without holding it)."""


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:  # SO_LINGER 0: close sends a RST
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _end(writer: asyncio.StreamWriter, ending: str) -> None:
    if ending == TRICKLE:
        for _ in range(300):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.1)
    if ending == "hang":
        await asyncio.sleep(30)
    if ending == "reset":
        _reset(writer)
    else:
        writer.close()


class Hostile:
    def __init__(self) -> None:
        self.script = Script((b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",))
        self.cut = (0, "close")
        self.upstream = 0
        self._servers: list[asyncio.Server] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hostile", daemon=True)
        self._thread.start()
        self.http_port = self._call(self._listen(self._serve_script))
        self.tls_port = self._call(self._listen(self._serve_cut))

    def _call(self, coro: object) -> int:
        return int(asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10))  # type: ignore[arg-type]

    async def _listen(self, handler: object) -> int:
        server = await asyncio.start_server(handler, "127.0.0.1", 0, backlog=256)  # type: ignore[arg-type]
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _serve_script(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        script = self.script
        with contextlib.suppress(Exception, asyncio.CancelledError):
            if script.read_request:
                await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
            for chunk in script.chunks:
                writer.write(chunk)
                await writer.drain()
            for _ in range(script.repeat[1]):
                writer.write(script.repeat[0])
                await writer.drain()
            await _end(writer, script.ending)
        writer.transport.abort()

    async def _serve_cut(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n, ending = self.cut
        with contextlib.suppress(Exception, asyncio.CancelledError):
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)

            async def client_to_server() -> None:
                while data := await reader.read(65536):
                    up_w.write(data)
                    await up_w.drain()

            pump = asyncio.create_task(client_to_server())
            sent = 0
            try:
                while sent < n and (data := await up_r.read(min(65536, n - sent))):
                    writer.write(data)
                    await writer.drain()
                    sent += len(data)
                await _end(writer, ending)
            finally:
                pump.cancel()
                up_w.transport.abort()
        writer.transport.abort()

    def serve(self, script: Script) -> str:
        self.script = script
        return f"http://127.0.0.1:{self.http_port}/"

    def tls_cut(self, upstream_port: int, n: int, ending: str) -> str:
        self.upstream, self.cut = upstream_port, (n, ending)
        return f"https://localhost:{self.tls_port}/"

    def close(self) -> None:
        async def cancel_all() -> None:
            for server in self._servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(cancel_all(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()
