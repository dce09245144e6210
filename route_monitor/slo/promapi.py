"""A small client of the Prometheus HTTP API (instant queries), for ``status.slo`` and reports.

Works with Prometheus itself and with OpenShift's Thanos querier (``https://thanos-querier.
openshift-monitoring.svc:9091``): a bearer token read from a file (a projected service-account
token is rotated, so the file is read again for every query), a CA file added to the system
trust store, and a timeout per request. A query that fails in transport or with a 5xx/429 is
retried a bounded number of times with a short backoff; then :class:`PrometheusUnavailable`.
A query Prometheus rejects (4xx: bad PromQL, forbidden) raises :class:`QueryRejected` at once.
Messages name the URL (never with credentials) and the reason, never the token.
"""

from __future__ import annotations

import asyncio
import math
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx


class PrometheusError(Exception):
    """Base of the errors below; its message is safe to log and to put in a status."""


class PrometheusUnavailable(PrometheusError):
    """Prometheus did not answer (connection, timeout, 5xx, 429) after the bounded retries."""


class QueryRejected(PrometheusError):
    """Prometheus answered with an error for the query itself (4xx, ``status: error``)."""


class InvalidSettings(ValueError):
    """An option of the Prometheus client is invalid; the message names the option."""


@dataclass(frozen=True, kw_only=True)
class PromSettings:
    url: str
    """Base URL of the Prometheus (or Thanos querier) HTTP API, without ``/api/v1``."""
    bearer_token_file: Path | None = None
    """File holding a bearer token sent as ``Authorization: Bearer``; read for every query."""
    ca_file: Path | None = None
    """PEM file of CA certificates trusted in addition to the system store."""
    timeout: float = 30.0
    """Seconds per request."""
    attempts: int = 3
    """Tries per query (transport errors, 5xx, 429), with ``backoff`` seconds between them."""
    backoff: float = 1.0


def parse_settings(url: str, *, bearer_token_file: str | None = None, ca_file: str | None = None,
                   timeout: float = 30.0, option: str = "--prometheus-url") -> PromSettings:
    """Check the options at the boundary; errors name the option (and never repeat a password)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidSettings(f"{option}: expected an http(s) URL such as http://prometheus:9090")
    if parts.username is not None or parts.password is not None:
        raise InvalidSettings(f"{option}: the URL must not contain credentials; "
                              "use --prometheus-bearer-token-file")
    if not (math.isfinite(timeout) and timeout > 0):
        raise InvalidSettings("--prometheus-timeout: must be a positive number of seconds")
    for name, path in (("--prometheus-bearer-token-file", bearer_token_file), ("--prometheus-ca-file", ca_file)):
        if path is not None and not Path(path).is_file():
            raise InvalidSettings(f"{name}: {path} is not a readable file")
    return PromSettings(url=url.rstrip("/"), timeout=timeout,
                        bearer_token_file=Path(bearer_token_file) if bearer_token_file else None,
                        ca_file=Path(ca_file) if ca_file else None)


@dataclass(frozen=True)
class Sample:
    """One series of an instant-vector result."""

    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Series:
    """One series of a range-vector result: its raw samples, oldest first."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]
    """(epoch seconds, value)."""


def _verify(settings: PromSettings) -> ssl.SSLContext | bool:
    if settings.ca_file is None:
        return True
    ctx = ssl.create_default_context()
    ctx.load_verify_locations(cafile=str(settings.ca_file))
    return ctx


def _samples(body: Any) -> list[Sample]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or data.get("resultType") not in ("vector", "scalar"):
        raise QueryRejected("unexpected answer: not an instant vector")
    if data["resultType"] == "scalar":
        return [Sample({}, float(data["result"][1]))]
    return [Sample(dict(r.get("metric") or {}), float(r["value"][1])) for r in data.get("result") or []]


def _series(body: Any) -> list[Series]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise QueryRejected("unexpected answer: not a range vector")
    return [Series(dict(r.get("metric") or {}), tuple((float(t), float(v)) for t, v in r.get("values") or []))
            for r in data.get("result") or []]


class PrometheusAPI:
    """Instant queries against one Prometheus; use as an async context manager (or ``aclose``)."""

    def __init__(self, settings: PromSettings, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        import httpx  # only with --prometheus-url (or `report`): the operator otherwise never loads it (~4.5 MiB)

        self.settings = settings
        self._client = httpx.AsyncClient(base_url=settings.url, timeout=settings.timeout,
                                         verify=_verify(settings), transport=transport)

    async def __aenter__(self) -> PrometheusAPI:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    def _headers(self) -> dict[str, str]:
        path = self.settings.bearer_token_file
        if path is None:
            return {}
        try:
            token = path.read_text().strip()
        except OSError as e:
            raise PrometheusUnavailable(f"cannot read the bearer token file {path}: {e.strerror}") from None
        return {"Authorization": f"Bearer {token}"}

    async def query(self, expr: str, *, at: float | None = None) -> list[Sample]:
        """An instant query (at ``at``, epoch seconds; default now): its samples."""
        return _samples(await self._post(expr, at))

    async def raw_samples(self, expr: str, *, at: float | None = None) -> list[Series]:
        """An instant query of a range selector (``metric{...}[1h]``): each series' raw samples."""
        return _series(await self._post(expr, at))

    async def _post(self, expr: str, at: float | None) -> Any:
        params: dict[str, str] = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        import httpx

        last = ""
        for attempt in range(max(1, self.settings.attempts)):
            if attempt:
                await asyncio.sleep(self.settings.backoff * attempt)
            try:
                r = await self._client.post("/api/v1/query", data=params, headers=self._headers())
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}{': ' + str(e) if str(e) else ''}"
                continue
            if r.status_code >= 500 or r.status_code == 429:
                last = f"HTTP {r.status_code}"
                continue
            try:
                body = r.json()
            except ValueError:
                raise QueryRejected(f"HTTP {r.status_code}: the answer is not JSON") from None
            if r.status_code >= 400 or body.get("status") != "success":
                raise QueryRejected(f"HTTP {r.status_code}: {str(body.get('error') or '')[:300]}")
            return body
        raise PrometheusUnavailable(f"{self.settings.url} unreachable after {self.settings.attempts} "
                                    f"attempts ({last[:300]})")
