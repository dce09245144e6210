"""The probes that are not HTTP (gRPC health, TCP, DNS): what each sends and matches, made once
per monitor, and the one call the prober makes per probe.

Each protocol has a module of its own (:mod:`grpc`, :mod:`tcp`, :mod:`dnsquery`, as
blackbox_exporter has a prober file per protocol); this one only chooses between them, so the
prober's deadline, classification of failures, metrics and exclusions are the same for all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from route_monitor.probe import dnsquery, grpc, tcp, tcpdriven
from route_monitor.probe.net.connect import Progress, open_stream
from route_monitor.probe.reasons import ProbeFailure, ProtocolError, closed_after_handshake
from route_monitor.probe.result import FailureReason
from route_monitor.probe.tls.contexts import not_after
from route_monitor.spec.bodyregex import BodyRegex
from route_monitor.spec.protocol import Protocol, ProtocolSettings
from route_monitor.spec.request import RequestOptions
from route_monitor.targets.credentials import Credentials

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext


def default_port(p: ProtocolSettings) -> int:
    """The port of a URL written without one: DNS 53, gRPC 443 over TLS and 80 without, TCP none."""
    if p.protocol is Protocol.GRPC:
        return 443 if p.grpc.tls else 80
    return 53 if p.protocol is Protocol.DNS else 0


def host_port(text: str, default: int) -> tuple[str, int]:
    """``HOST[:PORT]`` or a URL's host and port (``("", 0)`` when either is missing or invalid)."""
    parts = urlsplit(text if "//" in text else f"//{text}")
    try:
        port = parts.port or default
    except ValueError:
        return "", 0
    return (parts.hostname or "", port) if parts.hostname and port else ("", 0)


@dataclass(frozen=True, slots=True)
class OtherProtocol:
    settings: ProtocolSettings
    regexes: tuple[BodyRegex | None, ...] = ()
    """TCP: one per step (None for a ``send``); DNS: ``(answerRegex,)`` or ``()``."""
    metadata: tuple[tuple[bytes, bytes], ...] = field(default=(), repr=False)
    """gRPC: ``spec.probe.headers`` and the Authorization of ``spec.probe.auth``."""
    message: bytes = b""
    """gRPC: the HealthCheckRequest, length-prefixed; DNS: the query (its id patched per probe)."""
    tls: bool = False
    """``settings.uses_tls``, read once."""
    grpc_request: bytes = field(default=b"", repr=False)
    """gRPC: everything the client sends (:func:`grpc.request_bytes`), made once."""

    @classmethod
    def of(cls, p: ProtocolSettings, request: RequestOptions, credentials: Credentials | None, host: str = "",
           port: int = 0) -> OtherProtocol:
        """What a monitor whose protocol is ``p`` sends to ``host:port`` and matches."""
        regexes: tuple[BodyRegex | None, ...] = ()
        if p.protocol is Protocol.TCP:
            regexes = tuple(BodyRegex.of(s.expect) if s.expect is not None else None for s in p.tcp.steps)
        elif p.protocol is Protocol.DNS and p.dns.answer_regex is not None:
            regexes = (BodyRegex.of(p.dns.answer_regex),)
        metadata = tuple((k.lower().encode("ascii"), v.encode("utf-8")) for k, v in request.headers)
        if credentials is not None and credentials.authorization:
            metadata += ((b"authorization", credentials.authorization),)
        message = (grpc.request_message(p.grpc.service) if p.protocol is Protocol.GRPC
                   else dnsquery.query_wire(p.dns) if p.protocol is Protocol.DNS else b"")
        grpc_request = b""
        if p.protocol is Protocol.GRPC and host:
            authority = request.server_name or (f"[{host}]" if ":" in host else host)
            grpc_request = grpc.request_bytes(f"{authority}:{port}", p.uses_tls, metadata, message)
        return cls(p, regexes, metadata, message, p.uses_tls, grpc_request)

    async def run(self, host: str, port: int, server_name: str, tls: ClientContext | None,
                  progress: Progress) -> str:
        """One probe of ``host:port``; the detail of a success, else an exception the prober classifies."""
        if not host:
            raise ProbeFailure(FailureReason.OTHER, "no host and port to probe")
        p = self.settings
        if p.protocol is Protocol.DNS:
            if p.dns.server:
                host, port = host_port(p.dns.server, 53)
            progress.mismatch = FailureReason.DNS_ANSWER_MISMATCH
            return await dnsquery.query(host, port, p.dns, self.regexes[0] if self.regexes else None, progress,
                                        self.message)
        if p.protocol is Protocol.TCP:
            progress.mismatch = FailureReason.EXPECT_MISMATCH
            if tls is None:  # plain: driven by the socket's callbacks (one wake-up of the task)
                return await tcpdriven.run(host, port, tcp.Steps(p.tcp.steps, self.regexes, progress), progress)
        stream = await open_stream(host, port, progress, tls=tls, server_hostname=server_name or None)
        try:
            if tls is not None:
                progress.cert_not_after = not_after(stream.get_extra_info("ssl_object"))
            if p.protocol is Protocol.TCP:
                return await tcp.run_steps(stream, tcp.Steps(p.tcp.steps, self.regexes, progress))
            if tls is not None and _alpn(stream) != "h2":
                raise ProtocolError(f"the server did not agree to HTTP/2 over TLS (ALPN {_alpn(stream) or 'none'}): "
                                    "not a gRPC server, or one without TLS (grpc.tls: false)")
            try:
                return await grpc.check(stream, self.grpc_request)
            except Exception as e:
                lost_alert = closed_after_handshake(e) if tls is not None else None
                if lost_alert is None:
                    raise
                raise ProbeFailure(FailureReason.TLS_ERROR, lost_alert) from e
        finally:
            stream.abort()


def _alpn(stream: Any) -> str | None:
    obj = stream.get_extra_info("ssl_object")
    return obj.selected_alpn_protocol() if obj is not None else None
