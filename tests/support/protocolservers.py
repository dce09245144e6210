"""Real servers for the probes that are not HTTP, on loopback ports a test picks freely:

- :class:`LineServer`: a TCP (optionally TLS) server speaking a Redis-like line protocol
  (``PING`` -> ``+PONG``), or sending a banner, an error, nothing, or closing at once;
- :class:`GRPCHealth`: grpcio's own server with its own health servicer (``grpc_health``), over
  h2c, TLS or mutual TLS, whose status the test flips.

The DNS probe's name server is :class:`tests.support.dnsserver.DNSServer` with ``port=0``.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from concurrent import futures

import grpc
import trustme
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from tests.support.dnsserver import SILENT

PONG, ERROR, CLOSE, BANNER = "pong", "error", "close", "banner"
"""LineServer modes; ``SILENT`` (reads, never answers) is the DNS server's word for the same."""


class LineServer:
    def __init__(self, mode: str = PONG, tls: ssl.SSLContext | None = None) -> None:
        self.mode = mode
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="line-server", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=tls), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if self.mode == CLOSE:
                return
            if self.mode == BANNER:
                writer.write(b"220 mail.example ESMTP ready\r\n")
                await writer.drain()
            while line := await reader.readline():
                if self.mode == SILENT:
                    continue
                if line.strip().upper() == b"PING":
                    writer.write(b"+PONG\r\n" if self.mode == PONG else b"-ERR unknown command\r\n")
                    await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            handlers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in handlers:  # connections still open (a silent server's)
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
            await self._server.wait_closed()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


class GRPCHealth:
    """grpcio's server with the standard health servicer; ``set(service, serving)`` flips it."""

    def __init__(self, ca: trustme.CA | None = None, *, mutual: bool = False) -> None:
        self.servicer = health.HealthServicer()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        health_pb2_grpc.add_HealthServicer_to_server(self.servicer, self.server)
        if ca is None:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            cert = ca.issue_cert("localhost", "127.0.0.1")
            creds = grpc.ssl_server_credentials(
                [(cert.private_key_pem.bytes(), b"".join(b.bytes() for b in cert.cert_chain_pems))],
                root_certificates=ca.cert_pem.bytes() if mutual else None, require_client_auth=mutual)
            self.port = self.server.add_secure_port("127.0.0.1:0", creds)
        self.server.start()

    def set(self, service: str, serving: bool | None) -> None:
        status = {True: health_pb2.HealthCheckResponse.SERVING, False: health_pb2.HealthCheckResponse.NOT_SERVING,
                  None: health_pb2.HealthCheckResponse.UNKNOWN}[serving]
        self.servicer.set(service, status)

    def close(self) -> None:
        self.server.stop(grace=None).wait(5)
