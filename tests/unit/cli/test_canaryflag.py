"""``--canary-url`` (Contract 11): which canary a member gets.

- ``none`` (any case) turns it off; a URL is used as given; a URL that is not absolute http(s)
  or carries user info is refused with one line that never repeats a password;
- default in a pod: ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT/readyz`` (IPv6 in
  brackets), verified with the service account's CA; the operator outside a cluster: its
  kubeconfig's server with that cluster's CA (data or file, relative to the kubeconfig), or no
  verification when the kubeconfig skips it; standalone outside a cluster: none;
- the commands refuse a bad flag with exit status 2 and one line on stderr.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from route_monitor.cli.canaryflag import ApiServer, CanaryFlagError, canary_settings, in_cluster
from route_monitor.cli.commands.operator import apiserver_of
from route_monitor.kube import kubeconfig as kc

PEM = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.mark.parametrize("flag", ["none", "None", " NONE "])
def test_none_turns_the_canary_off(flag: str) -> None:
    assert canary_settings(flag, ApiServer("https://10.96.0.1:443")) is None


def test_a_url_is_used_as_given() -> None:
    got = canary_settings("http://egress-check.example.com/health", ApiServer("https://10.96.0.1:443"))
    assert got is not None and got.url == "http://egress-check.example.com/health" and got.ca_pem == b""


@pytest.mark.parametrize(("flag", "says"), [
    pytest.param("10.96.0.1/readyz", "not an absolute http(s) URL", id="no-scheme"),
    pytest.param("ftp://files.example.com/", "not an absolute http(s) URL", id="other-scheme"),
    pytest.param("https://probe:s3cret@check.example.com/", "user info is refused", id="user-info"),
])
def test_a_bad_url_is_refused_in_one_line_without_its_password(flag: str, says: str) -> None:
    with pytest.raises(CanaryFlagError) as refused:
        canary_settings(flag, None)
    assert says in str(refused.value) and "s3cret" not in str(refused.value)


def test_in_a_pod_the_apiserver_by_service_ip_with_the_service_account_ca(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(PEM)
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    got = canary_settings(None, in_cluster(env, ca))
    assert got is not None and got.url == "https://10.96.0.1:443/readyz" and got.ca_pem == PEM
    v6 = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, ca)
    assert v6 is not None and v6.server == "https://[fd00::1]:443"


def test_standalone_outside_a_cluster_has_no_default_canary() -> None:
    assert in_cluster({}) is None and canary_settings(None, None) is None


def kubeconfig(cluster: dict[str, object]) -> kc.KubeConfig:
    return kc.from_dict({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://api.example.com:6443", **cluster}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]})


@pytest.mark.parametrize(("cluster", "ca", "insecure"), [
    pytest.param({"certificate-authority-data": base64.b64encode(PEM).decode()}, PEM, False, id="ca-data"),
    pytest.param({"insecure-skip-tls-verify": True}, b"", True, id="insecure"),
])
def test_the_operator_outside_a_cluster_uses_its_kubeconfigs_server(cluster: dict[str, object], ca: bytes,
                                                                   insecure: bool) -> None:
    got = canary_settings(None, apiserver_of(kubeconfig(cluster), {}))
    assert got is not None and got.url == "https://api.example.com:6443/readyz"
    assert got.ca_pem == ca and got.insecure_skip_verify is insecure


def test_in_a_pod_the_service_wins_over_a_kubeconfig() -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    found = apiserver_of(kubeconfig({"insecure-skip-tls-verify": True}), env)
    assert found is not None and found.server == "https://10.96.0.1:443"


@pytest.mark.parametrize("command", ["standalone", "operator"])
def test_the_commands_refuse_a_bad_flag_with_one_line(command: str, tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: a, "
                                     "namespace: n}\nspec:\n  target: {url: http://127.0.0.1:1/}\n  slo: "
                                     "{availability: '99'}\n")
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: "
                  "'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\n"
                  "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    args = [str(tmp_path / "m.yaml")] if command == "standalone" else []
    done = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", command, *args, "--canary-url", "ftp://x/"],
                          capture_output=True, text=True, timeout=60, env={"KUBECONFIG": str(kc), "PATH": "/usr/bin"})
    assert done.returncode == 2, done.stderr
    assert "--canary-url: 'ftp://x/' is not an absolute http(s) URL" in done.stderr
