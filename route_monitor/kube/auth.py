"""The ``Authorization`` header the operator sends, from the kubeconfig's user or the service
account (:mod:`~route_monitor.kube.kubeconfig`): a bearer token, a token file read again when the
kubelet rotates it, a user name and password (a client certificate is in the TLS context), or the
credential of an exec plugin (:class:`ExecAuth`). A user of an auth provider (the gcp and azure
providers kubectl removed) or of a plugin that cannot run here is refused (:func:`unsupported_user`)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from route_monitor.kube import execplugin
from route_monitor.kube.execplugin import Credential, ExecConfig, ExecPluginFailed
from route_monitor.kube.kubeconfig import KubeConfig


class BearerToken:
    """The ``Authorization`` header: a fixed token, or a token file read again when it changes."""

    def __init__(self, *, token: str | None = None, token_file: str | None = None) -> None:
        self._token, self._file = token, token_file
        self._stamp: tuple[int, int] | None = None
        self._header: str | None = f"Bearer {token}" if token else None

    def header(self) -> str | None:
        if self._file is None:
            return self._header
        stat = os.stat(self._file)  # ~2 us; a rotated token is a new file (new inode or mtime)
        stamp = (stat.st_ino, stat.st_mtime_ns)
        if stamp != self._stamp:
            with open(self._file, encoding="utf-8") as f:
                self._header = f"Bearer {f.read().strip()}"
            self._stamp = stamp
        return self._header


class BasicAuth:
    """The ``Authorization`` header of a kubeconfig user with a user name and password."""

    def __init__(self, username: str, password: str) -> None:
        self._header = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")

    def header(self) -> str | None:
        return self._header


class ExecAuth:
    """The credential of an exec plugin, run at the first request, again once it has expired
    (``expirationTimestamp``) and once after the API server answered 401 to it (:meth:`rejected`):
    as kubectl does. One run at a time, however many requests wait for it. A client certificate is
    loaded into ``tls`` (the pools' TLS context), for the connections opened after it;
    ``on_new_certificate`` lets the pools drop the connections made with the one before."""

    def __init__(self, plugin: ExecConfig, cluster: Mapping[str, Any] | None, *,
                 tls: ssl.SSLContext | bool | None = None, on_new_certificate: Callable[[], None] | None = None,
                 timeout: float = execplugin.TIMEOUT) -> None:
        self._plugin, self._cluster, self._timeout = plugin, cluster, timeout
        self._tls, self._on_new_certificate = tls, on_new_certificate
        self._credential: Credential | None = None
        self._header: str | None = None
        self._generation = 0
        self._lock = asyncio.Lock()

    def header(self) -> str | None:
        return self._header

    def _expired(self) -> bool:
        expires = self._credential.expires if self._credential is not None else None
        if expires is not None and expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        return self._credential is None or (expires is not None and datetime.now(UTC) >= expires)

    async def fresh(self) -> int:
        """Run the plugin if there is no credential or it has expired; the credential's generation."""
        if self._expired():
            async with self._lock:
                if self._expired():
                    await self._renew()
        return self._generation

    async def rejected(self, generation: int) -> None:
        """The API server answered 401 to the credential of ``generation``: run the plugin again
        (unless a request that got its 401 first already did)."""
        async with self._lock:
            if generation == self._generation:
                await self._renew()

    async def _renew(self) -> None:
        found = await execplugin.run(self._plugin, self._cluster, timeout=self._timeout)
        before = self._credential
        if found.cert_pem is not None and (before is None or (before.cert_pem, before.key_pem) != (found.cert_pem,
                                                                                                  found.key_pem)):
            self._load_certificate(found)
            if before is not None and self._on_new_certificate is not None:
                self._on_new_certificate()
        self._credential, self._header = found, f"Bearer {found.token}" if found.token else None
        self._generation += 1

    def _load_certificate(self, found: Credential) -> None:
        if not isinstance(self._tls, ssl.SSLContext):
            raise ExecPluginFailed(f"the exec plugin {self._plugin.command!r} gave a client certificate, but the "
                                   "API server is not reached over TLS (https)")
        with tempfile.TemporaryDirectory() as folder:  # loaded from files that live only this long
            cert, key = Path(folder) / "cert", Path(folder) / "key"
            cert.write_bytes(found.cert_pem or b"")
            key.write_bytes(found.key_pem or b"")
            try:
                self._tls.load_cert_chain(str(cert), str(key))
            except (OSError, ValueError) as e:  # ssl.SSLError is an OSError
                raise ExecPluginFailed(f"the exec plugin {self._plugin.command!r} gave a client certificate "
                                       f"that cannot be loaded: {e}") from e


def cluster_info(config: KubeConfig) -> dict[str, Any]:
    """``spec.cluster`` of ``KUBERNETES_EXEC_INFO`` for a plugin with ``provideClusterInfo``."""
    cluster = config.cluster
    info: dict[str, Any] = {"server": cluster.server}
    if cluster.ca_data:
        info["certificate-authority-data"] = cluster.ca_data
    elif cluster.ca_file:
        with open(config.abs_file(cluster.ca_file), "rb") as f:
            info["certificate-authority-data"] = base64.b64encode(f.read()).decode("ascii")
    if cluster.insecure:
        info["insecure-skip-tls-verify"] = True
    if cluster.exec_extension is not None:
        info["config"] = json.loads(cluster.exec_extension)
    return info


class UnsupportedUser(Exception):
    """The kubeconfig's user authenticates in a way the operator does not implement."""


def unsupported_user(config: KubeConfig) -> str | None:
    """Why the operator cannot authenticate as ``config``'s current user, or None when it can."""
    user = config.user
    if user is None:
        return None  # no user: anonymous, or a client certificate only
    if user.exec_errors:
        return f"the user of context {config.context_name!r} has an exec block that cannot be used: " + \
            "; ".join(user.exec_errors)
    if user.plugin is not None:
        return execplugin.refusal(user.plugin)
    if user.auth_provider is not None:
        return (f"the user of context {config.context_name!r} authenticates through the auth provider "
                f"{user.auth_provider!r}, which kubectl and the operator no longer run: use its exec plugin "
                "instead (gcp: gke-gcloud-auth-plugin, azure: kubelogin, oidc: kubelogin / int128 oidc-login)")
    return None
