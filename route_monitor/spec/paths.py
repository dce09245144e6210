"""A monitor's *paths*: the shared components between the prober and a target's pods.

A router shard, an ingress class, a Gateway or the prober's own resolver fails for every
monitor behind it at once; knowing which monitors share which component lets the rules page
once per failed component instead of once per monitor (``alert_rules.path_rules``). A path is
written ``kind:name``:

- Route: ``router:<routerName>`` for each ``status.ingress[]`` entry whose ``Admitted``
  condition is True (OpenShift writes the IngressController's name there);
- Ingress: ``ingressclass:<name>`` from ``spec.ingressClassName``, else the legacy
  ``kubernetes.io/ingress.class`` annotation, else the cluster's default IngressClass (the API
  server gives a new Ingress without either the default class's name; one created before there
  was a default, or with the admission plugin off, is served by the default class's controller;
  an annotated one is not: the admission plugin leaves it alone and controllers honour the
  annotation);
- HTTPRoute: ``gateway:<namespace>/<name>`` for each parent Gateway that accepted it;
- any target given by host name (not an IP address): ``dns:cluster`` (the prober's resolver);
- plus what the user declares for what the operator cannot see (``spec.paths``,
  ``routemonitor.io/paths``): a CDN, an external load balancer, a DNS provider.

Pure: objects in, a sorted tuple of unique path strings out. Derived paths are read from the
world each time a target is resolved, so a Route admitted by another shard or an HTTPRoute
moved to another Gateway changes them; they are labels of their own series
(``route_monitor_monitor_path_info``), never of the SLI counters.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from alert_rules.fielderrors import Collect, InvalidSpec

PATH_PATTERN: Final = re.compile(r"^[a-z0-9][a-z0-9.:/_-]{0,127}$")
"""What a path may look like: lowercase, at most 128 characters (it is a label value)."""
DNS_CLUSTER: Final = "dns:cluster"
DNS_PREFIX: Final = "dns:"
LEGACY_INGRESS_CLASS: Final = "kubernetes.io/ingress.class"
DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"
_HINT: Final = ("expected kind:name in lowercase letters, digits and . : / _ -, starting with a letter or digit, "
                "at most 128 characters, e.g. cdn:fastly or lb:edge-1")


def _true(conditions: object, kind: str) -> bool:
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping) and c.get("type") == kind and str(c.get("status")) == "True" for c in conditions)


def _clean(kind: str, name: object) -> str | None:
    """``kind:name`` lower-cased, or None when the name cannot be a path (the object is odd:
    nothing to share a page on, but nothing to fail the monitor for either)."""
    if not isinstance(name, str) or not name:
        return None
    path = f"{kind}:{name.lower()}"
    return path if PATH_PATTERN.match(path) else None


def route_paths(route: Mapping[str, Any]) -> list[str]:
    """``router:<routerName>`` for each admitting router shard."""
    out = []
    for ingress in (route.get("status") or {}).get("ingress") or []:
        if isinstance(ingress, Mapping) and _true(ingress.get("conditions"), "Admitted"):
            out.append(_clean("router", ingress.get("routerName")))
    return [p for p in out if p]


def default_ingress_class(classes: Iterable[Mapping[str, Any]]) -> str | None:
    """The IngressClass annotated as the cluster's default (the first by name when several are,
    as the admission plugin then refuses new Ingresses without a class anyway)."""
    defaults = sorted(str((c.get("metadata") or {}).get("name") or "") for c in classes
                      if str(((c.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION))
                      .lower() == "true")
    return next((d for d in defaults if d), None)


def own_ingress_class(ingress: Mapping[str, Any]) -> object:
    """The class an Ingress names itself (``spec.ingressClassName``, else the legacy annotation), or None."""
    return (ingress.get("spec") or {}).get("ingressClassName") or (
        ((ingress.get("metadata") or {}).get("annotations") or {}).get(LEGACY_INGRESS_CLASS))


def ingress_paths(ingress: Mapping[str, Any], default_class: str | None = None) -> list[str]:
    """``ingressclass:<name>``: the class the Ingress names, else the cluster's default one."""
    path = _clean("ingressclass", own_ingress_class(ingress) or default_class)
    return [path] if path else []


def httproute_paths(route: Mapping[str, Any]) -> list[str]:
    """``gateway:<namespace>/<name>`` for each parent Gateway whose ``Accepted`` condition is True."""
    namespace = str((route.get("metadata") or {}).get("namespace") or "default")
    out = []
    for parent in (route.get("status") or {}).get("parents") or []:
        if not isinstance(parent, Mapping) or not _true(parent.get("conditions"), "Accepted"):
            continue
        ref = parent.get("parentRef") or {}
        if ref.get("group", "gateway.networking.k8s.io") != "gateway.networking.k8s.io" or \
                ref.get("kind", "Gateway") != "Gateway":
            continue
        out.append(_clean("gateway", f"{ref.get('namespace') or namespace}/{ref.get('name') or ''}")
                   if ref.get("name") else None)
    return [p for p in out if p]


def url_paths(url: str) -> list[str]:
    """``dns:cluster`` when the URL's host is a name the prober must resolve, not an IP address."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return []
    if not host:
        return []
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return [DNS_CLUSTER]
    return []


def combine(*groups: Iterable[str]) -> tuple[str, ...]:
    """One sorted tuple without duplicates (a stable label set and status)."""
    return tuple(sorted({p for g in groups for p in g}))


def parse_declared(value: object, field: str, c: Collect) -> tuple[str, ...]:
    """``spec.paths``: a list of path strings; every bad entry is reported (``field[i]``)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        c.add(field, value, "expected a list of paths, e.g. [cdn:fastly, lb:edge-1]")
        return ()
    out = []
    for i, item in enumerate(value):
        if isinstance(item, str) and PATH_PATTERN.match(item):
            out.append(item)
        else:
            c.add(f"{field}[{i}]", item, _HINT)
    return tuple(out)


def annotation_items(value: object, field: str) -> list[str]:
    """``routemonitor.io/paths``: comma-separated paths, blanks around commas ignored; every
    bad entry is reported at once (raised as one :class:`InvalidSpec`)."""
    if not isinstance(value, str):
        raise InvalidSpec(field, value, "expected comma-separated paths, e.g. cdn:fastly,lb:edge-1")
    items = [item.strip() for item in value.split(",")]
    bad = [item for item in items if not PATH_PATTERN.match(item)]
    if bad:
        raise InvalidSpec(field, value, f"{', '.join(repr(b) for b in bad[:5])}: {_HINT}")
    return items
