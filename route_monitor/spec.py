"""Parse a RouteMonitor manifest (Contract 2) into frozen dataclasses, once, at the boundary.

Every invalid value raises :class:`alert_rules.model.InvalidSpec` naming the field path, the
value and what is accepted. Defaults live here and nowhere else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from alert_rules import names
from alert_rules.model import (
    Alerting,
    InvalidSpec,
    LatencyObjective,
    MonitorSLO,
    Objective,
    parse_duration_ms,
    parse_percent,
)
from route_monitor import bodyregex, urls
from route_monitor.maintenance import Window, annotation_windows, parse_instant, parse_windows
from route_monitor.requestspec import RequestOptions, parse_request

METHODS = ("GET", "HEAD", "POST", "OPTIONS")
DEFAULT_INTERVAL_MS = 30_000
DEFAULT_TIMEOUT_MS = 10_000
DEFAULT_MAX_REDIRECTS = 10
DEFAULT_MAX_BODY_BYTES = 1 << 20
DEFAULT_WARMUP_MS = 600_000
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_STATUS = re.compile(r"^([1-5])xx$|^(\d{3})(?:-(\d{3}))?$")


@dataclass(frozen=True)
class RouteRef:
    """An OpenShift Route in the monitor's namespace."""

    name: str
    kind: ClassVar[Literal["route"]] = "route"
    field: ClassVar[str] = "route"
    """The key under ``spec.target``."""


@dataclass(frozen=True)
class ServiceRef:
    """A Service in the monitor's namespace, probed through its cluster DNS name."""

    name: str
    port: str = ""
    """Port name or number; empty means the first port."""
    scheme: str = ""
    """``http`` or ``https``; empty means by port (443/8443/https-named -> https)."""
    kind: ClassVar[Literal["service"]] = "service"
    field: ClassVar[str] = "service"


@dataclass(frozen=True)
class IngressRef:
    """A ``networking.k8s.io/v1`` Ingress in the monitor's namespace."""

    name: str
    host: str = ""
    """One of the Ingress's hosts; empty means its first non-wildcard host."""
    kind: ClassVar[Literal["ingress"]] = "ingress"
    field: ClassVar[str] = "ingress"


@dataclass(frozen=True)
class HTTPRouteRef:
    """A ``gateway.networking.k8s.io/v1`` HTTPRoute in the monitor's namespace."""

    name: str
    host: str = ""
    """One of the HTTPRoute's hostnames; empty means its first non-wildcard hostname."""
    kind: ClassVar[Literal["httproute"]] = "httproute"
    field: ClassVar[str] = "httpRoute"


@dataclass(frozen=True)
class UrlTarget:
    """An absolute URL (standalone always; the operator only with ``--allow-url-targets``)."""

    url: str
    kind: ClassVar[Literal["url"]] = "url"
    field: ClassVar[str] = "url"


SourceRef = RouteRef | ServiceRef | IngressRef | HTTPRouteRef
"""A target that names an object in the monitor's namespace."""
Target = SourceRef | UrlTarget
TargetKind = Literal["route", "service", "ingress", "httproute", "url"]
_REFS: tuple[type[RouteRef] | type[ServiceRef] | type[IngressRef] | type[HTTPRouteRef], ...] = (
    RouteRef, ServiceRef, IngressRef, HTTPRouteRef)
_REF_WHAT = {"route": "Route", "service": "Service", "ingress": "Ingress", "httproute": "HTTPRoute"}
TARGET_FIELDS = (*(r.field for r in _REFS), UrlTarget.field)
"""The keys of ``spec.target``, exactly one of which is set."""


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
    """Headers, auth and TLS references (Contract 8, ``route_monitor.requestspec``)."""
    warmup_ms: int = DEFAULT_WARMUP_MS
    """Contract 9: after creation or a URL change, results are excluded until the first success or
    until this has passed; 0 turns warm-up off."""

    def status_ok(self, status: int) -> bool:
        return any(lo <= status <= hi for lo, hi in self.expected_status)


