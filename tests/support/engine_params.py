"""The engine's per-monitor objective series (``alert_rules.params``) as ``promtool`` input series.

The rules read every monitor's objective, period and failing window from series the probe engine
exports beside its probe counters; a hand-written promtool test feeds them as the engine would,
present for the whole test (a prober that never stops exporting them)."""

from __future__ import annotations

from alert_rules import params, promql
from alert_rules.model import MonitorSLO


def series(slo: MonitorSLO, samples: int, *, instance: str = "p0:8080", stale: bool = False) -> list[dict[str, str]]:
    """``samples`` samples of each of ``slo``'s engine series, at the test's input interval, then
    a stale marker if ``stale`` (the prober went away)."""
    ident = (*promql.monitor_matchers(slo.namespace, slo.name), ("instance", instance))
    end = " stale" if stale else ""
    return [{"series": promql.selector(metric, ident), "values": f"{value!r}x{samples - 1}{end}"}
            for metric, value in params.values(slo.objective, slo.interval_ms)]


def has_params(input_series: list[dict[str, str]]) -> bool:
    return any(s["series"].startswith(params.names.SLO_OBJECTIVE + "{") for s in input_series)


def for_all(slos: list[MonitorSLO], samples: int) -> list[dict[str, str]]:
    return [s for slo in slos for s in series(slo, samples)]
