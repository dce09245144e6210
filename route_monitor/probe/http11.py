"""One HTTP/1.1 exchange on a fresh connection, with h11 (the parser under httpx/httpcore).

httpcore's connection object adds what a connection pool needs (locks, traces, request models,
keep-alive state) and, on asyncio without ``sniffio``, a failed import per request; a probe
uses each connection once, so the prober drives h11 directly: send the request, read the
response head, then the body up to a byte limit. h11 does the framing (Content-Length,
chunked, read-until-close) and raises ``h11.RemoteProtocolError`` on anything malformed, which
``reasons.classify`` maps to ``protocol_error``.
"""

from __future__ import annotations

from dataclasses import dataclass

import h11

from route_monitor.probe.connect import AnyStream

READ_SIZE = 64 * 1024
MAX_HEAD_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    location: str | None
    """The Location header, if any (redirects)."""
    body: bytes


async def _next_event(conn: h11.Connection, stream: AnyStream) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.read(READ_SIZE))


async def exchange(stream: AnyStream, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]], *,
                   max_body_bytes: int, follow_redirects: bool = True, statuses: list[int] | None = None) -> Response:
    """Send one request and read the response; a redirect's body is not read when following it.

    The status is appended to ``statuses`` as soon as the head arrives (so a failure while
    reading the body still reports it)."""
    conn = h11.Connection(our_role=h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
    await stream.write(conn.send(h11.Request(method=method, target=target, headers=headers))
                       + conn.send(h11.EndOfMessage()))
    while True:
        event = await _next_event(conn, stream)
        if isinstance(event, h11.Response):
            break
        if isinstance(event, h11.ConnectionClosed):
            raise h11.RemoteProtocolError("server closed the connection without sending a response")
        if not isinstance(event, h11.InformationalResponse):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__} before the response")
    if statuses is not None:
        statuses.append(event.status_code)
    location = next((v.decode("latin-1") for k, v in event.headers if k == b"location"), None)
    body = bytearray()
    if not (follow_redirects and location is not None and 300 <= event.status_code < 400):
        while len(body) < max_body_bytes:
            part = await _next_event(conn, stream)
            if isinstance(part, h11.Data):
                body += part.data
            elif isinstance(part, h11.EndOfMessage | h11.ConnectionClosed):
                break
        del body[max_body_bytes:]
    return Response(event.status_code, location, bytes(body))
