"""Contract 3's SLI metrics and the engine's own health, in an object created at start-up.

Nothing touches the global registry: :class:`ProbeMetrics` registers on the registry it is
given, so tests build a fresh ``CollectorRegistry`` and read it with ``get_sample_value``.

The per-monitor series are kept in plain objects (:class:`MonitorSeries`) and rendered by one
custom collector at scrape time. That keeps recording a result to a few integer additions
(no label lookups or locks per probe) and makes removing a monitor's series one dict delete.
It also gives each monitor its own histogram buckets: the defaults
(``names.DEFAULT_DURATION_BUCKETS``) plus that monitor's latency threshold, so the threshold is
always a bucket boundary, rendered as ``names.le_label(threshold)``; monitors with different
thresholds carry different ``le`` sets, which Prometheus handles per series.

``route_monitor_probe_failures_total`` series appear on a reason's first failure (pre-creating
all eleven reasons per monitor would multiply series for no SLO benefit: the SLO uses
``route_monitor_probes_total``, whose ``success`` and ``failure`` series both exist at 0 from
the moment a monitor is added), except ``dns_error`` of a monitor whose host is a name: a series
born at its first failure shows a smaller ``increase()`` than one that was at 0 before, for a whole
window, and a DNS outage is what dashboards and runbooks compare across monitors.
``route_monitor_probe_failing`` is the prober's own verdict of Contract 11 (``alert_rules.failing``),
read at scrape time from the monitor's last counted results (:meth:`MonitorSeries.failing`).
``probe_success`` appears after the first probe, the certificate expiry after the first TLS
handshake, and keeps its last value while the monitor's URL does not change (so the expiry
alert does not resolve because the target went down).

Every per-monitor series carries ``location`` (where this process probes from) when
one is set; the rules aggregate ``by (namespace, monitor)``, so a series gaining the label (an
upgrade) joins its monitor's sums like a series from a new pod, and the SLO history continues.
"""

from __future__ import annotations

import asyncio
import bisect
import platform
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from alert_rules import failing as slo_failing
from alert_rules import names
from alert_rules import params as slo_params
from route_monitor import __version__
from route_monitor.probe import exposition
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult
from route_monitor.spec.paths import DNS_CLUSTER, url_paths

LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
HELP = {
    names.PROBES_TOTAL: "Completed probes by result",
    names.PROBE_FAILURES_TOTAL: "Failed probes by reason (bounded set)",
    names.PROBE_DURATION_SECONDS: "Duration of successful probes (the latency threshold is always a bucket boundary)",
    names.PROBE_SUCCESS: "1 if the last probe succeeded, else 0",
    names.PROBES_FAST_TOTAL: "Successful probes no slower than the latency threshold (monitors with a latency "
                             "objective)",
    names.SLO_OBJECTIVE: "The availability objective (a ratio): what the shared rules' thresholds read",
    names.SLO_PERIOD: "The SLO period in seconds",
    names.PROBE_INTERVAL: "Seconds between the monitor's probes",
    names.LATENCY_OBJECTIVE: "The latency objective (a ratio; monitors with a latency objective)",
    names.TLS_CERT_EXPIRY: "Leaf certificate notAfter (seconds since the epoch), reported even when verification fails",
    names.TARGET_INFO: "What is being probed (always 1)",
    names.PROBES_IN_FLIGHT: "Probes running right now",
    names.PROBES_EXCLUDED_TOTAL: "Probes whose result did not count in the SLO, by reason",
    names.MAINTENANCE: "1 while the monitor is in a maintenance window or paused, else 0",
    names.WARMING_UP: "1 while the monitor warms up (its failing probes are not counted yet), else 0",
    names.PROBE_PHASE_DURATION_SECONDS: "The last probe's seconds in each phase, summed over its redirects",
    names.PROBE_HTTP_STATUS_CODE: "Status code of the last probe's last response (0: none came)",
    names.MONITOR_PATH_INFO: "A shared component between the prober and the monitor's target (always 1)",
    names.PROBE_FAILING: "1 while the monitor is failing (its last two counted probes failed, and at least half of "
                         "those over twice the interval, at least 1m), 2 when DNS errors are at least half of them, "
                         "else 0",
}


