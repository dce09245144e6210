"""Kubeconfig ``exec`` plugins (``aws eks get-token``, ``gke-gcloud-auth-plugin``, ``kubelogin``):
the command kubectl runs to get a credential, run here the same way.

What kubectl's client (client-go) does and this follows: the ``exec`` block names ``command``,
``args``, ``env`` (added to the operator's environment), ``apiVersion``
(``client.authentication.k8s.io/v1`` or ``v1beta1``), ``installHint`` (shown when the command is
missing) and ``provideClusterInfo``; a command with a ``/`` in it is relative to the kubeconfig's
folder. The plugin gets ``KUBERNETES_EXEC_INFO`` (an ExecCredential whose ``spec`` says it is not
interactive and, with ``provideClusterInfo``, describes the cluster) and prints an ExecCredential
whose ``status`` holds a ``token`` or a ``clientCertificateData``/``clientKeyData`` pair and
maybe an ``expirationTimestamp``. The operator has no terminal: stdin is closed, so
``interactiveMode: Always`` is refused at start (:func:`refusal`); ``Never`` and ``IfAvailable``
run. The plugin runs as an asyncio subprocess (the event loop goes on) within a time limit; what it
writes on stderr goes to the log; its credential is never logged (``repr=False``).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from route_monitor.kube.apierrors import Unreachable

log = logging.getLogger(__name__)
API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_INFO = "KUBERNETES_EXEC_INFO"
TIMEOUT = 60.0
"""Seconds a plugin may take (a browser login of kubelogin cannot happen here anyway)."""


class Interactive(enum.Enum):
    NEVER = "Never"
    IF_AVAILABLE = "IfAvailable"
    ALWAYS = "Always"


class ExecPluginFailed(Unreachable):
    """The request was not sent: its credential could not be had from the exec plugin (one line)."""


@dataclass(frozen=True)
class ExecConfig:
    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str | None = None
    provide_cluster_info: bool = False
    interactive: Interactive = Interactive.IF_AVAILABLE
    folder: Path | None = None
    """The kubeconfig's folder: a command with a ``/`` in it is relative to it."""

    def executable(self) -> str:
        if "/" in self.command and not Path(self.command).is_absolute() and self.folder is not None:
            return str(self.folder / self.command)
        return self.command


@dataclass(frozen=True)
class Credential:
    token: str | None = field(default=None, repr=False)
    cert_pem: bytes | None = field(default=None, repr=False)
    key_pem: bytes | None = field(default=None, repr=False)
    expires: datetime | None = None


def parse(block: Mapping[str, Any], where: str, folder: Path | None) -> tuple[ExecConfig | None, list[str]]:
    """The ``exec`` block of a kubeconfig user, or every field error in it."""
    errors: list[str] = []
    command, version = block.get("command"), block.get("apiVersion")
    if not isinstance(command, str) or not command:
        errors.append(f"{where}.command: required (the plugin to run)")
    if version not in API_VERSIONS:
        errors.append(f"{where}.apiVersion: {version!r} is not one of {', '.join(API_VERSIONS)}")
    args = block.get("args") or []
    if not isinstance(args, list):
        errors.append(f"{where}.args: a list of strings")
    env = block.get("env") or []
    if not isinstance(env, list) or not all(isinstance(e, Mapping) and isinstance(e.get("name"), str) for e in env):
        errors.append(f"{where}.env: a list of {{name, value}}")
    mode = block.get("interactiveMode") or ("IfAvailable" if version != API_VERSIONS[0] else None)
    modes = {m.value: m for m in Interactive}
    if mode is None:
        errors.append(f"{where}.interactiveMode: required with apiVersion {version} (Never or IfAvailable: "
                      "the operator has no terminal)")
    elif mode not in modes:
        errors.append(f"{where}.interactiveMode: {mode!r} is not one of {', '.join(modes)}")
    if errors:
        return None, errors
    hint = block.get("installHint")
    return ExecConfig(command=str(command), api_version=str(version), args=tuple(str(a) for a in args),
                      env=tuple((str(e["name"]), str(e.get("value") or "")) for e in env),
                      install_hint=" ".join(str(hint).split()) if hint else None,
                      provide_cluster_info=bool(block.get("provideClusterInfo")), interactive=modes[str(mode)],
                      folder=folder), []


