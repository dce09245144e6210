"""Kubeconfig users whose credential comes from an exec plugin (EKS, GKE, AKS laptop configs), with
real plugin processes (a script written here that prints an ExecCredential) and the real API server:

- its token is sent; the plugin runs once for many requests, gets ``args``, ``env`` and
  ``KUBERNETES_EXEC_INFO`` (not interactive; the cluster with ``provideClusterInfo``); what it
  writes on stderr is in the log, its token is not;
- an expired credential runs it again; a 401 runs it again once, and the request is sent again;
- a client certificate from the plugin is presented in the TLS handshake (a new one on new
  connections);
- a missing command is one line with its ``installHint``; a failing plugin, one line with its
  stderr; a plugin that hangs, one line after the time limit;
- ``route-monitor doctor`` reads the cluster with such a kubeconfig, and the operator runs with one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from route_monitor.kube import apierrors, execplugin, kubeconfig, rest, transport
from route_monitor.kube.auth import ExecAuth
from tests.support.cluster import ADMIN_TOKEN, OPERATOR_TOKEN, Cluster
from tests.support.cluster import kubeconfig as cluster_kubeconfig
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, admin_client, annotations, get, route
from tests.support.resources import RouteMonitor
from tests.unit.kube.test_kubeconfig import b64, config, tls_server

V1 = "client.authentication.k8s.io/v1"
FUTURE, PAST = "2999-01-01T00:00:00Z", "2000-01-01T00:00:00Z"
PLUGIN = """#!{python}
import json, os, sys, time
plan = json.load(open(sys.argv[1]))
runs = sys.argv[1] + ".runs"
with open(runs, "a") as f:
    f.write(json.dumps({{"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]), "env": os.environ.get("PLUGIN_ENV"),
                        "args": sys.argv[2:]}}) + "\\n")
step = plan[min(len(open(runs).read().splitlines()), len(plan)) - 1]
sys.stderr.write(step.get("stderr", ""))
time.sleep(step.get("sleep", 0))
if step.get("exit"):
    sys.exit(step["exit"])