@lru_cache(maxsize=256)
def _le_labels(bounds: tuple[float, ...]) -> tuple[str, ...]:
    return (*(names.le_label(b) for b in bounds), "+Inf")


@lru_cache(maxsize=256)
def _buckets(threshold_seconds: float | None) -> tuple[float, ...]:
    """One tuple of bounds per threshold, shared by the monitors that have it."""
    return names.duration_buckets(threshold_seconds)


def _fast_upto(bounds: tuple[float, ...], threshold_seconds: float | None) -> int | None:
    return None if threshold_seconds is None else bounds.index(float(threshold_seconds)) + 1


@dataclass(frozen=True, slots=True)
class TargetInfo:
    url: str
    kind: str
    name: str
    paths: tuple[str, ...] = ()
    """Contract 11: one ``route_monitor_monitor_path_info`` series each (not SLI labels)."""


class Hist:
    """One monitor's duration histogram (non-cumulative bucket counts; the last one is +Inf)."""

    __slots__ = ("bounds", "buckets", "fast_upto", "le_labels", "sum")

    def __init__(self, bounds: tuple[float, ...], threshold_seconds: float | None = None) -> None:
        self.bounds = bounds
        self.le_labels = _le_labels(bounds)
        self.buckets = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.fast_upto = _fast_upto(bounds, threshold_seconds)
        """How many buckets count the fast probes (those up to the latency threshold), if one is set."""

    def fast(self) -> int | None:
        """``route_monitor_probes_fast_total``: the cumulative count at the threshold's bucket."""
        upto = self.fast_upto
        return None if upto is None else sum(self.buckets[:upto])


