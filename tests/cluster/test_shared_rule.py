"""The shared SLI groups as one PrometheusRule the operator owns, against the real apiserver.

What a user would check: a running operator keeps ``route-monitor.slis`` in its namespace with
exactly the groups ``route-monitor rules --operator`` prints and the monitors' rule labels; the
writer (as the operator's user, bound only to the shipped RBAC) creates it, writes nothing while
it is current, replaces it once when an upgrade changes its groups, puts it back when it is
deleted, and leaves a PrometheusRule it did not create untouched, saying so once in a Warning
event on it and a log line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from prometheus_client import CollectorRegistry

from alert_rules import names
from alert_rules.shared import shared_rule_groups
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.kube.apply import Outcome
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator.outputs.sharedrule import SharedRule
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import get, running_operator, warnings_for
from tests.support.resources import PrometheusRule

pytestmark = pytest.mark.cluster

NAME = names.SHARED_RULE_NAME


def _run(cluster: Cluster, body: Callable[[KubeWriter], Any]) -> Any:
    """``body`` with a writer as the operator's own user (the shipped ClusterRole and Role)."""
    async def go() -> Any:
        config = kc.from_file(cluster.operator_kubeconfig)
        pool = transport.for_config(config)
        direct = rest.for_config(config, pool.session)
        assert direct is not None
        try:
            return await body(KubeWriter(OperatorMetrics(CollectorRegistry()), rest=direct))
        finally:
            await pool.aclose()
    return asyncio.run(go())


def _writer(kube: KubeWriter, ns: str, **labels: str) -> SharedRule:
    return SharedRule(kube, namespace=ns, labels=labels, owns=lambda: True)


def test_the_operator_keeps_the_shared_groups_in_its_namespace(cluster: Cluster, kube: Client,
                                                               tmp_path: Path) -> None:
    with running_operator(cluster, tmp_path, "--rule-label", "prometheus=shared-test") as op:
        def current() -> bool:
            rule = get(kube, PrometheusRule, NAME, "route-monitor")
            return rule is not None and (rule["metadata"].get("labels") or {}).get("prometheus") == "shared-test"
        wait_for(current, timeout=30, what=f"route-monitor/{NAME} with the monitors' rule label (log: {op.log_path})")
    rule = get(kube, PrometheusRule, NAME, "route-monitor")
    assert rule is not None
    assert rule["spec"]["groups"] == shared_rule_groups()
    assert rule["metadata"]["labels"][names.LABEL_MANAGED_BY] == names.MANAGED_BY
    assert not rule["metadata"].get("ownerReferences"), "no owner: it outlives every monitor"


def test_written_once_replaced_on_upgrade_restored_when_deleted(cluster: Cluster, kube: Client, ns: str) -> None:
    async def body(writer: KubeWriter) -> list[Any]:
        rule = _writer(writer, ns, team="sre")
        out: list[Any] = [await rule.sync_once()]
        first = get(kube, PrometheusRule, NAME, ns)
        out += [await rule.sync_once(), first, get(kube, PrometheusRule, NAME, ns)]
        upgraded = _writer(writer, ns, team="sre")
        upgraded.desired["spec"]["groups"] = upgraded.desired["spec"]["groups"][:1]
        out += [await upgraded.sync_once(), await upgraded.sync_once(), get(kube, PrometheusRule, NAME, ns)]
        kube.delete(PrometheusRule, NAME, namespace=ns)
        out += [await upgraded.sync_once(), get(kube, PrometheusRule, NAME, ns)]
        return out

    created, again, first, unchanged, replaced, settled, after, restored, back = _run(cluster, body)
    assert (created, again) == (Outcome.CREATED, None)
    assert first["spec"]["groups"] == shared_rule_groups()
    assert first["metadata"]["labels"]["team"] == "sre"
    assert unchanged["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"], "nothing written"
    assert (replaced, settled) == (Outcome.REPLACED, None)
    assert after["metadata"]["uid"] == first["metadata"]["uid"]
    assert after["spec"]["groups"] == shared_rule_groups()[:1]
    assert restored is Outcome.CREATED and back["spec"]["groups"] == shared_rule_groups()[:1]


def test_a_rule_someone_else_made_is_left_untouched_and_reported_once(
        cluster: Cluster, kube: Client, ns: str, caplog: pytest.LogCaptureFixture) -> None:
    theirs = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
              "metadata": {"name": NAME, "namespace": ns, "labels": {"team": "other"}},
              "spec": {"groups": [{"name": "theirs", "rules": [{"record": "x:y:z", "expr": "vector(1)"}]}]}}
    kube.create(PrometheusRule.from_dict(theirs))
    before = get(kube, PrometheusRule, NAME, ns)

    async def body(writer: KubeWriter) -> list[Outcome | None]:
        rule = _writer(writer, ns)
        return [await rule.sync_once(), await rule.sync_once()]

    with caplog.at_level(logging.WARNING, logger="route_monitor.operator.outputs.sharedrule"):
        outcomes = _run(cluster, body)
    assert outcomes == [Outcome.FOREIGN, Outcome.FOREIGN]
    after = get(kube, PrometheusRule, NAME, ns)
    assert after == before, "someone else's rule is never written over"
    logged = [r.getMessage() for r in caplog.records if "not created by route-monitor" in r.getMessage()]
    assert len(logged) == 1 and f"{ns}/{NAME}" in logged[0]
    wait_for(lambda: len(warnings_for(kube, ns, "PrometheusRule", NAME, "NameConflict")) == 1, timeout=10,
             what="one NameConflict event on the foreign rule")
