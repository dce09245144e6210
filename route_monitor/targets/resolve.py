"""Where a monitor's probes go: a Route, a Service or a URL target becomes one absolute URL
(Ingresses and HTTPRoutes: :mod:`route_monitor.targets.resolve_http`; which kind is which:
:mod:`route_monitor.targets.sources`).

Used by the operator (objects from the API) and by ``standalone`` (objects from files). Every
``resolve_*`` returns a safe URL or raises :class:`TargetError` with a CamelCase ``reason``
(used as the ``TargetResolved`` condition reason) and a message for humans. Link-local and
cloud-metadata targets are refused here (``Forbidden``), and again by the prober on the
addresses a name resolves to at connect time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from route_monitor.spec import urls
from route_monitor.spec.monitor import ServiceRef, UrlTarget
from route_monitor.spec.protocol import Protocol, ProtocolSettings, from_port, url_for
from route_monitor.targets.credentials import Credentials
from route_monitor.targets.safety import forbidden_host

URL_SCHEMES = ("http", "https", "grpc", "grpcs", "tcp", "tls", "dns")
"""What a URL target may be (the scheme must also fit the probe's protocol: ``spec``)."""


@dataclass(frozen=True)
class ResolvedTarget:
    url: str
    kind: str
    """``route``, ``service``, ``ingress``, ``httproute`` or ``url``."""
    name: str
    """The object's name; empty for URL targets."""
    credentials: Credentials | None = None
    """What ``spec.probe`` references (auth, CA, client certificate), once read; a rotation
    changes the target, so the probe engine picks it up like a URL change."""
    protocol: tuple[ProtocolSettings, str] | None = None
    """The protocol the target declares (a Service port's ``appProtocol`` or name prefix), used
    when ``spec.probe`` names none, and why, for ``check`` (None: none declared)."""
    paths: tuple[str, ...] = ()
    """Contract 11: the shared components in front of the target (``router:default``, ``dns:cluster``,
    the declared ones), sorted (:mod:`route_monitor.spec.paths`); a change never touches the SLI counters."""


class TargetError(Exception):
    def __init__(self, reason: str, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        """CamelCase: NoHost, NoPorts, PortNotFound, Forbidden, InvalidURL, URLTargetsNotAllowed."""
        self.message = message
        self.missing = missing
        """The object, or one its resolution reads (a Gateway), is not known: the operator waits
        for it; files meant for the operator may leave it to the cluster (``check``)."""


def check_url_safe(url: str) -> None:
    """Raise ``TargetError("Forbidden")`` for link-local and metadata hosts (loopback is
    allowed), ``TargetError("InvalidURL")`` for user info in the URL or a port outside 1-65535."""
    problem = urls.url_problem(url)
    if problem is not None:
        raise TargetError("InvalidURL", f"{urls.redact(url)}: {problem}")
    try:
        host = urlsplit(url).hostname or ""
    except ValueError as e:
        raise TargetError("InvalidURL", f"{url!r} is not a valid URL: {e}") from None
    if forbidden_host(host):
        raise TargetError("Forbidden", f"{url}: {host} is a link-local or cloud metadata address; "
                          "such targets are never probed")


def with_path(url: str, path: str | None) -> str:
    """``path`` (when given) replaces the URL's path and query; a URL never lacks a path."""
    parts = urlsplit(url)
    if path is not None:
        p, _, q = path.partition("?")
        return urlunsplit((parts.scheme, parts.netloc, p or "/", q, ""))
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))


def _admitted_host(route: Mapping[str, Any]) -> str:
    for ingress in (route.get("status") or {}).get("ingress") or []:
        admitted = any(c.get("type") == "Admitted" and str(c.get("status")) == "True"
                       for c in ingress.get("conditions") or [])
        if admitted and ingress.get("host"):
            return str(ingress["host"])
    return ""


def resolve_route(route: Mapping[str, Any], path: str | None) -> ResolvedTarget:
    """Host from an admitted ``status.ingress[]`` entry, else ``spec.host``; https if ``spec.tls``."""
    meta = route.get("metadata") or {}
    spec = route.get("spec") or {}
    name = str(meta.get("name") or "")
    host = _admitted_host(route) or str(spec.get("host") or "")
    if not host:
        # No router has seen it (no status.ingress at all), as in a manifest file: the cluster
        # assigns the host when the Route is created or admitted, so files left to the operator
        # may omit it (``check`` warns); a Route a router has seen but not admitted has none.
        unseen = not (route.get("status") or {}).get("ingress")
        raise TargetError("NoHost", f"Route {name} has no host yet (no admitted status.ingress[].host and no "
                          "spec.host)", missing=unseen)
    scheme = "https" if spec.get("tls") else "http"
    url = with_path(f"{scheme}://{host}", path if path is not None else (spec.get("path") or "/"))
    check_url_safe(url)
    return ResolvedTarget(url=url, kind="route", name=name)


def _pick_port(service: Mapping[str, Any], want: str) -> Mapping[str, Any]:
    meta = service.get("metadata") or {}
    ports = (service.get("spec") or {}).get("ports") or []
    if not ports:
        raise TargetError("NoPorts", f"Service {meta.get('name')} has no ports")
    if not want:
        return dict(ports[0])
    for p in ports:
        if str(p.get("name", "")) == want or str(p.get("port", "")) == want:
            return dict(p)
    known = ", ".join(f"{p.get('name') or '-'}:{p.get('port')}" for p in ports)
    raise TargetError("PortNotFound", f"Service {meta.get('name')} has no port {want!r} (it has {known})")


def resolve_service(service: Mapping[str, Any], target: ServiceRef, path: str | None, *,
                    cluster_domain: str = "cluster.local") -> ResolvedTarget:
    """``http(s)://NAME.NAMESPACE.svc.DOMAIN:PORT/path`` (the Service's cluster DNS name)."""
    meta = service.get("metadata") or {}
    name = str(meta.get("name") or target.name)
    namespace = str(meta.get("namespace") or "default")
    port = _pick_port(service, target.port)
    number = int(port.get("port", 80))
    found = None if target.scheme else from_port(port)
    if found is not None and found[0].protocol is not Protocol.HTTP:
        url = url_for(with_path(f"http://{name}.{namespace}.svc.{cluster_domain}:{number}", path or "/"), found[0])
        check_url_safe(url)
        return ResolvedTarget(url=url, kind="service", name=name, protocol=found)
    scheme = target.scheme or ("https" if number in (443, 8443) or str(port.get("name", "")).startswith("https")
                               or str(port.get("appProtocol", "")).lower() in ("https", "kubernetes.io/wss")
                               else "http")
    url = with_path(f"{scheme}://{name}.{namespace}.svc.{cluster_domain}:{number}", path or "/")
    check_url_safe(url)
    return ResolvedTarget(url=url, kind="service", name=name, protocol=found)


def resolve_url(target: UrlTarget, path: str | None, *, allow_url_targets: bool = True) -> ResolvedTarget:
    """The target's URL, with ``path`` (when set) replacing its path and query."""
    if not allow_url_targets:
        raise TargetError("URLTargetsNotAllowed", "URL targets are disabled in this operator (start it with "
                          "--allow-url-targets to probe them)")
    parts = urlsplit(target.url)
    if parts.scheme not in URL_SCHEMES or not parts.hostname:
        raise TargetError("InvalidURL", f"{urls.redact(target.url)!r} is not an absolute http:// or https:// URL")
    url = with_path(target.url, path) if parts.scheme in ("http", "https") else target.url
    check_url_safe(url)
    return ResolvedTarget(url=url, kind="url", name="")
