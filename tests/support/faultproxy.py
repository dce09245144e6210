"""A fault-injecting proxy between the operator and the kube-apiserver (real TCP, real TLS).

The apiserver speaks HTTPS, and answering 429 or 500 needs the HTTP layer, so the proxy
terminates TLS: it serves a certificate for 127.0.0.1 from its own CA (``trustme``), which the
kubeconfig it writes trusts (``certificate-authority-data``: the operator verifies the proxy as it
would verify an apiserver), and opens a TLS connection of its own to the apiserver for every
client connection. Requests are read one at a time (head, then a ``Content-Length`` body; the
operator's clients never pipeline), so every request can be answered by the proxy itself;
responses, watch streams included, are relayed byte for byte. Faults, switched while it runs:

- ``latency``: every request and every piece of a response is delayed by that many seconds,
  in order (a delay line, not a throughput limit);
- ``refuse(status, retry_after)``: every request is answered with that status (a Kubernetes
  ``Status`` body, ``Retry-After`` when given, ``Connection: close``), as an overloaded or
  failing apiserver would; watches already streaming go on, as they do on a real apiserver;
- ``cut()``: every open connection is reset, and new ones are reset once their TLS handshake is
  done, until ``heal()``;
- ``unplug()``: nothing listens on the proxy's port (connections are refused, open ones reset),
  until ``plug()`` listens on it again: an apiserver not started yet, or not reachable.

Runs its own event loop in a thread; the test drives it from synchronous code.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import trustme
import yaml

from tests.support.net import free_port

REASONS = {429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self.latency = 0.0
        self.answer: tuple[int, int | None] | None = None
        self.down = False
        self.forwarded = 0
        self.answered = 0
        self.resets = 0
        self._ca = trustme.CA()
        self._server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ca.issue_cert("127.0.0.1", "localhost").configure_cert(self._server_ctx)
        self._server_ctx.set_alpn_protocols(["http/1.1"])
        self._upstream_ctx = ssl.create_default_context()
        self._upstream_ctx.check_hostname = False  # the test apiserver's self-signed serving certificate
        self._upstream_ctx.verify_mode = ssl.CERT_NONE
        self._upstream_ctx.set_alpn_protocols(["http/1.1"])
        self._transports: set[asyncio.BaseTransport] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        self._server = self._call(self._start())

    def _call(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout=30)

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._handle, "127.0.0.1", self.port, ssl=self._server_ctx)

    # --- faults, from the test's thread ---------------------------------------------------------
    def refuse(self, status: int, retry_after: int | None = None) -> None:
        self.answer = (status, retry_after)

    def cut(self) -> None:
        self.down = True
        self._loop.call_soon_threadsafe(self._reset_all)

    def heal(self) -> None:
        self.latency, self.answer, self.down = 0.0, None, False

    def unplug(self) -> None:
        async def stop_listening() -> None:
            self._server.close()
            self._reset_all()
            await self._server.wait_closed()

        self._call(stop_listening())

    def plug(self) -> None:
        if not self._server.is_serving():
            self._server = self._call(self._start())

    def _reset_all(self) -> None:
        for transport in list(self._transports):
            transport.abort()
            self.resets += 1
        self._transports.clear()

    def kubeconfig(self, path: Path, token: str, user: str) -> Path:
        ca = base64.b64encode(self._ca.cert_pem.bytes()).decode()
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "proxied",
            "clusters": [{"name": "proxied", "cluster": {"server": f"https://127.0.0.1:{self.port}",
                                                         "certificate-authority-data": ca}}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "proxied", "context": {"cluster": "proxied", "user": user, "namespace": "default"}}],
        }))
        return path

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            self._reset_all()
            await self._server.wait_closed()
            # every relay still running (or created and not yet started) ends here, so no
            # coroutine is left unawaited when the loop stops (a warning in whichever test runs next)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self._call(stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    # --- the relay, on the proxy's loop ---------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.transport.abort()
            self.resets += 1
            return
        self._transports.add(writer.transport)
        upstream_writer: asyncio.StreamWriter | None = None
        tasks: list[asyncio.Task[None]] = []
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream, ssl=self._upstream_ctx)
            self._transports.add(upstream_writer.transport)
            to_client = _DelayLine(self, writer)
            to_upstream = _DelayLine(self, upstream_writer)
            tasks = [asyncio.create_task(to_client.run()), asyncio.create_task(to_upstream.run()),
                     asyncio.create_task(self._requests(reader, writer, to_upstream)),
                     asyncio.create_task(_pipe(upstream_reader, to_client))]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        except OSError:
            pass
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for w in (writer, upstream_writer):
                if w is not None:
                    self._transports.discard(w.transport)
                    w.transport.close()  # what was written still goes out (cut() resets instead)

    async def _requests(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, line: _DelayLine) -> None:
        """Requests from the client, one at a time: forwarded, or answered here."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
                return
            headers = {k.strip().lower(): v.strip() for k, _, v in
                       (h.partition(":") for h in head.decode("latin-1").split("\r\n")[1:] if h)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if "chunked" in headers.get("transfer-encoding", ""):
                line.send(head + body)
                await _pipe(reader, line)  # not used by the operator's clients: relayed as it comes
                return
            answer = self.answer
            if answer is not None:
                self.answered += 1
                writer.write(_status_response(*answer))
                await writer.drain()
                writer.close()
                with contextlib.suppress(TimeoutError, OSError):
                    async with asyncio.timeout(5):
                        await writer.wait_closed()
                return
            self.forwarded += 1
            line.send(head + body)


class _DelayLine:
    """Bytes written to ``writer`` ``proxy.latency`` seconds after they were sent, in order."""

    def __init__(self, proxy: FaultProxy, writer: asyncio.StreamWriter) -> None:
        self._proxy = proxy
        self._writer = writer
        self._queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    def send(self, data: bytes) -> None:
        self._queue.put_nowait((asyncio.get_running_loop().time() + self._proxy.latency, data))

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, data = await self._queue.get()
            if not data:
                return
            if due > loop.time():
                await asyncio.sleep(due - loop.time())
            self._writer.write(data)
            await self._writer.drain()


async def _pipe(reader: asyncio.StreamReader, line: _DelayLine) -> None:
    while data := await reader.read(65536):
        line.send(data)
    line.send(b"")  # the end, after what is still delayed


def _status_response(status: int, retry_after: int | None) -> bytes:
    reason = REASONS.get(status, "Error")
    body = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": f"fault proxy: {reason}", "reason": "TooManyRequests" if status == 429
                       else "InternalError", "code": status}).encode()
    head = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json", f"Content-Length: {len(body)}",
            "Connection: close", *([f"Retry-After: {retry_after}"] if retry_after is not None else [])]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body
