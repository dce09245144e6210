"""Contract 4's alerting rules for one monitor: names, labels, annotations (plain data).

Annotations are plain text, not templates: the namespace and monitor are known when the rules
are generated, so nothing needs ``{{ $labels }}``, and the text is the same in Alertmanager,
in ``promtool test rules`` fixtures and in this code. Every value that ends up in a label or an
annotation (including the monitor's own) goes through :func:`literal`, so a ``{{`` in a
user's annotation is shown as written instead of breaking the rule file for every monitor.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from alert_rules import durations, names, promql
from alert_rules.model import MonitorSLO
from alert_rules.sli import SLI
from alert_rules.windows import AlertWindow

GUARD_MIN_BAD_PROBES = 2
"""A burn alert needs at least this many bad probes within its long window (see ``rules``)."""
ABSENT_AFTER = "10m"
ABSENT_FOR = "5m"
"""The 5m window is empty 5 minutes after the last probe; ``for: 5m`` makes it 10 minutes."""
RULES_INCOMPLETE_FOR = "10m"
"""The shared records appear within one evaluation of a monitor's first probe series; 10 minutes
leave a loading Prometheus (or a rule file written just after the monitor) time to catch up."""
CERT_EXPIRY_WARNING_DAYS = 14
RESERVED_LABELS = frozenset({"alertname", names.LABEL_SEVERITY, names.LABEL_LONG, names.LABEL_SHORT,
                             names.LABEL_NAMESPACE, names.LABEL_MONITOR})
"""Labels the generator sets itself; a monitor's own label of the same name is dropped (with a finding)."""


def literal(text: str) -> str:
    """Text that Prometheus' label/annotation templating renders exactly as written."""
    return text.replace("{{", '{{ "{{" }}')


def pct(ratio: Decimal) -> str:
    """A ratio for people, 4 significant digits: ``0.0144`` -> ``1.44%``, ``7/600`` -> ``1.167%``."""
    d = ratio * 100
    return f"{promql.number(round(d, max(0, 3 - d.adjusted())) if d else d)}%"


def factor_text(factor: Decimal) -> str:
    """A burn factor for people: ``14.4``, ``0.93`` (28d), ``0.23`` (7d)."""
    return promql.number(round(factor, 2))


def severity_of(window: AlertWindow) -> str:
    return names.SEVERITY_CRITICAL if window.severity == "page" else names.SEVERITY_WARNING


def runbook(alert: str, base: str = names.DEFAULT_RUNBOOK_BASE) -> str:
    return f"{base.rstrip('/')}#{names.slug(alert)}"


def dashboard(slo: MonitorSLO) -> str:
    """monitor-detail (``grafana/monitor-detail.json``) opened on this monitor."""
    query = urlencode({"var-namespace": slo.namespace, "var-monitor": slo.name})
    return f"{slo.alerting.dashboard_base.rstrip('/')}/d/{names.DASHBOARD_DETAIL_UID}/?{query}"


def identity(slo: MonitorSLO) -> dict[str, str]:
    return {names.LABEL_NAMESPACE: slo.namespace, names.LABEL_MONITOR: slo.name}


def _labels(slo: MonitorSLO, own: dict[str, str]) -> dict[str, str]:
    out = {**own, **identity(slo)}
    for k, v in slo.alerting.labels:
        if k not in RESERVED_LABELS:
            out[k] = v
    return {k: literal(v) for k, v in out.items()}


def _annotations(slo: MonitorSLO, alert: str, summary: str, description: str) -> dict[str, str]:
    out = {names.ANNOTATION_SUMMARY: summary, names.ANNOTATION_DESCRIPTION: description,
           names.ANNOTATION_RUNBOOK_URL: runbook(alert, slo.alerting.runbook_base)}
    if slo.alerting.dashboard_base:
        out[names.ANNOTATION_DASHBOARD_URL] = dashboard(slo)
    out.update(slo.alerting.annotations)
    return {k: literal(v) for k, v in out.items()}


def _who(slo: MonitorSLO) -> str:
    return f"{slo.namespace}/{slo.name}"


