"""The operator's direct write path (``route_monitor.kube.rest``) against the real apiserver.

What a user would check: the objects are stored as sent, under the field manager
``route-monitor``; a taken name, a stale version, a missing object and a refused token come back
as the API errors the supervisor counts (409, 409, 404, 401), never as a crash; the service
account's token file is read again after the kubelet rotates it.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube.resources.core_v1 import Namespace
from prometheus_client import CollectorRegistry

from alert_rules import names
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.kube.apierrors import ApiError, status_code
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator import plan
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets.annotations import monitor_manifest
from tests.support.cluster import ADMIN_TOKEN, Cluster, kubeconfig
from tests.support.operator import admin_client
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster


def _route(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}",
                         "annotations": {names.ANN_SLO: "99.9", names.ANN_INTERVAL: "10s"}},
            "spec": {"host": "example.com", "to": {"kind": "Service", "name": name}}}


async def _writer(config: kc.KubeConfig) -> tuple[KubeWriter, transport.Pools]:
    pool = transport.for_config(config)
    direct_path = rest.for_config(config, pool.session)
    assert direct_path is not None
    return KubeWriter(OperatorMetrics(CollectorRegistry()), rest=direct_path), pool


def _run(cluster: Cluster, body: Callable[[KubeWriter], Any]) -> Any:
    async def go() -> Any:
        writer, client = await _writer(kc.from_file(cluster.admin_kubeconfig))
        try:
            return await body(writer)
        finally:
            await client.aclose()
    return asyncio.run(go())


def test_a_new_monitors_writes_are_stored_as_sent_and_errors_are_api_errors(cluster: Cluster) -> None:
    ns = "rest-direct"
    admin_client(cluster).create(Namespace.from_dict({"metadata": {"name": ns}}))

    async def writes(kube: KubeWriter) -> dict[str, Any]:
        manifest = monitor_manifest(_route(ns, "web"), "route")
        monitor = await kube.create_monitor(manifest)
        rule = await kube.create_rule(plan.rule_object(parse_routemonitor(monitor), monitor))
        await kube.patch_status(ns, "web", {"observedGeneration": 1, "url": "https://example.com/"})
        errors: dict[str, Any] = {}
        for what, call in {
            "taken name": lambda: kube.create_monitor(manifest),
            "stale version": lambda: kube.replace_rule(rule, rule["metadata"]["uid"], "1"),
            "missing object": lambda: kube.patch_status(ns, "nobody", {"url": "x"}),
        }.items():
            try:
                await call()
            except Exception as e:
                errors[what] = e
        replaced = await kube.replace_rule({**rule, "metadata": {**rule["metadata"], "labels": {
            **rule["metadata"].get("labels", {}), "extra": "1"}}}, rule["metadata"]["uid"],
            rule["metadata"]["resourceVersion"])
        return {"monitor": monitor, "rule": rule, "replaced": replaced, "errors": errors}

    out = _run(cluster, writes)
    assert out["monitor"]["metadata"]["uid"] and out["monitor"]["spec"]["target"] == {"route": {"name": "web"}}
    assert out["rule"]["kind"] == "PrometheusRule" and out["rule"]["spec"]["groups"]
    assert out["replaced"]["metadata"]["labels"]["extra"] == "1"
    stored = admin_client(cluster).get(RouteMonitor, "web", namespace=ns).to_dict()  # type: ignore[no-untyped-call]
    assert stored["status"]["url"] == "https://example.com/"
    assert {m["manager"] for m in stored["metadata"]["managedFields"]} == {names.FIELD_MANAGER}
    assert {k: status_code(e) for k, e in out["errors"].items()} == {
        "taken name": 409, "stale version": 409, "missing object": 404}
    assert all(isinstance(e, ApiError) for e in out["errors"].values())


def test_a_refused_token_is_an_api_error_401(cluster: Cluster, tmp_path: Path) -> None:
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text(yaml.safe_dump(kubeconfig(cluster.server, "not-a-token", "nobody")))

    async def go() -> int | None:
        writer, client = await _writer(kc.from_file(bad))
        try:
            await writer.patch_status("default", "x", {"url": "x"})
        except ApiError as e:
            return status_code(e)
        finally:
            await client.aclose()
        return None

    assert asyncio.run(go()) == 401


def test_the_token_file_is_read_again_when_the_kubelet_rotates_it(tmp_path: Path) -> None:
    """The kubelet writes a new token into a new timestamped folder and swaps the ``..data`` link."""
    first, second = tmp_path / "..2026_a", tmp_path / "..2026_b"
    first.mkdir(), second.mkdir()
    (first / "token").write_text("token-one\n"), (second / "token").write_text("token-two\n")
    (tmp_path / "..data").symlink_to(first.name)
    (tmp_path / "token").symlink_to("..data/token")
    token = rest.BearerToken(token_file=str(tmp_path / "token"))
    assert token.header() == "Bearer token-one"
    (tmp_path / "..data_tmp").symlink_to(second.name)
    os.replace(tmp_path / "..data_tmp", tmp_path / "..data")
    assert token.header() == "Bearer token-two"


@pytest.mark.parametrize(("user", "direct"), [
    ({"token": ADMIN_TOKEN}, True), ({"tokenFile": "/var/run/token"}, True),
    ({"client-certificate": "c.pem", "client-key": "k.pem"}, True),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "no-such-get-token"}}, False),
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable}}, True),
    ({"auth-provider": {"name": "oidc"}}, False),
    ({"username": "u", "password": "p"}, True), ({}, True),
])
def test_users_authenticated_through_a_plugin_get_no_direct_path(user: dict[str, Any], direct: bool) -> None:
    """Auth providers and exec plugins that are not installed: the operator refuses them at start
    (``unsupported_user``); a token, a token file, a client certificate, basic auth, an installed
    exec plugin or no credentials at all go direct."""
    config = kc.from_dict(kubeconfig("https://127.0.0.1:6443", "", "u", credentials=user))
    assert (rest.for_config(config, lambda: None) is not None) == direct  # type: ignore[arg-type,return-value]
