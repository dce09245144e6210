"""The operator's own alerts ("monitor the monitor"), as rule groups and promtool fixtures.

The monitors' alerts cannot say that route-monitor itself is down: each monitor would raise its
own ``RouteMonitorProbesAbsent`` ticket ten minutes later, N tickets and no page while every SLO
is blind. These alerts watch the operator (or ``standalone``) as one service:

| alert | severity | when |
|---|---|---|
| ``RouteMonitorOperatorDown`` | critical | SLOs exist, no route-monitor target up for 5m; value: SLOs blind |

``RouteMonitorOperatorDown`` counts the SLOs whose rules are loaded (``alert_rules.params``); where a rule cannot
see other namespaces (a Prometheus enforcing namespaces, e.g. OpenShift user-workload
monitoring), it counts the monitors the operator itself last reported owning (within a week).
| ``RouteMonitorReconcileErrors`` | warning | reconciles keep failing (more than 5 in 15m, for 15m) |
| ``RouteMonitorScheduleLag`` | warning | probes start late: p99 schedule lag above ``lag_threshold`` for 15m |
| ``RouteMonitorProbesSkipped`` | warning | overdue probes were skipped in each of the last 10 minutes |
| ``RouteMonitorMonitorsNotReady`` | warning | RouteMonitors not Ready for 15m; the value is how many |
| ``RouteMonitorStatusWritesThrottled`` | warning | status writes deferred more than once a second for 15m |
| ``RouteMonitorProberBlind`` | warning | some replicas' canaries are unreachable for 5m; value: how many |
| ``RouteMonitorProberBlind`` | critical | every replica that reports is blind for 3m: nothing watches the targets |

A blind replica's network failures are excluded (``blind``) and the others probe its monitors,
so one blind replica is a ticket; when every one is blind no target is watched, which pages.

``job`` is the scrape job of route-monitor's ``/metrics``: ``route-monitor`` by default, the value
of the metrics Service's ``app.kubernetes.io/name`` label, which ``deploy/``'s ServiceMonitor names
as its ``jobLabel`` (without it, prometheus-operator names the job after the Service,
``route-monitor-metrics``), and the ``job_name`` of ``deploy/prometheus``'s scrape config. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alert_rules import names

GROUP = "route-monitor-operator"
OPERATOR_DOWN = "RouteMonitorOperatorDown"
RECONCILE_ERRORS = "RouteMonitorReconcileErrors"
SCHEDULE_LAG = "RouteMonitorScheduleLag"
PROBES_SKIPPED = "RouteMonitorProbesSkipped"
MONITORS_NOT_READY = "RouteMonitorMonitorsNotReady"
STATUS_THROTTLED = "RouteMonitorStatusWritesThrottled"
PROBER_BLIND = "RouteMonitorProberBlind"
ALERTS = (OPERATOR_DOWN, RECONCILE_ERRORS, SCHEDULE_LAG, PROBES_SKIPPED, MONITORS_NOT_READY, STATUS_THROTTLED,
          PROBER_BLIND)


@dataclass(frozen=True, kw_only=True)
class OperatorAlerting:
    job: str = "route-monitor"
    """The scrape job of route-monitor's /metrics."""
    lag_threshold_seconds: float = 10.0
    """Schedule lag (p99) that counts as late: below the shortest interval you use (default 10s)."""
    runbook_base: str = names.DEFAULT_RUNBOOK_BASE
    labels: tuple[tuple[str, str], ...] = ()
    """Added to every alert (e.g. team routing)."""


def _alert(settings: OperatorAlerting, name: str, expr: str, for_: str, severity: str, summary: str,
           description: str) -> dict[str, Any]:
    return {"alert": name, "expr": expr, "for": for_,
            "labels": {**dict(settings.labels), names.LABEL_SEVERITY: severity},
            "annotations": {names.ANNOTATION_SUMMARY: summary, names.ANNOTATION_DESCRIPTION: description,
                            names.ANNOTATION_RUNBOOK_URL: f"{settings.runbook_base}#{names.slug(name)}"}}


