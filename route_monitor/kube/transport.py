"""The operator's connection to the API server for its own requests: lightkube on aiohttp.

lightkube builds each request (URL, auth header, JSON body) and reads each response; this
transport only moves the bytes, over aiohttp keep-alive connections (kopf's HTTP client, loaded
anyway). Profiled on a burst of 1,000 new monitors, httpx's own transport (httpcore, anyio
streams, h11; headers and body written as two TLS records) was most of the operator's CPU per
write; aiohttp's C parser and one write per request cost a fraction.

Two pools, so that watches never starve short requests. A watch (``?watch=true``: one per watched
kind and namespace, the Lease watch of the replicas, one per Secret or ConfigMap that monitors
reference) holds its connection for minutes, so watches get a pool of their own without a limit:
each needs its own connection anyway (HTTP/1.1), and their number is fixed by the kinds,
namespaces and objects referenced. Everything else (status patches, rule writes, Lease renewals,
gets and lists) shares a pool of :data:`SHORT_REQUESTS` connections. With watches in that pool
too, the Lease watch and 15 referenced Secrets held all 16: status patches, rule writes and Lease
renewals waited for a connection and timed out (with 24 Secrets, a Lease not renewed for 69 s and
monitors moving between replicas; ``tests/test_operator_connections.py``).

TLS: the same context lightkube would use (the kubeconfig's or the service account's CA and
client certificate), so trust is unchanged. Proxy variables (``HTTPS_PROXY``, ``NO_PROXY``) are
not used for the API server (see docs/reference.md).
Timeouts come from the request, as httpx sets them.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import aiohttp
import httpx2
from lightkube import KubeConfig
from lightkube.config.client_adapter import verify_cluster
from lightkube.core.exceptions import ConfigError

SHORT_REQUESTS = 16
"""Connections at once for requests that are not watches (the operator's writes come from a
handful of workers; more would only queue at the API server)."""


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """An httpx (``httpx2``, lightkube's) transport sending through aiohttp: watches on one
    session without a connection limit, every other request on one with ``limit`` connections."""

    def __init__(self, ssl_context: ssl.SSLContext | bool, *, limit: int = SHORT_REQUESTS) -> None:
        self._ssl = ssl_context
        self._limits = {False: limit, True: 0}  # is a watch -> connections at once (0: no limit)
        self._sessions: dict[bool, aiohttp.ClientSession] = {}

    def session(self) -> aiohttp.ClientSession:
        """The pool of requests that are not watches, shared with :mod:`~route_monitor.kube.rest`."""
        return self._pool(watch=False)

    def watch_session(self) -> aiohttp.ClientSession:
        """The pool of watches (no connection limit), shared with :mod:`~route_monitor.kube.rest`."""
        return self._pool(watch=True)

    def _pool(self, watch: bool) -> aiohttp.ClientSession:
        session = self._sessions.get(watch)
        if session is None or session.closed:  # created on the running loop, at first use
            session = self._sessions[watch] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limits[watch], ssl=self._ssl, enable_cleanup_closed=True),
                auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",))
        return session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout") or {}
        connect, pool = timeouts.get("connect"), timeouts.get("pool")
        # aiohttp's ``connect`` covers waiting for a free pooled connection and opening one
        ready = None if connect is None or pool is None else connect + pool
        timeout = aiohttp.ClientTimeout(total=None, connect=ready, sock_connect=connect, sock_read=timeouts.get("read"))
        body = await request.aread()
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw
                   if k.lower() not in (b"host", b"content-length", b"transfer-encoding")]
        session = self._pool(watch=request.url.params.get("watch") == "true")
        with _mapped(request):
            response = await session.request(request.method, str(request.url), headers=headers,
                                             data=body or None, timeout=timeout, allow_redirects=False)
        return httpx2.Response(response.status, headers=list(response.raw_headers), stream=_Body(response, request),
                               extensions={"http_version": b"HTTP/1.1"}, request=request)

    async def aclose(self) -> None:
        for session in self._sessions.values():
            await session.close()


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


_ERRORS: tuple[tuple[type[BaseException], type[httpx2.TransportError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx2.ConnectTimeout),  # also a wait for a pooled connection
    (TimeoutError, httpx2.ReadTimeout),  # aiohttp.SocketTimeoutError: no byte for ``read`` seconds
    (aiohttp.ClientConnectorError, httpx2.ConnectError),  # refused, DNS, TLS handshake or certificate
    (aiohttp.ServerDisconnectedError, httpx2.RemoteProtocolError),  # closed before or during an answer
    (aiohttp.ClientPayloadError, httpx2.RemoteProtocolError),  # body cut short or malformed
    (aiohttp.ClientConnectionError, httpx2.ReadError),  # reset or lost once connected
    (aiohttp.ClientError, httpx2.TransportError),
)
"""aiohttp's errors (most specific first) and the httpx errors they become, as httpx's own
transport reports the same failures."""


def _mapped(request: httpx2.Request) -> contextlib.AbstractContextManager[None]:
    return mapped_errors(request.method, str(request.url), request)


@contextlib.contextmanager
def mapped_errors(method: str, url: str, request: httpx2.Request | None = None) -> Iterator[None]:
    """aiohttp's errors as the httpx errors lightkube and :func:`apierrors.unreachable` know (the
    request they carry is built only when one is raised)."""
    try:
        yield
    except (TimeoutError, aiohttp.ClientError) as e:
        as_httpx = next(httpx_error for error, httpx_error in _ERRORS if isinstance(e, error))
        raise as_httpx(str(e) or type(e).__name__, request=request or httpx2.Request(method, url)) from e


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def proxy_note(env: Mapping[str, str]) -> str | None:
    """A line for the start-up log when proxy variables are set, which the API connections ignore."""
    named = sorted({name.upper() for name in PROXY_VARIABLES if env.get(name)})
    if not named:
        return None
    return f"{', '.join(named)} set: the API server is reached directly, not through a proxy (see docs/reference.md)"


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


class UnusableConfig(Exception):
    """The Kubernetes configuration cannot be used as found (one line, no secret value)."""


def load() -> tuple[KubeConfig, AiohttpTransport | None]:
    """lightkube's configuration (the service account in a pod, else ``$KUBECONFIG`` or
    ``~/.kube/config``) and its transport; :class:`UnusableConfig` when a file it names cannot be
    read, which no retry would mend."""
    try:
        config = KubeConfig.from_env()
    except ConfigError as e:
        raise UnusableConfig(str(e)) from e
    try:
        return config, for_config(config)
    except (ConfigError, OSError, ValueError) as e:  # ssl.SSLError is an OSError
        where = f" (kubeconfig {config.fname})" if config.fname else ""
        raise UnusableConfig(f"cannot load the API server's CA or the client certificate{where}: {e}") from e
