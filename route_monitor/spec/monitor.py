"""Parse a RouteMonitor manifest (Contract 2) into frozen dataclasses, once, at the boundary.

An invalid object raises one :class:`alert_rules.model.InvalidSpec` carrying every field error
it has (each naming the field path, the value and what is accepted), so a user fixes them all
in one round; a check that depends on a field in error is skipped (``alert_rules.fielderrors``).
Defaults live here and nowhere else (``spec.probe``'s in :mod:`route_monitor.spec.probe`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Literal, TypeVar

from alert_rules import names
from alert_rules.fielderrors import EMPTY, Collect, collecting, echo, mapping
from alert_rules.model import (
    DEFAULT_EVALUATION_MS,
    DEFAULT_PERIOD_MS,
    Alerting,
    InvalidSpec,
    LatencyObjective,
    MonitorSLO,
    Objective,
    parse_duration_ms,
    parse_percent,
)
from alert_rules.tiles import DEFAULT_TILE_MS
from route_monitor.spec import paths as paths_mod
from route_monitor.spec import urls
from route_monitor.spec.maintenance import Window, annotation_windows, parse_instant, parse_windows
from route_monitor.spec.probe import DEFAULT_WARMUP_MS as DEFAULT_WARMUP_MS
from route_monitor.spec.probe import ProbeSettings as ProbeSettings
from route_monitor.spec.probe import boolean, probe_settings
from route_monitor.spec.protocol import url_scheme_problems

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_HOSTNAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
class GRPCRouteRef:
    """A ``gateway.networking.k8s.io/v1`` GRPCRoute in the monitor's namespace (a gRPC health probe)."""

    name: str
    host: str = ""
    """One of the GRPCRoute's hostnames; empty means its first non-wildcard hostname."""
    kind: ClassVar[Literal["grpcroute"]] = "grpcroute"
    field: ClassVar[str] = "grpcRoute"


@dataclass(frozen=True)
class TCPRouteRef:
    """A ``gateway.networking.k8s.io/v1`` TCPRoute in the monitor's namespace (a TCP probe); it has
    no hostnames: it is reached at the address of the Gateway that accepted it."""

    name: str
    kind: ClassVar[Literal["tcproute"]] = "tcproute"
    field: ClassVar[str] = "tcpRoute"


@dataclass(frozen=True)
class UrlTarget:
    """An absolute URL (standalone always; the operator only with ``--allow-url-targets``)."""

    url: str
    kind: ClassVar[Literal["url"]] = "url"
    field: ClassVar[str] = "url"


SourceRef = RouteRef | ServiceRef | IngressRef | HTTPRouteRef | GRPCRouteRef | TCPRouteRef
"""A target that names an object in the monitor's namespace."""
Target = SourceRef | UrlTarget
TargetKind = Literal["route", "service", "ingress", "httproute", "grpcroute", "tcproute", "url"]
_REFS: tuple[type[SourceRef], ...] = (RouteRef, ServiceRef, IngressRef, HTTPRouteRef, GRPCRouteRef, TCPRouteRef)
_REF_WHAT = {"route": "Route", "service": "Service", "ingress": "Ingress", "httproute": "HTTPRoute",
             "grpcroute": "GRPCRoute", "tcproute": "TCPRoute"}