def operator_rule_groups(settings: OperatorAlerting | None = None) -> list[dict[str, Any]]:
    s = settings or OperatorAlerting()
    up = f'up{{job="{s.job}"}}'
    job = f'job="{s.job}"'
    blind = f"{names.PROBER_BLIND}{{{job}}}"
    all_blind = f"min({blind}) == 1"
    rules = [
        _alert(s, OPERATOR_DOWN, f"(\n  count(last_over_time({names.RULES_OBJECTIVE_RECORD}[10m]))\n  or on ()\n"
               f"  last_over_time(sum({names.OWNED_MONITORS}{{{job}}})[7d:5m])\n)\nand on () absent({up} == 1)", "5m",
               names.SEVERITY_CRITICAL, "route-monitor is down: {{ $value }} SLOs are blind",
               f"No route-monitor /metrics target (job {s.job}) is up, so no monitor is probed and no burn alert "
               "can fire. The monitors' own ProbesAbsent alerts are inhibited while this fires."),
        _alert(s, RECONCILE_ERRORS, f"sum(increase({names.RECONCILE_ERRORS_TOTAL}{{{job}}}[15m])) > 5", "15m",
               names.SEVERITY_WARNING, "route-monitor reconciles keep failing",
               "{{ $value | humanize }} reconciles failed in 15 minutes (retried with backoff); see "
               f"{names.RECONCILE_ERRORS_TOTAL} by reason and the operator's log."),
        _alert(s, SCHEDULE_LAG, f"histogram_quantile(0.99, sum by (instance, le) (rate("
               f"{names.SCHEDULE_LAG_SECONDS}_bucket{{{job}}}[10m]))) > {s.lag_threshold_seconds:g}", "15m",
               names.SEVERITY_WARNING, "route-monitor starts probes late on {{ $labels.instance }}",
               "p99 schedule lag is {{ $value | humanizeDuration }}: the replica is short of CPU or has too many "
               "monitors; probes may be skipped."),
        _alert(s, PROBES_SKIPPED, f"sum by (instance) (increase({names.PROBES_SKIPPED_TOTAL}{{{job}}}[10m])) > 0",
               "10m", names.SEVERITY_WARNING, "route-monitor skips overdue probes on {{ $labels.instance }}",
               "{{ $value | humanize }} probes were skipped in 10 minutes because they were overdue: SLIs are "
               "measured on fewer probes than configured."),
        _alert(s, MONITORS_NOT_READY, f'sum({names.MONITORS}{{{job}, {names.LABEL_STATE}!="ready"}}) > 0', "15m",
               names.SEVERITY_WARNING, "{{ $value }} RouteMonitors are not Ready",
               "Some RouteMonitors have no resolved target or no applied rules: `kubectl get rmon -A` shows "
               "which, and their Ready condition says why."),
        _alert(s, STATUS_THROTTLED, f"sum(rate({names.STATUS_WRITES_DEFERRED_TOTAL}{{{job}}}[10m])) > 1", "15m",
               names.SEVERITY_WARNING, "route-monitor defers RouteMonitor status writes",
               "Probe results change faster than status may be written ({{ $value | humanize }}/s deferred): "
               "statuses lag behind; metrics and alerts are unaffected."),
        _alert(s, PROBER_BLIND, f"count({blind} == 1)\nunless on () ({all_blind})", "5m", names.SEVERITY_WARNING,
               "{{ $value }} route-monitor replicas are blind",
               "Their canary (--canary-url) is unreachable, so their own network is failing: their probes' network "
               "failures do not count and the other replicas probe their monitors. Find the replicas with "
               f"{names.PROBER_BLIND} == 1 and check their node's network and DNS."),
        _alert(s, PROBER_BLIND, f"count({blind} == 1)\nand on () ({all_blind})", "3m", names.SEVERITY_CRITICAL,
               "Every route-monitor replica is blind: no target is watched",
               "All {{ $value }} replicas that report cannot reach their canary (--canary-url): their probes' network "
               "failures do not count, so a real outage would not page. Check the cluster network, DNS and the "
               "canary itself (by default the kube-apiserver's /readyz)."),
    ]
    return [{"name": GROUP, "rules": rules}]


def inhibit_rule() -> dict[str, Any]:
    """Alertmanager: while route-monitor is down, the monitors' ProbesAbsent alerts say nothing new."""
    return {"source_matchers": [f"alertname={OPERATOR_DOWN}"],
            "target_matchers": [f"alertname={names.ALERT_PROBES_ABSENT}"]}


def operator_prometheus_rule(settings: OperatorAlerting | None = None, *,
                             namespace: str = "route-monitor") -> dict[str, Any]:
    """The operator's alerts as a PrometheusRule for ``deploy/`` (not ``managed-by`` route-monitor:
    it is the user's to apply, not an object the operator writes)."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "route-monitor-operator-alerts", "namespace": namespace,
                         "labels": {"app.kubernetes.io/name": "route-monitor"}},
            "spec": {"groups": operator_rule_groups(settings)}}
