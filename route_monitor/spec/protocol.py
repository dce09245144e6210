"""``spec.probe.protocol`` and its settings (``grpc``, ``tcp``, ``dns``): what a probe speaks.

HTTP is the default and keeps every field of :mod:`route_monitor.spec.probe`. The other protocols
read the target's host and port the same way (a Route, a Service port, a URL such as
``tcp://redis.shop.svc:6379``) and add their own block:

- ``grpc: {service, tls}``: ``grpc.health.v1.Health/Check`` for ``service`` (empty: the server as
  a whole), over h2c or TLS; ``SERVING`` is success;
- ``tcp: {tls, steps: [{send}, {expect}]}``: connect (and TLS), then each step in order: a line
  to send, or a regular expression to wait for in what the server sent since the last match;
- ``dns: {name, type, server, validRcodes, answerRegex}``: one query; the target (or ``server``)
  is the name server.

Parsed once, at the boundary, into frozen dataclasses; every field error is kept in the
caller's :class:`~alert_rules.fielderrors.Collect`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from alert_rules.fielderrors import EMPTY, Collect, each, mapping
from alert_rules.model import InvalidSpec
from route_monitor.spec import bodyregex


class Protocol(enum.Enum):
    HTTP = "http"
    GRPC = "grpc"
    TCP = "tcp"
    DNS = "dns"


PROTOCOLS = tuple(p.value for p in Protocol)
DNS_TYPES = ("A", "AAAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT", "CAA")
DNS_RCODES = ("NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED")
_DNS_NAME = re.compile(r"^(?=.{1,253}\.?$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*"
                       r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.?$")
_GRPC_SERVICE = re.compile(r"^[A-Za-z0-9_.]{0,200}$")
MAX_SEND_BYTES = 4096


@dataclass(frozen=True)
class GRPCSettings:
    service: str = ""
    tls: bool = False


@dataclass(frozen=True)
class TCPStep:
    send: bytes | None = None
    expect: str | None = None


@dataclass(frozen=True)
class TCPSettings:
    tls: bool = False
    steps: tuple[TCPStep, ...] = ()


@dataclass(frozen=True)
class DNSSettings:
    name: str = "."
    type: str = "A"
    server: str = ""
    """``host:port`` of the name server; empty: the target's host and port."""
    valid_rcodes: tuple[str, ...] = ("NOERROR",)
    answer_regex: str | None = None


@dataclass(frozen=True)
class ProtocolSettings:
    protocol: Protocol = Protocol.HTTP
    grpc: GRPCSettings = GRPCSettings()
    tcp: TCPSettings = TCPSettings()
    dns: DNSSettings = DNSSettings()
    explicit: bool = False
    """``spec.probe.protocol`` was written (a Service's port does not choose it then)."""

    @property
    def uses_tls(self) -> bool:
        return (self.protocol is Protocol.GRPC and self.grpc.tls) or (self.protocol is Protocol.TCP and self.tcp.tls)


HTTP = ProtocolSettings()