def burn_alert(slo: MonitorSLO, sli: SLI, window: AlertWindow, expr: str) -> dict[str, Any]:
    """One ``RouteMonitor{Error,Latency}BudgetBurn`` rule for one window pair."""
    threshold = window.threshold(sli.budget)
    period = durations.format_ms(slo.objective.period_ms)
    exhaust = durations.format_ms(max(1000, round(Decimal(slo.objective.period_ms) / window.factor / 1000) * 1000))
    if sli.kind == "availability":
        bad, goal = "failed", "succeeding"
    else:
        limit = durations.format_ms(sli.threshold_ms)
        bad, goal = f"failed or took over {limit}", f"faster than {limit}"
    factor = factor_text(window.factor)
    description = (
        f"More than {pct(threshold)} of the probes of {_who(slo)} {bad} over the last {window.long} and "
        f"{window.short} (at least {GUARD_MIN_BAD_PROBES} within {window.long}). Objective: "
        f"{promql.number(sli.objective)}% of probes {goal} over {period}. At {factor}x the budget's rate, "
        f"{pct(window.budget_share)} of the budget goes every {window.long}, all of it within {exhaust}."
    )
    summary = f"{_who(slo)}: {sli.kind} error budget burning over {factor}x ({window.long}/{window.short})"
    return {
        "alert": sli.alert,
        "expr": expr,
        "labels": _labels(slo, {names.LABEL_SEVERITY: severity_of(window), names.LABEL_LONG: window.long,
                                names.LABEL_SHORT: window.short}),
        "annotations": _annotations(slo, sli.alert, summary, description),
    }


def _warning(slo: MonitorSLO, alert: str, expr: str, for_: str | None, summary: str,
             description: str) -> dict[str, Any]:
    """A warning of ``slo``'s own (not a burn alert): its labels, its annotations, ``for`` if any."""
    return {
        "alert": alert,
        "expr": expr,
        **({"for": for_} if for_ else {}),
        "labels": _labels(slo, {names.LABEL_SEVERITY: names.SEVERITY_WARNING}),
        "annotations": _annotations(slo, alert, summary, description),
    }


def probes_absent_alert(slo: MonitorSLO, absent_expr: str) -> dict[str, Any]:
    """No probe result for 10 minutes: ``absent_expr`` (the shared record,
    ``alert_rules.shared.probes_absent``: the 5m error ratio has had nothing to divide, 0/0, or no
    series at all, and no excluded probe, Contract 9's window, pause or warm-up, was recorded either;
    or no probe series of the monitor within 5 minutes) for 5 minutes (``for: 5m``), in the
    monitor's tile-long group: it fires 10 to 15 minutes after the last probe."""
    return _warning(
        slo, names.ALERT_PROBES_ABSENT, absent_expr, ABSENT_FOR, f"{_who(slo)}: no probe results for {ABSENT_AFTER}",
        f"No probe of {_who(slo)} recorded for {ABSENT_AFTER}: its SLO is not measured. Check that "
        "route-monitor runs, that Prometheus scrapes it, and the RouteMonitor's conditions.")


def rules_incomplete_alert(slo: MonitorSLO, probes_sel: str, shared_sel: str) -> dict[str, Any]:
    """Probe series but no shared record (``shared_sel``, written only by the shared groups) for 10
    minutes: the Prometheus evaluating this monitor's rules does not load the shared groups, so its
    burn alerts and ``RouteMonitorProbesAbsent`` could never fire. Said instead of staying silent."""
    return _warning(
        slo, names.ALERT_RULES_INCOMPLETE,
        f"group by ({promql.BY_MONITOR}) ({probes_sel})\nunless on ({promql.BY_MONITOR})\n{shared_sel}",
        RULES_INCOMPLETE_FOR, f"{_who(slo)}: its SLO alerts cannot fire",
        f"Probes of {_who(slo)} are recorded but not the shared SLI records its alerts read: load "
        "route-monitor's shared rules (route-monitor-slis groups) in this Prometheus.")


def certificate_expiry_alert(slo: MonitorSLO, gauge_sel: str) -> dict[str, Any]:
    days = CERT_EXPIRY_WARNING_DAYS
    return _warning(
        slo, names.ALERT_CERTIFICATE_EXPIRY, promql.expires_within(gauge_sel, days * 86_400), None,
        f"{_who(slo)}: TLS certificate expires within {days} days",
        f"The certificate served to {_who(slo)} expires within {days} days (or has expired): renew it.")
