"""Human text for ``route-monitor check``: what each alert means for this monitor, in probes
and minutes at its probe interval."""

from __future__ import annotations

from decimal import Decimal

from alert_rules import durations, names, path_rules, promql
from alert_rules.alerts import (
    ABSENT_AFTER,
    CERT_EXPIRY_WARNING_DAYS,
    RULES_INCOMPLETE_FOR,
    factor_text,
    pct,
    severity_of,
)
from alert_rules.findings import findings
from alert_rules.model import MonitorSLO
from alert_rules.rules import enabled_windows, is_fast, tile_of
from alert_rules.sensitivity import trip
from alert_rules.sli import SLI, slis


def _d(ms: int) -> str:
    return durations.format_ms(max(1, ms))


def _plural(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _sli_header(slo: MonitorSLO, sli: SLI) -> str:
    period = slo.objective.period_ms
    probes = Decimal(period // slo.interval_ms) * sli.budget
    outage = _d(max(1000, round(Decimal(period) * sli.budget / 1000) * 1000))
    what = "of probes succeed" if sli.kind == "availability" else \
        f"of probes succeed within {_d(sli.threshold_ms)}"
    return (f"  {sli.kind}: {promql.number(sli.objective)}% {what} over {_d(period)}; error budget "
            f"{pct(sli.budget)} = {outage} of full outage = {promql.number(round(probes, 1))} bad probes")


def _sli_lines(slo: MonitorSLO, sli: SLI) -> list[str]:
    lines = [_sli_header(slo, sli)]
    bad = "failed" if sli.kind == "availability" else "failed or slow"
    for w in enabled_windows(slo):
        t = trip(w, sli.budget, slo.interval_ms)
        head = f"    {sli.alert} {severity_of(w)} {w.long}/{w.short} ({factor_text(w.factor)}x)"
        if not t.possible:
            lines.append(f"{head}: can never fire (needs more than {pct(t.threshold)} bad probes)")
            continue
        lag = "" if is_fast(w) else f", evaluated every {tile_of(slo)}"
        wait = path_rules.settle_ms(slo.interval_ms, slo.evaluation_ms) if is_fast(w) else slo.tile_ms
        lines.append(
            f"{head}: more than {pct(t.threshold)} {bad} in both windows = "
            f"{_plural(t.bad_long, 'bad probe')} within {w.long} and {t.bad_short} within the last {w.short}; "
            f"a full outage fires it after {_d(t.outage_ms(slo.interval_ms))}{lag}, plus {_d(wait)} to see "
            "whether a shared path is down instead; "
            f"it resolves about {_d(t.reset_ms(slo.interval_ms))} after recovery")
    return lines


def explain(slo: MonitorSLO) -> str:
    """Per alert: how many bad probes and how long a full outage trip it, and how it resets."""
    lines = [f"{slo.namespace}/{slo.name}: one probe every {_d(slo.interval_ms)}"]
    for sli in slis(slo):
        lines += _sli_lines(slo, sli)
    off = [k for k, on in (("page", slo.alerting.page), ("ticket", slo.alerting.ticket)) if not on]
    if off:
        lines.append(f"  burn alerts off: {', '.join(off)} (spec.alerting)")
    lines.append(f"  {names.ALERT_PROBES_ABSENT} warning: no probe result recorded for {ABSENT_AFTER}")
    lines.append(f"  {names.ALERT_CERTIFICATE_EXPIRY} warning: the served certificate expires within "
                 f"{CERT_EXPIRY_WARNING_DAYS} days")
    lines.append(f"  {names.ALERT_RULES_INCOMPLETE} warning: probe results for {RULES_INCOMPLETE_FOR} but not "
                 "the shared records its alerts read (the shared rules are not loaded)")
    lines += [f"  {f}" for f in findings(slo)]
    return "\n".join(lines) + "\n"