def _string(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise InvalidSpec(field, value, "must be a string")
    return value


def _bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidSpec(field, value, "expected true or false")
    return value


def pattern_field(value: object, field: str) -> str:
    """A regular expression field (``bodyRegex``, ``expect``, ``answerRegex``) as the prober will compile it."""
    text = _string(value, field)
    try:
        bodyregex.compile_pattern(text)
    except bodyregex.PatternError as e:
        raise InvalidSpec(field, value, f"not a valid regular expression: {e}") from None
    return text


def _protocol(value: object, field: str) -> Protocol:
    try:
        return Protocol(value)
    except ValueError:
        raise InvalidSpec(field, value, f"expected one of {', '.join(PROTOCOLS)}") from None


def _grpc(value: object, field: str, c: Collect) -> GRPCSettings:
    g = c.get(lambda: mapping(value, field), EMPTY)
    service = c.get(lambda: _string(g.get("service", ""), f"{field}.service"), "")
    if service and not _GRPC_SERVICE.match(service):
        c.add(f"{field}.service", service, "a gRPC service name: letters, digits, '_' and '.', up to 200")
    return GRPCSettings(service=service, tls=c.get(lambda: _bool(g.get("tls", False), f"{field}.tls"), False))


def _step(item: object, field: str) -> TCPStep:
    if not isinstance(item, dict) or len(item) != 1 or not ({"send", "expect"} & set(item)):
        raise InvalidSpec(field, item, 'each step is one of {send: "text"} or {expect: "regular expression"}')
    if "send" in item:
        text = _string(item["send"], f"{field}.send")
        data = text.encode("utf-8")
        if not data or len(data) > MAX_SEND_BYTES:
            raise InvalidSpec(f"{field}.send", text, f"1 to {MAX_SEND_BYTES} bytes")
        return TCPStep(send=data)
    return TCPStep(expect=pattern_field(item["expect"], f"{field}.expect"))


def _tcp(value: object, field: str, c: Collect) -> TCPSettings:
    t = c.get(lambda: mapping(value, field), EMPTY)
    steps = t.get("steps", [])
    if not isinstance(steps, list):
        c.add(f"{field}.steps", steps, "expected a list of steps")
        steps = []
    return TCPSettings(tls=c.get(lambda: _bool(t.get("tls", False), f"{field}.tls"), False),
                       steps=c.get(lambda: each(steps, f"{field}.steps", _step), ()))


def _server(value: object, field: str) -> str:
    text = _string(value, field)
    try:
        parts = urlsplit(f"//{text}")
        port = parts.port
    except ValueError:
        port, parts = -1, urlsplit("//")
    if not parts.hostname or port == -1 or parts.path or parts.username is not None:
        raise InvalidSpec(field, value, "expected HOST or HOST:PORT (an IPv6 address in brackets)")
    return text


def _dns(value: object, field: str, c: Collect) -> DNSSettings:
    d = c.get(lambda: mapping(value, field), EMPTY)
    name = c.get(lambda: _string(d.get("name"), f"{field}.name"), ".")
    if name != "." and not _DNS_NAME.match(name):
        c.add(f"{field}.name", name, "not a DNS name")
    qtype = c.get(lambda: _string(d.get("type", "A"), f"{field}.type"), "A").upper()
    if qtype not in DNS_TYPES:
        c.add(f"{field}.type", d.get("type"), f"expected one of {', '.join(DNS_TYPES)}")
    rcodes = d.get("validRcodes", ["NOERROR"])

    def rcode(item: object, f: str) -> str:
        text = _string(item, f).upper()
        if text not in DNS_RCODES:
            raise InvalidSpec(f, item, f"expected one of {', '.join(DNS_RCODES)}")
        return text

    fallback: tuple[str, ...] = ("NOERROR",)
    valid = c.get(lambda: each(rcodes if isinstance(rcodes, list) else [rcodes], f"{field}.validRcodes", rcode),
                  fallback)
    regex = d.get("answerRegex")
    return DNSSettings(
        name=name, type=qtype,
        server=c.get(lambda: _server(d["server"], f"{field}.server"), "") if "server" in d else "",
        valid_rcodes=tuple(valid) or ("NOERROR",),
        answer_regex=c.get(lambda: pattern_field(regex, f"{field}.answerRegex"), None) if regex is not None else None,
    )


_BLOCKS = {Protocol.GRPC: "grpc", Protocol.TCP: "tcp", Protocol.DNS: "dns"}


def protocol_settings(p: Mapping[str, Any], field: str, c: Collect) -> ProtocolSettings:
    """The protocol part of ``spec.probe`` (``p``, a mapping already checked)."""
    blocks = [other for other, block in _BLOCKS.items() if block in p]
    implied = blocks[0].value if len(blocks) == 1 else "http"
    explicit = "protocol" in p or len(blocks) == 1  # a grpc, tcp or dns block alone says which
    protocol = c.get(lambda: _protocol(p.get("protocol", implied), f"{field}.protocol"), Protocol.HTTP)
    for other, block in _BLOCKS.items():
        if block in p and other is not protocol and not c.failed(f"{field}.protocol"):
            c.add(f"{field}.{block}", p[block], f"only with protocol: {other.value} (this probe is {protocol.value})")
    if protocol is Protocol.DNS and "dns" not in p:
        c.add(f"{field}.dns", None, "a DNS probe needs dns.name (the name to query)")
    return ProtocolSettings(
        protocol=protocol,
        grpc=_grpc(p["grpc"], f"{field}.grpc", c) if "grpc" in p else GRPCSettings(),
        tcp=_tcp(p["tcp"], f"{field}.tcp", c) if "tcp" in p else TCPSettings(),
        dns=_dns(p["dns"], f"{field}.dns", c) if "dns" in p else DNSSettings(),
        explicit=explicit,
    )


_SCHEMES = {Protocol.HTTP: ("http", "https"), Protocol.GRPC: ("grpc", "grpcs"), Protocol.TCP: ("tcp", "tls"),
            Protocol.DNS: ("dns",)}
_TLS_SCHEMES = {"grpcs": "grpc", "tls": "tcp"}


def url_scheme_problems(url: str, p: ProtocolSettings) -> list[str]:
    """Why a URL target does not fit the probe's protocol (its scheme, TLS, a port), or nothing."""
    scheme = url.partition("://")[0].lower()
    accepted = _SCHEMES[p.protocol]
    if scheme not in accepted:
        written = " or ".join(f"{s}://" for s in accepted)
        return [f"a {p.protocol.value} probe takes a {written} URL (spec.probe.protocol is {p.protocol.value})"]
    problems = []
    block = _TLS_SCHEMES.get(scheme)
    if block is not None and not p.uses_tls:
        problems.append(f"{scheme}:// is {block} over TLS: set spec.probe.{block}.tls: true, or write {block}://")
    if p.protocol is Protocol.TCP:
        try:
            port = urlsplit(url).port
        except ValueError:
            port = 0
        if port is None:
            problems.append(f"a {scheme}:// URL needs its port (tcp://HOST:PORT)")
    return problems


_APP_PROTOCOLS = {"kubernetes.io/h2c": Protocol.GRPC, "grpc": Protocol.GRPC, "http": Protocol.HTTP,
                  "https": Protocol.HTTP, "kubernetes.io/ws": Protocol.HTTP, "kubernetes.io/wss": Protocol.HTTP,
                  "tcp": Protocol.TCP, "tls": Protocol.TCP}
_NAME_PREFIXES = {"grpc": Protocol.GRPC, "http": Protocol.HTTP, "https": Protocol.HTTP, "tcp": Protocol.TCP,
                  "tls": Protocol.TCP, "dns": Protocol.DNS}
_DISCOVERED_DNS = DNSSettings(name=".", type="NS")
"""A DNS Service found by its port name, without ``spec.probe.dns``: the root's name servers
(any resolver answers it; write ``spec.probe.dns`` to query a name of your own)."""


def from_port(port: Mapping[str, Any]) -> tuple[ProtocolSettings, str] | None:
    """The protocol a Service port declares (its ``appProtocol``, else its name's prefix, as service
    meshes read them) and why (``from the Service's port name tls-redis``), or None when it
    declares none we know (HTTP, as before)."""
    app = str(port.get("appProtocol") or "").lower()
    name = str(port.get("name") or "").lower()
    if app in _APP_PROTOCOLS:
        protocol, why, tls = _APP_PROTOCOLS[app], f"appProtocol {app}", app == "tls"
    else:
        prefix = name.split("-", 1)[0] if "-" in name else name
        if prefix not in _NAME_PREFIXES:
            return None
        protocol, why, tls = _NAME_PREFIXES[prefix], f"port name {name}", prefix == "tls"
    settings = HTTP if protocol is Protocol.HTTP else ProtocolSettings(protocol=protocol, tcp=TCPSettings(tls=tls),
                                                                       dns=_DISCOVERED_DNS)
    return settings, f"from the Service's {why}"


def discovered(p: ProtocolSettings, found: ProtocolSettings | None) -> ProtocolSettings:
    """The protocol a probe speaks: the spec's when it names one (``protocol``, or a ``grpc``,
    ``tcp`` or ``dns`` block), else the one the target declares, else HTTP."""
    return p if p.explicit or found is None else found


def describe(p: ProtocolSettings, found: tuple[ProtocolSettings, str] | None = None) -> str:
    """What a probe speaks and why, in words (``check``): ``grpc (spec.probe)``, ``tcp over TLS,
    from the Service's port name tls-redis``, ``http (from the Service's port name http)``,
    ``http (default)``; ``found``: what the target declares and why (:func:`from_port`)."""
    chosen = discovered(p, found[0] if found else None)
    tls = " over TLS" if chosen.uses_tls else ""
    if p.explicit:
        return f"{chosen.protocol.value}{tls} (spec.probe)"
    if found is None:
        return f"{chosen.protocol.value} (default)"
    declared, why = found
    return f"http ({why})" if declared.protocol is Protocol.HTTP else f"{declared.protocol.value}, {why}{tls}"


def probed_url(url: str, p: ProtocolSettings, found: tuple[ProtocolSettings, str] | None) -> str:
    """The URL a probe goes to: the target's ``url`` in the scheme of the protocol the probe
    speaks (:func:`discovered`), which is what the status and ``route_monitor_target_info`` show."""
    return url_for(url, discovered(p, found[0] if found else None))


def url_for(url: str, p: ProtocolSettings) -> str:
    """``url`` with the scheme of the protocol a probe speaks (a Service's URL is written in the
    protocol its port declares; a spec that names another one wins): ``grpc://`` or ``grpcs://``,
    ``tcp://`` or ``tls://``, ``dns://``, and for HTTP the URL's own ``http(s)://`` (``https``
    for a ``grpcs``/``tls`` one)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    if p.protocol is Protocol.HTTP:
        wanted = scheme if scheme in ("http", "https") else ("https" if scheme in _TLS_SCHEMES else "http")
    elif p.protocol is Protocol.DNS:
        wanted = "dns"
    else:
        plain, secure = _SCHEMES[p.protocol]
        wanted = secure if p.uses_tls else plain
    return url if wanted == scheme else f"{wanted}://{rest}"
