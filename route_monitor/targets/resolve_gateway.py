"""Contract 13's Gateway API targets: the URL of a GRPCRoute or a TCPRoute
(``gateway.networking.k8s.io/v1``), by Contract 7's rules for HTTPRoutes
(:mod:`route_monitor.targets.resolve_http`).

- GRPCRoute: host as for an HTTPRoute (one of ``spec.hostnames``, ``routemonitor.io/host`` or the
  first non-wildcard one); the listener (HTTP: h2c, HTTPS: TLS) of a parent Gateway that accepted
  it gives the port; probed with the gRPC health check, ``grpc://`` or ``grpcs://``.
- TCPRoute: it has no hostnames, so it is reached where its accepted parent Gateway is: the
  Gateway's first address (``status.addresses[]``, else ``spec.addresses[]``; IPAddress or
  Hostname) and the port of its TCP (``tcp://``) or TLS (``tls://``, terminated by the Gateway)
  listener. A Gateway without an address yet: ``NoGatewayAddress``.

The protocol the route implies comes with the target (as a Service port's does), so a monitor
that names none speaks it; ``spec.probe`` still wins when it names one.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from route_monitor.spec.protocol import GRPCSettings, Protocol, ProtocolSettings, TCPSettings
from route_monitor.targets.resolve import ResolvedTarget, TargetError, check_url_safe
from route_monitor.targets.resolve_http import (
    GatewayLookup,
    authority,
    meta,
    pick_host,
    route_hostnames,
    through_gateway,
)

_ADDRESS_TYPES = (None, "IPAddress", "Hostname")
_KIND_NAMES = {"grpcroute": "GRPCRoute", "tcproute": "TCPRoute"}


def resolve_grpcroute(route: Mapping[str, Any], host: str, gateway: GatewayLookup, *, from_files: bool = False,
                      missing: str | None = None) -> ResolvedTarget:
    namespace, name = meta(route)
    what = f"GRPCRoute {namespace}/{name}"
    chosen = pick_host(what, route_hostnames(route), host)
    found, _ = through_gateway(route, what, chosen, gateway, from_files=from_files, missing=missing)
    tls = found["protocol"] == "HTTPS"
    url = f"{'grpcs' if tls else 'grpc'}://{authority(chosen, found.get('port'), 443 if tls else 80)}/"
    return _target(url, "grpcroute", name, ProtocolSettings(protocol=Protocol.GRPC, grpc=GRPCSettings(tls=tls)),
                   found)


def _target(url: str, kind: str, name: str, settings: ProtocolSettings,
            listener: Mapping[str, Any]) -> ResolvedTarget:
    """The route's target, with the protocol its Gateway listener implies and why."""
    check_url_safe(url)
    why = f"from the {_KIND_NAMES[kind]}'s Gateway listener {listener.get('name') or '-'} ({listener['protocol']})"
    return ResolvedTarget(url=url, kind=kind, name=name, protocol=(settings, why))


def gateway_address(gateway: Mapping[str, Any]) -> str:
    """The Gateway's first usable address (status, else spec), or ``""``."""
    for part in ("status", "spec"):
        for address in (gateway.get(part) or {}).get("addresses") or []:
            if isinstance(address, Mapping) and address.get("type") in _ADDRESS_TYPES and address.get("value"):
                return str(address["value"])
    return ""


def _url_host(address: str) -> str:
    try:
        return f"[{address}]" if ipaddress.ip_address(address).version == 6 else address
    except ValueError:
        return address


def resolve_tcproute(route: Mapping[str, Any], gateway: GatewayLookup, *, from_files: bool = False,
                     missing: str | None = None) -> ResolvedTarget:
    namespace, name = meta(route)
    what = f"TCPRoute {namespace}/{name}"
    found, gw = through_gateway(route, what, None, gateway, protocols=("TCP", "TLS"), from_files=from_files,
                                missing=missing)
    address = gateway_address(gw)
    gw_name = "/".join(meta(gw))
    if not address:
        raise TargetError("NoGatewayAddress", f"{what}: Gateway {gw_name} has no address yet (status.addresses[] "
                          "or spec.addresses[] of type IPAddress or Hostname): nothing to connect to")
    tls = found["protocol"] == "TLS"
    url = f"{'tls' if tls else 'tcp'}://{_url_host(address)}:{int(found.get('port') or 0)}"
    return _target(url, "tcproute", name, ProtocolSettings(protocol=Protocol.TCP, tcp=TCPSettings(tls=tls)), found)
