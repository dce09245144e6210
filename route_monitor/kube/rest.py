"""The operator's one client of the Kubernetes API: JSON requests straight to the API server over
the operator's aiohttp pools (:mod:`~route_monitor.kube.transport`), answers decoded with msgspec.

Every request the operator makes goes here: the watches and their lists, the writes each monitor
costs (create, replace, status patch), Leases, Events, deletes with a uid precondition, the
per-namespace scrape objects. Profiled on a burst of 1,000 new monitors, lightkube's request
building (httpx's URL parsing, header merging, auth flow, response wrapping) was about a third of
the operator's CPU per monitor; the same three writes sent here cost ~1.2 ms less of client CPU
per monitor (``benchmarks/kube_writes.py``). An answer >= 400 raises
:class:`~route_monitor.kube.apierrors.ApiError`; no answer, one of
:class:`~route_monitor.kube.apierrors.Unreachable`'s kinds.

The credentials it sends (:mod:`~route_monitor.kube.auth`): a bearer token, a token file (the
service account's, re-read when it changes, as the kubelet rotates it), a client certificate (in
the TLS context), a user name and password, or what an exec plugin gives (run before the first
request, when its credential expires, and once more on a 401, the request then sent again once).
Auth providers cannot run the operator (:func:`unsupported_user` says so at start).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import msgspec

from alert_rules import names
from route_monitor.kube.apierrors import from_answer
from route_monitor.kube.auth import BasicAuth as BasicAuth
from route_monitor.kube.auth import BearerToken as BearerToken
from route_monitor.kube.auth import ExecAuth as ExecAuth
from route_monitor.kube.auth import UnsupportedUser as UnsupportedUser
from route_monitor.kube.auth import cluster_info
from route_monitor.kube.auth import unsupported_user as unsupported_user
from route_monitor.kube.kubeconfig import KubeConfig
from route_monitor.kube.transport import Pools, mapped_errors

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder().decode
"""msgspec: a PrometheusRule (~11 KiB) encoded and decoded in
22 us, against 131 us with the standard library's json."""
_TIMEOUT = aiohttp.ClientTimeout(total=None, connect=10.0, sock_read=10.0)
"""10 s to connect (or wait for a pooled connection) and between reads."""


def path(group: str, version: str, plural: str, namespace: str | None, name: str | None = None,
         subresource: str | None = None) -> str:
    """``/apis/<group>/<version>/namespaces/<ns>/<plural>[/<name>[/<subresource>]]`` (``/api/v1`` for core);
    without ``namespace``, the collection across all namespaces."""
    root = f"/apis/{group}/{version}" if group else f"/api/{version}"
    parts = [root, *(("namespaces", quote(namespace, safe="")) if namespace else ()), plural]
    if name is not None:
        parts.append(quote(name, safe=""))
    if subresource is not None:
        parts.append(subresource)
    return "/".join(parts)


