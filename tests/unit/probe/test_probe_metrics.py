"""Contract 3's series as rendered by ``ProbeMetrics`` (no network: results recorded directly).

Covers: ``le`` labels are ``names.le_label`` (what the generator queries) and match
client_python's own float rendering; a duration equal to the threshold counts in the
threshold's bucket (``le`` is inclusive); buckets are cumulative; the certificate expiry
survives a failure without a handshake but not a URL change; a monitor whose host is a name
has its ``dns_error`` failure series at 0 from the start (an IP address's has none until a
failure); removal drops every series; the fast exposition (``ProbeMetrics.exposition``) says exactly what client_python's rendering says.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from alert_rules import names, params
from alert_rules.model import LatencyObjective, Objective
from route_monitor.probe.metrics import ProbeMetrics, TargetInfo
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult

KEY = ("ns", "m")
LABELS = {"namespace": "ns", "monitor": "m"}


PHASES = (0.001, 0.002, 0.0, 0.125, 0.5)


def ok(duration: float, cert: float | None = None) -> ProbeResult:
    return ProbeResult(KEY, "https://x/", 0.0, True, None, duration, 200, "HTTP 200", cert, phases=PHASES)


def failed(reason: FailureReason) -> ProbeResult:
    return ProbeResult(KEY, "https://x/", 0.0, False, reason, 0.1, None, "nope")


@pytest.mark.parametrize("seconds", [0.005, 0.1, 0.25, 0.3, 0.5, 1, 1.5, 2, 10, 12.5, 60, 0.123])
def test_le_label_matches_the_exposition(seconds: float) -> None:
    assert names.le_label(seconds) == floatToGoString(seconds)
    assert names.le_label(seconds / 1) in {names.le_label(b) for b in names.duration_buckets(seconds)}


def test_threshold_bucket_is_inclusive_and_buckets_are_cumulative() -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    series = metrics.add(KEY, TargetInfo("https://x/", "url", ""), 0.3)
    for d in (0.001, 0.3, 0.30001, 20.0):
        series.record(ok(d))
    bucket = names.PROBE_DURATION_SECONDS + "_bucket"
    assert registry.get_sample_value(bucket, {**LABELS, "le": "0.005"}) == 1
    assert registry.get_sample_value(bucket, {**LABELS, "le": "0.3"}) == 2
    assert registry.get_sample_value(bucket, {**LABELS, "le": "0.5"}) == 3
    assert registry.get_sample_value(bucket, {**LABELS, "le": "+Inf"}) == 4
    assert registry.get_sample_value(names.PROBE_DURATION_SECONDS + "_count", LABELS) == 4
    assert registry.get_sample_value(names.PROBE_DURATION_SECONDS + "_sum", LABELS) == pytest.approx(20.60101)


def test_fast_counter_is_the_threshold_bucket_for_latency_monitors_only() -> None:
    """``route_monitor_probes_fast_total`` is what the shared latency rules read: the bucket at
    the threshold (inclusive), none for a monitor without a latency objective, restarted with the
    histogram when the threshold changes (even to a default bucket boundary)."""
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    series = metrics.add(KEY, TargetInfo("https://x/", "url", ""), 0.3)
    plain = metrics.add(("ns", "plain"), TargetInfo("https://y/", "url", ""), None)
    for d in (0.001, 0.3, 0.30001, 20.0):
        series.record(ok(d))
        plain.record(ok(d))
    series.record(failed(FailureReason.TIMEOUT))
    assert registry.get_sample_value(names.PROBES_FAST_TOTAL, LABELS) == 2
    assert registry.get_sample_value(names.PROBES_FAST_TOTAL, {"namespace": "ns", "monitor": "plain"}) is None
    metrics.add(KEY, TargetInfo("https://x/", "url", ""), 0.5)  # a default boundary: same bucket set as None
    assert registry.get_sample_value(names.PROBES_FAST_TOTAL, LABELS) == 0
    series.record(ok(0.4))
    assert registry.get_sample_value(names.PROBES_FAST_TOTAL, LABELS) == 1
    metrics.add(KEY, TargetInfo("https://x/", "url", ""), None)
    assert registry.get_sample_value(names.PROBES_FAST_TOTAL, LABELS) is None
    assert b"route_monitor_probes_fast_total{" not in metrics.exposition()


def test_certificate_expiry_survives_failures_but_not_a_url_change() -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    series = metrics.add(KEY, TargetInfo("https://x/", "url", ""), None)
    series.record(ok(0.1, cert=2_000_000_000.0))
    series.record(failed(FailureReason.CONNECTION_REFUSED))
    assert registry.get_sample_value(names.TLS_CERT_EXPIRY, LABELS) == 2_000_000_000.0
    assert registry.get_sample_value(names.PROBE_FAILURES_TOTAL, {**LABELS, "reason": "connection_refused"}) == 1
    metrics.add(KEY, TargetInfo("https://y/", "url", ""), None)
    assert registry.get_sample_value(names.TLS_CERT_EXPIRY, LABELS) is None
    assert registry.get_sample_value(names.PROBES_TOTAL, {**LABELS, "result": "failure"}) == 1


def test_dns_error_series_exists_from_the_start_for_a_host_name() -> None:
    """The shared-path rules compare its increase with the failure counter's: a series born at
    its first failure would show less for a whole window."""
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    dns = {**LABELS, "reason": "dns_error"}
    series = metrics.add(KEY, TargetInfo("http://127.0.0.1:8080/", "url", ""), None)
    assert registry.get_sample_value(names.PROBE_FAILURES_TOTAL, dns) is None
    series.set_info(TargetInfo("https://shop.example.com/", "url", ""))
    assert registry.get_sample_value(names.PROBE_FAILURES_TOTAL, dns) == 0
    assert registry.get_sample_value(names.PROBE_FAILURES_TOTAL, {**LABELS, "reason": "timeout"}) is None
    series.record(failed(FailureReason.DNS_ERROR))
    assert registry.get_sample_value(names.PROBE_FAILURES_TOTAL, dns) == 1
    other = metrics.add(("ns", "n"), TargetInfo("http://svc.ns.svc:80/", "url", ""), None)
    assert other.by_reason == {FailureReason.DNS_ERROR: 0}


def test_remove_drops_every_series_of_the_monitor() -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    metrics.add(KEY, TargetInfo("https://x/", "url", ""), 0.5).record(failed(FailureReason.TIMEOUT))
    metrics.add(("ns", "other"), TargetInfo("https://z/", "url", ""), None)
    metrics.remove(KEY)
    text = generate_latest(registry).decode()
    assert 'monitor="m"' not in text and 'monitor="other"' in text


def test_two_registries_do_not_share_anything() -> None:
    a, b = CollectorRegistry(), CollectorRegistry()
    ProbeMetrics(a).add(KEY, TargetInfo("https://x/", "url", ""), None)
    ProbeMetrics(b)
    assert a.get_sample_value(names.PROBES_TOTAL, {**LABELS, "result": "success"}) == 0
    assert b.get_sample_value(names.PROBES_TOTAL, {**LABELS, "result": "success"}) is None


def samples(text: bytes) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
    """Every sample but the process's own (its CPU time moves between two renderings)."""
    return sorted((s.name, tuple(sorted(s.labels.items())), s.value)
                  for f in text_string_to_metric_families(text.decode()) for s in f.samples
                  if not s.name.startswith("process_"))


