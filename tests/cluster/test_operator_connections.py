"""The operator's own connections to the API server (``route_monitor.kube.transport``), against
the real control plane:

- 24 RouteMonitors, each with its basic-auth password in its own Secret, hold 24 watches open for
  minutes beside the Lease watch: more than the 16 connections that short requests share. The
  Lease is still renewed every 5 s (never older than 10 s, no failed renewal counted) and a
  monitor created once the watches are open gets its Ready status. (With watches in that pool,
  they held every connection: renewals and status patches waited for one and timed out.)
- ``HTTPS_PROXY`` naming a port where nothing listens, no ``NO_PROXY``: the operator reaches the
  API server directly anyway, and says so in its log (proxy variables are not used for the API
  server, as kopf does not use them for its watches);
- a reference watch whose API server cannot be reached keeps trying, one warning per try, and
  reads the Secret once the API answers (a ``ConnectError`` once ended its task);
- a kubeconfig that cannot be loaded ends the operator at once with one line, exit status 2.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace, Secret
from lightkube.resources.rbac_authorization_v1 import Role, RoleBinding

from alert_rules import names
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.operator.refwatch import ReferenceWatches
from tests.support.cluster import ADMIN_TOKEN, OPERATOR_USER, Cluster
from tests.support.faultproxy import FaultProxy
from tests.support.net import free_port, wait_for
from tests.support.operator import VENV_BIN, Operator, Target, condition, wait_monitor
from tests.support.resources import RouteMonitor

NS = "connections"
LEASE_NS = "route-monitor"
MEMBER = "conns"
REFERENCED = 24
"""Secrets referenced, one watch each: well above the 16 connections short requests share."""


@pytest.fixture(scope="module")
def ns(kube: Client) -> str:
    """A namespace where the operator may read (get, watch) Secrets, by a Role there."""
    kube.create(Namespace(metadata=ObjectMeta(name=NS)))
    kube.create(Role.from_dict({"metadata": {"name": "route-monitor-reads-secrets", "namespace": NS},
                                "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch"]}]}))
    kube.create(RoleBinding.from_dict({
        "metadata": {"name": "route-monitor-reads-secrets", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "route-monitor-reads-secrets"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR_USER}]}))
    return NS


def with_secret(kube: Client, name: str, url: str) -> None:
    kube.create(Secret(metadata=ObjectMeta(name=f"{name}-creds", namespace=NS), stringData={
        "username": "probe", "password": f"pw-{name}"}))
    kube.create(RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": name, "namespace": NS},
        "spec": {"target": {"url": url}, "slo": {"availability": "99.9"},
                 "probe": {"interval": "5s", "auth": {"basic": {"secretRef": {"name": f"{name}-creds"}}}}}}))


def ready(m: dict[str, Any]) -> bool:
    return condition(m, "Ready").get("status") == "True"


def lease_age(kube: Client) -> float:
    renewed = kube.get(Lease, f"{names.LEASE_PREFIX}{MEMBER}", namespace=LEASE_NS).spec.renewTime
    assert renewed is not None
    return (dt.datetime.now(dt.UTC) - renewed).total_seconds()


@pytest.fixture(scope="module")
def operator(cluster: Cluster, ns: str, kube: Client, target: Target,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    for i in range(REFERENCED):
        with_secret(kube, f"m{i}", f"http://{target.host}/m{i}")
    op = Operator(cluster, tmp_path_factory.mktemp("connections") / "op.log",
                  ("--namespace", NS, "--allow-url-targets", "--member-name", MEMBER, "--lease-namespace", LEASE_NS),
                  env={"HTTPS_PROXY": f"http://127.0.0.1:{free_port()}", "NO_PROXY": ""})
    op.start()
    try:
        yield op
    finally:
        assert op.stop() == 0, op.log()


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    t = Target()
    yield t
    t.close()


@pytest.mark.cluster
@pytest.mark.timeout(180)
def test_watches_of_referenced_secrets_leave_room_for_lease_renewals_and_status(kube: Client, operator: Operator,
                                                                               target: Target) -> None:
    wait_for(lambda: operator.log(100_000).count(f"secret {NS}/") >= REFERENCED, timeout=60,
             what=f"the {REFERENCED} Secrets read")
    time.sleep(3)  # their watches open after the first read
    ages = []
    for _ in range(20):  # renewed every 5 s, duration 15 s
        ages.append(lease_age(kube))
        time.sleep(1)
    assert max(ages) < 10, f"Lease renewTime ages over 20 s: {[round(a, 1) for a in ages]}\n{operator.log()}"
    assert operator.sample("route_monitor_lease_renew_failures_total") == 0, operator.log()
    with_secret(kube, "late", f"http://{target.host}/late")
    wait_monitor(kube, NS, "late", ready, "Ready status on a monitor created once the watches are open", timeout=30)
    assert all(ready(kube.get(RouteMonitor, f"m{i}", namespace=NS).to_dict()) for i in range(REFERENCED))
    assert target.count("/late") > 0


@pytest.mark.cluster
def test_proxy_variables_are_not_used_for_the_api_server(operator: Operator) -> None:
    # the fixture's HTTPS_PROXY names a port where nothing listens: the operator got ready anyway
    assert operator.ready()
    assert "HTTPS_PROXY set: the API server is reached directly" in operator.log(100_000)


@pytest.mark.cluster
async def test_a_reference_watch_keeps_trying_while_the_api_cannot_be_reached(
        cluster: Cluster, ns: str, kube: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    kube.create(Secret(metadata=ObjectMeta(name="later", namespace=NS), stringData={"password": "pw-later"}))
    api = urlsplit(cluster.server)
    proxy = FaultProxy(api.hostname or "127.0.0.1", api.port or 443)
    config = kc.from_file(str(proxy.kubeconfig(tmp_path / "kubeconfig", ADMIN_TOKEN, "admin")))
    pool = transport.for_config(config)
    client = rest.for_config(config, pool.session, pool.watch_session)
    assert client is not None
    watches = ReferenceWatches(client, on_change=lambda keys: None, retry=0.3)
    later = ("secret", NS, "later")
    proxy.unplug()
    try:
        with caplog.at_level(logging.WARNING, logger="route_monitor.operator.refwatch"):
            watches.want((NS, "a-monitor"), {later})
            await asyncio.sleep(2)
            tries = [r.getMessage() for r in caplog.records if "later: cannot read it (ConnectError)" in r.getMessage()]
            assert len(tries) >= 3, caplog.text
            assert (await watches.seen(later, wait=0)).state == "pending"
            proxy.plug()
            for _ in range(50):
                if (seen := await watches.seen(later, wait=0.1)).state == "found":
                    break
                await asyncio.sleep(0.1)
            assert seen.state == "found" and seen.data["password"] == b"pw-later"
    finally:
        await watches.close()
        await pool.aclose()
        proxy.close()


def test_a_kubeconfig_that_cannot_be_loaded_ends_the_operator_with_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    proc = subprocess.run([str(VENV_BIN / "route-monitor"), "operator", "--metrics-address", f":{free_port()}",
                           "--health-port", str(free_port())], env={"KUBECONFIG": str(missing), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert f"the Kubernetes configuration cannot be used: Configuration file {missing} not found" in out
    assert "Traceback" not in out