class MonitorSeries:
    """The live series of one monitor. Mutated only on the event loop; a scrape (possibly in
    another thread) reads each attribute once, so it always sees a consistent histogram."""

    __slots__ = ("by_reason", "cert_not_after", "excluded", "failure", "hist", "ident", "info", "info_labels",
                 "interval_ms", "key", "last_success", "maintenance", "param_lines", "params", "phases", "recent",
                 "status_code", "success", "warming_up")

    def __init__(self, key: tuple[str, str], info: TargetInfo, bounds: tuple[float, ...], location: str = "",
                 threshold_seconds: float | None = None) -> None:
        self.key = key
        self.ident = f'namespace="{exposition.escape(key[0])}",monitor="{exposition.escape(key[1])}"'
        if location:
            self.ident += f',{names.LABEL_LOCATION}="{exposition.escape(location)}"'
        self.by_reason: dict[FailureReason, int] = {}
        self.set_info(info)
        self.hist = Hist(bounds, threshold_seconds)
        self.params: tuple[tuple[str, float], ...] = ()
        """The monitor's objectives and interval as series (``alert_rules.params.values``)."""
        self.param_lines: tuple[tuple[str, str], ...] = ()
        """The same as exposition lines, rendered once by :meth:`set_params` (a scrape joins them)."""
        self.success = 0
        self.failure = 0
        self.last_success: int | None = None
        self.cert_not_after: float | None = None
        self.excluded: dict[Exclusion, int] = {}
        """Contract 9: results that did not count, by reason (a reason's series appears on its first)."""
        self.maintenance = 0
        self.warming_up = 0
        self.phases: tuple[float, ...] | None = None
        """The last probe's seconds per ``names.PHASES`` (after the first probe)."""
        self.status_code: int | None = None
        """The last probe's last status, 0 when no response came (after the first probe)."""
        self.recent: list[tuple[float, int]] = []
        """The counted probes the failing verdict still reads: ``(timestamp, alert_rules.failing code)``."""
        self.interval_ms = slo_failing.MIN_WINDOW_MS // 2
        """The probe interval, from the params (the failing window follows it)."""

    def set_params(self, params: tuple[tuple[str, float], ...]) -> None:
        if params != self.params:
            self.params = params
            interval = dict(params).get(names.PROBE_INTERVAL)
            if interval is not None:
                self.interval_ms = round(interval * 1000)
            self.param_lines = tuple((name, f"{name}{{{self.ident}}} {exposition.floatToGoString(value)}")
                                     for name, value in params)

    def set_info(self, info: TargetInfo) -> None:
        self.info = info
        if DNS_CLUSTER in url_paths(info.url):
            self.by_reason.setdefault(FailureReason.DNS_ERROR, 0)
        self.info_labels = (f'url="{exposition.escape(info.url)}",kind="{exposition.escape(info.kind)}",'
                            f'name="{exposition.escape(info.name)}"')

    def _last(self, result: ProbeResult) -> None:
        self.phases = result.phases
        self.status_code = result.status_code or 0
        if result.cert_not_after is not None:
            self.cert_not_after = result.cert_not_after

    def failing(self, now: float) -> int:
        """Contract 11's verdict at ``now`` (wall-clock seconds): ``alert_rules.failing``'s gauge value
        (from a copy of the history: a scrape thread reads it while the event loop trims it). A
        monitor whose last counted probe passed is not failing: that answer, the usual one, costs a
        scrape no copy and no count."""
        last = self.recent[-1:]
        if not last or last[0][1] == slo_failing.PASSED:
            return slo_failing.OK
        return slo_failing.verdict(tuple(self.recent), now, self.interval_ms)

    def _remember(self, timestamp: float, code: int) -> None:
        recent = self.recent
        recent.append((timestamp, code))
        since = slo_failing.keep_since(timestamp, self.interval_ms)
        while len(recent) > slo_failing.MIN_PROBES and recent[0][0] <= since:
            del recent[0]

    def record(self, result: ProbeResult) -> None:
        self._last(result)
        if result.success:
            self.success += 1
            self.last_success = 1
            h, d = self.hist, result.duration_seconds
            h.buckets[bisect.bisect_left(h.bounds, d)] += 1
            h.sum += d
        else:
            self.failure += 1
            self.last_success = 0
            reason = result.reason or FailureReason.OTHER
            self.by_reason[reason] = self.by_reason.get(reason, 0) + 1
        self._remember(result.timestamp, slo_failing.PASSED if result.success else
                       slo_failing.DNS_FAILED if result.reason is FailureReason.DNS_ERROR else slo_failing.FAILED)

    def record_excluded(self, result: ProbeResult, why: Exclusion) -> None:
        """A result that does not count: only the excluded counter, the last result and the certificate."""
        self.excluded[why] = self.excluded.get(why, 0) + 1
        self.last_success = 1 if result.success else 0
        self._last(result)


