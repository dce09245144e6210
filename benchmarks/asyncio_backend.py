"""A minimal asyncio-native network backend for httpcore, for the micro-benchmark.

httpcore runs on asyncio through anyio (``AnyIOBackend``); this backend uses asyncio streams
directly, to measure how much of httpcore's per-probe CPU is the anyio layer rather than HTTP
parsing (h11). Timeouts and errors map to httpcore's exceptions like the anyio backend's do.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
from httpcore._backends.base import SOCKET_OPTION, AsyncNetworkBackend, AsyncNetworkStream


class AsyncioStream(AsyncNetworkStream):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as e:
            raise httpcore.ReadTimeout(str(e)) from e
        except OSError as e:
            raise httpcore.ReadError(str(e)) from e

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()
        except TimeoutError as e:
            raise httpcore.WriteTimeout(str(e)) from e
        except OSError as e:
            raise httpcore.WriteError(str(e)) from e

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as e:
            raise httpcore.ConnectTimeout(str(e)) from e
        except (OSError, ssl.SSLError) as e:
            raise httpcore.ConnectError(str(e)) from e
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "is_readable":
            return self._reader.at_eof() or bool(self._reader._buffer)  # type: ignore[attr-defined]
        return self._writer.get_extra_info({"client_addr": "sockname", "server_addr": "peername"}.get(info, info))


class AsyncioBackend(AsyncNetworkBackend):
    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Iterable[SOCKET_OPTION] | None = None) -> AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, local_addr=(local_address, 0) if local_address else None)
        except TimeoutError as e:
            raise httpcore.ConnectTimeout(str(e)) from e
        except OSError as e:
            raise httpcore.ConnectError(str(e)) from e
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