TARGET_FIELDS = (*(r.field for r in _REFS), UrlTarget.field)
"""The keys of ``spec.target``, exactly one of which is set."""


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
    paths: tuple[str, ...] = ()
    """Contract 11: declared paths (``spec.paths`` and ``routemonitor.io/paths``); the operator adds
    those it derives from the target (:mod:`route_monitor.spec.paths`)."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def slo(self, tile_ms: int = DEFAULT_TILE_MS, evaluation_ms: int = DEFAULT_EVALUATION_MS) -> MonitorSLO:
        """What the rule generator needs of this monitor; ``tile_ms``: the long windows' tile,
        ``evaluation_ms``: Prometheus' evaluation interval (``--tile`` and ``--evaluation-interval`` of
        ``standalone`` and ``rules``; the operator keeps the defaults)."""
        return MonitorSLO(namespace=self.namespace, name=self.name, objective=self.objective,
                          interval_ms=self.probe.interval_ms, alerting=self.alerting, tile_ms=tile_ms,
                          evaluation_ms=evaluation_ms, vantages=self.probe.vantages.count,
                          quorum=self.probe.vantages.quorum)


def _keys(m: Mapping[Any, Any]) -> list[str]:
    """What a mapping holds, for a message: its keys only (a value may hold credentials)."""
    return sorted(str(k)[:60] for k in m)


def _str_map(value: object, field: str) -> tuple[tuple[str, str], ...]:
    m = mapping(value, field)
    c = Collect()
    for k, v in m.items():
        if not isinstance(v, str):
            c.add(f"{field}.{k}", v, "expected a string value")
    c.done()
    return tuple(sorted((str(k), v) for k, v in m.items()))


def parse_target(value: object, field: str = "spec.target") -> Target:
    return collecting(lambda c: _target(value, field, c))


def _target(value: object, field: str, c: Collect) -> Target:
    t = mapping(value, field)
    present = [k for k in TARGET_FIELDS if t.get(k) is not None]
    if len(present) != 1:
        *head, last = TARGET_FIELDS
        raise InvalidSpec(field, _keys(t), f"exactly one of {', '.join(head)} or {last} is required")
    key = present[0]
    if key == UrlTarget.field:
        url = t[key]
        if not isinstance(url, str) or not re.match(r"^(https?|grpcs?|tcp|tls|dns)://[^/\s]+", url):
            raise InvalidSpec(f"{field}.url", urls.redact(url if isinstance(url, str) else echo(url)),
                              "expected an absolute http:// or https:// URL (tcp://, tls://, grpc://, grpcs:// or "
                              "dns:// HOST:PORT for those probes)")
        for problem in urls.url_problems(url):
            c.add(f"{field}.url", urls.redact(url), problem)
        return UrlTarget(url=url)
    cls = next(r for r in _REFS if r.field == key)
    ref = mapping(t[key], f"{field}.{key}")
    name = ref.get("name")
    if not isinstance(name, str) or not _DNS_LABEL.match(name):
        c.add(f"{field}.{key}.name", name, f"expected the name of a {_REF_WHAT[cls.kind]} in the same namespace")
        name = ""
    if cls is RouteRef or cls is TCPRouteRef:
        return cls(name=name)
    if cls is ServiceRef:
        port = ref.get("port", "")
        scheme = ref.get("scheme", "")
        if scheme not in ("", "http", "https"):
            c.add(f"{field}.service.scheme", scheme, "expected http or https")
        numeric = isinstance(port, int) or (isinstance(port, str) and port.isdigit())
        if numeric and not 1 <= int(port) <= 65535:
            c.add(f"{field}.service.port", port, "expected a port name or a number from 1 to 65535")
        return ServiceRef(name=name, port=str(port) if port != "" else "", scheme=str(scheme))
    host = ref.get("host", "")
    if not isinstance(host, str) or (host and not _HOSTNAME.match(host)):
        c.add(f"{field}.{key}.host", host, "expected a DNS name without wildcard, e.g. shop.example.com")
        host = ""
    if cls is IngressRef or cls is HTTPRouteRef or cls is GRPCRouteRef:
        return cls(name=name, host=host)
    raise AssertionError(cls)


_FALLBACK_OBJECTIVE = Objective(availability=Decimal("99.9"))
_NO_TARGET: Target = UrlTarget("")
_NO_WINDOWS: tuple[Window, ...] = ()
_NO_PATHS: tuple[str, ...] = ()
"""Fallbacks for fields in error: a parser goes on with them and raises before returning."""


def objective_of(value: object, field: str, c: Collect) -> Objective:
    """``spec.slo`` with every field error kept in ``c``."""
    s = c.get(lambda: mapping(value, field), None)
    if s is None:
        return _FALLBACK_OBJECTIVE
    if "availability" not in s:
        c.add(f"{field}.availability", None, 'required: a percent, e.g. "99.9"')
    availability = c.get(lambda: parse_percent(s["availability"], f"{field}.availability"),
                         _FALLBACK_OBJECTIVE.availability) if "availability" in s else _FALLBACK_OBJECTIVE.availability
    period = c.get(lambda: parse_duration_ms(s.get("period", "30d"), f"{field}.period"), DEFAULT_PERIOD_MS)
    latency = None
    lat = c.get(lambda: mapping(s["latency"], f"{field}.latency"), None) if s.get("latency") is not None else None
    if lat is not None:
        for k in ("threshold", "objective"):
            if k not in lat:
                c.add(f"{field}.latency.{k}", None, "required when a latency SLO is set")
        latency = LatencyObjective(
            threshold_ms=c.get(lambda: parse_duration_ms(lat["threshold"], f"{field}.latency.threshold"), 0)
            if "threshold" in lat else 0,
            objective=c.get(lambda: parse_percent(lat["objective"], f"{field}.latency.objective"), Decimal(99))
            if "objective" in lat else Decimal(99),
        )
    return Objective(availability=availability, period_ms=period, latency=latency)


def parse_alerting(value: object, field: str = "spec.alerting") -> Alerting:
    return collecting(lambda c: _alerting(value, field, c))


def _alerting(value: object, field: str, c: Collect) -> Alerting:
    a = mapping(value, field)
    return Alerting(
        page=c.get(lambda: boolean(a.get("page"), f"{field}.page", True), True),
        ticket=c.get(lambda: boolean(a.get("ticket"), f"{field}.ticket", True), True),
        labels=c.get(lambda: _str_map(a.get("labels"), f"{field}.labels"), ()),
        annotations=c.get(lambda: _str_map(a.get("annotations"), f"{field}.annotations"), ()),
    )


def _name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidSpec("metadata.name", name, "a RouteMonitor needs a name")
    if len(name) > 253 or not _HOSTNAME.match(name):
        raise InvalidSpec("metadata.name", name, "expected a Kubernetes name: lowercase letters, digits, '-' and "
                          "'.', at most 253 characters (it names files, rules and metric labels)")
    return name


def _namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise InvalidSpec("metadata.namespace", namespace, "expected a Kubernetes namespace: lowercase letters, "
                          "digits and '-', at most 63 characters")
    return namespace


def _path(path: object) -> str | None:
    if path is not None and (not isinstance(path, str) or not path.startswith("/")):
        raise InvalidSpec("spec.path", path, "expected an absolute path starting with /")
    return path


def parse_routemonitor(obj: Mapping[str, Any], *, default_namespace: str = "default") -> MonitorSpec:
    """Parse a whole RouteMonitor object (``apiVersion``/``kind``/``metadata``/``spec``); an
    invalid one raises every field error it has at once."""
    return collecting(lambda c: _routemonitor(obj, default_namespace, c))


def _routemonitor(obj: Mapping[str, Any], default_namespace: str, c: Collect) -> MonitorSpec:
    meta = c.get(lambda: mapping(obj.get("metadata"), "metadata"), None)
    name = c.get(lambda: _name(meta.get("name")), "") if meta is not None else ""
    namespace = (c.get(lambda: _namespace(meta.get("namespace") or default_namespace), "")
                 if meta is not None else "")
    spec = c.get(lambda: mapping(obj.get("spec"), "spec"), None)
    if spec is None:  # nothing under it can be read: no noise about each missing field
        return MonitorSpec(namespace=namespace, name=name, target=UrlTarget(""))
    target = c.get(lambda: parse_target(spec.get("target")), _NO_TARGET)  # in the order a manifest is written
    path = c.get(lambda: _path(spec.get("path")), None)
    probe = probe_settings(spec.get("probe"), "spec.probe", c)
    if isinstance(target, UrlTarget) and target.url and not c.failed("spec.probe.protocol", "spec.target"):
        for problem in url_scheme_problems(target.url, probe.protocol):
            c.add("spec.target.url", urls.redact(target.url), problem)
    objective = objective_of(spec.get("slo"), "spec.slo", c)
    timeout_known = not (c.failed("spec.probe.interval", "spec.probe.timeout") or c.has("spec.probe"))
    if (objective.latency and objective.latency.threshold_ms > probe.timeout_ms and timeout_known
            and not c.failed("spec.slo.latency")):
        c.add("spec.slo.latency.threshold", objective.latency.threshold_ms,
              f"must not exceed the probe timeout ({probe.timeout_ms}ms)")
    annotations = c.get(lambda: mapping((meta or {}).get("annotations"), "metadata.annotations"), EMPTY)
    windows, paused = _maintenance(spec, annotations, c)
    declared = paths_mod.parse_declared(spec.get("paths"), "spec.paths", c)
    if names.ANN_PATHS in annotations:
        declared += c.get(lambda: tuple(paths_mod.annotation_items(
            annotations[names.ANN_PATHS], f"metadata.annotations[{names.ANN_PATHS}]")), _NO_PATHS)
    created = (meta or {}).get("creationTimestamp")
    return MonitorSpec(
        namespace=namespace, name=name, target=target, path=path, probe=shared(probe), objective=shared(objective),
        alerting=shared(c.get(lambda: parse_alerting(spec.get("alerting")), Alerting())), maintenance=windows,
        paused=paused, paths=paths_mod.combine(declared),
        created=None if created is None else c.get(lambda: parse_instant(created, "metadata.creationTimestamp"),
                                                   None),
    )


_T = TypeVar("_T")
_SHARED: dict[Any, Any] = {}
_SHARED_MAX = 4096


def shared(value: _T) -> _T:
    """One object for equal parts of many monitors' specs (most monitors have the same probe
    settings, objective and alerting: ~0.5 KiB each, per monitor otherwise). Immutable values
    only; bounded (emptied when full); an unhashable value is returned as it is."""
    try:
        found: _T | None = _SHARED.get(value)
    except TypeError:
        return value
    if found is not None:
        return found
    if len(_SHARED) >= _SHARED_MAX:
        _SHARED.clear()
    _SHARED[value] = value
    return value


def _maintenance(spec: Mapping[str, Any], annotations: Mapping[str, Any],
                 c: Collect) -> tuple[tuple[Window, ...], bool]:
    """``spec.maintenance`` and ``spec.paused``, plus the RouteMonitor's own Contract 9 annotations."""
    windows = c.get(lambda: parse_windows(spec.get("maintenance")), _NO_WINDOWS)
    if names.ANN_MAINTENANCE in annotations:
        windows += c.get(lambda: annotation_windows(annotations[names.ANN_MAINTENANCE],
                                                    f"metadata.annotations[{names.ANN_MAINTENANCE}]"), _NO_WINDOWS)
    paused = c.get(lambda: boolean(spec.get("paused"), "spec.paused", False), False)
    if names.ANN_PAUSED in annotations:
        paused = c.get(lambda: parse_paused(annotations[names.ANN_PAUSED],
                                            f"metadata.annotations[{names.ANN_PAUSED}]"), False) or paused
    return windows, paused


def parse_paused(value: object, field: str) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise InvalidSpec(field, value, 'expected "true" or "false"')
    return text == "true"


def is_routemonitor(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == names.KIND and str(obj.get("apiVersion", "")).startswith(names.GROUP + "/")