class ProbeMetrics:
    def __init__(self, registry: CollectorRegistry, *, location: str = "",
                 clock: Callable[[], float] = time.time) -> None:
        self._series: dict[tuple[str, str], MonitorSeries] = {}
        self.clock = clock
        """Wall-clock seconds, as the probes' timestamps: when a scrape reads the failing verdict."""
        self.location = location
        """Contract 12: the ``location`` label of every per-monitor series (empty: no such label,
        ``standalone`` without ``--location``)."""
        self.in_flight = 0
        """Probes running right now (maintained by the engine)."""
        self.schedule_lag = Histogram(
            names.SCHEDULE_LAG_SECONDS, "How late probes start after their scheduled time (incl. waiting "
            "for the concurrency limit)", registry=registry, buckets=LAG_BUCKETS)
        self.event_loop_lag = Histogram(
            names.EVENT_LOOP_LAG_SECONDS, "How late the event loop wakes up a sleeping task (a busy loop "
            "delays every probe)", registry=registry, buckets=LAG_BUCKETS)
        self.asyncio_tasks = Gauge(names.ASYNCIO_TASKS, "asyncio tasks alive in this process (the probes "
                                   "in flight plus a few; growth means a leak)", registry=registry)
        self.skipped = Counter(names.PROBES_SKIPPED_TOTAL, "Scheduled probes skipped because the previous "
                               "run or the concurrency limit made them overdue", registry=registry)
        build = Gauge(names.BUILD_INFO, "route-monitor's version (always 1)", ["version", "python"],
                      registry=registry)
        build.labels(version=__version__, python=platform.python_version()).set(1)
        ProcessCollector(registry=registry)  # process_* (CPU, memory, open fds), as every exporter has
        self._registry = registry
        self._collector = _Collector(self)
        registry.register(self._collector)

    def count_tasks_of(self, loop: asyncio.AbstractEventLoop) -> None:
        """``route_monitor_asyncio_tasks`` counts ``loop``'s tasks when scraped (exact at every
        scrape, nothing spent between scrapes; ``asyncio.all_tasks`` is safe from the scraping
        thread, it copies the task set under retry)."""
        self.asyncio_tasks.set_function(lambda: len(asyncio.all_tasks(loop)))

    def add(self, key: tuple[str, str], info: TargetInfo, threshold_seconds: float | None,
            params: tuple[tuple[str, float], ...] = ()) -> MonitorSeries:
        """The series of ``key`` (created with both result series at 0, or updated in place), with
        ``params``, the monitor's objectives and interval (``alert_rules.params.values``).

        Counters survive a change of URL or interval; the histogram restarts when its buckets
        change (a counter reset, which ``rate()`` handles); a new URL forgets the certificate."""
        bounds = _buckets(threshold_seconds)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = MonitorSeries(key, info, bounds, self.location, threshold_seconds)
            series.set_params(params)
            return series
        series.set_params(params)
        if series.hist.bounds != bounds or series.hist.fast_upto != _fast_upto(bounds, threshold_seconds):
            series.hist = Hist(bounds, threshold_seconds)
        if series.info.url != info.url:
            series.cert_not_after = None
        series.set_info(info)
        return series

    def remove(self, key: tuple[str, str]) -> None:
        self._series.pop(key, None)

    def series(self) -> list[MonitorSeries]:
        return list(self._series.values())

    def exposition(self) -> bytes:
        """The whole registry in the text format, the per-monitor series by the fast renderer
        (:mod:`route_monitor.probe.exposition`). Safe to call from any thread."""
        self._collector.skip.active = True
        try:
            rest = generate_latest(self._registry)
        finally:
            self._collector.skip.active = False
        return rest + exposition.render(self.series(), self.in_flight, HELP, self.clock()).encode()

    def exposition_of(self, namespace: str) -> bytes:
        """Only the series of ``namespace``'s monitors (``/metrics?namespace=NS``), nothing of the
        operator's own health: what a Prometheus that enforces the scraping object's namespace
        (user-workload monitoring) may keep for that namespace."""
        return exposition.render([s for s in self.series() if s.key[0] == namespace], None, HELP, self.clock()).encode()


