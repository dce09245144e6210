"""A gRPC probe: ``grpc.health.v1.Health/Check`` over HTTP/2 (h2c or TLS with ALPN ``h2``),
judged as the kubelet's gRPC probe and ``grpc-health-probe`` judge it.

The connection is :func:`~route_monitor.probe.net.connect.open_stream`'s (so DNS, connect and TLS
fail as an HTTP probe's do); the HTTP/2 exchange is framed by hand (:mod:`h2frames`: one stream
per probe, header blocks decoded by ``hpack`` through :mod:`headerblocks`), no grpcio channel
(its C core keeps threads, pools and a connection per channel: a channel per monitor would cost
far more than a probe).

- ``SERVING``: success;
- ``NOT_SERVING``, ``UNKNOWN``, ``SERVICE_UNKNOWN``: ``grpc_not_serving``;
- any gRPC status but OK (``NOT_FOUND`` for a service the server does not know,
  ``UNIMPLEMENTED`` when it has no health service, ``UNAVAILABLE``...): ``grpc_status``;
- not gRPC (an HTTP status other than 200, no ``h2`` on TLS, an HTTP/1.1 server, a stream reset,
  a malformed message): ``protocol_error``.

The two messages are one protobuf field each (``HealthCheckRequest.service = 1``,
``HealthCheckResponse.status = 1``): encoded and read here rather than by loading protobuf.
"""

from __future__ import annotations

from collections.abc import Sequence

from route_monitor import __version__
from route_monitor.probe import h2frames, headerblocks
from route_monitor.probe.net.connect import AnyStream
from route_monitor.probe.reasons import ClosedWithoutResponse, ProbeFailure, ProtocolError
from route_monitor.probe.result import FailureReason

PATH = "/grpc.health.v1.Health/Check"
SERVING_STATUS = {0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}
GRPC_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
              "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
              "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")
MAX_MESSAGE = 4096


def _code(raw: bytes) -> int:
    return int.from_bytes(raw, "big") if len(raw) == 4 else -1


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def request_message(service: str) -> bytes:
    """The length-prefixed ``HealthCheckRequest{service}`` (uncompressed)."""
    raw = service.encode("utf-8")
    body = b"\x0a" + _varint(len(raw)) + raw if raw else b""
    return b"\x00" + len(body).to_bytes(4, "big") + body


def _read_varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ProtocolError("malformed HealthCheckResponse (a varint runs past the message)")
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def serving_status(message: bytes) -> int:
    """``HealthCheckResponse.status`` of a length-prefixed message (0, UNKNOWN, when absent)."""
    if len(message) < 5 or message[0] != 0:
        raise ProtocolError("malformed or compressed gRPC message")
    body, i, status = message[5:5 + int.from_bytes(message[1:5], "big")], 0, 0
    while i < len(body):
        key, i = _read_varint(body, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _read_varint(body, i)
            if field == 1:
                status = value
        elif wire == 2:
            length, i = _read_varint(body, i)
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ProtocolError(f"malformed HealthCheckResponse (wire type {wire})")
    if i > len(body):
        raise ProtocolError("malformed HealthCheckResponse (a field runs past the message)")
    return status


def request_headers(authority: str, tls: bool, metadata: Sequence[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    return [(b":method", b"POST"), (b":scheme", b"https" if tls else b"http"), (b":path", PATH.encode()),
            (b":authority", authority.encode("idna") if not authority.isascii() else authority.encode()),
            (b"content-type", b"application/grpc"), (b"te", b"trailers"),
            (b"user-agent", f"route-monitor/{__version__}".encode()),
            *((k.lower(), v) for k, v in metadata)]


def request_bytes(authority: str, tls: bool, metadata: Sequence[tuple[bytes, bytes]], message: bytes) -> bytes:
    """Everything the client sends for one Health/Check (the same for every probe of a monitor)."""
    return h2frames.request(request_headers(authority, tls, metadata), message)


async def check(stream: AnyStream, request: bytes) -> str:
    """One Health/Check on ``stream`` (``request``: :func:`request_bytes`); the detail of a
    success, else :class:`ProbeFailure`."""
    await stream.write(request)
    frames, answer = h2frames.Frames(), _Answer()
    received = False
    while not answer.ended:
        data = await stream.read(65536)
        if not data:
            if not received:
                raise ClosedWithoutResponse("the server closed the connection without answering")
            raise ProtocolError("the server closed the connection before the gRPC answer ended")
        received = True
        reply = b"".join(answer.take(kind, flags, sid, payload) for kind, flags, sid, payload in frames.feed(data))
        if reply and not answer.ended:
            await stream.write(reply)
    return answer.verdict()


class _Answer:
    """What stream 1 answered: its header fields (headers and trailers together) and its body."""

    def __init__(self) -> None:
        self.headers: dict[bytes, bytes] = {}
        self.body = b""
        self.ended = False
        self._blocks = headerblocks.HeaderBlocks()
        self._block = b""
        self._ends_with_block = False

    def take(self, kind: int, flags: int, sid: int, payload: bytes) -> bytes:
        """Take one frame; what to send back (SETTINGS and PING acknowledgements)."""
        if kind == h2frames.SETTINGS:
            return b"" if flags & h2frames.ACK else h2frames.SETTINGS_ACK
        if kind == h2frames.PING:
            return b"" if flags & h2frames.ACK else h2frames.frame(h2frames.PING, h2frames.ACK, 0, payload)
        if kind == h2frames.GOAWAY and not self.ended:
            raise ProtocolError(f"the server ended the connection (GOAWAY, HTTP/2 error {_code(payload[4:8])})")
        if sid != 1:
            return b""
        if kind == h2frames.RST_STREAM:
            raise ProtocolError(f"the server reset the stream (HTTP/2 error {_code(payload[:4])})")
        if kind in (h2frames.HEADERS, h2frames.CONTINUATION):
            self._block += payload
            if kind == h2frames.HEADERS:
                self._ends_with_block = bool(flags & h2frames.END_STREAM)
            if flags & h2frames.END_HEADERS:
                self.headers.update(self._blocks.fields(self._block))
                self._block = b""
                self.ended = self.ended or self._ends_with_block
        elif kind == h2frames.DATA:
            self.body += payload
            if len(self.body) > MAX_MESSAGE:
                raise ProtocolError(f"a HealthCheckResponse of more than {MAX_MESSAGE} bytes")
            self.ended = self.ended or bool(flags & h2frames.END_STREAM)
        return b""

    def verdict(self) -> str:
        status = self.headers.get(b":status", b"")
        if status != b"200":
            raise ProtocolError(f"HTTP {status.decode('latin-1') or '?'} from the server: not a gRPC answer")
        code = self.headers.get(b"grpc-status")
        if code is None:
            raise ProtocolError("the answer has no grpc-status")
        if code != b"0":
            number = int(code) if code.isdigit() else -1
            name = GRPC_CODES[number] if 0 <= number < len(GRPC_CODES) else code.decode("latin-1")[:20]
            text = self.headers.get(b"grpc-message", b"").decode("utf-8", "replace")[:200]
            raise ProbeFailure(FailureReason.GRPC_STATUS, f"gRPC status {name}{': ' + text if text else ''}")
        status_value = serving_status(self.body)
        name = SERVING_STATUS.get(status_value, str(status_value))
        if status_value != 1:
            raise ProbeFailure(FailureReason.GRPC_NOT_SERVING, f"health status {name}")
        return "SERVING"
