"""Chaos on the operator itself (issue 15).

SIGKILL in the middle of a burst of 500 creates:
The operator is killed (no cleanup, no graceful shutdown) while RouteMonitors are still being
created; the burst finishes while it is down; a new operator process converges: exactly one
PrometheusRule per RouteMonitor (none missing, none duplicated, none stale for a monitor
deleted while it was down), every monitor counted by the operator, and its memory bounded.

Watch expiry: the apiserver is killed, etcd gets history the operator never saw and is
compacted through its own API up to now, the apiserver comes back with a fresh watch cache, so
the operator's resourceVersion is gone (kopf receives the 410 as an ERROR event inside the watch
stream and relists; it logs that at debug level, so the test asserts the outcome): changes made
afterwards are acted on and the operator never exits. (Seen in its log: for a few seconds after
each apiserver start, RBAC answers 403 until its caches fill; the operator retries and
recovers.)

Real kube-apiserver and etcd, a real operator process, a real HTTP target.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from alert_rules import names
from tests.support.cluster import ADMIN_TOKEN, Cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target
from tests.support.resources import PrometheusRule, RouteMonitor

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BURST = 500
NS = "chaos-burst"


def monitor(i: int, host: str) -> dict[str, object]:
    return {"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": f"m{i:03d}", "namespace": NS},
            "spec": {"target": {"url": f"http://{host}/m{i:03d}"}, "probe": {"interval": "30s"},
                     "slo": {"availability": "99.5"}}}


def create_all(cluster: Cluster, host: str, created: list[int]) -> None:
    with httpx.Client(base_url=cluster.server, verify=False, timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        for i in range(BURST):
            r = client.post(f"/apis/{names.API_VERSION}/namespaces/{NS}/{names.PLURAL}", json=monitor(i, host))
            assert r.status_code == 201, r.text
            created.append(i)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_sigkill_mid_burst_then_restart_converges_without_duplicates(cluster: Cluster, kube: Client,
                                                                     tmp_path: Path, target: Target) -> None:
    kube.create(Namespace(metadata=ObjectMeta(name=NS)))
    first = Operator(cluster, tmp_path / "first.log", ("--namespace", NS, "--allow-url-targets"))
    first.start()
    created: list[int] = []
    burst = threading.Thread(target=create_all, args=(cluster, target.host, created))
    burst.start()
    wait_for(lambda: len(created) >= BURST // 3, timeout=60, what="a third of the burst")
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    burst.join(timeout=120)
    assert len(created) == BURST
    kube.delete(RouteMonitor, "m000", namespace=NS)  # deleted while no operator runs

    second = Operator(cluster, tmp_path / "second.log", ("--namespace", NS, "--allow-url-targets"))
    second.start()
    try:
        expected = {names.prometheus_rule_name(f"m{i:03d}") for i in range(1, BURST)}

        def rules() -> list[str]:
            return sorted(r.metadata.name for r in kube.list(PrometheusRule, namespace=NS))

        wait_for(lambda: set(rules()) == expected, timeout=180, interval=1, what="one PrometheusRule per monitor")
        assert len(rules()) == BURST - 1, "duplicated PrometheusRules"
        wait_for(lambda: second.sample(names.OWNED_MONITORS) == BURST - 1, timeout=60,
                 what="every monitor owned (probed, exported) by the operator")
        time.sleep(3)
        assert set(rules()) == expected, "rules changed after converging"
        assert rss_kib(second.proc.pid) < 400 * 1024, "the operator's RSS for 499 monitors"  # type: ignore[union-attr]
    finally:
        assert second.stop() == 0, second.log()


def test_watch_expiry_410_gone_after_etcd_compaction_is_recovered(cluster: Cluster, kube: Client,
                                                                  tmp_path: Path, target: Target) -> None:
    ns, other = "chaos-gone", "chaos-gone-noise"
    for name in (ns, other):
        kube.create(Namespace(metadata=ObjectMeta(name=name)))
    with httpx.Client(base_url=cluster.server, verify=False, timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        def create(name: str, namespace: str = ns) -> None:
            body = {**monitor(0, target.host), "metadata": {"name": name, "namespace": namespace}}
            assert client.post(f"/apis/{names.API_VERSION}/namespaces/{namespace}/{names.PLURAL}",
                               json=body).status_code == 201

        create("before")
        op = Operator(cluster, tmp_path / "op.log", ("--namespace", ns, "--allow-url-targets"))
        op.start()
        try:
            wait_for(lambda: get_rule(kube, ns, "before"), timeout=30, what="the first PrometheusRule")
            cluster.stop_apiserver()  # the operator's watch breaks at its last resourceVersion
            cluster.start_apiserver()
            for i in range(30):  # history the operator never saw (another namespace), then compacted away
                create(f"noise{i}", other)
            cluster.compact_etcd()
            cluster.restart_apiserver()  # a fresh watch cache: the operator's resourceVersion is too old (410)
            create("after")
            kube.delete(RouteMonitor, "before", namespace=ns)
            try:
                wait_for(lambda: get_rule(kube, ns, "after") and not get_rule(kube, ns, "before"), timeout=90,
                         what="changes after the compaction acted on")
            except TimeoutError as e:
                raise AssertionError(f"{e}\n{op.log(200)}") from None
            assert op.proc is not None and op.proc.poll() is None, op.log()
        finally:
            assert op.stop() == 0, op.log()


def get_rule(kube: Client, ns: str, name: str) -> bool:
    return any(r.metadata.name == names.prometheus_rule_name(name) for r in kube.list(PrometheusRule, namespace=ns))