print(json.dumps({{"apiVersion": step.get("apiVersion", "{v1}"), "kind": "ExecCredential", "status": step["status"]}}))
"""


class Plugin:
    """A plugin script that prints, at its n-th run, the n-th step of ``plan`` (the last one again
    after that), and records each run."""

    def __init__(self, folder: Path, plan: list[dict[str, Any]]) -> None:
        self.script, self.plan = folder / "plugin", folder / "plan.json"
        self.script.write_text(PLUGIN.format(python=sys.executable, v1=V1))
        self.script.chmod(0o755)
        self.plan.write_text(json.dumps(plan))

    def user(self, **extra: Any) -> dict[str, Any]:
        return {"exec": {"apiVersion": V1, "command": str(self.script), "args": [str(self.plan), "--region", "x"],
                         "env": [{"name": "PLUGIN_ENV", "value": "from-kubeconfig"}],
                         "interactiveMode": "Never", **extra}}

    def runs(self) -> list[dict[str, Any]]:
        path = Path(f"{self.plan}.runs")
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _get(conf: dict[str, Any], *paths: str) -> list[dict[str, Any]]:
    found = kubeconfig.from_dict(conf)
    pools = transport.for_config(found)
    client = rest.for_config(found, pools.session, pools=pools)
    assert client is not None, rest.unsupported_user(found)
    try:
        return [await client.get(p, {}) for p in paths]
    finally:
        await pools.aclose()


NAMESPACE = "/api/v1/namespaces/default"


@pytest.mark.cluster
def test_the_plugins_token_is_sent_and_kept(cluster: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    plugin = Plugin(tmp_path, [{"status": {"token": ADMIN_TOKEN, "expirationTimestamp": FUTURE},
                                "stderr": "refreshed the session\n"}])
    conf = cluster_kubeconfig(cluster.server, "", "u", credentials=plugin.user(provideClusterInfo=True))

    async def many() -> list[Any]:
        found = kubeconfig.from_dict(conf)
        pools = transport.for_config(found)
        client = rest.for_config(found, pools.session, pools=pools)
        assert client is not None
        try:
            answers: list[Any] = await asyncio.gather(*(client.get(NAMESPACE, {}) for _ in range(5)))
            return answers
        finally:
            await pools.aclose()

    with caplog.at_level(logging.INFO):
        answers = asyncio.run(many())
    assert {a["metadata"]["name"] for a in answers} == {"default"}
    [run] = plugin.runs()  # once for five requests at once
    assert run["args"] == ["--region", "x"] and run["env"] == "from-kubeconfig"
    assert run["info"] == {"apiVersion": V1, "kind": "ExecCredential",
                           "spec": {"interactive": False, "cluster": {"server": cluster.server,
                                                                      "insecure-skip-tls-verify": True}}}
    assert "refreshed the session" in caplog.text and ADMIN_TOKEN not in caplog.text


@pytest.mark.cluster
def test_an_expired_credential_runs_the_plugin_again(cluster: Cluster, tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"status": {"token": ADMIN_TOKEN, "expirationTimestamp": PAST}}])
    conf = cluster_kubeconfig(cluster.server, "", "u", credentials=plugin.user())
    asyncio.run(_get(conf, NAMESPACE, NAMESPACE))
    assert len(plugin.runs()) == 2
    assert "cluster" not in plugin.runs()[0]["info"]["spec"]  # no provideClusterInfo


@pytest.mark.cluster
def test_a_401_runs_the_plugin_again_once(cluster: Cluster, tmp_path: Path) -> None:
    revoked = Plugin(tmp_path, [{"status": {"token": "revoked"}}, {"status": {"token": ADMIN_TOKEN}}])
    [answer] = asyncio.run(_get(cluster_kubeconfig(cluster.server, "", "u", credentials=revoked.user()), NAMESPACE))
    assert answer["metadata"]["name"] == "default" and len(revoked.runs()) == 2
    (tmp_path / "never").mkdir()
    never = Plugin(tmp_path / "never", [{"status": {"token": "wrong"}}])
    with pytest.raises(apierrors.ApiError) as refused:
        asyncio.run(_get(cluster_kubeconfig(cluster.server, "", "u", credentials=never.user()), NAMESPACE))
    assert refused.value.status == 401 and len(never.runs()) == 2  # not a loop


@pytest.mark.cluster
def test_a_watch_refused_with_401_runs_the_plugin_again_once(cluster: Cluster, tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"status": {"token": "revoked"}}, {"status": {"token": ADMIN_TOKEN}}])
    found = kubeconfig.from_dict(cluster_kubeconfig(cluster.server, "", "u", credentials=plugin.user()))

    async def first_event() -> dict[str, Any]:
        pools = transport.for_config(found)
        client = rest.for_config(found, pools.session, pools.watch_session, pools=pools)
        assert client is not None
        try:
            watch = client.watch("/api/v1/namespaces", {"timeoutSeconds": "5"}, read_timeout=10)
            async with contextlib.aclosing(watch) as events:  # type: ignore[type-var]
                async for event in events:
                    return event
            raise AssertionError("the watch ended without an event")
        finally:
            await pools.aclose()

    assert asyncio.run(first_event())["type"] == "ADDED" and len(plugin.runs()) == 2


async def test_the_plugins_client_certificate_is_presented(tmp_path: Path) -> None:
    ca, clients = trustme.CA(), trustme.CA()
    first, second = clients.issue_cert("first@example.com"), clients.issue_cert("second@example.com")

    def status(cert: trustme.LeafCert) -> dict[str, str]:
        return {"clientCertificateData": cert.cert_chain_pems[0].bytes().decode(),
                "clientKeyData": cert.private_key_pem.bytes().decode(), "expirationTimestamp": PAST}

    plugin = Plugin(tmp_path, [{"status": status(first)}, {"status": status(second)}])
    async with tls_server(ca, client_ca=clients) as (server, peers):
        trust = {"certificate-authority-data": b64(ca.cert_pem.bytes())}
        assert await _get(config(server, trust, plugin.user()), "/version", "/version") == [{}, {}]
    presented = [subject for subject in peers if subject]
    assert len(plugin.runs()) == 2 and len(presented) == 2, peers
    assert presented[0] != presented[1], presented  # the second certificate once the first expired


def test_a_missing_plugin_is_one_line_with_its_install_hint(tmp_path: Path) -> None:
    hint = "Install no-such-auth-plugin for use with kubectl by following\n  https://cloud.google.com/blog/x"
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "no-such-auth-plugin",
                     "installHint": hint}}
    found = kubeconfig.from_dict(config("https://127.0.0.1:1", {}, user))
    why = rest.unsupported_user(found) or ""
    assert "'no-such-auth-plugin' of the kubeconfig was not found" in why and "\n" not in why
    assert "following https://cloud.google.com/blog/x" in why
    assert found.user is not None and found.user.plugin is not None
    with pytest.raises(execplugin.ExecPluginFailed, match="was not found: Install no-such-auth-plugin"):
        asyncio.run(execplugin.run(found.user.plugin, None))


def test_a_failing_plugin_is_one_line_with_its_stderr(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"exit": 3, "stderr": "error: SSO session expired\nrun: aws sso login\n"}])
    with pytest.raises(apierrors.Unreachable) as failed:  # the operator tries again later, as for no answer
        asyncio.run(_get(config("https://127.0.0.1:1", {}, plugin.user()), NAMESPACE))
    assert isinstance(failed.value, execplugin.ExecPluginFailed) and apierrors.unreachable(failed.value)
    assert str(failed.value) == (f"the exec plugin {str(plugin.script)!r} failed (exit status 3): "
                                 "error: SSO session expired run: aws sso login")


def test_a_plugin_that_hangs_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    plugin = Plugin(tmp_path, [{"sleep": 60, "status": {"token": "late"}}])
    found = kubeconfig.from_dict(config("https://127.0.0.1:1", {}, plugin.user()))
    assert found.user is not None and found.user.plugin is not None
    auth = ExecAuth(found.user.plugin, None, timeout=0.5)
    with pytest.raises(execplugin.ExecPluginFailed, match=r"gave no credential within 0\.5 s"):
        asyncio.run(auth.fresh())


@pytest.mark.parametrize(("user", "why"), [
    pytest.param({"exec": {"apiVersion": V1, "command": "kubelogin", "interactiveMode": "Always"}},
                 "interactiveMode: Always, but the operator has no terminal", id="always-interactive"),
    pytest.param({"exec": {"apiVersion": V1, "command": "kubelogin"}},
                 "interactiveMode: required with apiVersion client.authentication.k8s.io/v1", id="v1-without-mode"),
    pytest.param({"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1"}},
                 "command: required (the plugin to run); kubeconfig: users[u].user.exec.apiVersion: "
                 "'client.authentication.k8s.io/v1alpha1' is not one of", id="all-field-errors"),
    pytest.param({"auth-provider": {"name": "gcp"}}, "auth provider 'gcp', which kubectl and the operator no "
                 "longer run: use its exec plugin instead (gcp: gke-gcloud-auth-plugin", id="auth-provider"),
])
def test_what_cannot_run_here_is_refused_with_one_line(user: dict[str, Any], why: str) -> None:
    found = kubeconfig.from_dict(config("https://a", {}, user))
    assert why in (rest.unsupported_user(found) or "")
    assert rest.for_config(found, lambda: None) is None  # type: ignore[arg-type,return-value]


@pytest.mark.cluster
def test_doctor_reads_the_cluster_through_an_exec_plugin(cluster: Cluster, tmp_path: Path) -> None:
    """``route-monitor doctor`` from a laptop whose kubeconfig logs in with a plugin."""
    plugin = Plugin(tmp_path, [{"status": {"token": ADMIN_TOKEN}}])
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cluster_kubeconfig(cluster.server, "", "u", credentials=plugin.user())))
    done = subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "doctor", "-o", "json"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "KUBECONFIG": str(path)})
    assert done.returncode in (0, 1), done.stderr
    findings = json.loads(done.stdout)["findings"]
    assert any("operator Deployment" in f["message"] or "no Deployment route-monitor" in f["message"]
               for f in findings), findings
    assert len(plugin.runs()) == 1 and ADMIN_TOKEN not in done.stderr + done.stdout


@pytest.mark.cluster
def test_the_operator_runs_with_an_exec_plugin(cluster: Cluster, tmp_path: Path, target: Target) -> None:
    """The operator from a laptop kubeconfig: its first token is refused (401), the plugin runs
    again once and the operator goes on to create the Route's RouteMonitor; the plugin's stderr is
    in the operator's log, its tokens are not."""
    ns = "exec-plugin"
    kube = admin_client(cluster)
    kube.create(Namespace(metadata=ObjectMeta(name=ns)))
    kube.create(route(ns, "app", target.host, annotations()))
    plugin = Plugin(tmp_path, [{"status": {"token": "revoked-token"}},
                               {"status": {"token": OPERATOR_TOKEN, "expirationTimestamp": FUTURE},
                                "stderr": "signed in as operator\n"}])
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(cluster_kubeconfig(cluster.server, "", "u", credentials=plugin.user())))
    op = Operator(cluster, tmp_path / "op.log", ("--namespace", ns), kubeconfig=path)
    op.start()
    try:
        wait_for(lambda: get(kube, RouteMonitor, "app", ns) is not None, timeout=30, what="the Route's RouteMonitor")
    finally:
        op.stop()
    assert len(plugin.runs()) == 2, op.log()
    log = op.log(400)
    assert "signed in as operator" in log and OPERATOR_TOKEN not in log and "revoked-token" not in log
