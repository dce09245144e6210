"""A monitor moving between replicas keeps its SLO, end to end (Contract 6, issue 9).

Real processes on loopback: the control plane, two ``route-monitor operator`` replicas (member
names ``e2e-a`` and ``e2e-b``, their own ports), local HTTP targets, and Prometheus (1s scrape and
evaluation) scraping *both* replicas' ``/metrics`` and loading the rules of the PrometheusRules the
operator applied (what prometheus-operator would load). Two annotated Routes, probed every second,
both owned by ``e2e-a`` (their names are picked by the rendezvous hash so that both move):

- ``healthy-*``: every probe succeeds;
- ``flaky-*``: exactly one request in four answers 503 (a 25% error ratio, far above the 99.9%
  objective's page threshold, so its 1h/5m page fires: the positive control).

After a steady phase, ``e2e-a`` gets SIGTERM (its Lease goes first) and ``e2e-b`` takes both
monitors over. What a user checks in Prometheus afterwards, over the whole run:

- the series moved: exported with ``e2e-a``'s instance before, only ``e2e-b``'s at the end, and
  ``status.probedBy`` says ``e2e-b``;
- probes kept being counted: the summed probe counter never stalls for longer than the probe
  interval + a few seconds, and ``sum by (namespace, monitor) (rate(...[10s]))`` has a positive
  value at every second;
- the 5m and 1h error-ratio records have a sample at every evaluation: exactly 0 for the healthy
  monitor, 25% (+-7 points once the window holds enough probes) for the flaky one;
- ``RouteMonitorProbesAbsent`` never even goes pending; no burn alert for the healthy monitor;
  the flaky monitor's page stays firing across the move (no resolve and re-trigger).
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from alert_rules.shared import shared_rule_groups
from route_monitor.cli.demo_targets import healthy
from route_monitor.operator.replicas.sharding import owner_of
from tests.support.cluster import Cluster
from tests.support.e2e import EveryNth
from tests.support.net import wait_for
from tests.support.operator import Operator, admin_client, annotations, get, route
from tests.support.prometheus import Prometheus, run_prometheus
from tests.support.resources import PrometheusRule, RouteMonitor
from tests.support.servers import Targets

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus, pytest.mark.timeout(300)]

NS = "e2e-replicas"
OLD, NEW = "e2e-a", "e2e-b"
INTERVAL = 1.0
"""Probe interval (seconds); Prometheus scrapes and evaluates every second too."""
FAIL_EVERY = 4
MAX_STALL = INTERVAL + 1 + 6
"""Longest time the summed probe counter may stand still: a probe interval, a scrape, and a few
seconds for the handover (Lease deleted -> watch event -> reconcile -> first probe)."""
STEADY, AFTER = 30.0, 40.0
"""Seconds of steady state before the move, and of observation after it."""
SETTLED = 20.0
"""Seconds after the rules load when the flaky monitor's ratios hold enough probes (20+) to be
within 7 points of 25% (one probe more or less moves a ratio of n probes by 1/n)."""
ERROR_RATIO = names.error_ratio_record("5m")


def owned_by_old(prefix: str) -> str:
    """The first ``prefix-N`` that the rendezvous hash gives to ``OLD`` (so that it moves)."""
    return next(name for i in itertools.count() if owner_of((NS, name := f"{prefix}-{i}"), (OLD, NEW)) == OLD)


HEALTHY, FLAKY = owned_by_old("healthy"), owned_by_old("flaky")
MONITORS = (HEALTHY, FLAKY)


@pytest.fixture(scope="module")
def kube(cluster: Cluster) -> Iterator[Client]:
    client = admin_client(cluster)
    client.create(Namespace(metadata=ObjectMeta(name=NS)))
    yield client
    client.delete(Namespace, NS)


@pytest.fixture
def targets(tmp_path: Path) -> Iterator[Targets]:
    t = Targets(tmp_path)
    yield t
    t.close()


@pytest.fixture
def replicas(cluster: Cluster, tmp_path: Path) -> Iterator[dict[str, Operator]]:
    ops: dict[str, Operator] = {}
    try:
        for member in (OLD, NEW):
            ops[member] = Operator(cluster, tmp_path / f"{member}.log",
                                   ("--member-name", member, "--lease-namespace", "route-monitor"))
            ops[member].start()
        yield ops
    finally:
        for op in ops.values():
            op.stop()


def exported(op: Operator) -> set[str]:
    """The test's monitors whose probe series ``op`` exports on its ``/metrics``."""
    return {s.labels["monitor"] for family in text_string_to_metric_families(op.metrics_text())
            if family.name == names.PROBE_SUCCESS for s in family.samples if s.labels["namespace"] == NS}


