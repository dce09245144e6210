"""``--canary-url``: which URL a member probes to tell its own network failures from its targets'
(Contract 11), for ``operator`` and ``standalone``.

- ``none`` turns the canary off: every network failure counts, as before.
- A URL: that one (``http``/``https``, no user info), verified with the system store and
  ``$ROUTE_MONITOR_CA_FILES`` like every probe.
- Default, in a pod: the kube-apiserver's ``/readyz`` at
  ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``: an IP address, so no DNS is
  involved, verified with the service account's CA. The operator outside a cluster: its
  kubeconfig's server (and that cluster's CA, or none when it skips verification). ``standalone``
  outside a cluster: none, as there is no apiserver it is known to reach.

The apiserver answers ``/readyz`` to anyone; the canary sends no credentials, and any answer
(even 401 or 500) means the network works.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from route_monitor.probe.canary import CanarySettings
from route_monitor.spec import urls

SERVICE_ACCOUNT_CA = Path("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")
OFF = "none"


class CanaryFlagError(ValueError):
    """``--canary-url`` cannot be used (one line for stderr)."""


@dataclass(frozen=True)
class ApiServer:
    """Where the kube-apiserver is, and how to verify it."""

    server: str
    ca_file: str | None = None
    ca_data: str | None = None
    """Base64 PEM, as in a kubeconfig's ``certificate-authority-data``."""
    insecure: bool = False


def in_cluster(env: Mapping[str, str], ca_file: Path = SERVICE_ACCOUNT_CA) -> ApiServer | None:
    """The kube-apiserver's Service address from the environment Kubernetes gives every pod."""
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    host = f"[{host}]" if ":" in host else host
    return ApiServer(f"https://{host}:{port}", str(ca_file))


def _ca_pem(api: ApiServer) -> bytes:
    if api.insecure:
        return b""
    if api.ca_data:
        try:
            return base64.b64decode(api.ca_data)
        except (binascii.Error, ValueError) as e:
            raise CanaryFlagError(f"--canary-url: the kubeconfig's certificate-authority-data is not base64: {e}") \
                from e
    if api.ca_file:
        try:
            return Path(api.ca_file).read_bytes()
        except OSError:
            return b""  # no service account CA mounted: the system store verifies (or the check says why)
    return b""


def canary_settings(flag: str | None, apiserver: ApiServer | None) -> CanarySettings | None:
    """The canary for ``--canary-url`` (None when not given) and the apiserver found, or None: off."""
    if flag is not None and flag.strip().lower() == OFF:
        return None
    if flag:
        parts = urlsplit(flag.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CanaryFlagError(f"--canary-url: {urls.redact(flag)[:200]!r} is not an absolute http(s) URL "
                                  f"(or {OFF!r} to turn the canary off)")
        if parts.username is not None or parts.password is not None:
            raise CanaryFlagError("--canary-url: a URL with user info is refused; the canary sends no credentials")
        return CanarySettings(url=flag.strip())
    if apiserver is None:
        return None
    return CanarySettings(url=apiserver.server.rstrip("/") + "/readyz", ca_pem=_ca_pem(apiserver),
                          insecure_skip_verify=apiserver.insecure)
