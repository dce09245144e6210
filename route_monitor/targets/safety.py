"""Addresses that are never probed, whatever a manifest says (link-local and cloud metadata).

Link-local ranges (``169.254.0.0/16``, ``fe80::/10``) and cloud metadata endpoints are refused;
loopback and private ranges are allowed (tests, local development and in-cluster Services use
them). The same predicate guards target resolution (``route_monitor.targets.resolve``) and every
connection the prober opens, after DNS resolution, so a name that resolves to a metadata
address is refused too.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

FORBIDDEN_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "169.254.0.0/16",      # IPv4 link-local, incl. 169.254.169.254 (AWS, GCP, Azure, OpenStack metadata)
    "fe80::/10",           # IPv6 link-local
    "fd00:ec2::254/128",   # AWS metadata over IPv6
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "192.0.0.192/32",      # Oracle Cloud metadata
))
FORBIDDEN_HOSTNAMES = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal",
    "instance-data", "instance-data.ec2.internal", "metadata.tencentyun.com",
})


@lru_cache(maxsize=8192)
def forbidden_ip(address: str) -> bool:
    """True if ``address`` (an IP literal, optionally with an IPv6 zone) must never be probed."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in FORBIDDEN_NETWORKS)


@lru_cache(maxsize=8192)
def forbidden_host(host: str) -> bool:
    """True for a forbidden IP literal or a well-known metadata hostname."""
    h = host.strip("[]").rstrip(".").lower()
    return h in FORBIDDEN_HOSTNAMES or forbidden_ip(h)
