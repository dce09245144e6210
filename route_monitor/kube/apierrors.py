"""What a failed request to the API server was: an answer with an HTTP status (:class:`ApiError`,
:func:`status_code`), or no answer at all (:class:`Unreachable`, :func:`unreachable`: worth trying
again). One classifier for every caller: start-up patience, the supervisor's back-off and error
labels, the reference and Lease watches.

The operator's own error types, raised by :mod:`~route_monitor.kube.rest`: no HTTP client's
request or response objects are built to report a failure. The kinds of :class:`Unreachable` keep
the names the operator's logs have always used (``ConnectError``, ``ReadTimeout``, ...), so a log
search written for earlier versions still finds them.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from typing import Any

import aiohttp
import msgspec

RETRYABLE = frozenset({429, 500, 502, 503, 504})
"""Answers that say "not now" rather than "no": too many requests, or the server failing."""


class ApiError(Exception):
    """The API server answered ``status`` >= 400. ``reason`` and ``message`` come from the
    Kubernetes ``Status`` in the body when there is one (the apiserver's plain "404 page not
    found" for an API group it does not serve has none: its first line is the message)."""

    def __init__(self, status: int, reason: str, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")
        self.status, self.reason, self.message = status, reason, message
        self.method, self.url = method, url

    @property
    def retryable(self) -> bool:
        """Worth trying again later unchanged (429, 5xx); a 4xx other than 429 is an answer."""
        return self.status in RETRYABLE


def from_answer(status: int, body: bytes, *, method: str = "", url: str = "") -> ApiError:
    """The :class:`ApiError` for an answer >= 400 and its body."""
    found: Any = None
    with contextlib.suppress(msgspec.DecodeError):
        found = msgspec.json.decode(body)
    if isinstance(found, dict) and found.get("kind") == "Status":
        return ApiError(status, str(found.get("reason") or ""), str(found.get("message") or ""), method=method,
                        url=url)
    text = body.decode("utf-8", "replace").strip().splitlines()
    return ApiError(status, "", text[0][:200] if text else "", method=method, url=url)


class Unreachable(Exception):
    """The request got no answer: the API server could not be reached, closed the connection or
    did not answer in time. The subclass says which (its name is what the logs show)."""


class ConnectError(Unreachable):
    """Refused, name not resolved, TLS handshake or certificate failed."""


class ConnectTimeout(Unreachable):
    """No connection in time (opening one, or waiting for a free one in the pool)."""


class ReadTimeout(Unreachable):
    """Connected, but no byte of the answer for the read timeout."""


class RemoteProtocolError(Unreachable):
    """The server closed the connection before or during its answer, or the answer was malformed."""


class ReadError(Unreachable):
    """The connection was reset or lost once connected."""


def status_code(error: BaseException) -> int | None:
    """The HTTP status of a failed API request, None when it got no answer or is not the API's."""
    return error.status if isinstance(error, ApiError) else None


UNREACHABLE = (Unreachable, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, ConnectionError,
               TimeoutError, ssl.SSLError, socket.gaierror)
"""Errors of a request that got no answer: ours (:class:`Unreachable`) and the socket and aiohttp
errors beneath them, should one escape unmapped."""


def unreachable(error: BaseException) -> bool:
    """The API server could not be reached or did not answer (refused, reset, timed out, TLS
    failed, name not resolved): worth trying again. Not a bad kubeconfig
    (:class:`~route_monitor.kube.kubeconfig.ConfigError`, a missing certificate file), not an
    answer (:func:`status_code`)."""
    return isinstance(error, UNREACHABLE)