@dataclass(frozen=True)
class MonitorSpec:
    namespace: str
    name: str
    target: Target
    path: str | None = None
    """Path to probe; None means the Route's ``spec.path`` (else ``/``)."""
    probe: ProbeSettings = field(default_factory=ProbeSettings)
    objective: Objective = field(default_factory=lambda: Objective(availability=parse_percent("99.9", "")))
    alerting: Alerting = field(default_factory=Alerting)
    maintenance: tuple[Window, ...] = ()
    """Contract 9: windows whose probe results are excluded from the SLI."""
    paused: bool = False
    """Contract 9: every result is excluded (``spec.paused`` or ``routemonitor.io/paused: "true"``)."""
    created: float | None = None
    """``metadata.creationTimestamp`` (epoch seconds) when known: warm-up counts from it."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def slo(self) -> MonitorSLO:
        return MonitorSLO(namespace=self.namespace, name=self.name, objective=self.objective,
                          interval_ms=self.probe.interval_ms, alerting=self.alerting)


def _map(value: object, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidSpec(field, value, "expected a mapping")
    return value


def _str_map(value: object, field: str) -> tuple[tuple[str, str], ...]:
    m = _map(value, field)
    for k, v in m.items():
        if not isinstance(v, str):
            raise InvalidSpec(f"{field}.{k}", v, "expected a string value")
    return tuple(sorted((str(k), v) for k, v in m.items()))


def _bool(value: object, field: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidSpec(field, value, "expected true or false")
    return value


def parse_status_ranges(value: object, field: str) -> tuple[tuple[int, int], ...]:
    """``["200-399", "404", "5xx"]`` -> inclusive ranges."""
    items = value if isinstance(value, list) else [value]
    out = []
    for i, item in enumerate(items):
        m = _STATUS.match(str(item).strip())
        if not m:
            raise InvalidSpec(f"{field}[{i}]", item, 'expected a status, a range or a class: "200", "200-399", "2xx"')
        if m.group(1):
            lo, hi = int(m.group(1)) * 100, int(m.group(1)) * 100 + 99
        else:
            lo = int(m.group(2))
            hi = int(m.group(3) or lo)
        if not (100 <= lo <= hi <= 599):
            raise InvalidSpec(f"{field}[{i}]", item, "statuses are 100-599, low before high")
        out.append((lo, hi))
    if not out:
        raise InvalidSpec(field, value, "at least one expected status is needed")
    return tuple(out)


def parse_target(value: object, field: str = "spec.target") -> Target:
    t = _map(value, field)
    present = [k for k in TARGET_FIELDS if t.get(k) is not None]
    if len(present) != 1:
        *head, last = TARGET_FIELDS
        raise InvalidSpec(field, value, f"exactly one of {', '.join(head)} or {last} is required")
    key = present[0]
    if key == UrlTarget.field:
        url = t[key]
        if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
            raise InvalidSpec(f"{field}.url", urls.redact(url) if isinstance(url, str) else url,
                              "expected an absolute http:// or https:// URL")
        problem = urls.url_problem(url)
        if problem is not None:
            raise InvalidSpec(f"{field}.url", urls.redact(url), problem)
        return UrlTarget(url=url)
    cls = next(r for r in _REFS if r.field == key)
    ref = _map(t[key], f"{field}.{key}")
    name = ref.get("name")
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        raise InvalidSpec(f"{field}.{key}.name", name,
                          f"expected the name of a {_REF_WHAT[cls.kind]} in the same namespace")
    if cls is RouteRef:
        return RouteRef(name=name)
    if cls is ServiceRef:
        port = ref.get("port", "")
        scheme = ref.get("scheme", "")
        if scheme not in ("", "http", "https"):
            raise InvalidSpec(f"{field}.service.scheme", scheme, "expected http or https")
        numeric = isinstance(port, int) or (isinstance(port, str) and port.isdigit())
        if numeric and not 1 <= int(port) <= 65535:
            raise InvalidSpec(f"{field}.service.port", port, "expected a port name or a number from 1 to 65535")
        return ServiceRef(name=name, port=str(port) if port != "" else "", scheme=scheme)
    host = ref.get("host", "")
    if not isinstance(host, str) or (host and not _HOSTNAME.match(host)):
        raise InvalidSpec(f"{field}.{key}.host", host, "expected a DNS name without wildcard, e.g. shop.example.com")
    return IngressRef(name=name, host=host) if cls is IngressRef else HTTPRouteRef(name=name, host=host)


def parse_probe(value: object, field: str = "spec.probe") -> ProbeSettings:
    p = _map(value, field)
    interval = parse_duration_ms(p.get("interval", "30s"), f"{field}.interval")
    if interval < 1000:
        raise InvalidSpec(f"{field}.interval", p.get("interval"), "must be at least 1s")
    if "timeout" in p:
        timeout = parse_duration_ms(p["timeout"], f"{field}.timeout")
    else:
        timeout = min(DEFAULT_TIMEOUT_MS, interval * 4 // 5)
    if timeout >= interval:
        raise InvalidSpec(f"{field}.timeout", p.get("timeout"),
                          f"must be shorter than the interval ({p.get('interval', '30s')})")
    method = str(p.get("method", "GET")).upper()
    if method not in METHODS:
        raise InvalidSpec(f"{field}.method", p.get("method"), f"expected one of {', '.join(METHODS)}")
    body_regex = p.get("bodyRegex")
    if body_regex is not None:
        if not isinstance(body_regex, str):
            raise InvalidSpec(f"{field}.bodyRegex", body_regex, "must be a string")
        try:
            bodyregex.compile_pattern(body_regex)
        except bodyregex.PatternError as e:
            raise InvalidSpec(f"{field}.bodyRegex", body_regex, f"not a valid regular expression: {e}") from None
        if method == "HEAD":
            raise InvalidSpec(f"{field}.bodyRegex", body_regex, "a HEAD response has no body to match")
    tls = _map(p.get("tls"), f"{field}.tls")
    warmup = p.get("warmup")
    off = isinstance(warmup, str) and re.fullmatch(r"0+(ms|[smhdwy])?", warmup) is not None
    warmup_ms = DEFAULT_WARMUP_MS if warmup is None else 0 if off else parse_duration_ms(warmup, f"{field}.warmup")
    return ProbeSettings(
        interval_ms=interval,
        timeout_ms=timeout,
        method=method,
        expected_status=parse_status_ranges(p.get("expectedStatus", ["200-399"]), f"{field}.expectedStatus"),
        body_regex=None if body_regex is None else str(body_regex),
        insecure_skip_verify=_bool(tls.get("insecureSkipVerify"), f"{field}.tls.insecureSkipVerify", False),
        request=parse_request(p, field),
        warmup_ms=warmup_ms,
    )


def parse_objective(value: object, field: str = "spec.slo") -> Objective:
    s = _map(value, field)
    if "availability" not in s:
        raise InvalidSpec(f"{field}.availability", None, 'required: a percent, e.g. "99.9"')
    availability = parse_percent(s["availability"], f"{field}.availability")
    period = parse_duration_ms(s.get("period", "30d"), f"{field}.period")
    latency = None
    if s.get("latency") is not None:
        lat = _map(s["latency"], f"{field}.latency")
        for k in ("threshold", "objective"):
            if k not in lat:
                raise InvalidSpec(f"{field}.latency.{k}", None, "required when a latency SLO is set")
        latency = LatencyObjective(
            threshold_ms=parse_duration_ms(lat["threshold"], f"{field}.latency.threshold"),
            objective=parse_percent(lat["objective"], f"{field}.latency.objective"),
        )
    return Objective(availability=availability, period_ms=period, latency=latency)


def parse_alerting(value: object, field: str = "spec.alerting") -> Alerting:
    a = _map(value, field)
    return Alerting(
        page=_bool(a.get("page"), f"{field}.page", True),
        ticket=_bool(a.get("ticket"), f"{field}.ticket", True),
        labels=_str_map(a.get("labels"), f"{field}.labels"),
        annotations=_str_map(a.get("annotations"), f"{field}.annotations"),
    )


def parse_routemonitor(obj: Mapping[str, Any], *, default_namespace: str = "default") -> MonitorSpec:
    """Parse a whole RouteMonitor object (``apiVersion``/``kind``/``metadata``/``spec``)."""
    meta = _map(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidSpec("metadata.name", name, "a RouteMonitor needs a name")
    if len(name) > 253 or not _HOSTNAME.match(name):
        raise InvalidSpec("metadata.name", name, "expected a Kubernetes name: lowercase letters, digits, '-' and "
                          "'.', at most 253 characters (it names files, rules and metric labels)")
    namespace = meta.get("namespace") or default_namespace
    if not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise InvalidSpec("metadata.namespace", namespace, "expected a Kubernetes namespace: lowercase letters, "
                          "digits and '-', at most 63 characters")
    spec = _map(obj.get("spec"), "spec")
    path = spec.get("path")
    if path is not None and (not isinstance(path, str) or not path.startswith("/")):
        raise InvalidSpec("spec.path", path, "expected an absolute path starting with /")
    probe = parse_probe(spec.get("probe"))
    objective = parse_objective(spec.get("slo"))
    if objective.latency and objective.latency.threshold_ms > probe.timeout_ms:
        raise InvalidSpec("spec.slo.latency.threshold", objective.latency.threshold_ms,
                          f"must not exceed the probe timeout ({probe.timeout_ms}ms)")
    windows, paused = _maintenance(spec, _map(meta.get("annotations"), "metadata.annotations"))
    created = meta.get("creationTimestamp")
    return MonitorSpec(
        namespace=str(namespace), name=name, target=parse_target(spec.get("target")), path=path,
        probe=probe, objective=objective, alerting=parse_alerting(spec.get("alerting")),
        maintenance=windows, paused=paused,
        created=None if created is None else parse_instant(created, "metadata.creationTimestamp"),
    )


def _maintenance(spec: Mapping[str, Any], annotations: Mapping[str, Any]) -> tuple[tuple[Window, ...], bool]:
    """``spec.maintenance`` and ``spec.paused``, plus the RouteMonitor's own Contract 9 annotations."""
    windows = parse_windows(spec.get("maintenance"))
    if names.ANN_MAINTENANCE in annotations:
        windows += annotation_windows(annotations[names.ANN_MAINTENANCE],
                                      f"metadata.annotations[{names.ANN_MAINTENANCE}]")
    paused = _bool(spec.get("paused"), "spec.paused", False)
    if names.ANN_PAUSED in annotations:
        paused = paused or parse_paused(annotations[names.ANN_PAUSED], f"metadata.annotations[{names.ANN_PAUSED}]")
    return windows, paused


def parse_paused(value: object, field: str) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidSpec(field, value, 'expected "true" or "false"')
    return text == "true"


def is_routemonitor(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == names.KIND and str(obj.get("apiVersion", "")).startswith(names.GROUP + "/")
