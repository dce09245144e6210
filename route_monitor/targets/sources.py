"""The one table of target sources: which kinds of objects a monitor can be made from or point at.

Each row says, for one kind: its API (apiVersion, Kind, plural), where it sits in the
precedence among annotated objects of the same name (earlier rows win), the ``spec.target``
key of a RouteMonitor that names it, how a URL is resolved from the object, and which other
objects that resolution reads (:attr:`Source.depends`). The operator (``operator/plan.py``,
``operator/world.py``) and the file path (``files/manifests.py``, ``files/fileplan.py``) both read this
table, so a kind is added here once and both follow.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from route_monitor.spec import paths as monitor_paths
from route_monitor.spec.monitor import (
    GRPCRouteRef,
    HTTPRouteRef,
    IngressRef,
    RouteRef,
    ServiceRef,
    SourceRef,
    Target,
    TCPRouteRef,
    UrlTarget,
)
from route_monitor.targets import resolve, resolve_gateway, resolve_http, sources_fields
from route_monitor.targets.resolve import ResolvedTarget, TargetError

SourceKind = Literal["route", "httproute", "grpcroute", "tcproute", "ingress", "service"]
Key = tuple[str, str]
Ref = sources_fields.Ref
Lookup = Callable[[str, Key], Mapping[str, Any] | None]
"""(kind, (namespace, name)) -> the object, or None when it is not known."""


def key_of(obj: Mapping[str, Any]) -> Key:
    """``(namespace, name)`` of an object; a manifest without a namespace is in ``default``."""
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name")))


@dataclass(frozen=True)
class Context:
    """What resolution needs besides the object: the other objects, and where they come from."""

    lookup: Lookup
    cluster_domain: str = "cluster.local"
    missing: str = "does not exist (yet)"
    """How a missing object is told: the operator waits for it, a file set lacks it."""
    from_files: bool = False
    """Manifests as written, with no controller to fill in their status."""
    default_ingress_class: str | None = None
    """The cluster's default IngressClass, when known (an Ingress without a class is served by it)."""


def _resolve_route(obj: Mapping[str, Any], target: SourceRef, path: str | None, _: Context) -> ResolvedTarget:
    return resolve.resolve_route(obj, path)


def _resolve_service(obj: Mapping[str, Any], target: SourceRef, path: str | None, ctx: Context) -> ResolvedTarget:
    assert isinstance(target, ServiceRef)
    return resolve.resolve_service(obj, target, path, cluster_domain=ctx.cluster_domain)


def _resolve_ingress(obj: Mapping[str, Any], target: SourceRef, path: str | None, _: Context) -> ResolvedTarget:
    assert isinstance(target, IngressRef)
    return resolve_http.resolve_ingress(obj, target.host, path)


def _resolve_httproute(obj: Mapping[str, Any], target: SourceRef, path: str | None, ctx: Context) -> ResolvedTarget:
    assert isinstance(target, HTTPRouteRef)
    return resolve_http.resolve_httproute(obj, target.host, path, lambda key: _checked(ctx, "gateway", key),
                                          from_files=ctx.from_files, missing=ctx.missing if ctx.from_files else None)


def _resolve_grpcroute(obj: Mapping[str, Any], target: SourceRef, _: str | None, ctx: Context) -> ResolvedTarget:
    assert isinstance(target, GRPCRouteRef)
    return resolve_gateway.resolve_grpcroute(obj, target.host, lambda key: _checked(ctx, "gateway", key),
                                             from_files=ctx.from_files, missing=ctx.missing if ctx.from_files else None)


def _resolve_tcproute(obj: Mapping[str, Any], target: SourceRef, _: str | None, ctx: Context) -> ResolvedTarget:
    assert isinstance(target, TCPRouteRef)
    return resolve_gateway.resolve_tcproute(obj, lambda key: _checked(ctx, "gateway", key),
                                            from_files=ctx.from_files, missing=ctx.missing if ctx.from_files else None)


