"""Where the API server is and who the operator is to it: the in-cluster service account, else
the kubeconfig named by ``$KUBECONFIG`` (or ``~/.kube/config``), its current context.

Read once at start into frozen values; the TLS context (:func:`tls_context`) is built from them.
What the operator can send (:mod:`~route_monitor.kube.rest`): a bearer token, a token file (the
service account's, re-read when the kubelet rotates it), a client certificate, a user name and
password, an exec plugin (:mod:`~route_monitor.kube.execplugin`, run at the first request). A user
of an auth provider is read as such, so that the operator can refuse it with one clear line
(:func:`~route_monitor.kube.auth.unsupported_user`) rather than fail with 401s later.
``proxy-url`` is not used: the API server is reached directly.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from route_monitor.kube import execplugin
from route_monitor.kube.execplugin import ExecConfig

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
DEFAULT_KUBECONFIG = "~/.kube/config"
EXEC_EXTENSION = "client.authentication.k8s.io/exec"


class ConfigError(Exception):
    """The configuration cannot be used as found (one line, no secret value)."""


@dataclass(frozen=True)
class Cluster:
    server: str
    ca_file: str | None = None
    ca_data: str | None = None
    """``certificate-authority-data``: base64 of PEM."""
    insecure: bool = False
    exec_extension: str | None = None
    """JSON of the ``client.authentication.k8s.io/exec`` extension, for plugins given the cluster's info."""


@dataclass(frozen=True)
class User:
    token: str | None = None
    token_file: str | None = None
    username: str | None = None
    password: str | None = None
    cert_file: str | None = None
    cert_data: str | None = None
    key_file: str | None = None
    key_data: str | None = None
    plugin: ExecConfig | None = None
    """The ``exec`` block: the plugin that gives the credential."""
    exec_errors: tuple[str, ...] = ()
    """What is wrong in the ``exec`` block (then ``plugin`` is None)."""
    auth_provider: str | None = None
    """The name of the ``auth-provider``, which the operator does not run."""


@dataclass(frozen=True)
class KubeConfig:
    """One context of a kubeconfig (or the service account), ready to connect with."""

    context_name: str
    cluster: Cluster
    user: User | None = None
    fname: Path | None = None
    """The kubeconfig file: relative file names in it are relative to its folder."""

    def abs_file(self, name: str) -> str:
        if Path(name).is_absolute():
            return name
        if self.fname is None:
            raise ConfigError(f"{name} is relative, but kubeconfig path unknown")
        return str(self.fname.parent / name)


