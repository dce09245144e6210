"""One probe: a fresh connection, one request, redirects followed by hand, a total deadline.

:class:`Prober` holds what is shared between probes (the SSL contexts, the clocks) and nothing
per target; :class:`ProbeRequest` is everything about one monitor's probe, computed once when
the monitor is set. A probe never raises (except on cancellation): every outcome is a
:class:`ProbeResult`, and every failure goes through :func:`reasons.classify`.

Choices a user can rely on:
- each hop of a redirect chain opens its own connection and is checked against the forbidden
  addresses; more than ``max_redirects`` hops is ``too_many_redirects``; with ``max_redirects``
  0 the 3xx response itself is judged against ``expectedStatus``;
- the body is read up to ``max_body_bytes`` (the rest is not downloaded, and is no failure);
  ``bodyRegex`` is searched in what was read, decoded as UTF-8 (invalid bytes replaced);
- the duration is the whole probe, redirects included; it is observed for successes only;
- ``spec.probe.headers`` go with every hop; the ``Authorization`` header (``spec.probe.auth``)
  and ``tls.serverName`` (as ``Host``, SNI and the verified name) only to the first URL's
  origin (scheme, host and port), never to a host a redirect points to; user info in a
  ``Location`` is never used and never shown (``urls.redact``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote, urljoin, urlsplit

from route_monitor import __version__
from route_monitor.probe.deadlines import Deadlines
from route_monitor.probe.net import http11
from route_monitor.probe.net.connect import PROCESSING, TRANSFER, AnyStream, Progress, open_stream
from route_monitor.probe.protocols import OtherProtocol, default_port, host_port
from route_monitor.probe.reasons import ProbeFailure, classify, closed_after_handshake
from route_monitor.probe.result import FailureReason, ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts, not_after
from route_monitor.probe.tls.sslcache import SSLContextCache
from route_monitor.spec import urls
from route_monitor.spec.bodyregex import BodyRegex, MatchTimeout
from route_monitor.spec.monitor import ProbeSettings
from route_monitor.spec.protocol import Protocol
from route_monitor.targets.credentials import Credentials

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext

USER_AGENT = f"route-monitor/{__version__}".encode()
_DEFAULT_PORTS = {"http": 80, "https": 443}
_MATCH_MARGIN_S = 0.02
_TARGET_SAFE = "/?#[]@!$&'()*+,;=:%-._~"
"""Reserved and unreserved characters stay as written (incl. existing %-escapes); spaces and
non-ASCII characters are percent-encoded (UTF-8), as a browser sends them."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    scheme: str
    host: str
    port: int
    target: bytes
    """Path and query, as sent on the request line."""

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ProbeFailure(FailureReason.OTHER, f"not an absolute http(s) URL: {urls.redact(url)[:200]}")
        target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_TARGET_SAFE)
        return cls(scheme, parts.hostname, parts.port or _DEFAULT_PORTS[scheme], target.encode("ascii"))

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)

    def host_header(self, name: str = "") -> bytes:
        host = name or (f"[{self.host}]" if ":" in self.host else self.host)
        default = self.port == _DEFAULT_PORTS[self.scheme]
        text = host if default else f"{host}:{self.port}"
        return text.encode("ascii") if text.isascii() else text.encode("idna")


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    key: tuple[str, str]
    url: str
    settings: ProbeSettings
    endpoint: Endpoint
    body_regex: BodyRegex | None
    headers: tuple[tuple[bytes, bytes], ...] = ()
    """``spec.probe.headers``: sent with every hop."""
    authorization: bytes = field(default=b"", repr=False)
    """Sent to the first URL's origin only."""
    server_name: str = ""
    """SNI, verified name and ``Host`` for the first URL's origin (empty: the URL's host)."""
    ssl_context: ClientContext | None = None
    """A monitor's own context (its CA, client certificate); None: the prober's shared ones."""
    client_cert: bool = False
    """A client certificate is configured (for the detail of a refused handshake)."""
    setup_error: str = ""
    """Why this monitor's SSL context could not be built (every probe fails with it)."""
    first_head: bytes = field(default=b"", repr=False)
    """The request head for ``endpoint`` with ``settings.method``, serialized once (empty: made
    per probe, which then fails with the reason why it cannot be made)."""
    other: OtherProtocol | None = None
    """What a gRPC, TCP or DNS probe sends and matches, made once (None: HTTP)."""

    @classmethod
    def build(cls, key: tuple[str, str], url: str, settings: ProbeSettings, *,
              credentials: Credentials | None = None, ssl_context: ClientContext | None = None) -> ProbeRequest:
        try:
            endpoint = Endpoint.parse(url)
        except ProbeFailure:
            endpoint = Endpoint("http", "", 0, b"/")  # probed as a failure with reason "other"
        if settings.protocol.protocol is not Protocol.HTTP:
            host, port = host_port(url, default_port(settings.protocol))
            return cls(key, url, settings, Endpoint(urlsplit(url).scheme, host, port, b""), None, (), b"",
                       settings.request.server_name, ssl_context, credentials is not None and
                       bool(credentials.client_pem),
                       other=OtherProtocol.of(settings.protocol, settings.request, credentials, host, port))
        regex = BodyRegex.of(settings.body_regex) if settings.body_regex is not None else None
        headers = tuple((k.encode("ascii"), v.encode("utf-8")) for k, v in settings.request.headers)
        req = cls(key, url, settings, endpoint, regex, headers,
                  credentials.authorization if credentials is not None else b"",
                  settings.request.server_name, ssl_context,
                  credentials is not None and bool(credentials.client_pem))
        try:
            return dataclasses.replace(req, first_head=request_head(req, endpoint, settings.method.encode(), True))
        except (ProbeFailure, UnicodeError):
            return req


