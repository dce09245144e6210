"""The operator's connection to the API server for its own requests: lightkube on aiohttp.

lightkube builds each request (URL, auth header, JSON body) and reads each response; this
transport only moves the bytes, through one aiohttp keep-alive connection pool (aiohttp is
already loaded for kopf's watches). Profiled on a burst of 1,000 new monitors, httpx's own
transport (httpcore, anyio streams, h11; headers and body written as two TLS records) was most of
the operator's CPU per write; aiohttp's C parser and one write per request cost a fraction.

TLS: the same context lightkube would use (the kubeconfig's or the service account's CA and
client certificate), so trust is unchanged. Timeouts come from the request, as httpx sets them.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx2
from lightkube import KubeConfig
from lightkube.config.client_adapter import verify_cluster

_TIMEOUT_KEYS = ("connect", "read", "write", "pool")


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """An httpx (``httpx2``, lightkube's) transport sending through one ``aiohttp.ClientSession``."""

    def __init__(self, ssl_context: ssl.SSLContext | bool, *, limit: int = 16) -> None:
        self._ssl = ssl_context
        self._limit = limit
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        """The pool (opened on the running loop at first use), shared with :mod:`~route_monitor.operator.rest`."""
        return self._open()

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:  # created on the running loop, at first use
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit, ssl=self._ssl, enable_cleanup_closed=True),
                auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",))
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        read = timeouts.get("read")
        timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.get("connect"), sock_read=read)
        body = await request.aread()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                   if k.lower() not in (b"host", b"content-length", b"transfer-encoding")]
        with _mapped(request):
            response = await self._open().request(request.method, str(request.url), headers=headers,
                                                  data=body or None, timeout=timeout, allow_redirects=False)
        return httpx2.Response(response.status, headers=list(response.raw_headers), stream=_Body(response, request),
                               extensions={"http_version": b"HTTP/1.1"}, request=request)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class _Body(httpx2.AsyncByteStream):
    """The response body as it arrives (watches stream for minutes); closing it frees the connection."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx2.Request) -> None:
        self._response, self._request = response, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped(self._request):
            async for chunk in self._response.content.iter_any():
                yield chunk

    async def aclose(self) -> None:
        self._response.release()


def _mapped(request: httpx2.Request) -> contextlib.AbstractContextManager[None]:
    return mapped_errors(request.method, str(request.url), request)


@contextlib.contextmanager
def mapped_errors(method: str, url: str, request: httpx2.Request | None = None) -> Iterator[None]:
    """aiohttp's errors as the httpx errors lightkube and the supervisor know (the request they
    carry is built only when one is raised)."""
    try:
        yield
    except TimeoutError as e:
        raise httpx2.ReadTimeout(str(e) or "timed out", request=request or httpx2.Request(method, url)) from e
    except aiohttp.ClientConnectionError as e:
        raise httpx2.ConnectError(str(e) or type(e).__name__, request=request or httpx2.Request(method, url)) from e
    except aiohttp.ClientError as e:
        raise httpx2.TransportError(str(e) or type(e).__name__) from e


def for_config(config: KubeConfig) -> AiohttpTransport | None:
    """The transport for ``config``'s current context, with the TLS lightkube would set up; None
    (httpx's own) when the context is incomplete, so lightkube reports what is missing."""
    single = config.get()
    if single is None or single.user is None:
        return None
    context: ssl.SSLContext | bool = False
    if single.cluster.server.startswith("https"):
        context = verify_cluster(single.cluster, single.user, single.abs_file)
    return AiohttpTransport(context)