def test_fast_exposition_matches_client_python() -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry, clock=lambda: 1.0)  # the probes' timestamps are 0: within every window
    metrics.in_flight = 3
    metrics.schedule_lag.observe(0.002)
    for i, (threshold, url) in enumerate([(None, "http://a/"), (0.3, 'http://b/?q="x"\\y'), (1.0, "https://c/\n")]):
        latency = None if threshold is None else LatencyObjective(int(threshold * 1000), Decimal("99.5"))
        slo = params.values(Objective(Decimal("99.95"), 7 * 86_400_000, latency), 15_000 * (i + 1))
        series = metrics.add(("ns", f"m{i}"), TargetInfo(url, "route" if i else "url", f"n{i}"), threshold, slo)
        for d in (0.001, 0.3, 2.0, 30.0)[: i + 2]:
            series.record(ok(d, cert=1.7e9 + i if i else None))
        for reason in list(FailureReason)[:i * 4]:
            series.record(failed(reason))
        for why in list(Exclusion)[:i + 1]:  # Contract 9: excluded results and the maintenance gauge
            series.record_excluded(failed(FailureReason.TIMEOUT), why)
        series.maintenance = i % 2
        series.warming_up = 1 - i % 2
    metrics.add(("other", "fresh"), TargetInfo("http://d/", "service", "d"), 0.25)
    fast = metrics.exposition()
    assert samples(fast) == samples(generate_latest(registry))
    assert fast.count(b"# TYPE route_monitor_probes_total counter") == 1
    assert b'route_monitor_probes_excluded_total{namespace="ns",monitor="m2",reason="paused"} 1.0' in fast
    assert b'route_monitor_maintenance{namespace="other",monitor="fresh"} 0.0' in fast
    assert b'route_monitor_probe_failing{namespace="ns",monitor="m2"} 1.0' in fast  # its last 8 probes failed
    assert b'route_monitor_probe_failing{namespace="other",monitor="fresh"} 0.0' in fast


def test_the_last_probes_phases_status_and_warm_up_as_blackbox_exporter_shows_them() -> None:
    registry = CollectorRegistry()
    metrics = ProbeMetrics(registry)
    series = metrics.add(KEY, TargetInfo("https://x/", "url", ""), None)
    page = metrics.exposition().decode()
    assert f'{names.WARMING_UP}{{namespace="ns",monitor="m"}} 0.0' in page
    assert names.PROBE_PHASE_DURATION_SECONDS + "{" not in page, "no phases before the first probe"
    series.record(ok(0.6))
    phases = {p: registry.get_sample_value(names.PROBE_PHASE_DURATION_SECONDS, {**LABELS, "phase": p})
              for p in names.PHASES}
    assert phases == dict(zip(names.PHASES, PHASES, strict=True))
    assert registry.get_sample_value(names.PROBE_HTTP_STATUS_CODE, LABELS) == 200
    series.record(failed(FailureReason.CONNECTION_REFUSED))
    assert registry.get_sample_value(names.PROBE_HTTP_STATUS_CODE, LABELS) == 0, "no response: 0, as blackbox"
    assert registry.get_sample_value("process_open_fds") is not None
    assert registry.get_sample_value("process_resident_memory_bytes") is not None
    assert registry.get_sample_value("process_cpu_seconds_total") is not None
