"""A monitor's thresholds as data: the series the probe engine exports for each monitor it probes.

Every monitor's rules used to record its objective, period and failing window as constants
(``vector(0.999)``), three or four rules per monitor at every evaluation, a fifth of what the rules
cost Prometheus (``benchmarks/RESULTS-rules-cost.md``). The engine knows them (it probes the
monitor from the same spec the rules come from) and exports them beside the probe counters; the
shared group copies them under the record names the burn conditions, dashboards and status read
(:func:`copy_rules`), once for every monitor.

:func:`values` is the one place that turns a monitor's objective into those series' values: the
engine renders it, the ``promtool`` fixtures feed it as input series.
"""

from __future__ import annotations

from typing import Any

from alert_rules import names, promql
from alert_rules.model import Objective

METRICS = (names.SLO_OBJECTIVE, names.SLO_PERIOD, names.PROBE_INTERVAL, names.LATENCY_OBJECTIVE)
"""The series :func:`values` gives, in its order (the engine renders their families in this order)."""


def values(objective: Objective, interval_ms: int) -> tuple[tuple[str, float], ...]:
    """``(metric, value)`` for each series the engine exports for a monitor (the latency
    objective only with a latency SLI)."""
    out = [(names.SLO_OBJECTIVE, float(objective.availability / 100)),
           (names.SLO_PERIOD, objective.period_ms / 1000),
           (names.PROBE_INTERVAL, interval_ms / 1000)]
    if objective.latency is not None:
        out.append((names.LATENCY_OBJECTIVE, float(objective.latency.objective / 100)))
    return tuple(out)


def _copy(record: str, metric: str) -> dict[str, Any]:
    return {"record": record, "expr": promql.by_monitor_max(metric)}


def copy_rules() -> list[dict[str, Any]]:
    """The records every other rule reads, from the engine's series (one per location probing a
    monitor: the same values, so ``max``)."""
    return [_copy(names.SLO_OBJECTIVE_RECORD, names.SLO_OBJECTIVE),
            _copy(names.SLO_PERIOD_RECORD, names.SLO_PERIOD),
            _copy(names.LATENCY_OBJECTIVE_RECORD, names.LATENCY_OBJECTIVE)]
