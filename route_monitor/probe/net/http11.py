"""One HTTP/1.1 exchange on a fresh connection: the request head written once, the response
head parsed, then the body read up to a byte limit.

A probe sends one request per connection (``Connection: close``) and needs from the response
only its status, its ``Location`` and the first ``max_body_bytes`` of its body, so this is a
client for exactly that, not a general HTTP library (it replaced h11, whose state machine and
per-event objects were a third of a plain HTTP probe's CPU; ``benchmarks/RESULTS.md``).
Framing follows RFC 9112 section 6.3 for a response: none after ``HEAD``, 1xx, 204 and 304;
``Transfer-Encoding`` ending in ``chunked``; else ``Content-Length`` (several must agree);
else up to the end of the connection. Anything malformed, a head over 64 KiB, a connection
that ends before the message does: :class:`~route_monitor.probe.reasons.ProtocolError`
(``protocol_error``). A status is three digits from ``100``; ``000``-``099`` are malformed, not
interim. Interim 1xx responses are skipped; ``101`` is refused. A connection that ends before
the server sent a single byte is :class:`~route_monitor.probe.reasons.ClosedWithoutResponse`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from route_monitor.probe.net.connect import AnyStream
from route_monitor.probe.reasons import ClosedWithoutResponse, ProbeFailure, ProtocolError
from route_monitor.probe.result import FailureReason
from route_monitor.spec import httpfields

READ_SIZE = 64 * 1024
MAX_HEAD_BYTES = 64 * 1024
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_STATUS = re.compile(rb"HTTP/[0-9]\.[0-9] ([0-9]{3})(?:[ \t][^\r\n]*)?")
_TOKEN = httpfields.NAME
_BAD_VALUE = httpfields.FORBIDDEN_IN_VALUE
_CHUNK_LINE = re.compile(rb"[ \t]*([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
_NO_BODY = frozenset({204, 304})


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    location: str | None
    """The Location header, if any (redirects)."""
    body: bytes


def request_head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    """The request line and headers; ProbeFailure (``other``) for a header that would break the
    framing (``route_monitor.spec.httpfields``: the spec's headers were checked against the same rules
    when parsed, so only a bug gets here)."""
    lines = [b"%s %s HTTP/1.1\r\n" % (method, target)]
    for name, value in headers:
        value = value.strip(httpfields.OPTIONAL_WHITESPACE)
        if not httpfields.name_ok(name) or not httpfields.value_ok(value):
            raise ProbeFailure(FailureReason.OTHER, f"request header {name[:100]!r} cannot be sent (invalid "
                               "name or a control character in its value)")
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines)


class _Reader:
    __slots__ = ("buf", "eof", "heard", "stream")

    def __init__(self, stream: AnyStream) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.eof = False
        self.heard = False
        """The server sent at least one byte."""

    async def more(self) -> None:
        data = await self.stream.read(READ_SIZE)
        if data:
            self.buf += data
            self.heard = True
        else:
            self.eof = True

    async def head(self) -> tuple[int, dict[bytes, list[bytes]]]:
        start = 0
        while (end := _HEAD_END.search(self.buf, start)) is None:
            if len(self.buf) > MAX_HEAD_BYTES:
                raise ProtocolError("response head larger than 64 KiB")
            if self.eof and not self.heard:
                raise ClosedWithoutResponse("server closed the connection without sending a response")
            if self.eof:
                raise ProtocolError("connection closed in the middle of the response head" if self.buf
                                    else "connection closed after an interim 1xx response, before the final one")
            start = max(0, len(self.buf) - 3)
            await self.more()
        if end.start() > MAX_HEAD_BYTES:
            raise ProtocolError("response head larger than 64 KiB")
        lines = bytes(self.buf[:end.start()]).split(b"\n")
        del self.buf[:end.end()]
        status = _STATUS.fullmatch(lines[0].rstrip(b"\r"))
        if status is None:
            raise ProtocolError(f"malformed status line {lines[0][:100]!r}")
        if status.group(1) < b"100":
            raise ProtocolError(f"status {status.group(1).decode()} in status line {lines[0][:100]!r} is not an "
                                "HTTP status (100 or more)")
        fields: dict[bytes, list[bytes]] = {}
        last: list[bytes] | None = None
        for raw in lines[1:]:
            line = raw.rstrip(b"\r")
            if line[:1] in (b" ", b"\t") and last is not None:  # obsolete line folding
                last[-1] = (last[-1] + b" " + line.strip(b" \t")).strip(b" ")
                continue
            name, colon, value = line.partition(b":")
            value = value.strip(b" \t")
            if not colon or not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
                raise ProtocolError(f"malformed header line {line[:100]!r}")
            last = fields.setdefault(name.lower(), [])
            last.append(value)
        return int(status.group(1)), fields

    async def body(self, fields: dict[bytes, list[bytes]], limit: int) -> bytes:
        if b"transfer-encoding" in fields:
            codings = b",".join(fields[b"transfer-encoding"]).lower()
            if codings.rsplit(b",", 1)[-1].strip() != b"chunked":
                raise ProtocolError(f"unsupported Transfer-Encoding {codings[:100]!r}")
            return await self.chunked(limit)
        if b"content-length" in fields:
            values = {v.strip() for v in b",".join(fields[b"content-length"]).split(b",")}
            if len(values) != 1 or not (length := values.pop()).isdigit() or len(length) > 18:
                raise ProtocolError("invalid or conflicting Content-Length")
            want = min(int(length), limit)
            while len(self.buf) < want and not self.eof:
                await self.more()
            if len(self.buf) < want:
                raise ProtocolError(f"connection closed after {len(self.buf)} of {int(length)} body bytes")
            return bytes(self.buf[:want])
        while len(self.buf) < limit and not self.eof:
            await self.more()
        return bytes(self.buf[:limit])

    async def chunked(self, limit: int) -> bytes:
        body = bytearray()
        while len(body) < limit:
            while (nl := self.buf.find(b"\n")) < 0:
                if self.eof or len(self.buf) > MAX_HEAD_BYTES:
                    raise ProtocolError("incomplete chunked body")
                await self.more()
            line = _CHUNK_LINE.fullmatch(self.buf[:nl].rstrip(b"\r"))
            if line is None:
                raise ProtocolError(f"malformed chunk header {bytes(self.buf[:min(nl, 100)])!r}")
            size = int(line.group(1), 16)
            del self.buf[:nl + 1]
            if size == 0:
                break
            take = min(size, limit - len(body))
            need = take if take < size else size + 2  # the limit falls inside this chunk: no more than that
            while len(self.buf) < need and not self.eof:
                await self.more()
            if len(self.buf) < need:
                raise ProtocolError("connection closed in the middle of a chunk")
            body += self.buf[:take]
            if take < size:
                break
            if self.buf[size:need] != b"\r\n":
                raise ProtocolError("chunk data not followed by CRLF")
            del self.buf[:need]
        return bytes(body[:limit])


async def exchange(stream: AnyStream, head: bytes, *, head_request: bool, max_body_bytes: int,
                   follow_redirects: bool = True, statuses: list[int] | None = None,
                   on_head: Callable[[], None] | None = None) -> Response:
    """Send ``head`` (from :func:`request_head`) and read the response; a redirect's body is not
    read when following it. The status is appended to ``statuses`` as soon as the head arrives
    (so a failure while reading the body still reports it), and ``on_head`` called (phase timing)."""
    await stream.write(head)
    reader = _Reader(stream)
    while True:
        status, fields = await reader.head()
        if status == 101:
            raise ProtocolError("unexpected 101 Switching Protocols")
        if status >= 200:
            break
    if statuses is not None:
        statuses.append(status)
    if on_head is not None:
        on_head()
    location = fields[b"location"][0].decode("latin-1") if b"location" in fields else None
    if (follow_redirects and location is not None and 300 <= status < 400) or head_request or status in _NO_BODY:
        return Response(status, location, b"")
    return Response(status, location, await reader.body(fields, max_body_bytes))
