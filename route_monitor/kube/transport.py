"""The operator's connections to the API server: two aiohttp pools of keep-alive connections.

aiohttp is kopf's HTTP client, loaded anyway. Profiled on a burst of 1,000 new monitors, httpx's
own transport (httpcore, anyio streams, h11; headers and body written as two TLS records) was
most of the operator's CPU per write; aiohttp's C parser and one write per request cost a fraction.

Two pools, so that watches never starve short requests. A watch (``?watch=true``: one per watched
kind and namespace, the Lease watch of the replicas, one per Secret or ConfigMap that monitors
reference) holds its connection for minutes, so watches get a pool of their own without a limit:
each needs its own connection anyway (HTTP/1.1), and their number is fixed by the kinds,
namespaces and objects referenced. Everything else (status patches, rule writes, Lease renewals,
gets and lists) shares a pool of :data:`SHORT_REQUESTS` connections. With watches in that pool
too, the Lease watch and 15 referenced Secrets held all 16: status patches, rule writes and Lease
renewals waited for a connection and timed out (with 24 Secrets, a Lease not renewed for 69 s and
monitors moving between replicas; ``tests/cluster/test_operator_connections.py``).

TLS: the kubeconfig's or the service account's CA and client certificate
(:func:`~route_monitor.kube.kubeconfig.tls_context`). Proxy variables (``HTTPS_PROXY``,
``NO_PROXY``) are not used for the API server (see docs/reference.md). A request that gets no
answer raises one of :class:`~route_monitor.kube.apierrors.Unreachable`'s kinds (:func:`mapped_errors`).
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator, Mapping

import aiohttp

from route_monitor.kube import apierrors, kubeconfig
from route_monitor.kube.kubeconfig import ConfigError, KubeConfig

SHORT_REQUESTS = 16
"""Connections at once for requests that are not watches (the operator's writes come from a
handful of workers; more would only queue at the API server)."""


class Pools:
    """Watches on one session without a connection limit, every other request on one with
    ``limit`` connections; both created on the running loop at first use."""

    def __init__(self, ssl_context: ssl.SSLContext | bool, *, limit: int = SHORT_REQUESTS) -> None:
        self._ssl = ssl_context
        self._limits = {False: limit, True: 0}  # is a watch -> connections at once (0: no limit)
        self._sessions: dict[bool, aiohttp.ClientSession] = {}
        self._retired: list[aiohttp.ClientSession] = []

    @property
    def ssl_context(self) -> ssl.SSLContext | bool:
        """The TLS of new connections (an exec plugin's client certificate is loaded into it)."""
        return self._ssl

    def rotate(self) -> None:
        """New connections from now on (a new client certificate): the sessions so far keep the
        requests and watches under way, and are closed with the pools."""
        self._retired.extend(self._sessions.values())
        self._sessions = {}

    def session(self) -> aiohttp.ClientSession:
        """The pool of requests that are not watches."""
        return self._pool(watch=False)

    def watch_session(self) -> aiohttp.ClientSession:
        """The pool of watches (no connection limit)."""
        return self._pool(watch=True)

    def _pool(self, watch: bool) -> aiohttp.ClientSession:
        session = self._sessions.get(watch)
        if session is None or session.closed:
            session = self._sessions[watch] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limits[watch], ssl=self._ssl, enable_cleanup_closed=True),
                auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), skip_auto_headers=("User-Agent",))
        return session

    async def aclose(self) -> None:
        for session in (*self._sessions.values(), *self._retired):
            await session.close()


AiohttpTransport = Pools
"""The name of earlier versions."""

_ERRORS: tuple[tuple[type[BaseException], type[apierrors.Unreachable]], ...] = (
    (aiohttp.ConnectionTimeoutError, apierrors.ConnectTimeout),  # also a wait for a pooled connection
    (TimeoutError, apierrors.ReadTimeout),  # aiohttp.SocketTimeoutError: no byte for ``read`` seconds
    (aiohttp.ClientConnectorError, apierrors.ConnectError),  # refused, DNS, TLS handshake or certificate
    (aiohttp.ServerDisconnectedError, apierrors.RemoteProtocolError),  # closed before or during an answer
    (aiohttp.ClientPayloadError, apierrors.RemoteProtocolError),  # body cut short or malformed
    (aiohttp.ClientConnectionError, apierrors.ReadError),  # reset or lost once connected
    (aiohttp.ClientError, apierrors.Unreachable),
)
"""aiohttp's errors (most specific first) and the kind of :class:`~apierrors.Unreachable` each is."""


@contextlib.contextmanager
def mapped_errors(method: str, url: str) -> Iterator[None]:
    """aiohttp's errors as :class:`~route_monitor.kube.apierrors.Unreachable` (what was asked, why)."""
    try:
        yield
    except (TimeoutError, aiohttp.ClientError) as e:
        kind = next(unreachable for error, unreachable in _ERRORS if isinstance(e, error))
        raise kind(str(e) or type(e).__name__) from e


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def proxy_note(env: Mapping[str, str]) -> str | None:
    """A line for the start-up log when proxy variables are set, which the API connections ignore."""
    named = sorted({name.upper() for name in PROXY_VARIABLES if env.get(name)})
    if not named:
        return None
    return f"{', '.join(named)} set: the API server is reached directly, not through a proxy (see docs/reference.md)"


def for_config(config: KubeConfig) -> Pools:
    """The pools for ``config``, with its TLS; :class:`ConfigError` (or ``OSError``/``ssl.SSLError``)
    when a certificate cannot be loaded."""
    return Pools(kubeconfig.tls_context(config))


class UnusableConfig(Exception):
    """The Kubernetes configuration cannot be used as found (one line, no secret value)."""


def load() -> tuple[KubeConfig, Pools]:
    """The configuration (the service account in a pod, else ``$KUBECONFIG`` or ``~/.kube/config``)
    and its pools; :class:`UnusableConfig` when a file it names cannot be read, which no retry
    would mend."""
    try:
        config = kubeconfig.from_env()
    except ConfigError as e:
        raise UnusableConfig(str(e)) from e
    try:
        return config, for_config(config)
    except (ConfigError, OSError, ValueError) as e:  # ssl.SSLError is an OSError
        where = f" (kubeconfig {config.fname})" if config.fname else ""
        raise UnusableConfig(f"cannot load the API server's CA or the client certificate{where}: {e}") from e
