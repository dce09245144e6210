"""The DNS probe's own wire handling (a prebuilt query, the answer judged from its header and
echoed question) against a real UDP server that answers what each case needs, and a real TCP
name server for a truncated answer: what dnspython's full parse would have refused is still
refused (``protocol_error``), and a truncated answer is asked again over TCP.
"""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Callable, Iterator

import pytest
from dnslib import QTYPE, RR, A, DNSRecord

from route_monitor.probe.result import FailureReason as R
from tests.unit.probe.test_probe_protocols import probe, settings

pytestmark = pytest.mark.timeout(30)
Answer = Callable[[bytes], bytes | None]


def reply(query: bytes, *, records: int = 1, tc: bool = False) -> bytes:
    q = DNSRecord.parse(query)
    r = q.reply()
    for i in range(records):
        r.add_answer(RR(q.q.qname, QTYPE.A, rdata=A(f"10.96.4.{i + 1}"), ttl=30))
    r.header.tc = int(tc)
    return bytes(r.pack())


class UDPServer:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            out = self.answer(data)
            if out is not None:
                self.sock.sendto(out, peer)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def udp() -> Iterator[Callable[[Answer], UDPServer]]:
    made: list[UDPServer] = []

    def make(answer: Answer) -> UDPServer:
        made.append(UDPServer(answer))
        return made[-1]
    yield make
    for s in made:
        s.close()


@pytest.mark.parametrize(("answer", "ok", "reason", "detail"), [
    (lambda q: reply(q, records=3), True, None, "NOERROR, 3 answer record(s)"),
    (lambda q: reply(q)[:2] + bytes([0x01]) + reply(q)[3:], False, R.PROTOCOL_ERROR, "not a response"),
    (lambda q: bytes([q[0] ^ 0xFF]) + reply(q)[1:], False, R.PROTOCOL_ERROR, "not a response"),
    (lambda q: reply(q)[:8], False, R.PROTOCOL_ERROR, "8 bytes"),
    (lambda q: reply(q.replace(b"shop", b"shoq")), False, R.PROTOCOL_ERROR, "the question is not the one asked"),
    (lambda q: reply(q.replace(b"shop", b"SHOP")), True, None, "NOERROR"),
], ids=["three-records", "qr-clear", "other-id", "short", "other-question", "0x20-case-is-the-same-name"])
async def test_answers_judged_from_their_header(udp: Callable[[Answer], UDPServer], answer: Answer, ok: bool,
                                                reason: R | None, detail: str) -> None:
    server = udp(answer)
    result = await probe(f"dns://127.0.0.1:{server.port}", settings({"dns": {"name": "shop.example"}}))
    assert (result.success, result.reason) == (ok, reason), result
    assert detail in result.detail


async def test_a_truncated_answer_is_asked_again_over_tcp(udp: Callable[[Answer], UDPServer]) -> None:
    asked: list[bytes] = []

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            size = int.from_bytes(self.request.recv(2), "big")
            query = self.request.recv(size)
            asked.append(query)
            out = reply(query, records=2)
            self.request.sendall(len(out).to_bytes(2, "big") + out)

    server = udp(lambda q: reply(q, records=0, tc=True))
    tcp = socketserver.ThreadingTCPServer(("127.0.0.1", server.port), Handler)  # same port, as a name server
    tcp.daemon_threads = True
    threading.Thread(target=tcp.serve_forever, daemon=True).start()
    try:
        s = settings({"dns": {"name": "shop.example", "answerRegex": "10\\.96\\.4\\.2"}})
        result = await probe(f"dns://127.0.0.1:{server.port}", s)
        plain = await probe(f"dns://127.0.0.1:{server.port}", settings({"dns": {"name": "shop.example"}}))
    finally:
        tcp.shutdown()
        tcp.server_close()
    assert result.success and "10.96.4.2" in result.detail, result
    assert plain.success and plain.detail == "NOERROR, 2 answer record(s)", plain
    assert len(asked) == 2
