"""How the operator's API transport (``route_monitor.kube.transport``, lightkube's httpx on
aiohttp) reports a server that does not answer, over real loopback sockets: as the httpx errors
httpx's own transport raises for the same failure, so that lightkube, the start-up patience and
the reconcile error labels (``apierrors.unreachable``) read them alike:

- nothing listening: ``ConnectError``;
- no free connection within the pool timeout (all held by responses still streaming):
  ``ConnectTimeout`` (it was reported as a ``ReadTimeout``, like a slow answer);
- connected, no answer within the read timeout: ``ReadTimeout``;
- the connection closed without an answer: ``RemoteProtocolError``;
- a watch (``?watch=true``) never waits for a connection held by another request, and no other
  request waits for one held by a watch (``tests/test_operator_connections.py`` on the real API).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2
import pytest

from route_monitor.kube.apierrors import unreachable
from route_monitor.kube.transport import AiohttpTransport
from tests.support.net import free_port

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def streaming(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers every request with a chunked body that never ends (as a watch)."""
    while await reader.readuntil(b"\r\n\r\n"):
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n")
        await writer.drain()


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    await asyncio.sleep(30)


async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readuntil(b"\r\n\r\n")
    writer.close()


@contextlib.asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[str]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(transport=AiohttpTransport(False, limit=1),
                                  timeout=httpx2.Timeout(2, pool=0.3, read=0.3)) as c:
        yield c


async def test_nothing_listening_is_a_connect_error(client: httpx2.AsyncClient) -> None:
    with pytest.raises(httpx2.ConnectError) as failed:
        await client.get(f"http://127.0.0.1:{free_port()}/api")
    assert unreachable(failed.value)


async def test_no_free_connection_in_time_is_a_connect_timeout(client: httpx2.AsyncClient) -> None:
    async with serving(streaming) as base:
        async with client.stream("GET", f"{base}/api/v1/namespaces/a/secrets/s"):  # holds the one connection
            with pytest.raises(httpx2.ConnectTimeout) as failed:
                await client.get(f"{base}/api/v1/namespaces/a/secrets/t")
        assert unreachable(failed.value)


async def test_no_answer_in_time_is_a_read_timeout(client: httpx2.AsyncClient) -> None:
    async with serving(silent) as base:
        with pytest.raises(httpx2.ReadTimeout):
            await client.get(f"{base}/api")


async def test_closed_without_an_answer_is_a_remote_protocol_error(client: httpx2.AsyncClient) -> None:
    async with serving(hangs_up) as base:
        with pytest.raises(httpx2.RemoteProtocolError) as failed:
            await client.get(f"{base}/api")
        assert unreachable(failed.value)


async def test_watches_and_other_requests_never_wait_for_each_other(client: httpx2.AsyncClient) -> None:
    async with serving(streaming) as base:
        watches = [client.stream("GET", f"{base}/api/v1/namespaces/a/secrets", params={
            "watch": "true", "fieldSelector": f"metadata.name=s{i}"}) for i in range(3)]
        for watch in watches:  # more watches than the pool's one connection, all streaming at once
            response = await watch.__aenter__()
            assert response.status_code == 200
        async with client.stream("GET", f"{base}/apis/coordination.k8s.io/v1/leases/x") as short:
            assert short.status_code == 200  # the one short-request connection was free
        for watch in watches:
            await watch.__aexit__(None, None, None)