class Rest:
    """JSON requests to one API server through ``session()`` (the shared aiohttp pool); watches
    through ``watch_session()`` (a pool of their own, :mod:`~route_monitor.kube.transport`)."""

    def __init__(self, server: str, session: Callable[[], aiohttp.ClientSession],
                 auth: BearerToken | BasicAuth | ExecAuth, *,
                 watch_session: Callable[[], aiohttp.ClientSession] | None = None,
                 timeout: aiohttp.ClientTimeout = _TIMEOUT) -> None:
        self._server = server.rstrip("/")
        self._timeout = timeout
        self._session = session
        self._watch_session = watch_session or session
        self._auth = auth
        self._plugin = auth if isinstance(auth, ExecAuth) else None
        self._query = f"?fieldManager={quote(names.FIELD_MANAGER, safe='')}"

    def _headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": JSON, "Accept-Encoding": "identity"}  # the API server gzips answers > 128 KiB
        if content_type is not None:
            headers["Content-Type"] = content_type
        bearer = self._auth.header()
        if bearer is not None:
            headers["Authorization"] = bearer
        return headers

    async def get(self, where: str, query: Mapping[str, str]) -> dict[str, Any]:
        return await self._request("GET", self._server + where + "?" + urlencode(query), None, None)

    async def watch(self, where: str, query: Mapping[str, str],
                    read_timeout: float | None) -> AsyncIterator[dict[str, Any]]:
        """The events of a watch (``{"type": ..., "object": ...}``), as the API server streams them,
        until it ends the stream; an answer >= 400 raises as :meth:`get` does."""
        url = self._server + where + "?" + urlencode({**query, "watch": "true"})
        timeout = aiohttp.ClientTimeout(total=None, connect=self._timeout.connect, sock_read=read_timeout)
        for again in (True, False):
            generation = await self._plugin.fresh() if self._plugin is not None else 0
            with mapped_errors("GET", url):
                async with self._watch_session().get(url, headers=self._headers(), timeout=timeout,
                                                     allow_redirects=False) as response:
                    if response.status == 401 and again and self._plugin is not None:
                        await self._plugin.rejected(generation)
                        continue
                    if response.status >= 400:
                        raise from_answer(response.status, await response.read(), method="GET", url=url)
                    async for event in _events(response):
                        yield event
                    return

    async def list(self, where: str, query: Mapping[str, str], *, chunk: int = 500,
                   keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[list[dict[str, Any]], str]:
        """Every item of the collection ``where`` (asked for in pages of ``chunk``) and the
        resourceVersion of the listing, to watch from; ``keep(item)`` instead of each item when
        given, applied as each page arrives (only one page of whole objects is held at a time)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            page = await self.get(where, {**query, "limit": str(chunk), **({"continue": token} if token else {})})
            listed = page.get("items") or ()
            items.extend(listed if keep is None else map(keep, listed))
            meta = page.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    async def delete(self, item: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """DELETE with ``body`` (DeleteOptions: preconditions, propagation); no field manager."""
        return await self._request("DELETE", self._server + item, _ENCODE(body), JSON)

    async def create(self, collection: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self._send("POST", collection, body, JSON)

    async def replace(self, item: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self._send("PUT", item, body, JSON)

    async def merge_patch(self, item: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self._send("PATCH", item, body, MERGE_PATCH)

    async def _send(self, method: str, where: str, body: Mapping[str, Any], content_type: str) -> dict[str, Any]:
        return await self._request(method, self._server + where + self._query, _ENCODE(body), content_type)

    async def _request(self, method: str, url: str, data: bytes | None, content_type: str | None) -> dict[str, Any]:
        """One request on the short-request pool; its JSON answer, or :class:`ApiError`. A 401 to an
        exec plugin's credential runs the plugin again and sends the request once more."""
        for again in (True, False):
            generation = await self._plugin.fresh() if self._plugin is not None else 0
            with mapped_errors(method, url):
                async with self._session().request(method, url, data=data, headers=self._headers(content_type),
                                                   timeout=self._timeout, allow_redirects=False) as response:
                    content = await response.read()
                    status = response.status
            if status != 401 or not again or self._plugin is None:
                break
            await self._plugin.rejected(generation)
        if status >= 400:
            raise from_answer(status, content, method=method, url=url)
        answer: dict[str, Any] = _DECODE(content)
        return answer


async def _events(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """The JSON lines of a watch's answer, as they arrive."""
    rest = b""
    async for chunk in response.content.iter_any():
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.strip():
                event: dict[str, Any] = _DECODE(line)
                yield event


def for_config(config: KubeConfig, session: Callable[[], aiohttp.ClientSession],
               watch_session: Callable[[], aiohttp.ClientSession] | None = None, *,
               pools: Pools | None = None) -> Rest | None:
    """The direct path for ``config``'s current context, or None when the operator cannot
    authenticate as its user (:func:`unsupported_user`). ``pools``: where an exec plugin's client
    certificate goes (their TLS context), and which drop their connections when it changes."""
    user = config.user
    if unsupported_user(config) is not None:
        return None
    auth: BearerToken | BasicAuth | ExecAuth = BearerToken()
    if user is not None and user.plugin is not None:
        info = cluster_info(config) if user.plugin.provide_cluster_info else None
        auth = ExecAuth(user.plugin, info, tls=pools.ssl_context if pools is not None else None,
                        on_new_certificate=pools.rotate if pools is not None else None)
    elif user is not None and user.username and user.password:
        auth = BasicAuth(user.username, user.password)
    elif user is not None:
        auth = BearerToken(token=user.token, token_file=user.token_file)
    return Rest(config.cluster.server, session, auth, watch_session=watch_session)
