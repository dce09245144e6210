"""Chaos between the operator and the kube-apiserver (issue 15): a fault proxy
(``tests/support/faultproxy.py``, real TCP and TLS, trusted by the operator's kubeconfig) makes
the API slow, unreachable, or refusing for a while:

- 300 ms added each way on every request and response, for 8 s;
- every connection reset, and new ones reset, for 12 s;
- every request answered ``429 Too Many Requests`` with ``Retry-After: 2`` for 20 s, then
  ``500 Internal Server Error`` for 20 s, while watches already streaming go on;
- every connection cut and every request answered ``500`` for 60 s: longer than kopf's default
  retries of a watch (54 s), after which it used to end the operator.

Meanwhile annotated Routes are created, changed and deleted (straight at the apiserver, as users
would). Each test asserts that the operator went on probing what it had (its ``/metrics``
counted probes all along), never exited, and converged once the fault ended: every annotated
Route with exactly one RouteMonitor (current, Ready status) and one PrometheusRule, nothing left
of deleted ones; and that its asyncio tasks (beyond one per monitor) and RSS came back near the
baseline taken before any fault. One operator and one proxy for the module, faults in turn.
Last, operators started while the API answers 500, and while nothing listens on its port: they
wait, one warning line per try, and run once it answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from tests.support.chaos import Churn, Footprint, divergence, footprint
from tests.support.cluster import OPERATOR_TOKEN, OPERATOR_USER, Cluster
from tests.support.faultproxy import FaultProxy
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, admin_client, annotations, get, route
from tests.support.resources import RouteMonitor

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

NS = "chaos-api"
EXTRA_TASKS = 10
"""Tasks allowed beyond the baseline after a fault: a few in flight at any moment, never one per
failed request or reconnect (each fault makes dozens of them)."""
EXTRA_RSS_KIB = 40 * 1024
PROBE_GAP = 3.0
"""Seconds without a probe counted, at most, while a fault lasts: ten monitors probe every second
(the largest gap measured with every API request failing for 60 s on the loaded 2-core machine:
0.7 s between two probes)."""
RECOVERY_SECONDS = 30
"""Converged this soon after a fault ends: well under the minute a monitor's reconcile backs off
to while the API fails (one retry always comes within 5 s and wakes the others)."""


@dataclass
class Rig:
    kube: Client
    target: Target
    proxy: FaultProxy
    op: Operator
    baseline: Footprint


@pytest.fixture(scope="module")
def rig(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    workdir = tmp_path_factory.mktemp("chaos-api")
    kube = admin_client(cluster)
    kube.create(Namespace(metadata=ObjectMeta(name=NS)))
    target = Target()
    for i in range(10):
        kube.create(route(NS, f"app{i}", target.host, annotations()))
    api = urlsplit(cluster.server)
    proxy = FaultProxy(api.hostname or "127.0.0.1", api.port or 443)
    kubeconfig = proxy.kubeconfig(workdir / "proxied.kubeconfig", OPERATOR_TOKEN, OPERATOR_USER)
    op = Operator(cluster, workdir / "op.log", ("--namespace", NS), kubeconfig=kubeconfig)
    op.start()
    try:
        wait_for(lambda: not divergence(kube, NS), timeout=60, what="the first ten monitors")
        assert proxy.forwarded > 0, "the operator did not go through the proxy"
        time.sleep(6)  # the first reconciles, statuses and probes settled: a quiet baseline
        yield Rig(kube, target, proxy, op, footprint(op))
    finally:
        proxy.heal()
        assert op.stop() == 0, op.log()
        proxy.close()
        target.close()


def probed(op: Operator) -> float:
    """Probes counted by the operator's /metrics, all monitors."""
    return sum(s.value for f in text_string_to_metric_families(op.metrics_text()) for s in f.samples
               if s.name == names.PROBES_TOTAL)


def counted_within(op: Operator, before: float, seconds: float) -> bool:
    """Whether the operator counts more than ``before`` probes within ``seconds``: asked until it
    does, and once more after the deadline, so every check sees a whole window (a window cut
    short by the fault's end, or by a slow test process, would see no probe of a healthy prober)."""
    deadline = time.monotonic() + seconds
    while True:
        if probed(op) > before:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.25)