def load_rules(kube: Client, prom: Prometheus) -> None:
    """The operator's PrometheusRules, as rule files (what prometheus-operator does with them): the
    monitors' own and the one holding the shared groups every monitor's alerts read, which one of
    the replicas keeps in the operator's namespace."""
    for monitor in MONITORS:
        rule = get(kube, PrometheusRule, names.prometheus_rule_name(monitor), NS)
        assert rule is not None, monitor
        (prom.rules_dir / f"{monitor}.yml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    wait_for(lambda: get(kube, PrometheusRule, names.SHARED_RULE_NAME, "route-monitor") is not None, timeout=30,
             what="the shared rule the operator writes")
    shared = get(kube, PrometheusRule, names.SHARED_RULE_NAME, "route-monitor")
    assert shared is not None and shared["spec"]["groups"] == shared_rule_groups()
    (prom.rules_dir / "shared.yml").write_text(yaml.safe_dump({"groups": shared["spec"]["groups"]}))
    prom.reload()


def samples(prom: Prometheus, selector: str, start: float, end: float) -> list[dict[str, Any]]:
    """Every raw sample of ``selector`` between ``start`` and ``end`` (one entry per series)."""
    return prom.query(f"{selector}[{int(end - start) + 1}s]", time=end)


def points(series: dict[str, Any]) -> list[tuple[float, float]]:
    return [(float(t), float(v)) for t, v in series["values"]]


def longest_gap(times: list[float], start: float, end: float) -> float:
    edges = [start, *sorted(t for t in times if start <= t <= end), end]
    return max(b - a for a, b in itertools.pairwise(edges))


def probes_counted_at(prom: Prometheus, monitor: str, start: float, end: float) -> list[float]:
    """Times of the scrapes that saw ``monitor``'s probe counter rise (any result, any replica)."""
    out = []
    for series in samples(prom, f'{names.PROBES_TOTAL}{{namespace="{NS}",monitor="{monitor}"}}', start, end):
        pts = points(series)
        out += [t for (_, before), (t, after) in itertools.pairwise(pts) if after > before]
    return out


