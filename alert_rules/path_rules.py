"""Contract 11: one page per failed shared component (a router shard, a Gateway, the DNS), not
one per monitor behind it.

Per monitor (recorded for every monitor at once by the shared group, ``alert_rules.shared_failing``):

- ``namespace_monitor:route_monitor_probe_failing:bool``: the monitor is *failing*: its last two
  counted probes failed and at least half of its probes over ``W = max(2 x interval, 1m)`` did, as
  the prober decides and exports it (``alert_rules.failing``). A second series
  ``reason="dns_error"`` when DNS errors are at least half of ``W``'s probes too: only those count
  on a ``dns:`` path, and they count on no other (a probe that cannot resolve never reached a
  router: a DNS outage is one incident, for the DNS);
- ``namespace_monitor_path:route_monitor_probe_failing:bool``: one series per path on which it
  counts as failing (``alert_rules.path_verdict``);
- its alerts (pages, tickets, ``ProbesAbsent``) exclude the monitor while one of its paths is
  down (its fast pages also as soon as they see enough of its siblings failing on that path:
  ``alert_rules.path_verdict``), and after that while the monitor is no longer failing and the path was down within the
  alert's short window (the ratios still hold the shared outage's failures, which would page at
  recovery otherwise). A monitor still failing once its path is up again notifies as usual.
- those alerts wait :func:`settle_ms` (``for:``) before firing: a per-monitor alert can become
  true before the path is seen down (the other monitors' probes fail up to one interval later,
  and their groups may run after the monitor's: their failing series reach it one evaluation
  later).

Why exclusion in the expressions and not Alertmanager inhibition: Alertmanager never sends the
resolve of an alert that was inhibited after it was notified (its notify pipeline drops
inhibited alerts, resolved ones included, so the receiver keeps an open incident;
alertmanager#2754). Here nothing is inhibited: a per-monitor alert that was pending when the path
went down simply resolves before firing (never notified), and one that fired earlier resolves
normally. Budgets are untouched: recording rules still count every failure.

Once (the ``route-monitor-paths`` group of the operator's own rules, :func:`path_rule_groups`):
monitors behind each path, how many failing monitors make it down (at least ``min_monitors`` and
at least ``min_ratio`` of its monitors), how many are failing, whether the path is *down*, and
``RouteMonitorSharedPathDown{path}`` (critical): one incident per path (Alertmanager groups it by
``path``), held ``hold`` after the path is up (a short flap stays one incident) and for an hour
while the path keeps going down again (a flapping path pages at most once an hour once it flaps).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from alert_rules import durations, failing, names, path_verdict, promql
from alert_rules.model import MonitorSLO

FLAP_WINDOW = "1h"
FLAP_CHANGES = 3
"""Down, up, down again within :data:`FLAP_WINDOW`: the path flaps."""
GROUP = "route-monitor-paths"
_INFO = names.MONITOR_PATH_INFO
_DOWN = names.PATH_DOWN_RECORD


def settle_ms(interval_ms: int, evaluation_ms: int) -> int:
    """How long a per-monitor page waits (``for:``) so that a shared outage is seen first: a
    monitor is seen failing up to ``max(interval, 30s)`` after its burn alert can hold (half of the
    failing window: a burn needs only two failures), the other monitors behind the path up to one
    probe interval later, and their failing series reach the monitor's group one evaluation later
    (their groups may run after it: ``alert_rules.path_verdict``)."""
    return max(interval_ms, failing.MIN_WINDOW_MS // 2, evaluation_ms) + evaluation_ms


def _sel(slo: MonitorSLO, metric: str, *extra: tuple[str, str]) -> str:
    return promql.selector(metric, promql.monitor_matchers(slo.namespace, slo.name, *extra))


def unless_path_down(slo: MonitorSLO, expr: str, window: str, *, seen_here: bool = False) -> str:
    """``expr`` without the monitor while a path of it is down (see the module docstring); with
    ``seen_here``, also as soon as its own group sees the path down (``path_verdict``)."""
    return promql.unless_path_down(expr, _sel(slo, _INFO), _DOWN,
                                   _sel(slo, names.FAILING_RECORD, (names.LABEL_REASON, "")), window,
                                   path_verdict.down_now() if seen_here else None)


@dataclass(frozen=True, kw_only=True)
class PathAlerting:
    """Installation-wide settings of the shared-path rules (``rules`` and ``standalone`` flags)."""

    min_monitors: int = 3
    """``--shared-path-min-monitors``: failing monitors a path needs to be down (K)."""
    min_ratio: Decimal = Decimal("0.5")
    """``--shared-path-min-ratio``: share of the path's monitors that must be failing (F)."""
    hold: str = "5m"
    """``--shared-path-hold``: the incident stays open this long after the path is up again."""
    runbook_base: str = names.DEFAULT_RUNBOOK_BASE
    dashboard_base: str = ""
    """Grafana's base URL: the page links the overview dashboard filtered to the path."""
    labels: tuple[tuple[str, str], ...] = ()


def _shared_path_down(s: PathAlerting) -> dict[str, Any]:
    alert = names.ALERT_SHARED_PATH_DOWN
    annotations = {
        names.ANNOTATION_SUMMARY: "{{ $labels.path }} is down: {{ $value }} monitors behind it are failing",
        names.ANNOTATION_DESCRIPTION: (
            "{{ $value }} monitors behind {{ $labels.path }} fail together (at least "
            f"{s.min_monitors} and {promql.number(s.min_ratio * 100)}% of its monitors): the shared component is the "
            "likely cause, not each application. Their own pages, tickets and ProbesAbsent are held back while "
            "this fires; their error budgets are spent as usual."),
        names.ANNOTATION_RUNBOOK_URL: f"{s.runbook_base.rstrip('/')}#{names.slug(alert)}",
    }
    if s.dashboard_base:
        annotations[names.ANNOTATION_DASHBOARD_URL] = (
            f"{s.dashboard_base.rstrip('/')}/d/{names.DASHBOARD_OVERVIEW_UID}/?var-path={{{{ $labels.path }}}}")
    expr = promql.shared_path_down(names.PATH_FAILING_RECORD, _DOWN, s.hold, FLAP_WINDOW, FLAP_CHANGES)
    return {"alert": alert, "expr": expr,
            "labels": {**dict(s.labels), names.LABEL_SEVERITY: names.SEVERITY_CRITICAL},
            "annotations": annotations}


def path_rule_groups(settings: PathAlerting | None = None) -> list[dict[str, Any]]:
    """The ``route-monitor-paths`` group (once per Prometheus, evaluated at the global interval)."""
    s = settings or PathAlerting()
    if s.min_monitors < 1 or not (0 < s.min_ratio <= 1):
        raise ValueError("shared-path settings: min_monitors must be >= 1 and min_ratio within (0, 1]")
    durations.parse_ms(s.hold)
    monitors, threshold = names.PATH_MONITORS_RECORD, names.PATH_DOWN_THRESHOLD_RECORD
    rules = [
        {"record": monitors, "expr": promql.count_by_path(promql.monitor_paths(_INFO))},
        {"record": threshold, "expr": path_verdict.threshold(monitors, s.min_monitors, s.min_ratio)},
        {"record": names.PATH_FAILING_RECORD, "expr": path_verdict.failing_count()},
        {"record": _DOWN, "expr": path_verdict.down(names.PATH_FAILING_RECORD, threshold, monitors)},
        _shared_path_down(s),
    ]
    return [{"name": GROUP, "rules": rules}]
