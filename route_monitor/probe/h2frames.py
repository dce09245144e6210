"""The HTTP/2 a gRPC health check needs, framed by hand: one request on stream 1, read to its end.

A unary ``Health/Check`` is the same few frames every time: the client preface, a SETTINGS
frame (no server push), a HEADERS block and one DATA frame with END_STREAM; the answer is a
SETTINGS frame, HEADERS, DATA and trailing HEADERS (or one HEADERS with END_STREAM for a
trailers-only answer). A general HTTP/2 state machine (``h2``) costs about as much CPU as the
rest of the probe together, TLS handshake included (``benchmarks/RESULTS-protocols.md``), so:

- :func:`request` writes those frames at once; header fields are HPACK literals without
  indexing and without Huffman coding (valid for any decoder, no table to keep);
- :class:`Frames` splits what comes back into frames (type, flags, stream, payload without
  padding or priority), refusing what cannot be an HTTP/2 server: a first frame that is not
  SETTINGS (an HTTP/1.1 answer), a frame larger than the default maximum frame size (we never
  advertise a larger one). Header blocks are decoded by ``hpack`` (one decoder per connection:
  the server's dynamic table spans the headers and the trailers).

RFC 9113 obligations of a client that sends one request: SETTINGS and PING are acknowledged;
nothing else is answered (the connection is aborted once the stream ends).
"""

from __future__ import annotations

import struct

from route_monitor.probe.reasons import ProtocolError

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7, 0x9
END_STREAM = ACK = 0x1
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20
MAX_FRAME = 16384
"""SETTINGS_MAX_FRAME_SIZE's default, which the client never raises."""
_ENABLE_PUSH = 0x2
_HEADER = struct.Struct(">BHBBL")
"""A frame header: 24-bit length (as 8 + 16 bits), type, flags, stream (RFC 9113 4.1)."""


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big") + payload


CLIENT_SETTINGS = frame(SETTINGS, 0, 0, _ENABLE_PUSH.to_bytes(2, "big") + (0).to_bytes(4, "big"))
SETTINGS_ACK = frame(SETTINGS, ACK, 0)


def _integer(value: int) -> bytes:
    """An HPACK integer with a 7-bit prefix (RFC 7541 5.1), the flag bit clear (no Huffman)."""
    if value < 0x7F:
        return bytes((value,))
    out, value = bytearray((0x7F,)), value - 0x7F
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def header_block(headers: list[tuple[bytes, bytes]]) -> bytes:
    """Each field as a literal without indexing, new name (RFC 7541 6.2.2)."""
    return b"".join(b"\x00" + _integer(len(k)) + k + _integer(len(v)) + v for k, v in headers)


def request(headers: list[tuple[bytes, bytes]], message: bytes) -> bytes:
    """Everything the client sends: preface, SETTINGS, HEADERS (+ CONTINUATION), DATA with END_STREAM."""
    block = header_block(headers)
    chunks = [block[i:i + MAX_FRAME] for i in range(0, len(block), MAX_FRAME)] or [b""]
    out = [PREFACE, CLIENT_SETTINGS]
    for i, chunk in enumerate(chunks):
        last = END_HEADERS if i == len(chunks) - 1 else 0
        out.append(frame(HEADERS if i == 0 else CONTINUATION, last, 1, chunk))
    out.append(frame(DATA, END_STREAM, 1, message))
    return b"".join(out)


def _unpadded(kind: int, flags: int, payload: bytes) -> bytes:
    start = 0
    pad = 0
    if flags & PADDED and kind in (DATA, HEADERS):
        if not payload:
            raise ProtocolError("not an HTTP/2 answer: a padded frame without its pad length")
        pad, start = payload[0], 1
    if kind == HEADERS and flags & PRIORITY:
        start += 5
    if start + pad > len(payload):
        raise ProtocolError("not an HTTP/2 answer: padding longer than its frame")
    return payload[start:len(payload) - pad]


class Frames:
    """The server's byte stream, split into ``(type, flags, stream, payload)`` frames."""

    __slots__ = ("_buffer", "_first")

    def __init__(self) -> None:
        self._buffer = b""
        self._first = True

    def feed(self, data: bytes) -> list[tuple[int, int, int, bytes]]:
        buf = self._buffer + data if self._buffer else data
        out = []
        i, end = 0, len(buf)
        while end - i >= 9:
            high, low, kind, flags, stream = _HEADER.unpack_from(buf, i)
            length = high << 16 | low
            if self._first and kind != SETTINGS:
                raise ProtocolError(f"not an HTTP/2 answer: it starts with {bytes(buf[i:i + 9])!r}, not SETTINGS")
            if length > MAX_FRAME:
                raise ProtocolError(f"not an HTTP/2 answer: a frame of {length} bytes (at most {MAX_FRAME})")
            if end - i - 9 < length:
                break
            self._first = False
            payload = buf[i + 9:i + 9 + length]
            if flags & (PADDED | PRIORITY):
                payload = _unpadded(kind, flags, payload)
            out.append((kind, flags, stream & 0x7FFFFFFF, payload))
            i += 9 + length
        self._buffer = buf[i:]
        return out