def test_a_monitor_moving_to_another_replica_keeps_its_slo(kube: Client, targets: Targets, tmp_path: Path,
                                                           replicas: dict[str, Operator]) -> None:
    hosts = {HEALTHY: targets.http(healthy()), FLAKY: targets.http(EveryNth(FAIL_EVERY))}
    for monitor, url in hosts.items():
        kube.create(route(NS, monitor, url.removeprefix("http://"), annotations(interval=f"{INTERVAL:.0f}s")))
    old, new = replicas[OLD], replicas[NEW]
    wait_for(lambda: exported(old) == set(MONITORS) and not exported(new), timeout=30,
             what=f"{OLD} alone exporting {MONITORS}")
    wait_for(lambda: all(get(kube, PrometheusRule, names.prometheus_rule_name(m), NS) for m in MONITORS),
             timeout=20, what="the PrometheusRules")
    instance = {member: f"127.0.0.1:{op.metrics_port}" for member, op in replicas.items()}

    with run_prometheus(tmp_path / "prometheus", targets=list(instance.values())) as prom:
        # rules once each counter has a few samples, so that the 5m ratio exists from its first evaluation
        wait_for(lambda: len([s for s in samples(prom, f'{names.PROBES_TOTAL}{{namespace="{NS}"}}', time.time() - 60,
                                                 time.time()) if len(s["values"]) >= 3]) == 2 * len(MONITORS),
                 timeout=30, what="three scrapes of every probe counter")
        load_rules(kube, prom)
        wait_for(lambda: len(prom.query(ERROR_RATIO + f'{{namespace="{NS}"}}')) == len(MONITORS), timeout=15,
                 what=ERROR_RATIO)
        start = time.time()
        # the page waits its for: (the operator's rules: one probe interval or 30s, plus one 30s
        # evaluation, so that a shared outage would be seen first)
        wait_for(lambda: bool(prom.firing(names.ALERT_ERROR_BUDGET_BURN)), timeout=STEADY + 90,
                 what=f"{FLAKY}'s page (25% errors at 99.9%)")
        fired_at = time.time()  # the page fires for a few seconds before the move, whatever its for: took
        time.sleep(max(0.0, start + STEADY - time.time(), fired_at + 6 - time.time()))

        moved_at = time.time()
        old.stop(signal.SIGTERM)
        wait_for(lambda: exported(new) == set(MONITORS), timeout=10, what=f"{NEW} exporting {MONITORS}")
        wait_for(lambda: all((get(kube, RouteMonitor, m, NS) or {}).get("status", {}).get("probedBy") == NEW
                             for m in MONITORS), timeout=15, what=f"status.probedBy: {NEW}")
        time.sleep(max(0.0, moved_at + AFTER - time.time()))
        end = time.time()

        # the series moved: OLD's instance before, NEW's only at the end
        for monitor in MONITORS:
            sel = f'{names.PROBES_TOTAL}{{namespace="{NS}",monitor="{monitor}"}}'
            before = {s["metric"]["instance"] for s in samples(prom, sel, start, moved_at - 2)}
            now = {s["metric"]["instance"] for s in prom.query(sel, time=end)}
            assert (before, now) == ({instance[OLD]}, {instance[NEW]}), monitor

        # probes kept being counted across the move
        for monitor in MONITORS:
            stall = longest_gap(probes_counted_at(prom, monitor, start, end), start, end)
            assert stall <= MAX_STALL, f"{monitor}: no probe counted for {stall:.1f}s"
        rate = f'sum by (namespace, monitor) (rate({names.PROBES_TOTAL}{{namespace="{NS}"}}[10s]))'
        steps = prom.api("query_range", query=rate, start=start, end=end, step=1)["result"]
        assert {s["metric"]["monitor"] for s in steps} == set(MONITORS)
        for series in steps:
            values = points(series)
            assert len(values) >= int(end - start) and min(v for _, v in values) > 0, (series["metric"], values)

        # the error ratios: a sample at every evaluation, 0 when healthy, the known rate when flaky
        for window in ("5m", "1h"):
            record = names.error_ratio_record(window)
            recorded = samples(prom, f'{record}{{namespace="{NS}"}}', start, end)
            by_monitor = {s["metric"]["monitor"]: points(s) for s in recorded}
            assert len(recorded) == len(by_monitor) == len(MONITORS), [s["metric"] for s in recorded]  # one SLO each
            for monitor, values in by_monitor.items():
                assert longest_gap([t for t, _ in values], start, end) <= 3, (record, monitor, values)
            assert {v for _, v in by_monitor[HEALTHY]} == {0.0}, by_monitor[HEALTHY]
            settled = [v for t, v in by_monitor[FLAKY] if t >= start + SETTLED]
            assert all(abs(v - 1 / FAIL_EVERY) <= 0.07 for v in settled), (record, settled)

        # alerts, pending included (ALERTS keeps both states)
        span = f"{int(end - start) + 1}s"
        absent = f'count_over_time(ALERTS{{alertname="{names.ALERT_PROBES_ABSENT}",namespace="{NS}"}}[{span}])'
        assert prom.query(absent, time=end) == []
        burn = f'ALERTS{{alertname=~"RouteMonitor.*BudgetBurn",namespace="{NS}",monitor="{HEALTHY}"}}'
        assert prom.query(f"count_over_time({burn}[{span}])", time=end) == []
        page = (f'ALERTS{{alertname="{names.ALERT_ERROR_BUDGET_BURN}",alertstate="firing",namespace="{NS}",'
                f'monitor="{FLAKY}",long="1h"}}')
        [firing] = samples(prom, page, start, end)
        times = [t for t, _ in points(firing)]
        assert times[0] <= moved_at - 5 and longest_gap(times, times[0], end) <= 3, times
