"""The prober's failing verdict (``route_monitor_probe_failing``) as a scrape reads it.

Each test records results with their own timestamps and reads the gauge through the exposition at
a given wall-clock time (``ProbeMetrics(clock=)``), the way Prometheus would scrape it. Covers: two
failures in a row after successes make the monitor failing, one does not; a success ends it; the
window follows the probe interval the monitor's params give (a 2-minute interval's two failures
are 4 minutes apart and still count); a failure outside the window stops counting, so a scrape
long after the last probe says 0; excluded results (maintenance, blind) are not counted; DNS
errors make it 2 only when they are at least half of the window's probes; the kept history stays
small whatever the count of probes.
"""

from __future__ import annotations

from decimal import Decimal

from prometheus_client import CollectorRegistry

from alert_rules import names, params
from alert_rules.model import Objective
from route_monitor.probe.metrics import MonitorSeries, ProbeMetrics, TargetInfo
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult

KEY = ("shop", "web")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def setup(interval_ms: int = 30_000) -> tuple[ProbeMetrics, MonitorSeries, Clock]:
    clock = Clock()
    metrics = ProbeMetrics(CollectorRegistry(), clock=clock)
    series = metrics.add(KEY, TargetInfo("https://web.shop.example/", "route", "web"), None,
                         params.values(Objective(Decimal("99.9")), interval_ms))
    return metrics, series, clock


def probe(series: MonitorSeries, clock: Clock, step_s: float, reason: FailureReason | None = None) -> None:
    """One counted probe ``step_s`` after the previous one (a failure with ``reason``, else a success)."""
    clock.now += step_s
    series.record(ProbeResult(KEY, "https://web.shop.example/", clock.now, reason is None, reason, 0.05,
                              200 if reason is None else None, "x"))


def gauge(metrics: ProbeMetrics) -> float:
    text = metrics.exposition().decode()
    [line] = [ln for ln in text.splitlines() if ln.startswith(names.PROBE_FAILING + "{")]
    assert line.startswith(f'{names.PROBE_FAILING}{{namespace="shop",monitor="web"}} ')
    return float(line.rsplit(" ", 1)[1])


REFUSED = FailureReason.CONNECTION_REFUSED


def test_two_failures_in_a_row_make_it_failing_one_does_not_and_a_success_ends_it() -> None:
    metrics, series, clock = setup()
    for _ in range(5):
        probe(series, clock, 30)
    assert gauge(metrics) == 0
    probe(series, clock, 30, REFUSED)
    assert gauge(metrics) == 0
    probe(series, clock, 30, REFUSED)
    assert gauge(metrics) == 1
    clock.now += 10  # a scrape between two probes
    assert gauge(metrics) == 1
    probe(series, clock, 20)
    assert gauge(metrics) == 0


def test_the_window_follows_the_interval() -> None:
    metrics, series, clock = setup(interval_ms=120_000)
    probe(series, clock, 120)
    probe(series, clock, 120, REFUSED)
    probe(series, clock, 120, REFUSED)  # 2 minutes apart: both within 2 x interval
    assert gauge(metrics) == 1
    fast, fast_series, fast_clock = setup(interval_ms=10_000)
    for _ in range(6):
        probe(fast_series, fast_clock, 10)
    probe(fast_series, fast_clock, 10, REFUSED)
    probe(fast_series, fast_clock, 10, REFUSED)  # 2 of the minute's 6 probes: below half
    assert gauge(fast) == 0
    for _ in range(2):
        probe(fast_series, fast_clock, 10, REFUSED)
    assert gauge(fast) == 1  # 4 of 6


def test_old_failures_stop_counting() -> None:
    metrics, series, clock = setup()
    probe(series, clock, 30, REFUSED)
    probe(series, clock, 30, REFUSED)
    assert gauge(metrics) == 1
    clock.now += 61  # no probe since (the monitor stopped, or its probes stopped counting)
    assert gauge(metrics) == 0


def test_excluded_results_do_not_count() -> None:
    metrics, series, clock = setup()
    probe(series, clock, 30)
    probe(series, clock, 30, REFUSED)
    for _ in range(3):
        clock.now += 30
        series.record_excluded(ProbeResult(KEY, "u", clock.now, False, REFUSED, 0.1, None, "x"), Exclusion.BLIND)
    assert gauge(metrics) == 0  # one counted failure within the window, then nothing counted
    probe(series, clock, 30, REFUSED)
    assert gauge(metrics) == 0  # the two counted failures are 2 minutes apart: no run
    probe(series, clock, 30, REFUSED)
    assert gauge(metrics) == 1


def test_dns_errors_make_it_two_only_when_they_are_half_of_the_window() -> None:
    metrics, series, clock = setup()
    probe(series, clock, 30, FailureReason.DNS_ERROR)
    probe(series, clock, 30, FailureReason.DNS_ERROR)
    assert gauge(metrics) == 2
    probe(series, clock, 30, REFUSED)
    probe(series, clock, 30, REFUSED)
    assert gauge(metrics) == 1
    probe(series, clock, 30, FailureReason.DNS_ERROR)
    assert gauge(metrics) == 2  # one refused and one DNS error in the last minute: half


def test_the_history_stays_small() -> None:
    _, series, clock = setup(interval_ms=10_000)
    for i in range(1_000):
        probe(series, clock, 10, REFUSED if i % 3 else None)
    assert len(series.recent) <= 7  # a minute of 10-second probes
