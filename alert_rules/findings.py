"""What is wrong or surprising about a monitor's SLO, before any rule is loaded.

An *error* means the generated rules would not do what the manifest asks (an alert that can
never fire, a window longer than the period, an interval too coarse to measure, a label
Prometheus rejects): ``route-monitor rules`` fails on errors. A *warning* means the rules work
but differ from what the budget math alone would suggest (the single-probe guard raising the
bar at a coarse interval, a ticket on a burn slower than 1x, a label overridden).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Literal

from alert_rules import durations, promql, tiles
from alert_rules.alerts import RESERVED_LABELS, factor_text, pct
from alert_rules.model import MonitorSLO
from alert_rules.rules import enabled_windows
from alert_rules.sensitivity import interval_for_factor, probes_in, trip
from alert_rules.sli import SLI, slis

MAX_INTERVAL_MS = 300_000
"""Probing less often than this leaves every 5m tile and the 10m absence window nearly empty."""
MAX_PAGING_INTERVAL_MS = 120_000
"""The 1h/5m page's short window must always hold a probe (the increase across the window's
edge is not seen, so a 5m window reliably holds one only at 2m or less)."""
FEW_SHORT_PROBES = 3
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Finding:
    severity: Literal["error", "warning"]
    field: str
    """The manifest field to change, e.g. ``spec.slo.availability``."""
    message: str
    suggestion: str = ""
    """A value to write instead, when one is clear (also said in ``message``)."""

    def __str__(self) -> str:
        return f"{self.severity}: {self.field}: {self.message}"


def _objective_field(sli: SLI) -> str:
    return "spec.slo.availability" if sli.kind == "availability" else "spec.slo.latency.objective"


def _fmt(ms: int) -> str:
    return durations.format_ms(max(1, ms))


def _ratio_finding(sli: SLI) -> Finding | None:
    """An objective below 1% is a ratio written where a percent belongs ("0.999" for 99.9%): one
    error that says so, instead of one per alert that can then never fire."""
    if sli.objective >= 1:
        return None
    meant = promql.number((sli.objective * 100).normalize())
    return Finding("error", _objective_field(sli), f"{pct(sli.objective / 100)} is a ratio, not a percent: the "
                   f"objective is written in percent; did you mean {meant}?", meant)


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _window_findings(slo: MonitorSLO, sli: SLI) -> list[Finding]:
    out: list[Finding] = []
    period = slo.objective.period_ms
    coarse: list[str] = []
    too_long: list[str] = []
    never: list[Finding] = []
    ratio = _ratio_finding(sli)
    for w in enabled_windows(slo):
        pair = f"{w.long}/{w.short} {w.severity}"
        if w.long_ms > period:
            too_long.append(pair)
            continue
        t = trip(w, sli.budget, slo.interval_ms)
        if not t.possible:
            lowest = promql.number((Decimal(100) * (1 - 1 / w.factor)).quantize(Decimal("0.01"), ROUND_CEILING))
            never.append(Finding("error", _objective_field(sli), (
                f"the {pair} can never fire: it needs more than {pct(t.threshold)} of probes to be bad "
                f"({factor_text(w.factor)}x the {pct(sli.budget)} budget); use an objective above "
                f"{lowest}% or set spec.alerting.{w.severity}: false"), str(lowest)))
            continue
        if w.factor < 1:
            out.append(Finding("warning", "spec.slo.period", (
                f"the {pair} fires at {factor_text(w.factor)}x the budget's rate, slower than would spend "
                f"the budget within the {_fmt(period)} period (a period of at least "
                f"{_fmt(int(w.long_ms / w.budget_share))} gives 1x)")))
        if t.guard_binds:
            every = interval_for_factor(w, sli.budget) // 1000 * 1000
            remedy = f"probe every {_fmt(every)} or less for" if every else "lower the objective for"
            coarse.append(f"{w.long}/{w.short} needs 2 in {w.long}, a {promql.number(round(t.effective_factor, 1))}x "
                          f"burn instead of {factor_text(w.factor)}x ({remedy} {factor_text(w.factor)}x)")
    if too_long and sli.kind == "availability":  # the period is one field: said once, not per SLI
        windows = "window is" if len(too_long) == 1 else "windows are"
        longest = max((w for w in enabled_windows(slo) if w.long_ms > period), key=lambda w: w.long_ms).long
        out.insert(0, Finding("error", "spec.slo.period", f"the {_joined(too_long)} {windows} longer than the "
                              f"{_fmt(period)} SLO period; use a period of at least {longest}", longest))
    if ratio is not None:
        out.insert(0, ratio)
    elif never:
        others = [f.message.split(" can never fire")[0].removeprefix("the ") for f in never[1:]]
        first = never[0]
        out.insert(0, first if not others else Finding(
            "error", first.field, f"{first.message}; the {_joined(others)} can never fire either", first.suggestion))
    if coarse and slo.interval_ms <= MAX_INTERVAL_MS:
        out.append(Finding("warning", "spec.probe.interval", (
            f"at one probe every {_fmt(slo.interval_ms)}, a single bad probe already exceeds the {sli.kind} "
            f"threshold of some windows, and a single bad probe never alerts: {'; '.join(coarse)}")))
    return out


def _interval_findings(slo: MonitorSLO) -> list[Finding]:
    every = _fmt(slo.interval_ms)
    if slo.interval_ms > MAX_INTERVAL_MS:
        return [Finding("error", "spec.probe.interval", f"probing every {every} leaves the alert windows "
                        "without probes and trips RouteMonitorProbesAbsent; probe at least every 5m")]
    if slo.interval_ms > MAX_PAGING_INTERVAL_MS and slo.alerting.page:
        return [Finding("error", "spec.probe.interval", f"probing every {every}, the 1h/5m page's 5m window "
                        "sometimes holds no probe, so a page during an outage would resolve and fire again; "
                        "probe at least every 2m or set spec.alerting.page: false")]
    n = probes_in(300_000, slo.interval_ms)
    if n < FEW_SHORT_PROBES:
        return [Finding("warning", "spec.probe.interval", f"only {n} probe(s) every {every} fit in the 5m short "
                        "window: its error ratio jumps in large steps; probe every 1m or more often")]
    return []


def _alerting_findings(slo: MonitorSLO) -> list[Finding]:
    out: list[Finding] = []
    if not slo.alerting.page and not slo.alerting.ticket:
        out.append(Finding("warning", "spec.alerting", "page and ticket are both off: no burn-rate alert "
                           "is generated (recording rules, absence and certificate alerts still are)"))
    for key, _ in slo.alerting.labels:
        field = f"spec.alerting.labels.{key}"
        if not _LABEL_NAME.match(key):
            out.append(Finding("error", field, "not a valid Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)"))
        elif key in RESERVED_LABELS:
            out.append(Finding("warning", field, f"{key} is set by route-monitor on every alert; this "
                               "label is ignored"))
    for key, _ in slo.alerting.annotations:
        if not _LABEL_NAME.match(key):
            out.append(Finding("error", f"spec.alerting.annotations.{key}", "not a valid Prometheus annotation "
                               "name ([a-zA-Z_][a-zA-Z0-9_]*)"))
    return out


def findings(slo: MonitorSLO) -> list[Finding]:
    """Every problem found with the monitor's SLO, errors first, in a stable order."""
    tile = tiles.probes_problem(slo.tile_ms, slo.interval_ms)
    out = _interval_findings(slo) + ([] if tile is None else [Finding("error", "spec.probe.interval", tile)])
    out += _alerting_findings(slo)
    for sli in slis(slo):
        out += _window_findings(slo, sli)
    return sorted(out, key=lambda f: f.severity != "error")
