"""The operator survives restarts, its own and the API server's (issue 4):

- restarting the operator rebuilds everything from the API: same RouteMonitors and
  PrometheusRules (same uids, not even rewritten), and probing resumes within 10 s even at a 30 s
  interval (this one with ``--namespace``: only that namespace is watched);
- a Route deleted while the operator is down loses its RouteMonitor and PrometheusRule to
  garbage collection, and the operator does not bring them back;
- the API server restarting mid-run breaks the watches; the operator recovers by itself:
  probing never stopped, and changes made after the restart are acted on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

from alert_rules import names
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, annotations, condition, get, route
from tests.support.resources import PrometheusRule, Route, RouteMonitor

pytestmark = pytest.mark.cluster


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def targets() -> Iterator[list[Target]]:
    made = [Target() for _ in range(3)]
    yield made
    for t in made:
        t.close()


def new_namespace(kube: Client, name: str) -> str:
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    return name


def snapshot(kube: Client, ns: str) -> dict[str, Any]:
    """What must not change across a restart: names, uids and resourceVersions."""
    return {
        "monitors": sorted((m.metadata.name, m.metadata.uid, m.metadata.resourceVersion)
                           for m in kube.list(RouteMonitor, namespace=ns)),
        "rules": sorted((r.metadata.name, r.metadata.uid, r.metadata.resourceVersion)
                        for r in kube.list(PrometheusRule, namespace=ns)),
    }


def all_ready(kube: Client, ns: str, n: int) -> bool:
    monitors = [m.to_dict() for m in kube.list(RouteMonitor, namespace=ns)]
    return len(monitors) == n and all(condition(m, "Ready").get("status") == "True" and
                                      (m["status"].get("lastProbe") or {}).get("result") == "success"
                                      for m in monitors)


def test_restart_rebuilds_from_the_api_without_duplicates(cluster: Cluster, kube: Client, workdir: Path,
                                                          targets: list[Target]) -> None:
    ns = new_namespace(kube, "restart")
    for i, t in enumerate(targets):
        kube.create(route(ns, f"app{i}", t.host, annotations(interval="30s")))
    first = Operator(cluster, workdir / "first.log", ("--namespace", ns))
    first.start()
    try:
        wait_for(lambda: all_ready(kube, ns, 3), timeout=30, what="three Ready monitors with a probe result")
        assert len(list(kube.list(PrometheusRule, namespace=ns))) == 3
    finally:
        assert first.stop() == 0, first.log()
    before = snapshot(kube, ns)

    second = Operator(cluster, workdir / "second.log", ("--namespace", ns))
    started = time.monotonic()
    second.start()
    try:
        counts = [t.count() for t in targets]
        wait_for(lambda: all(t.count() > c for t, c in zip(targets, counts, strict=True)), timeout=10,
                 what="every target probed again within 10 s of the restart")
        resumed = time.monotonic() - started
        time.sleep(3)  # a few more probes and watch events
        assert snapshot(kube, ns) == before, "the restart rewrote or duplicated objects"
        writes = second.sample(names.KUBE_REQUESTS_TOTAL, verb="apply", resource=names.PLURAL)
        assert not writes, f"{writes} RouteMonitors re-applied after the restart"
        assert not second.sample(names.KUBE_REQUESTS_TOTAL, verb="patch", resource=names.PLURAL + "/status")
        assert second.sample(names.MONITORS, state="ready") == 3
        assert resumed < 10
    finally:
        assert second.stop() == 0, second.log()


def test_route_deleted_while_the_operator_is_down_is_garbage_collected(
        cluster: Cluster, kube: Client, workdir: Path, targets: list[Target]) -> None:
    ns = new_namespace(kube, "down")
    kube.create(route(ns, "app", targets[0].host, annotations()))
    op = Operator(cluster, workdir / "op.log")
    op.start()
    try:
        wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("app"), ns) is not None, timeout=20, what="the PrometheusRule")
    finally:
        op.stop()
    kube.delete(Route, "app", namespace=ns)
    wait_for(lambda: get(kube, RouteMonitor, "app", ns) is None and get(kube, PrometheusRule, names.prometheus_rule_name("app"), ns) is None,
             timeout=40, what="garbage collection while the operator is down")
    op = Operator(cluster, workdir / "op2.log")
    op.start()
    try:
        time.sleep(2)
        assert get(kube, RouteMonitor, "app", ns) is None
    finally:
        op.stop()


def test_api_server_restart_mid_run_recovers(cluster: Cluster, kube: Client, workdir: Path,
                                             targets: list[Target]) -> None:
    ns = new_namespace(kube, "apiserver")
    kube.create(route(ns, "steady", targets[0].host, annotations()))
    op = Operator(cluster, workdir / "op.log")
    op.start()
    try:
        wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("steady"), ns) is not None, timeout=20, what="the PrometheusRule")
        cluster.stop_apiserver()
        during = targets[0].count()
        wait_for(lambda: targets[0].count() >= during + 2, timeout=10, what="probing to go on without the API")
        cluster.start_apiserver()
        # acted on after the restart: a new annotated Route, and a host change of the old one
        kube.create(route(ns, "late", targets[1].host, annotations()))
        kube.patch(Route, "steady", {"spec": {"host": targets[2].host}}, namespace=ns, patch_type=PatchType.MERGE)
        try:
            wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("late"), ns) is not None, timeout=60,
                     what="a Route annotated after the API server restart to be acted on")
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{op.log(200)}") from None
        wait_for(lambda: targets[1].count() >= 1 and targets[2].count() >= 1, timeout=20,
                 what="the new Route and the changed host to be probed")
        assert op.proc is not None and op.proc.poll() is None, "the operator died"
    finally:
        if "kube-apiserver" not in cluster.procs:
            cluster.start_apiserver()
        op.stop()