def _checked(ctx: Context, kind: str, key: Key) -> Mapping[str, Any] | None:
    """The object, once its fields that resolution reads have the right shape
    (:class:`~route_monitor.targets.sources_fields.InvalidSource` names those that have not)."""
    obj = ctx.lookup(kind, key)
    if obj is not None:
        sources_fields.check(kind, obj)
    return obj


def _gateways_of(kind: str) -> Callable[[Mapping[str, Any]], tuple[Ref, ...]]:
    """The Gateways a route of ``kind`` (HTTPRoute, GRPCRoute, TCPRoute) names."""
    return lambda obj: _gateways(kind, obj)


def _gateways(kind: str, obj: Mapping[str, Any]) -> tuple[Ref, ...]:
    try:
        sources_fields.check(kind, obj)
    except sources_fields.InvalidSource:  # resolution reports it; nothing to follow meanwhile
        return ()
    return tuple(("gateway", *key) for key in resolve_http.gateway_refs(obj))


def _no_dependencies(_: Mapping[str, Any]) -> tuple[Ref, ...]:
    return ()


DEFAULT_INGRESS_CLASS: Ref = ("ingressclass", "", "")
"""Whichever IngressClass is the cluster's default: what an Ingress naming no class reads (any
IngressClass's change may make another one the default)."""


def _default_class(obj: Mapping[str, Any]) -> tuple[Ref, ...]:
    return () if monitor_paths.own_ingress_class(obj) else (DEFAULT_INGRESS_CLASS,)


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    api_version: str
    kind_name: str
    plural: str
    ref: type[SourceRef]
    """The ``spec.target`` variant that names an object of this kind."""
    resolve: Callable[[Mapping[str, Any], SourceRef, str | None, Context], ResolvedTarget]
    depends: Callable[[Mapping[str, Any]], tuple[Ref, ...]] = _no_dependencies
    """Other objects the resolution reads (e.g. an HTTPRoute's Gateways): their changes matter."""
    reads: tuple[str, ...] = ()
    """The kinds of :data:`DEPENDENCIES` that ``depends`` returns."""
    hosts: Callable[[Mapping[str, Any]], list[str]] | None = None
    """The object's hosts, for kinds where a monitor picks one (``routemonitor.io/host``)."""
    paths: Callable[[Mapping[str, Any], Context], list[str]] = lambda _obj, _ctx: []
    """Contract 11: the shared components the object names (router shards, ingress class, Gateways)."""

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    def reference(self, obj: Mapping[str, Any]) -> dict[str, str]:
        """An object reference (for Events and ownerReferences)."""
        meta = obj.get("metadata") or {}
        return {"apiVersion": self.api_version, "kind": self.kind_name, "name": str(meta.get("name")),
                "namespace": str(meta.get("namespace") or "default"), "uid": str(meta.get("uid", ""))}


SOURCES: tuple[Source, ...] = (
    Source("route", "route.openshift.io/v1", "Route", "routes", RouteRef, _resolve_route,
           paths=lambda obj, _: monitor_paths.route_paths(obj)),
    Source("httproute", "gateway.networking.k8s.io/v1", "HTTPRoute", "httproutes", HTTPRouteRef, _resolve_httproute,
           depends=_gateways_of("httproute"), reads=("gateway",), hosts=resolve_http.route_hostnames,
           paths=lambda obj, _: monitor_paths.httproute_paths(obj)),
    Source("grpcroute", "gateway.networking.k8s.io/v1", "GRPCRoute", "grpcroutes", GRPCRouteRef, _resolve_grpcroute,
           depends=_gateways_of("grpcroute"), reads=("gateway",), hosts=resolve_http.route_hostnames,
           paths=lambda obj, _: monitor_paths.httproute_paths(obj)),
    Source("tcproute", "gateway.networking.k8s.io/v1", "TCPRoute", "tcproutes", TCPRouteRef, _resolve_tcproute,
           depends=_gateways_of("tcproute"), reads=("gateway",),
           paths=lambda obj, _: monitor_paths.httproute_paths(obj)),
    Source("ingress", "networking.k8s.io/v1", "Ingress", "ingresses", IngressRef, _resolve_ingress,
           depends=_default_class, reads=("ingressclass",), hosts=resolve_http.ingress_hosts,
           paths=lambda obj, ctx: monitor_paths.ingress_paths(obj, ctx.default_ingress_class)),
    Source("service", "v1", "Service", "services", ServiceRef, _resolve_service),
)
"""In precedence order: when objects of the same name are annotated, the first one wins."""
BY_KIND: dict[str, Source] = {s.kind: s for s in SOURCES}
BY_KIND_NAME: dict[str, Source] = {s.kind_name: s for s in SOURCES}
DEPENDENCIES: dict[str, tuple[str, str, str]] = {
    "gateway": ("gateway.networking.k8s.io/v1", "Gateway", "gateways"),
    "ingressclass": ("networking.k8s.io/v1", "IngressClass", "ingressclasses"),
}
"""Kinds that are no source but that sources read: kind -> (apiVersion, Kind, plural)."""
CLUSTER_SCOPED: frozenset[str] = frozenset({"ingressclass"})
"""Kinds of :data:`DEPENDENCIES` without a namespace: watched cluster-wide (not at all by an
operator limited to some namespaces: its Roles cannot grant them)."""


