"""``spec.probe`` of a RouteMonitor (Contract 2): how and how often a target is probed.

Parsed once, at the boundary, into :class:`ProbeSettings`; every field error of ``spec.probe``
is reported at once, and a check that depends on a field in error (timeout against interval,
``bodyRegex`` against ``HEAD``) is skipped. Request settings (headers, auth, TLS references)
are :mod:`route_monitor.spec.request`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from alert_rules.fielderrors import EMPTY, Collect, each, mapping
from alert_rules.model import InvalidSpec, parse_duration_ms
from route_monitor.spec.protocol import HTTP, Protocol, ProtocolSettings, pattern_field, protocol_settings
from route_monitor.spec.request import RequestOptions, parse_request
from route_monitor.spec.vantages import ONE, Vantages, vantages_settings

METHODS = ("GET", "HEAD", "POST", "OPTIONS")
DEFAULT_INTERVAL_MS = 30_000
DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_MAX_REDIRECTS = 10
DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_WARMUP_MS = 600_000
_STATUS = re.compile(r"^([1-5])xx$|^(\d{3})(?:-(\d{3}))?$")
"""A fallback for a mapping in error: the parser goes on with it and raises before returning."""


@dataclass(frozen=True)
class ProbeSettings:
    interval_ms: int = DEFAULT_INTERVAL_MS
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    method: str = "GET"
    expected_status: tuple[tuple[int, int], ...] = ((200, 399),)
    """Inclusive status ranges that count as success."""
    body_regex: str | None = None
    insecure_skip_verify: bool = False
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    request: RequestOptions = field(default_factory=RequestOptions)
    """Headers, auth and TLS references (Contract 8, ``route_monitor.spec.request``)."""
    warmup_ms: int = DEFAULT_WARMUP_MS
    """Contract 9: after creation or a URL change, results are excluded until the first success or
    until this has passed; 0 turns warm-up off."""

    protocol: ProtocolSettings = HTTP
    """``spec.probe.protocol`` and its block (:mod:`route_monitor.spec.protocol`)."""
    vantages: Vantages = ONE
    """``spec.probe.vantages`` and ``quorum`` (:mod:`route_monitor.spec.vantages`)."""

    def status_ok(self, status: int) -> bool:
        return any(lo <= status <= hi for lo, hi in self.expected_status)


def boolean(value: object, field: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidSpec(field, value, "expected true or false")
    return value


def _status_range(item: object, field: str) -> tuple[int, int]:
    m = _STATUS.match(str(item).strip())
    if not m:
        raise InvalidSpec(field, item, 'expected a status, a range or a class: "200", "200-399", "2xx"')
    if m.group(1):
        lo, hi = int(m.group(1)) * 100, int(m.group(1)) * 100 + 99
    else:
        lo = int(m.group(2))
        hi = int(m.group(3) or lo)
    if not (100 <= lo <= hi <= 599):
        raise InvalidSpec(field, item, "statuses are 100-599, low before high")
    return lo, hi


def parse_status_ranges(value: object, field: str) -> tuple[tuple[int, int], ...]:
    """``["200-399", "404", "5xx"]`` -> inclusive ranges; every bad item is reported."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise InvalidSpec(field, value, "at least one expected status is needed")
    return each(items, field, _status_range)


def _interval(value: object, field: str) -> int:
    interval = parse_duration_ms(value, field)
    if interval < 1000:
        raise InvalidSpec(field, value, "must be at least 1s")
    return interval


def _method(value: object, field: str) -> str:
    method = str(value).upper()
    if method not in METHODS:
        raise InvalidSpec(field, value, f"expected one of {', '.join(METHODS)}")
    return method


def _body_regex(value: object, field: str) -> str | None:
    return None if value is None else pattern_field(value, field)


def _warmup(value: object, field: str) -> int:
    if value is None:
        return DEFAULT_WARMUP_MS
    if isinstance(value, str) and re.fullmatch(r"0+(ms|[smhdwy])?", value) is not None:
        return 0
    return parse_duration_ms(value, field)


_HTTP_ONLY_NOT_GRPC = ("method", "expectedStatus", "bodyRegex")
_HTTP_ONLY = (*_HTTP_ONLY_NOT_GRPC, "headers", "auth")
"""``spec.probe`` fields an HTTP probe has and the others do not (a gRPC probe sends headers and
auth as metadata)."""


def probe_settings(value: object, field: str, c: Collect) -> ProbeSettings:
    """``spec.probe`` with every field error kept in ``c`` (the settings returned then hold
    fallbacks, never used: ``c.done()`` raises)."""
    p = c.get(lambda: mapping(value, field), EMPTY)
    interval = c.get(lambda: _interval(p.get("interval", "30s"), f"{field}.interval"), DEFAULT_INTERVAL_MS)
    if "timeout" in p:
        timeout = c.get(lambda: parse_duration_ms(p["timeout"], f"{field}.timeout"), DEFAULT_TIMEOUT_MS)
    else:
        timeout = min(DEFAULT_TIMEOUT_MS, interval * 4 // 5)
    if timeout >= interval and not c.failed(f"{field}.interval", f"{field}.timeout"):
        c.add(f"{field}.timeout", p.get("timeout"), f"must be shorter than the interval ({p.get('interval', '30s')})")
    method = c.get(lambda: _method(p.get("method", "GET"), f"{field}.method"), "")
    body_regex = c.get(lambda: _body_regex(p.get("bodyRegex"), f"{field}.bodyRegex"), None)
    if body_regex is not None and method == "HEAD":
        c.add(f"{field}.bodyRegex", body_regex, "a HEAD response has no body to match")
    tls = c.get(lambda: mapping(p.get("tls"), f"{field}.tls"), EMPTY)
    protocol = protocol_settings(p, field, c)
    if protocol.protocol is not Protocol.HTTP:
        for name in _HTTP_ONLY if protocol.protocol is not Protocol.GRPC else _HTTP_ONLY_NOT_GRPC:
            if name in p:
                c.add(f"{field}.{name}", p[name], f"applies to HTTP probes only (this probe is "
                      f"{protocol.protocol.value})")
    return ProbeSettings(
        protocol=protocol,
        interval_ms=interval,
        timeout_ms=timeout,
        method=method,
        expected_status=c.get(lambda: parse_status_ranges(p.get("expectedStatus", ["200-399"]),
                                                          f"{field}.expectedStatus"), ((200, 399),)),
        body_regex=body_regex,
        insecure_skip_verify=c.get(lambda: boolean(tls.get("insecureSkipVerify"), f"{field}.tls.insecureSkipVerify",
                                                 False), False),
        request=c.get(lambda: parse_request(p, field), RequestOptions()),
        warmup_ms=c.get(lambda: _warmup(p.get("warmup"), f"{field}.warmup"), DEFAULT_WARMUP_MS),
        vantages=vantages_settings(p, field, c),
    )