def request_head(req: ProbeRequest, ep: Endpoint, method: bytes, first: bool) -> bytes:
    """The request head of one hop. ``first``: ``ep`` is the first URL's origin (credentials and
    serverName apply)."""
    own = {k.lower() for k, _ in req.headers}
    headers = [(b"Host", ep.host_header(req.server_name if first else "")), (b"Connection", b"close"),
               *((k, v) for k, v in ((b"User-Agent", USER_AGENT), (b"Accept", b"*/*")) if k.lower() not in own),
               *req.headers]
    if first and req.authorization:
        headers.append((b"Authorization", req.authorization))
    if method == b"POST":
        headers.append((b"Content-Length", b"0"))
    return http11.request_head(method, ep.target, headers)


class Prober:
    def __init__(self, *, tls: TLSContexts | None = None, wall: Callable[[], float] = time.time,
                 clock: Callable[[], float] = time.perf_counter, cert_read_timeout: float = 2.0,
                 contexts: SSLContextCache | None = None) -> None:
        self.tls = tls if tls is not None else TLSContexts()
        self.contexts = contexts if contexts is not None else SSLContextCache(extra_cafiles=self.tls.extra_cafiles)
        self._wall = wall
        self._clock = clock
        self._cert_read_timeout = cert_read_timeout
        self._deadlines: Deadlines | None = None
        """The running loop's (:mod:`deadlines`: no timer per probe)."""

    def request(self, key: tuple[str, str], url: str, settings: ProbeSettings,
                credentials: Credentials | None = None) -> ProbeRequest:
        """The probe request of one monitor, with its shared SSL context when it has its own CA
        or client certificate (built here, once per combination, not per probe)."""
        ctx, problem = None, ""
        h2 = settings.protocol.protocol is Protocol.GRPC and settings.protocol.grpc.tls
        if h2 or (credentials is not None and (credentials.ca_pem or credentials.client_pem)):
            try:  # gRPC over TLS needs ALPN h2, which the shared HTTP/1.1 contexts must not offer
                ctx = self.contexts.context(ca_pem=credentials.ca_pem if credentials else b"",
                                            client_pem=credentials.client_pem if credentials else b"",
                                            verify=not settings.insecure_skip_verify, alpn=("h2",) if h2 else ())
            except ImportError as e:  # pyOpenSSL missing, or cryptography's bindings unfit (tls/ossl.py)
                problem = str(e)
            except (OSError, ValueError) as e:
                problem = f"the CA or client certificate cannot be loaded: {e}"
        req = ProbeRequest.build(key, url, settings, credentials=credentials, ssl_context=ctx)
        return dataclasses.replace(req, setup_error=problem) if problem else req

    async def probe(self, req: ProbeRequest) -> ProbeResult:
        started_wall = self._wall()
        t0 = self._clock()
        deadlines = self._deadlines
        if deadlines is None or deadlines.loop is not asyncio.get_running_loop():
            deadlines = self._deadlines = Deadlines(asyncio.get_running_loop())
        deadline = deadlines.start(req.settings.timeout_ms / 1000)
        progress = Progress(deadline=deadline.at)
        status: list[int] = []
        try:
            try:
                await self._exchange(req, progress, status)
            except asyncio.CancelledError:
                if deadline.own():
                    raise TimeoutError from None
                raise
            finally:
                deadline.end()
        except Exception as exc:  # CancelledError is a BaseException: it propagates
            duration = self._clock() - t0
            if isinstance(exc, TimeoutError) and progress.matching:  # a busy loop woke both deadlines at once
                exc = ProbeFailure(progress.mismatch, progress.matching)
            reason, detail = classify(exc, progress.phase)
            if reason is FailureReason.TLS_ERROR and not req.client_cert and "client certificate" in detail:
                detail += " (none is configured: spec.probe.tls.clientCertRef)"
            if reason is FailureReason.CERTIFICATE_INVALID and progress.cert_not_after is None:
                # what is left of the deadline (at least a short handshake's worth), so a broken
                # certificate does not make the probe overrun its interval
                budget = min(self._cert_read_timeout, max(0.25, req.settings.timeout_ms / 1000 - duration))
                last = progress.last_endpoint
                sni = req.server_name if last is not None and last.origin == req.endpoint.origin else ""
                progress.cert_not_after = await self._read_cert(progress.last_endpoint, budget, sni)
            return ProbeResult(req.key, req.url, started_wall, False, reason, duration,
                               status[-1] if status else None, detail, progress.cert_not_after,
                               phases=tuple(progress.phases))
        duration = self._clock() - t0
        detail = f"HTTP {status[-1]}" if req.other is None else progress.outcome
        return ProbeResult(req.key, req.url, started_wall, True, None, duration, status[-1] if status else None,
                           detail, progress.cert_not_after, phases=tuple(progress.phases))

    async def _exchange(self, req: ProbeRequest, progress: Progress, status: list[int]) -> None:
        s = req.settings
        if req.setup_error:
            raise ProbeFailure(FailureReason.TLS_ERROR, req.setup_error)
        if req.other is not None:
            tls = req.ssl_context or self.tls.for_probe(s.insecure_skip_verify) if req.other.tls else None
            progress.last_endpoint = req.endpoint
            progress.outcome = await req.other.run(req.endpoint.host, req.endpoint.port, req.server_name, tls,
                                                   progress)
            return
        endpoint = req.endpoint if req.endpoint.host else Endpoint.parse(req.url)
        url = req.url
        method = s.method.encode()
        hops = 0
        origin = endpoint.origin
        while True:
            progress.last_endpoint = endpoint
            tls = None
            if endpoint.scheme == "https":
                tls = req.ssl_context or self.tls.for_probe(s.insecure_skip_verify)
            first = endpoint.origin == origin
            sni = req.server_name if first and req.server_name else None
            stream = await open_stream(endpoint.host, endpoint.port, progress, tls=tls, server_hostname=sni)
            try:
                if tls is not None and progress.cert_not_after is None:
                    progress.cert_not_after = not_after(stream.get_extra_info("ssl_object"))
                answered = len(status)
                try:
                    location = await self._request(stream, endpoint, method, req, status, first, progress)
                except Exception as e:
                    lost_alert = closed_after_handshake(e) if tls is not None and len(status) == answered else None
                    if lost_alert is None:
                        raise
                    raise ProbeFailure(FailureReason.TLS_ERROR, lost_alert) from e
            finally:
                stream.abort()
            if location is None:
                return
            hops += 1
            if hops > s.max_redirects:
                raise ProbeFailure(FailureReason.TOO_MANY_REDIRECTS,
                                   f"more than {s.max_redirects} redirects (last to {urls.redact(location)[:200]})")
            url = urljoin(url, location)
            endpoint = Endpoint.parse(url)
            if status[-1] == 303 and method != b"HEAD":
                method = b"GET"

    async def _request(self, stream: AnyStream, ep: Endpoint, method: bytes, req: ProbeRequest,
                       status: list[int], first: bool, progress: Progress) -> str | None:
        """One exchange on ``stream``; the Location to follow, or None when this was the last hop.
        ``first``: ``ep`` is the first URL's origin (credentials and serverName apply)."""
        s = req.settings
        head = req.first_head if ep is req.endpoint and req.first_head else request_head(req, ep, method, first)
        follow = s.max_redirects > 0
        response = await http11.exchange(stream, head, head_request=method == b"HEAD",
                                         max_body_bytes=s.max_body_bytes, follow_redirects=follow, statuses=status,
                                         on_head=functools.partial(progress.lap, PROCESSING))
        progress.lap(TRANSFER)
        if follow and 300 <= response.status < 400 and response.location is not None:
            return response.location
        if not s.status_ok(response.status):
            ranges = ", ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in s.expected_status)
            raise ProbeFailure(FailureReason.HTTP_STATUS, f"HTTP {response.status} (expected {ranges})")
        if req.body_regex is not None:
            # a margin before the probe's own deadline, so a runaway pattern reads as what it is
            text = response.body.decode("utf-8", "replace")
            progress.matching = req.body_regex.timeout_detail(len(text))
            try:
                found = await req.body_regex.search(text, progress.deadline - _MATCH_MARGIN_S)
            except MatchTimeout as e:
                raise ProbeFailure(FailureReason.BODY_MISMATCH, str(e)) from None
            if found is None:
                raise ProbeFailure(FailureReason.BODY_MISMATCH, f"body ({len(response.body)} bytes read) does not "
                                   f"match /{req.body_regex.pattern[:100]}/")
        return None

    async def _read_cert(self, endpoint: Endpoint | None, budget: float, sni: str = "") -> float | None:
        """notAfter of a certificate that failed verification: one non-verifying handshake."""
        if endpoint is None:
            return None
        try:
            async with asyncio.timeout(budget):
                stream = await open_stream(endpoint.host, endpoint.port, Progress(), tls=self.tls.no_verify,
                                           server_hostname=sni or None)
        except Exception:
            return None
        try:
            return not_after(stream.get_extra_info("ssl_object"))
        finally:
            stream.abort()

