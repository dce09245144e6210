"""Every way a probe can fail, mapped to exactly one :class:`FailureReason`, in one place.

:func:`classify` is the only mapping from exceptions to reasons (the shape of httpx's
``map_httpcore_exceptions``): checks run from the most specific to the most general, and the
probe's *phase* (where it was when it failed) decides between otherwise ambiguous errors, e.g.
a deadline hit while connecting is ``connection_timeout``, after connecting it is ``timeout``.
Anything unexpected is ``other``; the label set stays closed whatever happens.

A TLS alert from the server about the client's certificate (none sent, unknown CA, expired) is
``tls_error`` with a detail saying the server refused the client certificate.

Failures that are decided rather than raised (status, body, redirects, forbidden address) are
raised as :class:`ProbeFailure`, which carries its reason.

A connection to a forbidden address (a name that resolves to a link-local or cloud metadata
address) is ``other``, with a detail that says "forbidden address": it is a refusal by the
prober, not a condition of the target, so it must not read as the target being down
(``connection_refused``).
"""

from __future__ import annotations

import errno
import socket
import ssl
from enum import Enum

from route_monitor.probe.result import FailureReason as R


class Phase(Enum):
    DNS = "dns"
    CONNECT = "connect"
    TLS = "tls"
    HTTP = "http"


class ProbeFailure(Exception):
    """A failure the prober decided itself (status, body, redirects, forbidden address)."""

    def __init__(self, reason: R, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class ProtocolError(Exception):
    """A response that is not valid HTTP/1.1 (``probe/net/http11.py``): ``protocol_error``."""


class ClosedWithoutResponse(ProtocolError):
    """The server closed the connection before sending a single byte (``protocol_error``; over
    TLS, :func:`closed_after_handshake`)."""


_CONNECT_TIMEOUT_ERRNOS = {errno.ETIMEDOUT, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN}
_CLIENT_CERT_ALERTS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_BAD_CERTIFICATE", "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED", "SSLV3_ALERT_CERTIFICATE_REVOKED", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE",
    "TLSV1_ALERT_UNKNOWN_CA", "TLSV1_ALERT_ACCESS_DENIED",
}
"""Alerts a server sends about the *client's* certificate (missing, unknown CA, expired...).
In TLS 1.3 the server checks it after the client's side of the handshake is done, so the
alert arrives on the first read of the response: these are TLS errors whatever the phase."""


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def closed_after_handshake(exc: BaseException) -> str | None:
    """A TLS connection that ended without any response right after its handshake: what a
    TLS 1.3 server that refuses the client certificate looks like when its alert is lost
    (it closes with the request unread, so the client's kernel gets a reset). The detail
    for it, or None for any other error."""
    if isinstance(exc, ConnectionResetError | ssl.SSLEOFError):
        how = "connection reset"
    elif isinstance(exc, ClosedWithoutResponse):
        how = "connection closed"
    else:
        return None
    return f"{how} right after the TLS handshake, before any response: most likely the server refused the client " \
           "certificate"


def classify(exc: BaseException, phase: Phase) -> tuple[R, str]:
    """The reason and a human detail for ``exc`` raised while the probe was in ``phase``."""
    where = phase.value
    if isinstance(exc, ProbeFailure):
        return exc.reason, exc.detail
    if isinstance(exc, TimeoutError):
        if phase is Phase.DNS:
            return R.DNS_ERROR, "name resolution timed out"
        if phase in (Phase.CONNECT, Phase.TLS):
            return R.CONNECTION_TIMEOUT, f"deadline exceeded during {where}"
        return R.TIMEOUT, "deadline exceeded waiting for the response"
    if isinstance(exc, socket.gaierror) or (phase is Phase.DNS and isinstance(exc, (OSError, UnicodeError))):
        return R.DNS_ERROR, f"cannot resolve host: {_describe(exc)}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return R.CERTIFICATE_INVALID, f"certificate invalid: {exc.verify_message or _describe(exc)}"
    if isinstance(exc, ssl.SSLError) and exc.reason in _CLIENT_CERT_ALERTS:
        return R.TLS_ERROR, f"the server refused the client certificate ({exc.reason.lower()})"
    if isinstance(exc, ConnectionRefusedError):
        return R.CONNECTION_REFUSED, "connection refused"
    if phase is Phase.TLS and isinstance(exc, (ssl.SSLError, OSError, EOFError)):
        return R.TLS_ERROR, f"TLS handshake failed: {_describe(exc)}"
    if phase is Phase.CONNECT and isinstance(exc, OSError):
        if exc.errno in _CONNECT_TIMEOUT_ERRNOS:
            return R.CONNECTION_TIMEOUT, f"cannot connect: {_describe(exc)}"
        return R.OTHER, f"cannot connect: {_describe(exc)}"
    if isinstance(exc, ProtocolError):
        return R.PROTOCOL_ERROR, f"invalid HTTP response: {_describe(exc)}"
    if isinstance(exc, ssl.SSLError):
        return R.TLS_ERROR, f"TLS error: {_describe(exc)}"
    if isinstance(exc, OSError):
        return R.OTHER, f"connection error during {where}: {_describe(exc)}"
    return R.OTHER, f"{type(exc).__name__}: {_describe(exc)}"
