"""Contract 7: the URL of an Ingress (``networking.k8s.io/v1``) or an HTTPRoute
(``gateway.networking.k8s.io/v1``).

- Host: the wanted one (``routemonitor.io/host`` or ``spec.target.*.host``), which must be one of
  the object's hosts, else the first non-wildcard host; none: ``NoUsableHost`` / ``HostNotFound``.
- Ingress scheme: ``https`` when the host is in ``spec.tls[].hosts``; port: the default one.
- HTTPRoute scheme and port: the listener of a parent Gateway that accepted the route
  (``status.parents[]`` with ``Accepted=True``; the parentRef's ``sectionName``/``port`` pick the
  listener); none accepted yet: ``NoAcceptedParent``; Gateway missing: ``GatewayNotFound``; no
  HTTP/HTTPS listener that fits: ``ListenerNotFound``.
- Path: the given one, else the first ``Exact``/``Prefix`` (Ingress) or ``Exact``/``PathPrefix``
  (HTTPRoute) path of the rule serving the host, else ``/``.

Every failure is a :class:`TargetError` whose message names the object and what to change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from route_monitor.targets.resolve import ResolvedTarget, TargetError, check_url_safe, with_path

GATEWAY_GROUP = "gateway.networking.k8s.io"
Key = tuple[str, str]
GatewayLookup = Callable[[Key], Mapping[str, Any] | None]
_DEFAULT_PORT = {"http": 80, "https": 443}


def meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, name) of an object as written (namespace ``default`` when it names none)."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def pick_host(what: str, hosts: Sequence[str], wanted: str) -> str:
    """``wanted`` if it is one of ``hosts``, else the first non-wildcard host."""
    shown = ", ".join(hosts) or "none"
    if wanted:
        if wanted not in hosts:
            raise TargetError("HostNotFound", f"{what}: host {wanted!r} (routemonitor.io/host or target host) is "
                              f"not one of its hosts ({shown})")
        return wanted
    usable = [h for h in hosts if h and not h.startswith("*")]
    if not usable:
        why = "only wildcard hosts" if hosts else "no host"
        raise TargetError("NoUsableHost", f"{what} has {why} ({shown}): nothing to probe; add a concrete host, "
                          "or name one with routemonitor.io/host")
    return usable[0]


# --- Ingress -------------------------------------------------------------------------------------
def ingress_hosts(ingress: Mapping[str, Any]) -> list[str]:
    rules = (ingress.get("spec") or {}).get("rules") or []
    return list(dict.fromkeys(str(r["host"]) for r in rules if r.get("host")))


def _ingress_path(ingress: Mapping[str, Any], host: str) -> str:
    for rule in (ingress.get("spec") or {}).get("rules") or []:
        if rule.get("host") != host:
            continue
        for p in (rule.get("http") or {}).get("paths") or []:
            if p.get("pathType") in ("Exact", "Prefix") and str(p.get("path") or "").startswith("/"):
                return str(p["path"])
    return "/"


def resolve_ingress(ingress: Mapping[str, Any], host: str, path: str | None) -> ResolvedTarget:
    namespace, name = meta(ingress)
    chosen = pick_host(f"Ingress {namespace}/{name}", ingress_hosts(ingress), host)
    tls = (ingress.get("spec") or {}).get("tls") or []
    scheme = "https" if any(chosen in (t.get("hosts") or []) for t in tls) else "http"
    url = with_path(f"{scheme}://{chosen}", path if path is not None else _ingress_path(ingress, chosen))
    check_url_safe(url)
    return ResolvedTarget(url=url, kind="ingress", name=name)


# --- HTTPRoute -----------------------------------------------------------------------------------
def route_hostnames(route: Mapping[str, Any]) -> list[str]:
    """``spec.hostnames`` of a Gateway API route (HTTPRoute, GRPCRoute)."""
    return [str(h) for h in (route.get("spec") or {}).get("hostnames") or []]


def gateway_key(ref: Mapping[str, Any], namespace: str) -> Key | None:
    """The Gateway a parentRef names (None for other kinds of parents)."""
    if ref.get("group", GATEWAY_GROUP) != GATEWAY_GROUP or ref.get("kind", "Gateway") != "Gateway":
        return None
    return (str(ref.get("namespace") or namespace), str(ref.get("name")))


def gateway_refs(route: Mapping[str, Any]) -> tuple[Key, ...]:
    """Every Gateway the route names, in its spec or its status (their changes matter)."""
    namespace, _ = meta(route)
    refs = [*((route.get("spec") or {}).get("parentRefs") or []),
            *(p.get("parentRef") or {} for p in (route.get("status") or {}).get("parents") or [])]
    return tuple(dict.fromkeys(k for r in refs if (k := gateway_key(r, namespace)) is not None))


def accepted_parents(route: Mapping[str, Any], from_files: bool) -> list[Mapping[str, Any]]:
    parents = (route.get("status") or {}).get("parents") or []
    if from_files and not parents:  # a manifest as written: no controller has said anything yet
        return list((route.get("spec") or {}).get("parentRefs") or [])
    return [p.get("parentRef") or {} for p in parents
            if any(c.get("type") == "Accepted" and str(c.get("status")) == "True" for c in p.get("conditions") or [])]


def _host_matches(listener_host: str, host: str) -> bool:
    if not listener_host:
        return True
    if listener_host.startswith("*."):
        return host.endswith(listener_host[1:]) and host.count(".") >= listener_host.count(".")
    return listener_host == host


def listener(gateway: Mapping[str, Any], ref: Mapping[str, Any], host: str | None,
             protocols: tuple[str, ...] = ("HTTP", "HTTPS")) -> Mapping[str, Any] | None:
    """The Gateway's first listener the parentRef may attach to (its ``sectionName``/``port``), of
    one of ``protocols``, whose hostname matches ``host`` (None: listeners without hostnames, TCP)."""
    for candidate in (gateway.get("spec") or {}).get("listeners") or []:
        if ref.get("sectionName") and candidate.get("name") != ref["sectionName"]:
            continue
        if ref.get("port") and candidate.get("port") != ref["port"]:
            continue
        if candidate.get("protocol") in protocols and (
                host is None or _host_matches(str(candidate.get("hostname") or ""), host)):
            return dict(candidate)
    return None


def _httproute_path(route: Mapping[str, Any]) -> str:
    for rule in (route.get("spec") or {}).get("rules") or []:
        for match in rule.get("matches") or []:
            p = match.get("path") or {}
            if p.get("type", "PathPrefix") in ("Exact", "PathPrefix") and str(p.get("value", "/")).startswith("/"):
                return str(p.get("value", "/"))
    return "/"


def through_gateway(route: Mapping[str, Any], what: str, host: str | None, gateway: GatewayLookup, *,
                    protocols: tuple[str, ...] = ("HTTP", "HTTPS"), from_files: bool = False,
                    missing: str | None = None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(listener, Gateway) of the first parent Gateway that accepted ``route`` and has a listener of
    one of ``protocols`` for ``host``; else :class:`TargetError` naming every parent's problem."""
    namespace, _ = meta(route)
    parents = [(ref, key) for ref in accepted_parents(route, from_files)
               if (key := gateway_key(ref, namespace)) is not None]
    if not parents:
        raise TargetError("NoAcceptedParent", f"{what} is not accepted by any parent Gateway yet (no status.parents[] "
                          "entry with condition Accepted=True)")
    problems = []
    for ref, key in parents:
        gw = gateway(key)
        if gw is None:
            problems.append(("GatewayNotFound", f"Gateway {key[0]}/{key[1]} " + (
                missing or "is not known (it does not exist, or its namespace is not watched)")))
            continue
        found = listener(gw, ref, host, protocols)
        if found is None:
            section = f" sectionName {ref['sectionName']!r}" if ref.get("sectionName") else ""
            port = f" port {ref['port']}" if ref.get("port") else ""
            problems.append(("ListenerNotFound", f"Gateway {key[0]}/{key[1]} has no {' or '.join(protocols)} listener"
                             f"{section}{port}" + (f" for host {host}" if host else "")))
            continue
        return found, gw
    reason = problems[0][0]
    raise TargetError(reason, f"{what}: " + "; ".join(message for _, message in problems),
                      missing=any(r == "GatewayNotFound" for r, _ in problems))


def authority(host: str, port: int | None, scheme_default: int) -> str:
    """``host`` or ``host:port`` (the port left out when it is the scheme's default)."""
    number = int(port or scheme_default)
    return host if number == scheme_default else f"{host}:{number}"


def resolve_httproute(route: Mapping[str, Any], host: str, path: str | None, gateway: GatewayLookup, *,
                      from_files: bool = False, missing: str | None = None) -> ResolvedTarget:
    """``missing``: how a Gateway that is not known is told (files: not in the given files)."""
    namespace, name = meta(route)
    what = f"HTTPRoute {namespace}/{name}"
    chosen = pick_host(what, route_hostnames(route), host)
    found, _ = through_gateway(route, what, chosen, gateway, from_files=from_files, missing=missing)
    scheme = "https" if found["protocol"] == "HTTPS" else "http"
    url = with_path(f"{scheme}://{authority(chosen, found.get('port'), _DEFAULT_PORT[scheme])}",
                    path if path is not None else _httproute_path(route))
    check_url_safe(url)
    return ResolvedTarget(url=url, kind="httproute", name=name)