def dependency_ref(kind: str, key: Key) -> Ref:
    """What sources that read the dependency ``kind``/``key`` name in their ``depends``."""
    return DEFAULT_INGRESS_CLASS if kind == "ingressclass" else (kind, *key)


def kind_name(kind: str) -> str:
    """``route`` -> ``Route``; ``gateway`` -> ``Gateway``."""
    return BY_KIND[kind].kind_name if kind in BY_KIND else DEPENDENCIES[kind][1]


def article(kind_name: str) -> str:
    """``a Route``, ``an Ingress``."""
    return f"{'an' if kind_name[0] in 'AEIOU' else 'a'} {kind_name}"


def source_of(target: SourceRef) -> Source:
    return BY_KIND[target.kind]


def winner(opted_in: Collection[str]) -> Source | None:
    """The source that wins among the kinds of annotated objects of one name."""
    return next((s for s in SOURCES if s.kind in opted_in), None)


def host_problem(kind: str, obj: Mapping[str, Any], wanted: str) -> TargetError | None:
    """Why an annotated object of ``kind`` has no host to probe (wildcards only, or the wanted
    host is not one of its hosts); None when it has one or its kind has no host choice.
    Raises :class:`~route_monitor.targets.sources_fields.InvalidSource` when its fields have the wrong shape."""
    source = BY_KIND[kind]
    if source.hosts is None:
        return None
    sources_fields.check(kind, obj)
    try:
        resolve_http.pick_host(f"{source.kind_name} {'/'.join(key_of(obj))}", source.hosts(obj), wanted)
    except TargetError as e:
        return e
    return None


def resolve_target(target: Target, namespace: str, path: str | None, ctx: Context,
                   declared: tuple[str, ...] = ()) -> ResolvedTarget:
    """The URL of ``target`` for a monitor in ``namespace``, with its paths (those the object names,
    ``dns:cluster`` for a host name, and ``declared``); :class:`TargetError` says why not
    (``<Kind>NotFound`` when the object is missing), and
    :class:`~route_monitor.targets.sources_fields.InvalidSource` names the fields of the object (or of a
    Gateway it reads) that have the wrong shape."""
    if isinstance(target, UrlTarget):
        resolved = resolve.resolve_url(target, path)
        return replace(resolved, paths=monitor_paths.combine(monitor_paths.url_paths(resolved.url), declared))
    source = source_of(target)
    obj = _checked(ctx, source.kind, (namespace, target.name))
    if obj is None:
        raise TargetError(f"{source.kind_name}NotFound", f"{source.kind_name} {namespace}/{target.name} {ctx.missing}",
                          missing=True)
    resolved = source.resolve(obj, target, path, ctx)
    resolve.check_url_safe(resolved.url)
    derived = (*source.paths(obj, ctx), *monitor_paths.url_paths(resolved.url))
    return replace(resolved, paths=monitor_paths.combine(derived, declared))