def through_fault(rig: Rig, *phases: tuple[Callable[[], None], float]) -> None:
    """Start each fault in turn and keep it for its seconds while Routes churn, checking that
    probing goes on (a probe counted within every ``PROBE_GAP`` seconds); end the fault, and
    check convergence and the footprint."""
    churn = Churn(rig.kube, NS, rig.target.host, pause=0.5)
    churn.start()
    seconds = sum(duration for _, duration in phases)
    began = time.monotonic()
    try:
        for start, duration in phases:
            start()
            until = time.monotonic() + duration
            while time.monotonic() < until:
                before = probed(rig.op)
                assert counted_within(rig.op, before, PROBE_GAP), \
                    f"no probe counted for {PROBE_GAP:.0f} s, {time.monotonic() - began:.0f} s into the fault"
                assert rig.op.proc is not None and rig.op.proc.poll() is None, rig.op.log()
    finally:
        rig.proxy.heal()
        churn.stop()
    healed = time.monotonic()
    last: list[str] = []

    def converged() -> bool:
        last[:] = divergence(rig.kube, NS)
        return not last

    try:
        wait_for(converged, timeout=RECOVERY_SECONDS, interval=0.5, what="convergence after the fault")
    except TimeoutError as e:
        raise AssertionError(f"{e}: {last}\n{rig.op.log()}") from None
    recovered = time.monotonic() - healed
    assert churn.done >= seconds, "the churn did not run"
    after = rig.baseline

    def settled() -> bool:
        nonlocal after
        after = footprint(rig.op)
        return after.tasks <= rig.baseline.tasks + EXTRA_TASKS

    try:
        wait_for(settled, timeout=20, interval=0.5, what="asyncio tasks back near the baseline")
    except TimeoutError:
        raise AssertionError(f"asyncio tasks: {rig.baseline} before, {after} after") from None
    assert after.rss_kib <= rig.baseline.rss_kib + EXTRA_RSS_KIB, (rig.baseline, after)
    assert rig.op.proc is not None and rig.op.proc.poll() is None, rig.op.log()
    print(f"converged {recovered:.1f} s after the fault ended; churn {churn.done} changes; proxy answered "
          f"{rig.proxy.answered}, reset {rig.proxy.resets}; footprint {rig.baseline} -> {after}")


def test_slow_api_300ms_each_way_for_8s(rig: Rig) -> None:
    def slow() -> None:
        rig.proxy.latency = 0.3

    through_fault(rig, (slow, 8))


def test_every_connection_reset_for_12s(rig: Rig) -> None:
    through_fault(rig, (rig.proxy.cut, 12))


def test_429_with_retry_after_for_20s_then_500_for_20s_while_watches_stream(rig: Rig) -> None:
    """As on an overloaded apiserver, watches already streaming go on: the operator sees the
    churn but cannot write, and its reconciles back off; nothing but its own retries will
    apply those changes once the API answers again."""
    through_fault(rig, (lambda: rig.proxy.refuse(429, retry_after=2), 20), (lambda: rig.proxy.refuse(500), 20))


def test_watches_cut_and_every_request_500_for_60s(rig: Rig) -> None:
    """Longer than kopf's default retries of a watch (54 s)."""
    def cut_and_fail() -> None:
        rig.proxy.refuse(500)
        rig.proxy.cut()
        rig.proxy.down = False  # new connections are answered 500, not reset

    through_fault(rig, (cut_and_fail, 60))


def _late_operator(rig: Rig, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory,
                   ns: str) -> tuple[FaultProxy, Operator]:
    """A namespace with one annotated Route, and an operator for it (not started) that reaches the
    API through a fault proxy of its own, for tests of what happens at start."""
    workdir = tmp_path_factory.mktemp(ns)
    rig.kube.create(Namespace(metadata=ObjectMeta(name=ns)))
    rig.kube.create(route(ns, "web", rig.target.host, annotations()))
    api = urlsplit(cluster.server)
    proxy = FaultProxy(api.hostname or "127.0.0.1", api.port or 443)
    kubeconfig = proxy.kubeconfig(workdir / "proxied.kubeconfig", OPERATOR_TOKEN, OPERATOR_USER)
    return proxy, Operator(cluster, workdir / "op.log", ("--namespace", ns), kubeconfig=kubeconfig)


