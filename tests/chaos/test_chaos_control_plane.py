"""Chaos on the control plane (issue 15): etcd, then the kube-apiserver, killed with SIGKILL and
started again while annotated Routes are being created, changed and deleted.

While etcd is down the apiserver stays up and holds or fails whatever needs etcd; while the
apiserver is down every request and watch fails at once. Either way the operator keeps probing
what it has. Once the component is back, the operator converges on the API's state, whatever
succeeded of the churn: every annotated Route has exactly one RouteMonitor with the Route's SLO
and a current, Ready status, and exactly one PrometheusRule ``route-monitor-<name>``; nothing is
left of deleted Routes. The operator process never exits, and its asyncio tasks (beyond one per
monitor) and RSS come back near where they were before the fault.

Real etcd, kube-apiserver and kube-controller-manager, a real operator process, a real HTTP
target.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from tests.support.chaos import Churn, divergence, footprint
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, admin_client, annotations, route

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

DOWN_SECONDS = 10
EXTRA_TASKS = 10
"""Tasks allowed beyond the baseline afterwards: a few in flight at any moment, never one per
failed request or reconnect (the outage makes dozens of each)."""
EXTRA_RSS_KIB = 40 * 1024


def kill(cluster: Cluster, component: str) -> None:
    if component == "etcd":
        cluster.kill_etcd()
    else:
        cluster.stop_apiserver()  # SIGKILL, like a crash


def start(cluster: Cluster, component: str) -> None:
    if component == "etcd":
        cluster.start_etcd()
    else:
        cluster.start_apiserver()


@pytest.mark.parametrize("component", ["etcd", "kube-apiserver"])
def test_killed_mid_churn_then_everything_converges(cluster: Cluster, tmp_path: Path, target: Target,
                                                    component: str) -> None:
    ns = f"chaos-{component}"
    kube = admin_client(cluster)
    kube.create(Namespace(metadata=ObjectMeta(name=ns)))
    for i in range(10):
        kube.create(route(ns, f"app{i}", target.host, annotations()))
    op = Operator(cluster, tmp_path / "op.log", ("--namespace", ns))
    op.start()
    churn = Churn(kube, ns, target.host)
    try:
        wait_for(lambda: not divergence(kube, ns), timeout=60, what="the first ten monitors")
        time.sleep(6)  # the first reconciles, statuses and probes settled: a quiet baseline
        before = footprint(op)
        churn.start()
        wait_for(lambda: churn.done >= 6, timeout=30, what="the churn under way")
        kill(cluster, component)
        killed, done_at_kill = time.monotonic(), churn.done
        hits = target.count()
        wait_for(lambda: target.count() >= hits + 10 * 5, timeout=DOWN_SECONDS + 5,
                 what=f"probing to go on while {component} is down")
        time.sleep(max(0.0, DOWN_SECONDS - (time.monotonic() - killed)))
        stalled = churn.failed > 0 or churn.done <= done_at_kill + 1  # a request failed, or hung until it came back
        start(cluster, component)
        back = time.monotonic()
        wait_for(cluster.ready, timeout=60, what="the apiserver ready again")
        done = churn.done
        wait_for(lambda: churn.done >= done + 6, timeout=60, what=f"the churn going on after {component} is back")
        churn.stop()
        last_change = time.monotonic()
        last: list[str] = []

        def converged() -> bool:
            last[:] = divergence(kube, ns)
            return not last

        try:
            wait_for(converged, timeout=90, interval=0.5, what=f"convergence after {component} came back")
        except TimeoutError as e:
            raise AssertionError(f"{e}: {last}\n{op.log()}") from None
        converged_at = time.monotonic()
        assert stalled, "the churn never noticed the outage"
        assert op.proc is not None and op.proc.poll() is None, op.log()
        # the footprint, once the number of monitors is steady: near the baseline
        after = before

        def settled() -> bool:
            nonlocal after
            after = footprint(op)
            return after.tasks <= before.tasks + EXTRA_TASKS
        try:
            wait_for(settled, timeout=20, interval=0.5, what="asyncio tasks back near the baseline")
        except TimeoutError:
            raise AssertionError(f"asyncio tasks: {before.tasks} before, "
                                 f"{after.tasks} after") from None
        assert after.rss_kib <= before.rss_kib + EXTRA_RSS_KIB, (before, after)
        print(f"{component} down {back - killed:.1f} s; churn {churn.done} done, {churn.failed} failed; converged "
              f"{converged_at - last_change:.1f} s after the last change, {converged_at - back:.1f} s after {component} "
              f"started; footprint {before} -> {after}")
    finally:
        if component not in cluster.procs:
            start(cluster, component)
        if churn._thread is not None and churn._thread.is_alive():
            churn.stop()
        assert op.stop() == 0, op.log()
    assert cluster.procs["kube-controller-manager"].poll() is None, cluster.log("kube-controller-manager")