def not_found(config: ExecConfig) -> str:
    hint = f": {config.install_hint}" if config.install_hint else ""
    return f"the exec plugin {config.command!r} of the kubeconfig was not found{hint}"


def refusal(config: ExecConfig, env: Mapping[str, str] = os.environ) -> str | None:
    """Why the plugin cannot run here (missing command, needs a terminal), or None."""
    if config.interactive is Interactive.ALWAYS:
        return (f"the exec plugin {config.command!r} has interactiveMode: Always, but the operator has no terminal "
                "to ask on; use a plugin mode that needs no input (interactiveMode: Never or IfAvailable)")
    if shutil.which(config.executable(), path=dict(config.env).get("PATH") or env.get("PATH")) is None:
        return not_found(config)
    return None


def _one_line(text: bytes, limit: int = 400) -> str:
    line = " ".join(text.decode("utf-8", "replace").split())
    return line if len(line) <= limit else line[:limit] + "..."


async def run(config: ExecConfig, cluster: Mapping[str, Any] | None, *, timeout: float = TIMEOUT) -> Credential:
    """The credential the plugin prints; :class:`ExecPluginFailed` (one line) when it cannot."""
    spec: dict[str, Any] = {"interactive": False}
    if config.provide_cluster_info and cluster is not None:
        spec["cluster"] = dict(cluster)
    info = json.dumps({"apiVersion": config.api_version, "kind": "ExecCredential", "spec": spec})
    env = {**os.environ, **dict(config.env), EXEC_INFO: info}
    name = config.command
    try:
        proc = await asyncio.create_subprocess_exec(
            config.executable(), *config.args, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except (FileNotFoundError, PermissionError) as e:
        raise ExecPluginFailed(not_found(config) if isinstance(e, FileNotFoundError) else f"{name}: {e}") from e
    try:
        async with asyncio.timeout(timeout):  # not wait_for: it can lose a cancellation (route_monitor.waits)
            out, err = await proc.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise ExecPluginFailed(f"the exec plugin {name!r} gave no credential within {timeout:g} s") from None
    if proc.returncode != 0:
        raise ExecPluginFailed(f"the exec plugin {name!r} failed (exit status {proc.returncode}): "
                               f"{_one_line(err) or 'nothing on stderr'}")
    for line in err.decode("utf-8", "replace").splitlines():
        if line.strip():
            log.warning("exec plugin %s: %s", name, line.strip())
    return credential(out, config)


def credential(out: bytes, config: ExecConfig) -> Credential:
    """The ExecCredential on the plugin's stdout, checked as client-go checks it."""
    where = f"the exec plugin {config.command!r} printed"
    try:
        doc = json.loads(out)
    except ValueError:
        raise ExecPluginFailed(f"{where} no JSON ExecCredential") from None
    if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
        raise ExecPluginFailed(f"{where} no ExecCredential (kind: {doc.get('kind') if isinstance(doc, dict) else '-'})")
    if doc.get("apiVersion") != config.api_version:
        raise ExecPluginFailed(f"{where} apiVersion {doc.get('apiVersion')!r}, the kubeconfig asks for "
                               f"{config.api_version!r}")
    status = doc.get("status")
    if not isinstance(status, dict):
        raise ExecPluginFailed(f"{where} an ExecCredential without status")
    token, cert, key = (status.get(k) or None for k in ("token", "clientCertificateData", "clientKeyData"))
    if bool(cert) != bool(key):
        raise ExecPluginFailed(f"{where} only one of clientCertificateData and clientKeyData")
    if not token and not cert:
        raise ExecPluginFailed(f"{where} neither a token nor a client certificate")
    expires = None
    if status.get("expirationTimestamp"):
        try:
            expires = datetime.fromisoformat(str(status["expirationTimestamp"]))
        except ValueError:
            raise ExecPluginFailed(f"{where} an expirationTimestamp that is not RFC 3339") from None
    return Credential(token=str(token) if token else None, cert_pem=str(cert).encode() if cert else None,
                      key_pem=str(key).encode() if key else None, expires=expires)