class _Collector:
    def __init__(self, metrics: ProbeMetrics) -> None:
        self._m = metrics
        self.skip = threading.local()
        """Set while :meth:`ProbeMetrics.exposition` renders these series itself (per thread)."""

    def describe(self) -> Iterable[Metric]:
        return list(self._families([]))

    def collect(self) -> Iterable[Metric]:
        if getattr(self.skip, "active", False):
            return []
        return list(self._families(self._m.series()))

    def _families(self, all_series: list[MonitorSeries]) -> Iterator[Metric]:
        ident = list(names.IDENTITY_LABELS) + ([names.LABEL_LOCATION] if self._m.location else [])
        where = [self._m.location] if self._m.location else []
        probes = CounterMetricFamily(names.PROBES_TOTAL, HELP[names.PROBES_TOTAL], labels=[*ident, names.LABEL_RESULT])
        failures = CounterMetricFamily(names.PROBE_FAILURES_TOTAL, HELP[names.PROBE_FAILURES_TOTAL],
                                       labels=[*ident, names.LABEL_REASON])
        duration = HistogramMetricFamily(names.PROBE_DURATION_SECONDS, HELP[names.PROBE_DURATION_SECONDS], labels=ident)
        success = GaugeMetricFamily(names.PROBE_SUCCESS, HELP[names.PROBE_SUCCESS], labels=ident)
        fast = CounterMetricFamily(names.PROBES_FAST_TOTAL, HELP[names.PROBES_FAST_TOTAL], labels=ident)
        params = {name: GaugeMetricFamily(name, HELP[name], labels=ident) for name in slo_params.METRICS}
        expiry = GaugeMetricFamily(names.TLS_CERT_EXPIRY, HELP[names.TLS_CERT_EXPIRY], labels=ident)
        info = GaugeMetricFamily(names.TARGET_INFO, HELP[names.TARGET_INFO],
                                 labels=[*ident, names.LABEL_URL, names.LABEL_KIND, names.LABEL_NAME])
        excluded = CounterMetricFamily(names.PROBES_EXCLUDED_TOTAL, HELP[names.PROBES_EXCLUDED_TOTAL],
                                       labels=[*ident, names.LABEL_REASON])
        maintenance = GaugeMetricFamily(names.MAINTENANCE, HELP[names.MAINTENANCE], labels=ident)
        warming = GaugeMetricFamily(names.WARMING_UP, HELP[names.WARMING_UP], labels=ident)
        phases = GaugeMetricFamily(names.PROBE_PHASE_DURATION_SECONDS, HELP[names.PROBE_PHASE_DURATION_SECONDS],
                                   labels=[*ident, names.LABEL_PHASE])
        status = GaugeMetricFamily(names.PROBE_HTTP_STATUS_CODE, HELP[names.PROBE_HTTP_STATUS_CODE], labels=ident)
        path_info = GaugeMetricFamily(names.MONITOR_PATH_INFO, HELP[names.MONITOR_PATH_INFO],
                                      labels=[*ident, names.LABEL_PATH])
        failing = GaugeMetricFamily(names.PROBE_FAILING, HELP[names.PROBE_FAILING], labels=ident)
        now = self._m.clock()
        in_flight = GaugeMetricFamily(names.PROBES_IN_FLIGHT, HELP[names.PROBES_IN_FLIGHT])
        in_flight.add_metric([], self._m.in_flight)
        for s in all_series:
            idv = [*s.key, *where]
            probes.add_metric([*idv, names.RESULT_SUCCESS], s.success)
            probes.add_metric([*idv, names.RESULT_FAILURE], s.failure)
            for reason, n in sorted(list(s.by_reason.items()), key=lambda kv: kv[0].value):
                failures.add_metric([*idv, reason.value], n)
            h = s.hist
            cumulative, acc = [], 0
            for le, n in zip(h.le_labels, list(h.buckets), strict=True):
                acc += n
                cumulative.append((le, acc))
            duration.add_metric(idv, cumulative, h.sum)
            n_fast = h.fast()
            if n_fast is not None:
                fast.add_metric(idv, n_fast)
            for name, value in s.params:
                params[name].add_metric(idv, value)
            if s.last_success is not None:
                success.add_metric(idv, s.last_success)
            if s.cert_not_after is not None:
                expiry.add_metric(idv, s.cert_not_after)
            info.add_metric([*idv, s.info.url, s.info.kind, s.info.name], 1)
            for why, n in sorted(list(s.excluded.items()), key=lambda kv: kv[0].value):
                excluded.add_metric([*idv, why.value], n)
            maintenance.add_metric(idv, s.maintenance)
            warming.add_metric(idv, s.warming_up)
            last = s.phases
            if last is not None:
                for phase, seconds in zip(names.PHASES, last, strict=True):
                    phases.add_metric([*idv, phase], seconds)
            if s.status_code is not None:
                status.add_metric(idv, s.status_code)
            for path in s.info.paths:
                path_info.add_metric([*idv, path], 1)
            failing.add_metric(idv, s.failing(now))
        yield from (probes, failures, duration, fast, *params.values(), success, expiry, info, excluded, maintenance,
                    warming, phases, status, path_info, failing, in_flight)