def test_started_while_the_api_fails_waits_and_then_runs(rig: Rig, cluster: Cluster,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """An operator started while the API answers 500 (an apiserver restarting, a rollout during a
    control-plane upgrade) neither exits nor reports ready; it says why in its log, and once the
    API answers it loads, probes and converges like any start."""
    ns = "chaos-api-start"
    proxy, op = _late_operator(rig, cluster, tmp_path_factory, ns)
    proxy.refuse(500)
    op.spawn()
    try:
        wait_for(lambda: "failed (HTTP 500); trying again" in op.log(), timeout=20, what="a retry logged")
        time.sleep(8)
        assert op.proc is not None and op.proc.poll() is None, op.log()
        assert not op.ready(), "ready before the world could be loaded"
        assert proxy.answered >= 3, proxy.answered
        proxy.heal()
        wait_for(op.ready, timeout=30, what="ready once the API answers")
        wait_for(lambda: not divergence(rig.kube, ns), timeout=40, what="the monitor converged")
        assert "Traceback" not in op.log(100_000), op.log()
    finally:
        proxy.heal()
        assert op.stop() == 0, op.log()
        proxy.close()


def test_started_while_nothing_listens_for_the_api_waits_and_then_runs(rig: Rig, cluster: Cluster,
                                                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    """An apiserver not started yet or not reachable (connection refused) at the operator's start:
    the same patience as for error answers, one warning line per try, then a normal start."""
    ns = "chaos-api-unreachable"
    proxy, op = _late_operator(rig, cluster, tmp_path_factory, ns)
    proxy.unplug()
    op.spawn()
    try:
        def tries() -> list[str]:
            return [line for line in op.log(100_000).splitlines() if "failed (ConnectError: " in line]

        wait_for(lambda: len(tries()) >= 3, timeout=30, what="three tries logged")  # after 0, 1 and 3 s
        assert op.proc is not None and op.proc.poll() is None, op.log()
        assert not op.ready(), "ready before the world could be loaded"
        logged = tries()
        assert all("trying again in" in line for line in logged), logged
        assert [line.rsplit("(try ", 1)[1] for line in logged] == [f"{n})" for n in range(1, len(logged) + 1)], logged
        proxy.plug()
        wait_for(op.ready, timeout=30, what="ready once the API can be reached")
        wait_for(lambda: not divergence(rig.kube, ns), timeout=40, what="the monitor converged")
        assert "Traceback" not in op.log(100_000), op.log()
    finally:
        proxy.plug()
        assert op.stop() == 0, op.log()
        proxy.close()


def test_watches_cut_then_answered_404_as_by_an_apiserver_starting(rig: Rig, cluster: Cluster,
                                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    """A restarting apiserver answers 404 for its CRDs' APIs for a moment. kopf did not retry
    that: it ended its whole operator, whose shutdown then hung on its other watches; the
    process stayed up, blind to new Routes, until killed. Every watch now tries again as after
    any failure, and the operator goes on."""
    ns = "chaos-api-404"
    proxy, op = _late_operator(rig, cluster, tmp_path_factory, ns)
    op.spawn()
    try:
        wait_for(op.ready, timeout=30, what="ready")
        wait_for(lambda: not divergence(rig.kube, ns), timeout=40, what="the first monitor converged")
        proxy.refuse(404)
        proxy.cut()
        proxy.down = False  # new connections are answered 404, not reset
        time.sleep(4)
        proxy.heal()
        rig.kube.create(route(ns, "late", rig.target.host, annotations()))
        wait_for(lambda: get(rig.kube, RouteMonitor, "late", ns) is not None and not divergence(rig.kube, ns),
                 timeout=30, what="a Route annotated after the 404s monitored")
        assert op.proc is not None and op.proc.poll() is None, op.log()
        assert "Traceback" not in op.log(100_000), op.log()
    finally:
        proxy.heal()
        assert op.stop() == 0, op.log()
        proxy.close()
