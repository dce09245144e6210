"""Where the operator finds the API server and who it is there (``route_monitor.kube.kubeconfig``),
read without any Kubernetes client library:

- the service account in a pod wins over ``$KUBECONFIG``, which wins over ``~/.kube/config``;
- the cluster's CA (a file relative to the kubeconfig's folder, or inline data) is the only trust:
  a server with a certificate of another CA is refused (``ConnectError``), the same server is
  reached with the right CA, over a real TLS handshake;
- a client certificate (files or inline data) is presented to a server that requires one;
- what cannot be used is one line naming what is wrong (missing file, context, cluster, user).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

from route_monitor.kube import apierrors, kubeconfig, rest, transport
from route_monitor.kube.kubeconfig import ConfigError


def config(server: str, cluster: dict[str, Any], user: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": server, **cluster}}],
            "users": [{"name": "u", "user": user or {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}


@contextlib.asynccontextmanager
async def tls_server(ca: trustme.CA, *, client_ca: trustme.CA | None = None) -> AsyncIterator[tuple[str, list[Any]]]:
    """An HTTPS server on 127.0.0.1 answering ``{}``; with ``client_ca``, it requires a client
    certificate of that CA, and records each client's certificate subject."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    if client_ca is not None:
        client_ca.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
    peers: list[Any] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            peers.append((writer.get_extra_info("peercert") or {}).get("subject"))
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}", peers
    server.close()


async def ask(found: kubeconfig.KubeConfig) -> dict[str, Any]:
    pools = transport.for_config(found)
    client = rest.for_config(found, pools.session)
    assert client is not None
    try:
        return await client.get("/version", {})
    finally:
        await pools.aclose()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_only_the_clusters_ca_is_trusted(tmp_path: Path) -> None:
    ours, other = trustme.CA(), trustme.CA()
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_bytes(ours.cert_pem.bytes())
    async with tls_server(ours) as (server, _):
        by_file = tmp_path / "kubeconfig"
        by_file.write_text(yaml.safe_dump(config(server, {"certificate-authority": "certs/ca.pem"})))
        assert await ask(kubeconfig.from_file(by_file)) == {}  # relative to the kubeconfig's folder
        assert await ask(kubeconfig.from_dict(config(server, {"certificate-authority-data": b64(ours.cert_pem.bytes())}))) == {}
        with pytest.raises(apierrors.ConnectError):
            await ask(kubeconfig.from_dict(config(server, {"certificate-authority-data": b64(other.cert_pem.bytes())})))
        assert await ask(kubeconfig.from_dict(config(server, {"insecure-skip-tls-verify": True}))) == {}


async def test_the_client_certificate_is_presented_from_files_or_data(tmp_path: Path) -> None:
    ca, clients = trustme.CA(), trustme.CA()
    cert = clients.issue_cert("operator@example.com")
    (tmp_path / "c.pem").write_bytes(cert.cert_chain_pems[0].bytes())
    (tmp_path / "k.pem").write_bytes(cert.private_key_pem.bytes())
    trust = {"certificate-authority-data": b64(ca.cert_pem.bytes())}
    async with tls_server(ca, client_ca=clients) as (server, peers):
        files = tmp_path / "kubeconfig"
        files.write_text(yaml.safe_dump(config(server, trust, {"client-certificate": "c.pem", "client-key": "k.pem"})))
        assert await ask(kubeconfig.from_file(files)) == {}
        data = {"client-certificate-data": b64(cert.cert_chain_pems[0].bytes()),
                "client-key-data": b64(cert.private_key_pem.bytes())}
        assert await ask(kubeconfig.from_dict(config(server, trust, data))) == {}
        with pytest.raises(apierrors.Unreachable):  # no certificate: the server ends the handshake
            await ask(kubeconfig.from_dict(config(server, trust)))
    assert len([p for p in peers if p is not None]) == 2, peers  # a certificate in each handshake that succeeded


def test_the_service_account_wins_over_kubeconfig(tmp_path: Path) -> None:
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("sa-token\n")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443", "KUBECONFIG": "/nope"}
    found = kubeconfig.from_service_account(str(account), env)
    assert found is not None and found.cluster.server == "https://[fd00::1]:443"
    assert found.cluster.ca_file == str(account / "ca.crt")
    assert found.user is not None and found.user.token_file == str(account / "token")
    assert kubeconfig.from_service_account(str(account), {}) is None  # not in a pod


def test_kubeconfig_names_the_first_file_of_the_variable(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.write_text(yaml.safe_dump(config("https://first:6443", {})))
    found = kubeconfig.from_env({"KUBECONFIG": f"{first}:{tmp_path / 'second'}"})
    assert found.cluster.server == "https://first:6443" and found.context_name == "c"


@pytest.mark.parametrize(("conf", "message"), [
    pytest.param({**config("https://a", {}), "current-context": None}, "No current context set", id="no-context"),
    pytest.param({**config("https://a", {}), "current-context": "x"}, "Context 'x' not found", id="unknown-context"),
    pytest.param({**config("https://a", {}), "clusters": []}, "names cluster 'c', which is not defined",
                 id="unknown-cluster"),
    pytest.param({**config("https://a", {}), "users": []}, "names user 'u', which is not defined", id="unknown-user"),
])
def test_what_cannot_be_used_is_one_line(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        kubeconfig.from_dict(conf)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"Configuration file {tmp_path / 'none'} not found"):
        kubeconfig.from_file(tmp_path / "none")


@pytest.mark.parametrize(("user", "why"), [
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "no-such-iam-authenticator",
               "interactiveMode": "Never"}}, "exec plugin 'no-such-iam-authenticator' of the kubeconfig was not found"),
    ({"auth-provider": {"name": "gcp"}}, "auth provider 'gcp'"),
])
def test_plugin_users_that_cannot_run_are_read_to_be_refused(user: dict[str, Any], why: str) -> None:
    found = kubeconfig.from_dict(config("https://a", {}, user))
    assert why in (rest.unsupported_user(found) or "")


def test_doctor_refuses_a_missing_plugin_with_one_line(tmp_path: Path) -> None:
    """``doctor`` runs the kubeconfig's exec plugin as kubectl does; one that is not installed is one
    line with the kubeconfig's ``installHint``."""
    path = tmp_path / "kubeconfig"
    plugin = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "no-such-gcloud-auth-plugin",
                       "installHint": "Install it with:\n  gcloud components install gke-gcloud-auth-plugin"}}
    path.write_text(yaml.safe_dump(config("https://127.0.0.1:1", {}, plugin)))
    done = subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "doctor"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "KUBECONFIG": str(path)})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "exec plugin 'no-such-gcloud-auth-plugin' of the kubeconfig was not found: Install it with: gcloud " \
        "components install gke-gcloud-auth-plugin" in lines[0] and "Traceback" not in done.stderr
