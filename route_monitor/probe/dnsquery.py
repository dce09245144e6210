"""A DNS probe: one query to a name server, judged like blackbox_exporter's ``dns`` module.

The query goes over UDP and is retried over TCP when the answer is truncated (dnspython's
``udp_with_fallback``). Success is an answer whose rcode is one of ``validRcodes`` (default
``NOERROR``) and, with ``answerRegex``, at least one answer record whose text
(``name TTL IN TYPE data``, as ``dig`` prints it) matches. Otherwise:

- ``dns_rcode``: the rcode is not accepted (``NXDOMAIN``, ``SERVFAIL``, ``REFUSED``...);
- ``dns_answer_mismatch``: no answer record matches ``answerRegex`` (or there is none);
- ``timeout``: the server did not answer by the deadline; ``connection_refused``: it is not
  listening (ICMP port unreachable); ``protocol_error``: what came back is not a DNS answer.

The server is named by an IP address, or by a host name resolved through the prober's own
resolver (and its forbidden-address check) like any target.
"""

from __future__ import annotations

import asyncio

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


def make_query(settings: DNSSettings) -> dns.message.QueryMessage:
    """The query a probe sends (a fresh id each probe: :func:`query` copies it)."""
    return dns.message.make_query(settings.name, dns.rdatatype.from_text(settings.type))


async def query(host: str, port: int, settings: DNSSettings, regex: BodyRegex | None, progress: Progress) -> str:
    """Ask ``host:port``; the detail of a success, else :class:`ProbeFailure` (or the socket's error)."""
    progress.phase = Phase.DNS
    address = (await resolve(host))[0]
    progress.phase = Phase.HTTP  # "waiting for the response"
    progress.address = address
    q = make_query(settings)
    budget = max(0.001, progress.deadline - asyncio.get_running_loop().time())
    try:
        answer, _ = await dns.asyncquery.udp_with_fallback(q, address, timeout=budget, port=port)
    except dns.exception.Timeout:
        raise TimeoutError from None
    except (dns.exception.FormError, dns.message.BadEDNS, dns.exception.SyntaxError, ValueError) as e:
        raise ProtocolError(f"not a DNS answer: {e}") from None
    rcode = dns.rcode.to_text(answer.rcode())
    if rcode not in settings.valid_rcodes:
        raise ProbeFailure(FailureReason.DNS_RCODE, f"{rcode} for {settings.name} {settings.type} "
                           f"(accepted: {', '.join(settings.valid_rcodes)})")
    records = [line for rrset in answer.answer for line in rrset.to_text().splitlines()]
    if regex is not None:
        progress.matching = regex.timeout_detail(sum(map(len, records)))
        try:
            for line in records:
                if await regex.search(line, progress.deadline - _MARGIN_S) is not None:
                    progress.matching = ""
                    return f"{rcode}, {line[:200]}"
        except MatchTimeout as e:
            raise ProbeFailure(FailureReason.DNS_ANSWER_MISMATCH, str(e)) from None
        progress.matching = ""
        shown = "; ".join(records[:3])[:200] or "no answer records"
        raise ProbeFailure(FailureReason.DNS_ANSWER_MISMATCH,
                           f"no answer record matches /{regex.pattern[:100]}/ ({shown})")
    return f"{rcode}, {len(records)} answer record(s)"
