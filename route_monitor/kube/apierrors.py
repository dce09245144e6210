"""What a failed request to the API server was: an answer with an HTTP status
(:func:`status_code`), or no answer at all (:func:`unreachable`: worth trying again). One
classifier for every caller: start-up patience, the reconcile error labels, the reference and
Lease watches.
"""

from __future__ import annotations

import socket
import ssl

import aiohttp
import httpx2
from lightkube.core.exceptions import ApiError


def status_code(error: BaseException) -> int | None:
    """The HTTP status of a failed API request. lightkube raises ApiError when the body is a
    Kubernetes Status, and the HTTP client's own error when it is not (the apiserver's plain
    "404 page not found" for an API group it does not serve)."""
    if isinstance(error, ApiError) and error.status is not None:
        return int(error.status.code or 0) or None
    code = getattr(getattr(error, "response", None), "status_code", None)
    return code if isinstance(code, int) else None


UNREACHABLE = (httpx2.TransportError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, ConnectionError,
               TimeoutError, ssl.SSLError, socket.gaierror)
"""Errors of a request that got no answer: lightkube's client (``httpx2``, the errors of its own
transport and of :mod:`transport`), aiohttp (the watches' and writes' client), and the socket errors beneath them."""


def unreachable(error: BaseException) -> bool:
    """The API server could not be reached or did not answer (refused, reset, timed out, TLS
    failed, name not resolved): worth trying again. Not a bad kubeconfig (lightkube's
    ``ConfigError``, a missing certificate file), not an answer (:func:`status_code`)."""
    return isinstance(error, UNREACHABLE)
