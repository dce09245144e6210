"""The hand-framed HTTP/2 of the gRPC probe, read by an independent implementation (``h2``, as a
server) and reading what ``h2`` writes: the request's preface, settings, header fields (split
into CONTINUATION frames when long) and message arrive intact; the server's frames are split
the same whichever way the bytes arrive, padding and priority removed; what cannot be an
HTTP/2 server (an HTTP/1.1 answer, an oversized frame) is a protocol error; a header block means
what its connection's earlier blocks made of the dynamic table, whatever was decoded before.
"""

from __future__ import annotations

import h2.config
import h2.connection
import h2.events
import hpack
import pytest

from route_monitor.probe import grpc, h2frames
from route_monitor.probe.reasons import ProbeFailure, ProtocolError

SERVER = h2.config.H2Configuration(client_side=False, header_encoding=None)


def served(data: bytes) -> tuple[h2.connection.H2Connection, list[h2.events.Event]]:
    conn = h2.connection.H2Connection(config=SERVER)
    conn.initiate_connection()
    return conn, conn.receive_data(data)


@pytest.mark.parametrize("metadata", [(), ((b"x-probe", b"route-monitor"), (b"x-long", b"v" * 40000))],
                         ids=["plain", "long-header-continuation"])
def test_the_request_is_what_an_http2_server_reads(metadata: tuple[tuple[bytes, bytes], ...]) -> None:
    headers = grpc.request_headers("checkout.shop:50051", True, metadata)
    _, events = served(h2frames.request(headers, grpc.request_message("checkout.v1.Checkout")))
    received = next(e for e in events if isinstance(e, h2.events.RequestReceived))
    assert list(received.headers or ()) == headers
    data = b"".join(e.data or b"" for e in events if isinstance(e, h2.events.DataReceived))
    assert data == grpc.request_message("checkout.v1.Checkout")
    assert any(isinstance(e, h2.events.StreamEnded) for e in events)
    assert any(isinstance(e, h2.events.RemoteSettingsChanged) for e in events)


def answer(*, padded: bool) -> bytes:
    conn, _ = served(h2frames.request(grpc.request_headers("a:1", False, ()), grpc.request_message("")))
    conn.send_headers(1, [(b":status", b"200"), (b"content-type", b"application/grpc")])
    conn.send_data(1, b"\x00\x00\x00\x00\x02\x08\x01", pad_length=5 if padded else None)
    conn.send_headers(1, [(b"grpc-status", b"0")], end_stream=True)
    return conn.data_to_send()


@pytest.mark.parametrize("step", [1, 7, 10_000])
@pytest.mark.parametrize("padded", [False, True])
def test_the_answer_is_read_however_it_arrives(step: int, padded: bool) -> None:
    data, frames, out = answer(padded=padded), h2frames.Frames(), grpc._Answer()
    for i in range(0, len(data), step):
        for frame in frames.feed(data[i:i + step]):
            out.take(*frame)
    assert out.ended and out.verdict() == "SERVING"
    assert out.headers[b":status"] == b"200" and out.headers[b"grpc-status"] == b"0"


def test_settings_and_ping_are_acknowledged() -> None:
    out = grpc._Answer()
    assert out.take(h2frames.SETTINGS, 0, 0, b"") == h2frames.SETTINGS_ACK
    assert out.take(h2frames.SETTINGS, h2frames.ACK, 0, b"") == b""
    assert out.take(h2frames.PING, 0, 0, b"12345678") == h2frames.frame(h2frames.PING, h2frames.ACK, 0, b"12345678")


@pytest.mark.parametrize(("data", "says"), [
    (b"HTTP/1.1 400 Bad Request\r\n\r\n", "not SETTINGS"),
    (h2frames.frame(h2frames.SETTINGS, 0, 0) + (70000).to_bytes(3, "big") + b"\x00" * 6, "a frame of 70000 bytes"),
    (h2frames.frame(h2frames.SETTINGS, 0, 0) + h2frames.frame(h2frames.DATA, h2frames.PADDED, 1, b"\x09ab"),
     "padding longer"),
])
def test_what_no_http2_server_sends_is_a_protocol_error(data: bytes, says: str) -> None:
    with pytest.raises(ProtocolError, match=says):
        h2frames.Frames().feed(data)


def test_reset_and_goaway_before_the_end_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match=r"reset the stream \(HTTP/2 error 8"):
        grpc._Answer().take(h2frames.RST_STREAM, 0, 1, (8).to_bytes(4, "big"))
    with pytest.raises(ProtocolError, match="GOAWAY, HTTP/2 error 2"):
        grpc._Answer().take(h2frames.GOAWAY, 0, 0, (1).to_bytes(4, "big") + (2).to_bytes(4, "big"))


def _trailers_only_after_headers(message: bytes) -> tuple[bytes, bytes]:
    """A server's headers and trailers on a fresh connection, the message indexed in its dynamic
    table by the headers and only referred to by the trailers (``hpack``'s own encoder)."""
    encoder = hpack.Encoder()
    headers = encoder.encode([(b":status", b"200"), (b"grpc-message", message)])
    return headers, encoder.encode([(b"grpc-status", b"5"), (b"grpc-message", message)])


def _verdict(headers: bytes, trailers: bytes) -> str:
    out = grpc._Answer()
    out.take(h2frames.HEADERS, h2frames.END_HEADERS, 1, headers)
    out.take(h2frames.HEADERS, h2frames.END_HEADERS | h2frames.END_STREAM, 1, trailers)
    with pytest.raises(ProbeFailure) as failure:
        out.verdict()
    return failure.value.detail


def test_header_blocks_decode_by_what_came_before_them_on_their_connection() -> None:
    first, second = _trailers_only_after_headers(b"first"), _trailers_only_after_headers(b"second")
    assert first[1] == second[1]  # the same trailer bytes, which mean what each connection's table holds
    for _ in range(2):  # and again, once every block sequence was seen
        assert _verdict(*first) == "gRPC status NOT_FOUND: first"
        assert _verdict(*second) == "gRPC status NOT_FOUND: second"
