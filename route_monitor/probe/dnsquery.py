"""A DNS probe: one query to a name server, judged like blackbox_exporter's ``dns`` module.

The query is encoded once per monitor (:func:`query_wire`, dnspython) and each probe only
patches its 16-bit id; it goes over UDP on a connected socket of its own, and over TCP
(dnspython) when the answer is truncated. Success is an answer whose rcode is one of
``validRcodes`` (default ``NOERROR``) and, with ``answerRegex``, at least one answer record
whose text (``name TTL IN TYPE data``, as ``dig`` prints it) matches. Otherwise:

- ``dns_rcode``: the rcode is not accepted (``NXDOMAIN``, ``SERVFAIL``, ``REFUSED``...);
- ``dns_answer_mismatch``: no answer record matches ``answerRegex`` (or there is none);
- ``timeout``: the server did not answer by the deadline; ``connection_refused``: it is not
  listening (ICMP port unreachable); ``protocol_error``: what came back is not an answer to
  the query (too short, not a response, another id, opcode or question).

Without ``answerRegex`` the verdict needs only the 12-byte header (rcode, answer count) and the
echoed question, so the records are not parsed (most of the cost of a probe, measured: see
``benchmarks/RESULTS-protocols.md``); with it, the answer is parsed by dnspython.

The server is named by an IP address, or by a host name resolved through the prober's own
resolver (and its forbidden-address check) like any target.
"""

from __future__ import annotations

import asyncio
import random
import socket

import dns.asyncquery
import dns.exception
import dns.message
import dns.rcode
import dns.rdatatype

from route_monitor.probe.net.connect import Progress, resolve
from route_monitor.probe.reasons import Phase, ProbeFailure, ProtocolError
from route_monitor.probe.result import FailureReason
from route_monitor.spec.bodyregex import BodyRegex, MatchTimeout
from route_monitor.spec.protocol import DNSSettings

_MARGIN_S = 0.02
_HEADER = 12
_QR, _TC = 0x8000, 0x0200
_NO_QUESTION_OK = frozenset({dns.rcode.FORMERR, dns.rcode.SERVFAIL, dns.rcode.NOTIMP, dns.rcode.REFUSED})
"""Rcodes whose answer may leave the question out (as dnspython's ``is_response`` accepts)."""
_ids = random.SystemRandom()
_RCODES = tuple(dns.rcode.to_text(dns.rcode.Rcode(i)) for i in range(16))


def query_wire(settings: DNSSettings) -> bytes:
    """The query a monitor sends, encoded once (id 0: each probe patches its own in)."""
    q = dns.message.make_query(settings.name, dns.rdatatype.from_text(settings.type))
    q.id = 0
    return q.to_wire()


def _answer_header(query: bytes, answer: bytes) -> tuple[int, int, bool]:
    """(rcode, answer count, truncated) of ``answer`` once it is known to answer ``query``."""
    if len(answer) < _HEADER:
        raise ProtocolError(f"not a DNS answer: {len(answer)} bytes")
    flags = int.from_bytes(answer[2:4], "big")
    if not flags & _QR or answer[:2] != query[:2] or (flags ^ int.from_bytes(query[2:4], "big")) & 0x7800:
        raise ProtocolError("not a DNS answer: not a response to the query (QR, id or opcode)")
    rcode, qdcount = flags & 0xF, int.from_bytes(answer[4:6], "big")
    question = query[_HEADER:]
    if not (qdcount == 0 and rcode in _NO_QUESTION_OK):
        echoed = answer[_HEADER:_HEADER + len(question)]
        if qdcount != 1 or echoed[:-4].lower() != question[:-4].lower() or echoed[-4:] != question[-4:]:
            raise ProtocolError("not a DNS answer: the question is not the one asked")
    return rcode, int.from_bytes(answer[6:8], "big"), bool(flags & _TC)


async def _udp(address: str, port: int, query: bytes) -> bytes:
    loop = asyncio.get_running_loop()
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        sock.connect((address, port))  # only this server's datagrams; its ICMP unreachable: refused
        await loop.sock_sendall(sock, query)
        return await loop.sock_recv(sock, 65535)


async def query(host: str, port: int, settings: DNSSettings, regex: BodyRegex | None, progress: Progress,
                wire: bytes) -> str:
    """Ask ``host:port`` the query ``wire`` (:func:`query_wire`); the detail of a success, else
    :class:`ProbeFailure` (or the socket's error)."""
    progress.phase = Phase.DNS
    address = (await resolve(host))[0]
    progress.phase = Phase.HTTP  # "waiting for the response"
    progress.address = address
    asked = _ids.getrandbits(16).to_bytes(2, "big") + wire[2:]
    answer = await _udp(address, port, asked)
    rcode_value, count, truncated = _answer_header(asked, answer)
    parsed: dns.message.Message | None = None
    if truncated or regex is not None:
        parsed = await _full(address, port, asked, answer, truncated, progress)
        rcode_value = parsed.rcode()
    rcode = _RCODES[rcode_value] if rcode_value < len(_RCODES) else dns.rcode.to_text(dns.rcode.Rcode(rcode_value))
    if rcode not in settings.valid_rcodes:
        raise ProbeFailure(FailureReason.DNS_RCODE, f"{rcode} for {settings.name} {settings.type} "
                           f"(accepted: {', '.join(settings.valid_rcodes)})")
    if parsed is None:
        return f"{rcode}, {count} answer record(s)"
    records = [line for rrset in parsed.answer for line in rrset.to_text().splitlines()]
    if regex is None:
        return f"{rcode}, {len(records)} answer record(s)"
    progress.matching = regex.timeout_detail(sum(map(len, records)))
    try:
        for line in records:
            if await regex.search(line, progress.deadline - _MARGIN_S):
                progress.matching = ""
                return f"{rcode}, {line[:200]}"
    except MatchTimeout as e:
        raise ProbeFailure(FailureReason.DNS_ANSWER_MISMATCH, str(e)) from None
    progress.matching = ""
    shown = "; ".join(records[:3])[:200] or "no answer records"
    raise ProbeFailure(FailureReason.DNS_ANSWER_MISMATCH, f"no answer record matches /{regex.pattern[:100]}/ ({shown})")


async def _full(address: str, port: int, asked: bytes, answer: bytes, truncated: bool,
                progress: Progress) -> dns.message.Message:
    """The whole answer, parsed: asked again over TCP when the UDP one was truncated."""
    try:
        q = dns.message.from_wire(asked)
        if truncated:
            budget = max(0.001, progress.deadline - asyncio.get_running_loop().time())
            return await dns.asyncquery.tcp(q, address, timeout=budget, port=port)
        return dns.message.from_wire(answer)
    except dns.exception.Timeout:
        raise TimeoutError from None
    except (dns.exception.FormError, dns.message.BadEDNS, dns.exception.SyntaxError, ValueError) as e:
        raise ProtocolError(f"not a DNS answer: {e}") from None
