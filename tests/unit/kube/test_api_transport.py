"""How the operator's API client (``route_monitor.kube.rest`` on the pools of
``route_monitor.kube.transport``) reports a server that does not answer, or answers with an
error, over real loopback sockets, so that the start-up patience, the supervisor's back-off and
the reconcile error labels (``apierrors``) read them alike:

- nothing listening: ``ConnectError``;
- no free connection within the connect timeout (all held by responses still streaming):
  ``ConnectTimeout`` (not a ``ReadTimeout``, like a slow answer);
- connected, no answer within the read timeout: ``ReadTimeout``;
- the connection closed without an answer: ``RemoteProtocolError``;
  all of them ``Unreachable``;
- an answer >= 400: ``ApiError`` with the status, and the Status's reason and message when the body
  is one (the apiserver's plain "404 page not found" otherwise);
- a watch (``?watch=true``) never waits for a connection held by another request, and no other
  request waits for one held by a watch (``tests/cluster/test_operator_connections.py`` on the real API).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest

from route_monitor.kube import apierrors
from route_monitor.kube.apierrors import status_code, unreachable
from route_monitor.kube.rest import BearerToken, Rest
from route_monitor.kube.transport import Pools
from tests.support.net import free_port

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
EVENT = b'{"type":"ADDED","object":{"metadata":{"name":"s"}}}\n'


async def api(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Watches: a chunked stream with one event that never ends; anything else: ``{}``."""
    while head := await reader.readuntil(b"\r\n\r\n"):
        if b"watch=true" in head.split(b"\r\n")[0]:
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(EVENT), EVENT))
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    await asyncio.sleep(30)


async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.close()


def answers(status: int, body: bytes) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 %d Oops\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body))
        await writer.drain()
    return handler


@contextlib.asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()


@pytest.fixture
async def pools() -> AsyncIterator[Pools]:
    pools = Pools(False, limit=1)
    yield pools
    await pools.aclose()


def client(pools: Pools, base: str) -> Rest:
    return Rest(base, pools.session, BearerToken(token="t"), watch_session=pools.watch_session,
                timeout=aiohttp.ClientTimeout(total=None, connect=0.3, sock_read=0.3))


async def test_nothing_listening_is_a_connect_error(pools: Pools) -> None:
    with pytest.raises(apierrors.ConnectError) as failed:
        await client(pools, f"http://127.0.0.1:{free_port()}").get("/api", {})
    assert unreachable(failed.value) and status_code(failed.value) is None


async def test_no_free_connection_in_time_is_a_connect_timeout(pools: Pools) -> None:
    async with serving(silent) as base:
        held = asyncio.create_task(client(pools, base).get("/api/v1/namespaces/a/secrets/s", {}))
        await asyncio.sleep(0)  # the one short-request connection taken
        with pytest.raises(apierrors.ConnectTimeout) as failed:
            await client(pools, base).get("/api/v1/namespaces/a/secrets/t", {})
        assert unreachable(failed.value)
        with pytest.raises(apierrors.ReadTimeout):
            await held


async def test_no_answer_in_time_is_a_read_timeout(pools: Pools) -> None:
    async with serving(silent) as base:
        with pytest.raises(apierrors.ReadTimeout) as failed:
            await client(pools, base).get("/api", {})
        assert unreachable(failed.value)


async def test_closed_without_an_answer_is_a_remote_protocol_error(pools: Pools) -> None:
    async with serving(hangs_up) as base:
        with pytest.raises(apierrors.RemoteProtocolError) as failed:
            await client(pools, base).get("/api", {})
        assert unreachable(failed.value)


async def test_an_error_answer_is_an_api_error_with_the_status_reason_and_message(pools: Pools) -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409,
              "message": 'routemonitors "web" already exists'}
    async with serving(answers(409, json.dumps(status).encode())) as base:
        with pytest.raises(apierrors.ApiError) as failed:
            await client(pools, base).create("/apis/routemonitor.io/v1alpha1/namespaces/a/routemonitors", {})
    error = failed.value
    assert (error.status, error.reason, error.message) == (409, "Conflict", 'routemonitors "web" already exists')
    assert error.method == "POST" and not error.retryable and not unreachable(error)


@pytest.mark.parametrize(("status", "body", "retryable"), [
    pytest.param(404, b"404 page not found\n", False, id="group-not-served"),
    pytest.param(503, b"", True, id="unavailable-no-body"),
    pytest.param(429, b"<html>slow down</html>", True, id="throttled-html"),
])
async def test_an_error_answer_without_a_status_still_has_its_code(pools: Pools, status: int, body: bytes,
                                                                   retryable: bool) -> None:
    async with serving(answers(status, body)) as base:
        with pytest.raises(apierrors.ApiError) as failed:
            await client(pools, base).get("/apis/nothing.example/v1/things", {})
    assert status_code(failed.value) == status and failed.value.retryable is retryable
    assert failed.value.message == body.decode().strip()


async def test_watches_and_other_requests_never_wait_for_each_other(pools: Pools) -> None:
    async with serving(api) as base:
        rest = client(pools, base)
        watches = [rest.watch("/api/v1/namespaces/a/secrets", {"fieldSelector": f"metadata.name=s{i}"},
                              read_timeout=None) for i in range(3)]
        for watch in watches:  # more watches than the pool's one connection, all streaming at once
            assert (await anext(watch))["type"] == "ADDED"
        assert await rest.get("/apis/coordination.k8s.io/v1/leases/x", {}) == {}  # the short connection was free
        for watch in watches:
            await watch.aclose()