def _named(entries: Any, key: str, where: str) -> dict[str, Mapping[str, Any]]:
    if not isinstance(entries, list):
        return {}
    out: dict[str, Mapping[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, Mapping) or not isinstance(entry.get(key), Mapping):
            raise ConfigError(f"{where}: an entry of {key}s without a name or a {key}")
        out[str(entry.get("name"))] = entry[key]
    return out


def _str(block: Mapping[str, Any], key: str) -> str | None:
    value = block.get(key)
    return None if value is None or value == "" else str(value)


def from_dict(conf: Mapping[str, Any], fname: str | Path | None = None, context: str | None = None) -> KubeConfig:
    """The context ``context`` (default: ``current-context``) of the kubeconfig ``conf``."""
    where = f"kubeconfig {fname}" if fname else "kubeconfig"
    name = context or _str(conf, "current-context")
    if name is None:
        raise ConfigError("No current context set and no default provided")
    contexts = _named(conf.get("contexts"), "context", where)
    if name not in contexts:
        raise ConfigError(f"Context '{name}' not found")
    ctx = contexts[name]
    clusters, users = _named(conf.get("clusters"), "cluster", where), _named(conf.get("users"), "user", where)
    cluster_name, user_name = _str(ctx, "cluster"), _str(ctx, "user")
    if cluster_name not in clusters:
        raise ConfigError(f"{where}: context '{name}' names cluster '{cluster_name}', which is not defined")
    if user_name is not None and user_name not in users:
        raise ConfigError(f"{where}: context '{name}' names user '{user_name}', which is not defined")
    c = clusters[str(cluster_name)]
    extension = _named(c.get("extensions"), "extension", where).get(EXEC_EXTENSION)
    cluster = Cluster(server=_str(c, "server") or "http://localhost:8080", ca_file=_str(c, "certificate-authority"),
                      ca_data=_str(c, "certificate-authority-data"), insecure=bool(c.get("insecure-skip-tls-verify")),
                      exec_extension=None if extension is None else json.dumps(extension))
    user = None
    if user_name is not None:
        u = users[user_name]
        block, provider = u.get("exec"), u.get("auth-provider")
        plugin, errors = (None, []) if not isinstance(block, Mapping) else \
            execplugin.parse(block, f"{where}: users[{user_name}].user.exec", Path(fname).parent if fname else None)
        user = User(token=_str(u, "token"), token_file=_str(u, "tokenFile"), username=_str(u, "username"),
                    password=_str(u, "password"), cert_file=_str(u, "client-certificate"),
                    cert_data=_str(u, "client-certificate-data"), key_file=_str(u, "client-key"),
                    key_data=_str(u, "client-key-data"), plugin=plugin, exec_errors=tuple(errors),
                    auth_provider=None if not provider else str(provider.get("name") if isinstance(provider, Mapping)
                                                                 else provider))
    return KubeConfig(name, cluster, user, Path(fname) if fname else None)


def from_file(fname: str | Path) -> KubeConfig:
    path = Path(fname).expanduser()
    if not path.is_file():
        raise ConfigError(f"Configuration file {fname} not found")
    try:
        conf = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"kubeconfig {fname} cannot be read: {str(e).splitlines()[0]}") from e
    if not isinstance(conf, Mapping):
        raise ConfigError(f"kubeconfig {fname} is not a YAML mapping")
    return from_dict(conf, path)


def from_service_account(account: str = SERVICE_ACCOUNT, env: Mapping[str, str] = os.environ) -> KubeConfig | None:
    """The pod's service account, or None outside a pod (no token, or no ``KUBERNETES_SERVICE_*``)."""
    folder = Path(account)
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    token_file = folder / "token"
    if not host or not port or not token_file.is_file():
        return None
    host = f"[{host}]" if ":" in host else host  # IPv6
    user = User(token=token_file.read_text(encoding="utf-8").strip(), token_file=str(token_file))
    return KubeConfig("default", Cluster(f"https://{host}:{port}", ca_file=str(folder / "ca.crt")), user)


def from_env(env: Mapping[str, str] = os.environ) -> KubeConfig:
    """The service account in a pod, else ``$KUBECONFIG`` (its first file), else ``~/.kube/config``."""
    found = from_service_account(env=env)
    if found is not None:
        return found
    named = env.get("KUBECONFIG", "")
    return from_file(named.split(os.pathsep)[0] if named else DEFAULT_KUBECONFIG)


def _pem(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=False)
    except ValueError as e:
        raise ConfigError(f"invalid base64 in the kubeconfig: {e}") from e


def tls_context(config: KubeConfig) -> ssl.SSLContext | bool:
    """The TLS of the connections: the cluster's CA (else the system's), the user's client
    certificate; False for a plain ``http://`` server."""
    cluster, user = config.cluster, config.user or User()
    if not cluster.server.startswith("https"):
        return False
    if cluster.ca_file:
        context = ssl.create_default_context(cafile=config.abs_file(cluster.ca_file))
    elif cluster.ca_data:
        context = ssl.create_default_context(cadata=_pem(cluster.ca_data).decode("ascii", "replace"))
    else:
        context = ssl.create_default_context()
        if cluster.insecure:
            context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    if user.cert_file or user.cert_data:
        with tempfile.TemporaryDirectory() as folder:  # data: loaded from files that live only this long
            def place(name: str, data: str | None, file: str | None) -> str:
                if data is None:
                    return config.abs_file(file or "")
                (Path(folder) / name).write_bytes(_pem(data))
                return str(Path(folder) / name)
            context.load_cert_chain(place("cert", user.cert_data, user.cert_file),
                                    place("key", user.key_data, user.key_file))
    return context
